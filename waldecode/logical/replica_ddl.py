"""DDL inside a wal_level=replica range: the catalog a row change sees, and TRUNCATE told from the catalog rows.

The catalog rows a DDL transaction writes are logged the same way at replica and at logical level
(heapam.c logs a catalog's tuples for recovery only: RelationIsLogicallyLogged is false for a catalog at
any level), so ``catalog.history.CatalogHistory`` follows them from the redone catalog pages as it does on
logical-level WAL.  What replica level lacks is what logical decoding adds for a transaction's own view of
its catalog changes, XLOG_HEAP2_NEW_CID (the command ids of catalog rows), and the top-level xid that
logical level writes into a subtransaction's first record (XLR_BLOCK_ID_TOPLEVEL_XID); and TRUNCATE writes
no XLOG_HEAP_TRUNCATE (heapam.c: only ``if (RelationIsLogicallyLogged(rel))``).  This module owns the
rules that stand in for them (docs/replica.md, "DDL"), for ``replica.ReplicaRows``:

* the catalog a row change sees (``relation``): the history's view at the change's LSN for its top-level
  transaction, i.e. the committed catalog plus the transaction's own catalog rows written at earlier LSNs
  (record order stands in for command ids: a command's catalog rows are written before the rows it
  changes under them).  A change whose top-level transaction is not known yet (a subtransaction's, until
  the commit lists it) of a relation another open transaction changed the catalog rows of is read under
  each catalog it may see (``each_catalog``, ``catalogs``): one answer, or an error naming both
  transactions and the LSN;
* TRUNCATE (``truncate_changes``): a pg_class row of a logically logged ordinary table rewritten with a
  new relfilenode in the same tablespace, when the transaction wrote no transient heap for it
  (make_new_heap's ``pg_temp_<OID>`` row, whose relrewrite names the table: ALTER TABLE rewrites,
  VACUUM FULL, CLUSTER) is ExecuteTruncateGuts's RelationSetNewRelfilenumber: a TRUNCATE change at that
  record; and an XLOG_SMGR_TRUNCATE of such a table's main fork to nothing by the transaction that gave
  it that storage (``smgr_changes``: heap_truncate_one_rel, a table created or given new storage earlier
  in the same transaction).  What the catalog rows cannot tell is refused with an error: several tables,
  or a sequence, given new storage with no row change between (one TRUNCATE of several tables, or
  RESTART IDENTITY, against several commands).
"""

from __future__ import annotations

import struct
from bisect import bisect_left

from ..catalog import Relation
from ..catalog.pg_catalog import RELKIND_RELATION, RELKIND_SEQUENCE, AttributeRelationId, IndexRelationId, \
    RelationRelationId
from ..errors import DecodeError, format_lsn
from ..rmgr import heap as rm_heap
from ..rmgr import smgr as rm_smgr
from ..wal.xlogrecord import XLR_INFO_MASK, DecodedRecord
from .diagnostics import Diagnostic
from .reorderbuffer import REORDER_BUFFER_CHANGE_TRUNCATE, Change
from .replay import relation_is_logically_logged


class ReplicaCatalog:
    """The catalog history's answers for replica-level row changes (see the module's docstring)."""

    def __init__(self, history, tracker, database: int, hears_invalidations: bool = False, warn=None):
        self.history = history
        # the run's warnings: a TRUNCATE's flags cannot be told (said once, at the first TRUNCATE)
        self.warn = warn
        self._flags_said = False
        self.tracker = tracker
        # the output plugin hears catalog cache invalidations (pgoutput): logical level logs a transaction's
        # at each command's end (XLOG_XACT_INVALIDATIONS), replica level only in its commit record
        self.hears_invalidations = hears_invalidations
        self.database = database
        # top-level xid -> (LSN, what) of the storage renewals since its last row change: one TRUNCATE
        # command or several cannot be told apart below logical
        self._renewals: dict[int, list] = {}
        self.current = None  # the catalog view ``each_catalog`` reads the record's change under

    # -- the catalog a change sees -------------------------------------------------------------------

    def view(self, rec: DecodedRecord):
        """The catalog as the record's top-level transaction (as far as known) sees it at the record."""
        return self.history.view(rec.lsn, self.tracker.top(rec.xl_xid) if rec.xl_xid else 0)

    def relation(self, rec: DecodedRecord, blk) -> tuple[Relation | None, object]:
        """(relation stored in the block's file, or None; the catalog view it was found in) for a row
        change, in the catalog ``each_catalog`` reads it under."""
        view = self.current if self.current is not None else self.view(rec)
        rel = view.relation_by_filenode(blk.spcOid, blk.relNumber)
        xid = rec.xl_xid
        if xid and rel is not None and relation_is_logically_logged(rel):
            top = self.tracker.top(xid)
            self._renewals.pop(top, None)  # a row change ends a run of storage renewals
            if self.hears_invalidations and not rel.relrewrite:  # (a rewrite's transient heap is not decoded)
                self._check_invalidations(rec, rel, top)
        return rel, view

    def each_catalog(self, extract, written_natts):
        """``extract`` (a ``ReplicaRows`` extractor) read under each catalog the record's change may see
        (``catalogs``): their one answer, or an error when they differ.  ``written_natts(rec)``: the number of
        attributes of the tuple the record wrote, or None."""
        def run(rec: DecodedRecord, database: int) -> list[Change]:
            blk = rec.block(0)
            if blk is None or blk.dbOid != self.database:
                return extract(rec, database)
            cands = self.catalogs(rec, blk, written_natts)
            results = []
            for _xid, view in cands:
                self.current = view
                try:
                    results.append(extract(rec, database))
                except DecodeError as e:
                    if len(cands) == 1:
                        raise
                    results.append(e)
                finally:
                    self.current = None
            if len(results) > 1 and any(isinstance(r, DecodeError) or r != results[0] for r in results):
                other = cands[1][0]
                raise DecodeError(
                    f"the row change of transaction {rec.xl_xid} at {format_lsn(rec.lsn)} (file {blk.spcOid}/"
                    f"{blk.dbOid}/{blk.relNumber}) reads differently whether it is a subtransaction of transaction "
                    f"{other}, still open, which changed the relation's catalog rows before it, or not: below "
                    "wal_level=logical the WAL does not say which", lsn=rec.lsn)
            return results[0]
        return run

    def catalogs(self, rec: DecodedRecord, blk, written_natts) -> list[tuple[int, object]]:
        """(transaction, catalog view) the record's change may be read under.  Its own transaction's view; and
        when its top-level transaction is not known (below logical a subtransaction's records do not name it;
        the commit lists them), also the view of each other open transaction that changed this relation's
        catalog rows before it, whose subtransaction it may be.  A view in which no relation is stored in the
        record's file is no candidate when another has one (a transaction writes only to relations it sees), nor
        one whose relation has fewer attributes than the tuple the record wrote (heap_form_tuple gives a tuple
        its writer's count).  Its own catalog rows, or a plugin that hears invalidations, with such another
        transaction: an error."""
        own = self.view(rec)
        xid = rec.xl_xid
        if not xid or self.tracker.top(xid) != xid or not self.history.txns.keys() - {xid}:
            return [(xid, own)]  # its top-level transaction known, or no other one with catalog rows open
        rel = own.relation_by_filenode(blk.spcOid, blk.relNumber)
        others = self._others(rec, rel.oid if rel is not None else None, blk.relNumber)
        if not others:
            return [(xid, own)]
        if xid in self.history.txns or self.hears_invalidations:
            self._undecidable(rec, xid, rel.oid if rel is not None else None, blk.relNumber,
                              lambda: "the row change of " + (f"{rel.nspname}.{rel.relname}" if rel is not None
                                                              else f"file {blk.spcOid}/{blk.dbOid}/{blk.relNumber}"))
        cands = [(xid, own)] + [(other, self.history.view(rec.lsn, other)) for other, _lsn in others]
        natts = written_natts(rec) or 0
        seen = [(x, v) for x, v in cands
                if (r := v.relation_by_filenode(blk.spcOid, blk.relNumber)) is not None and len(r.attributes) >= natts]
        return seen or cands[:1]

    def _others(self, rec, oid: int | None, relnumber: int | None) -> list[tuple[int, int]]:
        """(transaction, LSN) of each open transaction but the record's that changed catalog rows of relation
        ``oid`` (or gave a relation the file ``relnumber``) before the record, at its first such change."""
        out = []
        for other, txn in self.history.txns.items():
            if other == rec.xl_xid:
                continue
            for ev in txn.events[:bisect_left(txn.lsns, rec.lsn)]:
                row = ev.row
                if ((ev.cat == RelationRelationId and (row["oid"] == oid or row["relfilenode"] == relnumber))
                        or (ev.cat == AttributeRelationId and row["attrelid"] == oid)
                        or (ev.cat == IndexRelationId and row["indrelid"] == oid)):
                    out.append((other, ev.lsn))
                    break
        return out

    def _undecidable(self, rec, top: int, oid: int | None, relnumber: int | None, what) -> None:
        """An error when transaction ``rec.xl_xid``, whose top-level transaction is not known, acts on relation
        ``oid`` (or the file ``relnumber``) whose catalog rows another open transaction changed before;
        ``what()`` names the act."""
        if top != rec.xl_xid:
            return  # its top-level transaction is known (a commit or an assignment listed it)
        others = self._others(rec, oid, relnumber)
        if others:
            other, lsn = others[0]
            raise DecodeError(
                f"{what()} by transaction {rec.xl_xid} at {format_lsn(rec.lsn)} cannot be decoded: transaction "
                f"{other}, still open, changed the relation's catalog rows at {format_lsn(lsn)}, and below "
                f"wal_level=logical the WAL does not say whether {rec.xl_xid} is a subtransaction of {other} "
                "(which sees those rows) or not", lsn=rec.lsn)

    def _check_invalidations(self, rec, rel: Relation, top: int) -> None:
        """A row change after its transaction's own catalog rows, for a plugin that hears invalidations: at
        logical level it would have heard them before this change, from the XLOG_XACT_INVALIDATIONS record
        that ended the DDL command, which replica level does not write."""
        txn = self.history.txns.get(top)
        if txn is None or not txn.lsns or txn.lsns[0] >= rec.lsn:
            return
        raise DecodeError(f"transaction {top} changed a row of {rel.nspname}.{rel.relname} at {format_lsn(rec.lsn)} "
                          f"after changing the catalog at {format_lsn(txn.lsns[0])}: the output plugin hears catalog "
                          "cache invalidations, which below wal_level=logical are logged only at the commit, not at "
                          "the end of the command that made them (XLOG_XACT_INVALIDATIONS)", lsn=rec.lsn)

    # -- TRUNCATE -------------------------------------------------------------------------------

    def truncate_changes(self, rec: DecodedRecord) -> list[Change]:
        """The TRUNCATE a pg_class update (already taken by the history) stands for, if any."""
        xid = rec.xl_xid
        if not xid:
            return []
        top = self.tracker.top(xid)
        txn = self.history.txns.get(top)
        if txn is None:
            return []
        old = new = None
        for ev in txn.events[bisect_left(txn.lsns, rec.lsn):]:  # the record's own events, the last ones
            if ev.lsn == rec.lsn and ev.cat == RelationRelationId:
                if ev.deleted:
                    old = ev.row
                else:
                    new = ev.row
        if old is None or new is None or old["oid"] != new["oid"] or old["relfilenode"] == new["relfilenode"] \
                or not new["relfilenode"] or old["reltablespace"] != new["reltablespace"]:
            return []
        oid = new["oid"]
        relkind = new["relkind"]
        if relkind == RELKIND_SEQUENCE:
            self._renewed(rec, top, f"sequence {new['relname']} (OID {oid})")
            return []
        if relkind != RELKIND_RELATION:
            return []  # a TOAST table's or an index's new storage goes with its table's
        self._undecidable(rec, top, oid, None, lambda: f"the new storage of table {new['relname']} (OID {oid})")
        view = self.history.view(rec.lsn + 1, top)
        rel = view.relation(oid)
        if rel is None or not relation_is_logically_logged(rel) or rel.relrewrite:
            return []
        if any(ev.cat == RelationRelationId and not ev.deleted and ev.row["relrewrite"] == oid and ev.lsn < rec.lsn
               for ev in txn.events):
            return []  # make_new_heap's transient heap: a rewrite (ALTER TABLE, VACUUM FULL, CLUSTER)
        self._renewed(rec, top, f"table {rel.nspname}.{rel.relname} (OID {oid})")
        return [self._truncate(rec, rel)]

    def _renewed(self, rec, top: int, what: str) -> None:
        """A table or sequence got new storage: a second one before any row change of the transaction is
        one TRUNCATE of several tables (or with RESTART IDENTITY), or several commands: not told."""
        runs = self._renewals.setdefault(top, [])
        runs.append((rec.lsn, what))
        if len(runs) > 1:
            (lsn0, what0), (lsn1, what1) = runs[0], runs[-1]
            raise DecodeError(
                f"transaction {top} gave {what0} new storage at {format_lsn(lsn0)} and {what1} at {format_lsn(lsn1)} "
                "with no row change between: below wal_level=logical one TRUNCATE of several tables (or with "
                "RESTART IDENTITY) cannot be told from several commands (no XLOG_HEAP_TRUNCATE record)", lsn=rec.lsn)

    def smgr_changes(self, rec: DecodedRecord) -> list[Change]:
        """An XLOG_SMGR_TRUNCATE of a logically logged table's main fork to nothing, by the transaction that
        created the table or gave it this storage: ExecuteTruncateGuts's heap_truncate_one_rel (the
        relation's rd_createSubid or rd_newRelfilelocatorSubid is set), a TRUNCATE with no catalog row.
        Another such truncation is VACUUM's of a table it emptied (lazy_truncate_heap), which changes no row."""
        if rec.xl_info & ~XLR_INFO_MASK != rm_smgr.XLOG_SMGR_TRUNCATE or not rec.xl_xid:
            return []
        blkno, spc, db, node, flags = rm_smgr.xl_smgr_truncate.unpack_from(rec.main_data)
        if db != self.database or blkno or not flags & rm_smgr.SMGR_TRUNCATE_HEAP:
            return []
        top = self.tracker.top(rec.xl_xid)
        rel = self.history.view(rec.lsn, top).relation_by_filenode(spc, node)
        if rel is None or not relation_is_logically_logged(rel) or rel.relkind != RELKIND_RELATION or rel.relrewrite:
            return []
        # the open transaction whose catalog rows gave the table this storage
        creator = next((other for other, txn in self.history.txns.items()
                        if any(ev.cat == RelationRelationId and not ev.deleted and ev.row["oid"] == rel.oid
                               and ev.row["relfilenode"] == node and ev.lsn < rec.lsn for ev in txn.events)), None)
        if creator != top:
            # VACUUM's truncation, or one by a subtransaction of the transaction that gave the table its storage
            self._undecidable(rec, top, rel.oid, node,
                              lambda: f"the truncation in place of {rel.nspname}.{rel.relname}")
            return []
        self._renewed(rec, top, f"table {rel.nspname}.{rel.relname} (OID {rel.oid})")
        return [self._truncate(rec, rel)]

    def _truncate(self, rec: DecodedRecord, rel: Relation) -> Change:
        """DecodeTruncate's change for table ``rel``: xl_heap_truncate's dbId, nrelids, flags and relids.  No
        flag is told: CASCADE and RESTART IDENTITY are in no catalog row (docs/replica.md).  A plugin that
        hears invalidations is refused it: at logical level it hears the TRUNCATE's own first (the
        CommandCounterIncrement that ends RelationSetNewRelfilenumber writes them before XLOG_HEAP_TRUNCATE,
        and heap_truncate_one_rel's index rebuild its own), below logical only the commit carries them."""
        if self.hears_invalidations:
            raise DecodeError(f"transaction {rec.xl_xid} truncated {rel.nspname}.{rel.relname} at "
                              f"{format_lsn(rec.lsn)}: the output plugin hears catalog cache invalidations, which at "
                              "logical level reach it before the TRUNCATE (XLOG_XACT_INVALIDATIONS) and below "
                              "wal_level=logical are logged only at the commit", lsn=rec.lsn)
        if self.warn is not None and not self._flags_said:
            # the output then differs from a slot's for TRUNCATE ... CASCADE (nothing referencing the table) or
            # RESTART IDENTITY (no sequence owned): said, never silent
            self._flags_said = True
            # a note, not a failure: where either flag acts (a table referencing this one, a sequence it owns)
            # the TRUNCATE is refused (``_renewed``), so a flag left out changed nothing
            self.warn(Diagnostic.make(
                f"TRUNCATE of {rel.nspname}.{rel.relname} at {format_lsn(rec.lsn)} (and any later one) is decoded "
                "without its CASCADE and RESTART IDENTITY flags: WAL written below wal_level=logical does not record "
                "them (docs/replica.md)", lacks=False, lsn=rec.lsn, xid=rec.xl_xid, concerns=()))
        extra = rm_heap.xl_heap_truncate.pack(self.database, 1, 0) + struct.pack("<I", rel.oid)
        return Change(rec.lsn, REORDER_BUFFER_CHANGE_TRUNCATE, 0, 0, rec.origin, True, None, None, extra)

    def ended(self, xids) -> None:
        for x in xids:
            self._renewals.pop(x, None)
