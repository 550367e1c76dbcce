"""Catalog history: the catalog timeline built from the catalog rows the WAL carries.

Owns what snapbuild.c's historic snapshots give PostgreSQL's decoder: takes every record
(``redo`` keeps the tracked catalogs' pages and decodes the rows catalog records write), files
each row under its top-level transaction as the transaction tracker (``xact``) tells it,
and at each commit makes the transaction's rows everybody's in a new epoch of the
``CatalogTimeline``; aborted and crashed (sub)transactions' rows are dropped.  Records whose
rows cannot be decoded become ``CatalogProblem``s, reported at their transaction's end.  Hands
``view(lsn, xid)`` to the decoder's apply stage, and ``materialize()`` (the committed catalog as
of the last record, as a snapshot) to the offline slot.
"""

from __future__ import annotations

from typing import NamedTuple

from ...logical.diagnostics import Diagnostic, cause_of
from ...xact import TransactionListener, TransactionTracker
from ...pg.lsn import format_lsn
from ...rmgr import RM_RELMAP_ID
from ...rmgr.relmap import xl_relmap_update
from ..model import Catalog
from ..pg_catalog import (
    PG_CATALOG_NAMESPACE,
    RELPERSISTENCE_TEMP,
    TRACKED_CATALOGS,
    AttributeRelationId,
    EnumRelationId,
    IndexRelationId,
    NamespaceRelationId,
    ProcedureRelationId,
    RangeRelationId,
    RelationRelationId,
    TypeRelationId,
)
from .layers import RELMAP, RowEvent, TxnEvents, row_key
from .redo import CatalogRedo
from .timeline import BaseFacts, CatalogTimeline


#: how a report names the object a catalog row is about (pg_class, pg_attribute, pg_index: ``_row_name``)
_ROW_NAMES = {
    TypeRelationId: "type {typname} (OID {oid})",
    NamespaceRelationId: "schema {nspname} (OID {oid})",
    EnumRelationId: "enum label {enumlabel!r} (OID {oid}) of type OID {enumtypid}",
    RangeRelationId: "range type OID {rngtypid}",
    ProcedureRelationId: "function {proname} (OID {oid})",
}


class CatalogProblem(NamedTuple):
    """A catalog record whose rows could not be (fully) decoded."""

    lsn: int
    xid: int
    catalog: str  # schema-qualified, e.g. "pg_catalog.pg_class"
    spc: int
    db: int
    relfilenode: int
    blkno: int
    offnum: int
    reason: str
    row: str = ""  # which row, when something tells ("relation public.t (OID 16390)"), else ""
    context: str = ""  # what the transaction's decoded catalog changes concern, filled in at its end

    def describe(self) -> str:
        which = f"the {self.catalog} row of {self.row}" if self.row else f"a {self.catalog} row (which one is unknown)"
        text = (f"{which} at block {self.blkno} offset {self.offnum} of {self.spc}/{self.db}/{self.relfilenode}, "
                f"changed by transaction {self.xid} at {format_lsn(self.lsn)}: {self.reason}")
        if self.context:
            text += f" (the transaction's decoded catalog changes concern {self.context})"
        return text


class CatalogHistory(TransactionListener):
    """The base catalog snapshot plus the catalog changes decoded from the WAL, by LSN.

    ``txns`` is the transaction tracker the decoder feeds (one of its own, fed by ``process``,
    when none is given)."""

    def __init__(self, catalog: Catalog, major: int | None = None, warn=None,
                 txns: TransactionTracker | None = None):
        self.base = catalog
        self.major = major or catalog.major
        self.db = catalog.database_oid
        self.warn = warn
        self.problems: list[CatalogProblem] = []
        #: the end of the last record taken (EndRecPtr): where ``materialize`` stands
        self.position = catalog.lsn
        self.redo = CatalogRedo(catalog, self.major, self, warn)
        self.timeline = CatalogTimeline(catalog, BaseFacts(catalog, warn, self.redo), warn)
        self._feeds_tracker = txns is None
        self.tracker = txns if txns is not None else TransactionTracker(self.major)
        if self.active:
            self.tracker.subscribe(self)
        self.txns: dict[int, TxnEvents] = {}  # open transactions' events, by top-level xid
        self._last_committed: int | None = None  # the last transaction committed with catalog events
        self._pending_problems: dict[int, list] = {}  # xid -> problems not yet reported
        self._first_versions: set = set()  # (catalog, OID) whose old version the range showed
        self._temp_oids: set = set()  # temporary relations and their row types: never decoded

    def __getstate__(self) -> dict:
        # A pickled history (shipped to Spark tasks) answers queries and takes no more records: the
        # tracker, and through it every listener (the decoder, its plugin), stays behind
        state = self.__dict__.copy()
        state["tracker"] = None
        return state

    def set_warn(self, warn) -> None:
        """Report to ``warn`` from now on, as its parts do (the redo, the timeline and its base facts):
        None drops the callback into the decoder that built it, for a history handed on for queries."""
        self.warn = self.redo.warn = self.timeline.warn = self.timeline.facts.warn = warn

    @property
    def active(self) -> bool:
        return bool(self.redo.layouts)

    @property
    def inactive_reason(self) -> str | None:
        return self.redo.inactive_reason

    @property
    def commit_lsns(self) -> list[int]:
        """The LSNs of the commits that changed the catalog (the timeline's epochs)."""
        return self.timeline.commit_lsns

    @property
    def has_changes(self) -> bool:
        """Is any catalog change known (committed, or of a transaction still to be decoded)?"""
        return bool(self.timeline.commit_lsns or self.txns or self._last_committed is not None)

    @property
    def has_uncommitted_changes(self) -> bool:
        """Is a transaction that changed the catalog (or wrote catalog records not decoded) still open?
        While it is, ``materialize`` refuses: its changes are neither in the committed state nor gone."""
        return bool(self.txns or self._pending_problems or self.redo.writes or self.redo.rewrites)

    # -- per record ------------------------------------------------------------------------------

    def process(self, rec) -> None:
        """Take one record (before the decoder dispatches it; after the tracker took it)."""
        if self._feeds_tracker:
            self.tracker.process(rec)
        self.position = rec.end_lsn
        if rec.xl_rmid == RM_RELMAP_ID:
            self._relmap(rec)
        elif self.redo.wants(rec):
            self.redo.apply(rec)

    # rows from the redo -----------------------------------------------------------------------------

    def row(self, rec, cat: int, row: dict, deleted: bool) -> None:
        """A catalog row the record inserted (or deleted): an event of its top-level transaction."""
        xid = rec.xl_xid
        if not xid:
            return
        if deleted and cat in (NamespaceRelationId, RelationRelationId, TypeRelationId):
            self._learn_schema(cat, row)
        ev = RowEvent(rec.lsn, xid, cat, row_key(cat, row), deleted, row)
        top = self.tracker.top(xid)
        txn = self.txns.get(top)
        if txn is None:
            txn = self.txns[top] = TxnEvents(top)
            self.timeline.set_txn(top, txn)
        txn.append(ev)
        if cat == RelationRelationId and not deleted and row["relnamespace"] == PG_CATALOG_NAMESPACE:
            self.redo.rewrite_heap(xid, row)

    def inplace(self, rec, cat: int, writer: int, row: dict) -> None:
        """A catalog row overwritten in place (not transactionally) with a column the history reads
        changed: the new version counts for its inserting transaction if that is still open, else for
        everybody from now on."""
        top = self.tracker.top(writer) if writer else None
        ev = RowEvent(rec.lsn, writer or 0, cat, row_key(cat, row), False, row)
        if top is not None and top in self.txns:
            self.txns[top].append(ev)
            self.timeline.set_txn(top, self.txns[top])
        else:
            self.timeline.commit(rec.lsn, [ev])

    def problem(self, rec, cat: int, blk, offnum: int, reason: str, row: dict | None = None) -> None:
        """A catalog record whose rows could not be decoded (reported when its transaction ends)."""
        name = TRACKED_CATALOGS.get(cat)
        p = CatalogProblem(rec.lsn, rec.xl_xid, f"pg_catalog.{name}" if name else str(cat), blk.spcOid, blk.dbOid,
                           blk.relNumber, blk.blkno, offnum, reason, self._row_name(cat, row) if row else "")
        self.problems.append(p)
        self._pending_problems.setdefault(rec.xl_xid, []).append(p)

    def _learn_schema(self, cat: int, row: dict) -> None:
        """The first old version of a snapshot object's row the range shows is the snapshot's: it
        tells the OIDs of the schemas the snapshot names (it records no schema OIDs)."""
        names = self.timeline.facts.namespaces
        oid = row["oid"]
        if cat == NamespaceRelationId:
            names.setdefault(oid, row["nspname"])
            return
        if cat == RelationRelationId:
            obj, nsp, name = self.base.relation(oid), row["relnamespace"], row["relname"]
        else:
            obj, nsp, name = self.base.type(oid), row["typnamespace"], row["typname"]
        if obj is None or (cat, oid) in self._first_versions:
            return
        self._first_versions.add((cat, oid))
        if nsp not in names and (obj.relname if cat == RelationRelationId else obj.typname) == name:
            names[nsp] = obj.nspname

    def _relation_name(self, oid: int) -> str:
        rel = self.view(self.position + 1).relation(oid)
        return f"OID {oid}" if rel is None else f"{rel.nspname}.{rel.relname} (OID {oid})"

    def _row_name(self, cat: int, row: dict) -> str:
        """Which object a decoded catalog row is about, for a report."""
        if cat == RelationRelationId:
            nsp = self.view(self.position + 1).namespace_name(row["relnamespace"])
            return f"relation {nsp + '.' if nsp else ''}{row['relname']} (OID {row['oid']})"
        if cat == AttributeRelationId:
            return f"column {row['attnum']} ({row['attname']}) of relation {self._relation_name(row['attrelid'])}"
        if cat == IndexRelationId:
            return f"index OID {row['indexrelid']} of relation {self._relation_name(row['indrelid'])}"
        text = _ROW_NAMES.get(cat)
        return str(row_key(cat, row)) if text is None else text.format(**row)

    def _concerned_oids(self, events) -> frozenset | None:
        """The OIDs of the relations a transaction's decoded catalog events are about (a rewrite's
        transient heap counts for the relation rewritten); None when they name none."""
        oids = set()
        for ev in events:
            row = ev.row
            if ev.cat == RelationRelationId:
                oids.add(row["oid"])
                if row.get("relrewrite"):
                    oids.add(row["relrewrite"])
            elif ev.cat == AttributeRelationId:
                oids.add(row["attrelid"])
            elif ev.cat == IndexRelationId:
                oids.add(row["indrelid"])
        return frozenset(oids) or None

    def _concerned(self, events) -> str:
        """The relations, types and functions a transaction's catalog events are about (for a report)."""
        rels, others = [], []
        for ev in events:
            row = ev.row
            if ev.cat == RelationRelationId:
                oid = row["oid"]
            elif ev.cat == AttributeRelationId:
                oid = row["attrelid"]
            elif ev.cat == IndexRelationId:
                oid = row["indrelid"]
            else:
                text = self._row_name(ev.cat, row)
                if text not in others:
                    others.append(text)
                continue
            if oid not in rels:
                rels.append(oid)
        names = [f"relation {self._relation_name(oid)}" for oid in rels] + others
        if len(names) > 6:
            names = names[:6] + [f"{len(names) - 6} more"]
        return ", ".join(names)

    # transactions, as the tracker tells them ----------------------------------------------------------

    def idle(self) -> bool:
        """Nothing of an open transaction is held: a transaction's end changes nothing here."""
        return not (self.txns or self._pending_problems or self.redo.writes or self.redo.rewrites)

    def _set_txn(self, top: int, txn: TxnEvents | None) -> None:
        if txn is None:
            self.txns.pop(top, None)
        else:
            self.txns[top] = txn
        self.timeline.set_txn(top, txn)

    def _adopt(self, top: int, sub: int) -> None:
        """``sub`` is a subtransaction of ``top``: its events filed under it alone (its top-level
        transaction was not known yet) join top's."""
        stray = self.txns.pop(sub, None)
        if stray is not None:
            self.timeline.set_txn(sub, None)
            mine = self.txns.get(top)
            self._set_txn(top, TxnEvents(top, sorted((mine.events if mine else []) + stray.events,
                                                     key=lambda e: e.lsn)))

    def txn_prepared(self, ev) -> None:
        self.position = ev.end_lsn
        if self.idle():
            return
        for sub in ev.subxacts:
            self._adopt(ev.xid, sub)

    def txn_committed(self, ev) -> None:
        self.position = ev.end_lsn
        if self.idle():
            return
        top, subxacts = ev.xid, ev.subxacts
        self._last_committed = None  # the previous commit's decoding is over
        for sub in subxacts:
            self._adopt(top, sub)
        xids = {top, *subxacts}
        txn = self.txns.pop(top, None)
        if txn is not None:
            if not txn.xids <= xids:  # subtransactions that ended without a record of their own
                txn = TxnEvents(top, [e for e in txn.events if e.xid in xids])
            self.timeline.set_txn(top, txn if txn.events else None)  # kept: the timeline answers for it
            if txn.events:
                events = self._committable(txn.events)
                if events:
                    self.timeline.commit(ev.lsn, events)
                self._last_committed = top
        self.redo.end_writes(xids, True)
        problems = []
        for x in xids:
            problems += self._pending_problems.pop(x, ())
        if problems:
            context = self._concerned(txn.events) if txn is not None else ""
            problems_before = problems
            problems = [p._replace(context=context) if context else p for p in problems]
            with_context = {id(old): p for old, p in zip(problems_before, problems)}
            self.problems = [with_context.get(id(p), p) for p in self.problems]
            if self.warn is not None:
                concerns = self._concerned_oids(txn.events) if txn is not None else None
                for p in sorted(problems, key=lambda p: p.lsn):
                    # a note, not a failure by itself: the decoder fails the run only when a row change of
                    # a relation it concerns (any, when unknown) is decoded after it (logical.diagnostics)
                    self.warn(Diagnostic.make(
                        f"catalog change not decoded: {p.describe()}; changes after it may be decoded with "
                        "outdated definitions",
                        f"catalog change not decoded: {p.catalog} rows: {cause_of(p.reason)}",
                        lacks=False, lsn=p.lsn, xid=p.xid, relation=p.row or None, catalog=p.catalog,
                        concerns=concerns))

    def _committable(self, events: list) -> list:
        """The events worth keeping: not those of temporary relations and their row types (never
        decoded, and created and dropped by the thousand), nor deletions of rows never known."""
        temp = self._temp_oids
        for ev in events:
            if ev.cat == RelationRelationId and ev.row["relpersistence"] == RELPERSISTENCE_TEMP:
                temp.add(ev.key)
                if ev.row["reltype"]:
                    temp.add(ev.row["reltype"])
        if temp:
            for ev in events:  # array types of temporary row types
                if ev.cat == TypeRelationId and ev.row["typelem"] in temp and ev.row["typlen"] == -1:
                    temp.add(ev.key)
        out = []
        known = self.timeline.committed.rows
        base = self.base
        batch = set()  # (cat, key) written by this transaction's kept events
        for ev in events:
            cat = ev.cat
            ck = (cat, ev.key)
            if cat == RelationRelationId:
                if ev.key in temp:
                    continue
                unknown = base.relation(ev.key) is None
            elif cat == AttributeRelationId:
                if ev.key[0] in temp:
                    continue
                unknown = base.relation(ev.key[0]) is None
            elif cat == TypeRelationId:
                if ev.key in temp:
                    continue
                unknown = base.type(ev.key) is None
            else:
                if cat == IndexRelationId and ev.row["indrelid"] in temp:
                    continue
                unknown = False
            if ev.deleted and unknown and ck not in known and ck not in batch:
                continue
            batch.add(ck)
            out.append(ev)
        return out

    def txn_aborted(self, ev) -> None:
        self.position = ev.end_lsn
        if self.idle():
            return
        xids = {ev.xid, *ev.subxacts}
        for x in xids:
            self._pending_problems.pop(x, None)
            self._set_txn(x, None)  # a top-level transaction's events, or a subtransaction's filed alone
        top = self.tracker.top_of.get(ev.xid)
        if top is not None and top in self.txns:
            txn = self.txns[top]
            if txn.xids & xids:
                self._set_txn(top, TxnEvents(top, [e for e in txn.events if e.xid not in xids]))
        self.redo.end_writes(xids, False)

    def running_xacts(self, ev) -> None:
        """Transactions older than the oldest running one ended without a commit or abort record: crashed."""
        if not self.redo.first_xid:
            self.redo.first_xid = ev.next_xid  # from here on every transaction's catalog rows are events
        crashed = ev.crashed
        for top in [t for t in self.txns if t in crashed]:
            self._set_txn(top, None)
        for x in [x for x in self._pending_problems if x in crashed]:
            del self._pending_problems[x]
        ended = {x for x in (*self.redo.writes, *self.redo.rewrites) if x in crashed}
        if ended:
            self.redo.end_writes(ended, False)

    def _relmap(self, rec) -> None:
        """XLOG_RELMAP_UPDATE of this database: mapped catalogs got new relfilenodes (VACUUM FULL)."""
        dbid, _tsid, nbytes = xl_relmap_update.unpack_from(rec.main_data, 0)
        if dbid != self.db or nbytes < 8:
            return
        # lazy: the data-directory readers (catalog.datadir: construct, crc32c, 50 ms), only for a VACUUM FULL's map
        from ..datadir.relmap import relmap_update_mappings

        mappings = relmap_update_mappings(rec.main_data[xl_relmap_update.size:xl_relmap_update.size + nbytes])
        if mappings is None:
            return
        events = []
        for oid, filenode in mappings:
            if self.timeline.mapped_filenode(oid) != filenode:
                events.append(RowEvent(rec.lsn, rec.xl_xid, RELMAP, oid, False, {"filenode": filenode}))
                if oid in self.redo.layouts:
                    self.redo.nodes[filenode] = oid
        if events:
            self.timeline.commit(rec.lsn, events)

    # -- lookups ---------------------------------------------------------------------------------

    def view(self, lsn: int, xid: int = 0):
        """The catalog as transaction ``xid`` (top-level) sees it at ``lsn`` (``CatalogTimeline.view``)."""
        return self.timeline.view(lsn, xid)

    def relation_by_filenode(self, spc: int, relfilenode: int, lsn: int, xid: int = 0):
        return self.timeline.view(lsn, xid).relation_by_filenode(spc, relfilenode)

    def relation(self, oid: int, lsn: int, xid: int = 0):
        return self.timeline.view(lsn, xid).relation(oid)

    def materialize(self) -> Catalog | None:
        """The catalog as of ``position`` (what every transaction committed by then made of it) as a
        ``Catalog`` with ``lsn`` = ``position``, in the snapshot format: relations, types, schemas,
        and the catalog pages as far as this history knows them.  A ``CatalogHistory`` started from
        it and fed the records that follow gives the views this one gives from here on.  None while
        ``has_uncommitted_changes``: a transaction's catalog changes would be neither in it nor gone.
        The snapshot's pages are left out while ``position`` is before the snapshot's LSN (they
        describe the catalog later than that)."""
        if self.has_uncommitted_changes:
            return None
        base = self.base
        facts = self.timeline.facts
        committed = self.timeline.committed.rows
        view = self.view(self.position)
        if view is base:
            relations, types = dict(base.relations), dict(base.types)
            names = {oid: facts.namespace_name(oid) for oid in {*base.namespaces, *facts.namespaces, *facts.guesses}}
        else:
            rel_oids = set(base.relations) | {k for (cat, k) in committed if cat == RelationRelationId}
            relations = {oid: r for oid in rel_oids if (r := view.relation(oid)) is not None}
            type_oids = set(base.types) | {k for (cat, k) in committed if cat == TypeRelationId}
            types = {oid: t for oid in type_oids if (t := view.type(oid)) is not None}
            nsp_oids = {*base.namespaces, *facts.namespaces, *facts.guesses,
                        *(k for (cat, k) in committed if cat == NamespaceRelationId)}
            names = {oid: view.namespace_name(oid) for oid in nsp_oids}
        return Catalog(
            server_version=base.server_version, server_version_num=base.server_version_num, major=base.major,
            lsn=self.position, database=base.database, database_oid=base.database_oid,
            database_tablespace=base.database_tablespace, settings=dict(base.settings), relations=relations,
            types=types, namespaces={oid: name for oid, name in names.items() if name is not None},
            catalog_pages=self.redo.materialize_pages(view, self.position), catalog_pages_note=base.catalog_pages_note,
            publications=None if view.publications is None else dict(view.publications),
            publication_rels=dict(view.publication_rels), publication_namespaces=dict(view.publication_namespaces),
            inherits=dict(view.inherits), replication_origins=base.replication_origins)

    def explain_unmapped(self, spc: int, relfilenode: int, lsn: int, xid: int = 0) -> str:
        """Why no relation is stored in (spc, relfilenode) at ``lsn`` for ``xid``: for a report."""
        if not self.redo.layouts:
            return (f"no relation of the catalog snapshot (taken at {format_lsn(self.base.lsn)}) is stored "
                    f"there, and {self.redo.inactive_reason}")
        txn = self.timeline.txns.get(xid)
        xids = txn.xids | {xid} if txn is not None else {xid}
        relevant = [p for p in self.problems if p.lsn < lsn and (p.xid in xids or p.xid not in self.txns)]
        if relevant:
            n = len(relevant)
            return (f"{n} catalog change{'s' if n > 1 else ''} before it could not be decoded"
                    + (", the last: " if n > 1 else ": ") + relevant[-1].describe())
        return (f"neither the catalog snapshot (taken at {format_lsn(self.base.lsn)}) nor the catalog changes "
                "decoded since the start of the WAL read store a relation there (was it created between the "
                "snapshot and the start of the WAL read?)")
