"""Decoding WAL written at wal_level = replica: the rows a logical-level record would carry, from redone pages.

Below wal_level = logical, heapam.c logs only what recovery needs (src/backend/access/heap/heapam.c,
heap_insert, heap_multi_insert, heap_update / log_heap_update, heap_delete, with
RelationIsLogicallyLogged false for every relation):

* an INSERT or MULTI_INSERT has no XLH_INSERT_CONTAINS_NEW_TUPLE and no REGBUF_KEEP_DATA: when the
  block carries a full-page image, the tuple data is left out of the record;
* an UPDATE logs no old tuple (no XLH_UPDATE_CONTAINS_OLD_*), and its new tuple, when old and new
  versions share a page, only as the bytes that differ from the old version (XLH_UPDATE_PREFIX_FROM_OLD,
  XLH_UPDATE_SUFFIX_FROM_OLD), or not at all under a full-page image;
* a DELETE logs only the tuple's position;
* no XLOG_HEAP_TRUNCATE, XLOG_HEAP2_NEW_CID or XLOG_XACT_INVALIDATIONS records, and a commit carries
  its database only when it carries invalidations (xact.c XactLogCommitRecord).

What those records leave out is on the pages: this module keeps the heap pages of the decoded
database in a ``redo.pagestore.PageStore`` and replays every record onto them
(``redo.xlogrecovery.HeapRedo``), then reads, right after a record is replayed, the new version at its
offset and the old version at its own (an update or delete changes only the old version's header,
never its data).  From them it builds the changes a logical-level record would have given
(``decode.insert_changes`` and the others): the new tuple whole, and the old tuple as
ExtractReplicaIdentity would have logged it for the relation's replica identity (FULL: the whole old
tuple; DEFAULT and INDEX: the identity key's columns, the others NULL, for a DELETE always and for an
UPDATE when a key column changed or is stored out of line; NOTHING: none), its values stored out of
line inlined from the TOAST table's redone pages (toast_flatten_tuple).

Pages are known from reading at a checkpoint's redo point on: with full_page_writes each page
carries an image at its first change after it.  A change whose page is not known (full_page_writes
off, or a page the WAL read never imaged) is an error naming the relation and block; nothing is
guessed.  The catalog is followed through the WAL by the decoder's catalog history, from the catalog rows
redone as on logical-level WAL, and ``replica_ddl`` decides what a row change sees and tells TRUNCATE
(``follow``).  Without a catalog history (a snapshot without the catalogs' columns), the catalog is the
snapshot's: a transaction committing, after the snapshot was taken, a change to a catalog row or to a
relation the snapshot does not know (DDL) is refused with an error.

``scan_start`` tells, before decoding, the WAL's wal_level and where a replica-level read must
begin.  ``ReplicaRows`` is handed to ``decode.LogicalDecoder`` (its ``replica`` part).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ..catalog import REPLICA_IDENTITY_FULL, REPLICA_IDENTITY_NOTHING, Catalog, Relation
from ..errors import CatalogError, DecodeError, WALError, format_lsn
from ..heap import heaptuple
from ..heap.heaptuple import HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID, SizeofHeapTupleHeader
from ..heap.varlena import ToastPointer, decompress_toast_value
from ..pg.relpath import fork_name
from ..redo import bufpage as bp
from ..redo import htup_details as ht
from ..redo.pagestore import PageStore
from ..redo.xlogrecovery import HeapRedo
from ..redo.xlogutils import BLK_DONE, BLK_NOTFOUND
from ..rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_XACT_ID, RM_XLOG_ID
from ..rmgr import heap as rm_heap
from ..rmgr import xact as rm_xact
from ..rmgr.xlog import (WAL_LEVEL_LOGICAL, WAL_LEVEL_REPLICA, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN,
                         XLOG_FPW_CHANGE, XLOG_PARAMETER_CHANGE, CheckPoint, get_wal_level_string,
                         parameter_change_wal_level)
from ..wal.xlogreader import XLogReader
from ..wal.xlogrecord import XLR_INFO_MASK, DecodedRecord
from .reorderbuffer import (REORDER_BUFFER_CHANGE_DELETE, REORDER_BUFFER_CHANGE_INSERT,
                            REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT, REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT,
                            REORDER_BUFFER_CHANGE_UPDATE, Change)
from .replay import relation_is_logically_logged
from .replica_ddl import ReplicaCatalog

# src/include/catalog/pg_statistic.h: StatisticRelationId and its TOAST table (DECLARE_TOAST(pg_statistic, 2840,
# 2841)).  ANALYZE writes these rows in a transaction of its own; they change no relation's definition, so
# they are no DDL to refuse
StatisticRelationId = 2619
PgStatisticToastTable = 2840

# How far scan_start reads past a record that said wal_level logical, looking for one that says replica
LOGICAL_LOOKAHEAD = 1024 * 1024
_u16 = struct.Struct("<H")


class ReplicaStart(NamedTuple):
    """What ``scan_start`` found: the WAL's wal_level (None when nothing read told it), the record that
    told it, and for a replica-level read the checkpoint whose redo point decoding begins at."""

    wal_level: int | None
    evidence: str
    evidence_lsn: int | None
    redo_lsn: int | None = None  # the redo point of the first checkpoint at or after the reading start
    checkpoint_lsn: int | None = None
    full_page_writes: bool | None = None

    @property
    def replica(self) -> bool:
        return self.wal_level is not None and self.wal_level < WAL_LEVEL_LOGICAL


def wal_level_evidence(rec: DecodedRecord, major: int) -> tuple[int, str] | None:
    """What one record tells of the wal_level it was written at, or None: a parameter-change record,
    a 17+ checkpoint, a commit record (below logical a commit names its database only when it carries
    invalidations: XactLogCommitRecord), or a record only logical level writes: XLOG_HEAP2_NEW_CID, a
    heap record with the tuple data only a logically logged relation's carries (the first record of a
    transaction that commits gigabytes later tells it)."""
    rmid = rec.xl_rmid
    info = rec.xl_info & ~XLR_INFO_MASK
    if rmid == RM_XLOG_ID:
        if info == XLOG_PARAMETER_CHANGE:
            level = parameter_change_wal_level(rec.main_data)
            return level, f"a parameter change record sets wal_level to {get_wal_level_string(level)}"
        if info in (XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN) and major >= 17:
            level = CheckPoint.unpack_from(rec.main_data)[4]
            return level, f"a checkpoint record says wal_level {get_wal_level_string(level)}"
    elif rmid == RM_XACT_ID and info & rm_xact.XLOG_XACT_OPMASK == rm_xact.XLOG_XACT_COMMIT:
        parsed = rm_xact.parse_commit_or_abort(rec.xl_info, rec.main_data, major, True)
        if not parsed.msgs:
            if parsed.xinfo & rm_xact.XACT_XINFO_HAS_DBINFO:
                return WAL_LEVEL_LOGICAL, "a commit record without invalidations names its database"
            return WAL_LEVEL_REPLICA, "a commit record without invalidations does not name its database"
    elif rmid == RM_HEAP2_ID:
        op = info & rm_heap.XLOG_HEAP_OPMASK
        if op == rm_heap.XLOG_HEAP2_NEW_CID:
            return WAL_LEVEL_LOGICAL, "an XLOG_HEAP2_NEW_CID record"
        if op == rm_heap.XLOG_HEAP2_MULTI_INSERT and rec.main_data[:1] and \
                rec.main_data[0] & rm_heap.XLH_INSERT_CONTAINS_NEW_TUPLE:
            return WAL_LEVEL_LOGICAL, _LOGICALLY_LOGGED
    elif rmid == RM_HEAP_ID:
        # heapam.c: these flags are set only for a relation RelationIsLogicallyLogged, which needs
        # XLogLogicalInfoActive (wal_level logical); their absence tells nothing (a catalog is never)
        op = info & rm_heap.XLOG_HEAP_OPMASK
        at, flag = _HEAP_LOGICAL_FLAGS.get(op, (None, 0))
        if at is not None and len(rec.main_data) > at and rec.main_data[at] & flag:
            return WAL_LEVEL_LOGICAL, _LOGICALLY_LOGGED
    return None


_LOGICALLY_LOGGED = "a heap record carries the tuple data of a logically logged relation"
# heapam_xlog.h: the byte of the flags in xl_heap_insert (after OffsetNumber), xl_heap_update and
# xl_heap_delete (after xmax, OffsetNumber and infobits), and the flags only logical level sets
_HEAP_LOGICAL_FLAGS = {
    rm_heap.XLOG_HEAP_INSERT: (2, rm_heap.XLH_INSERT_CONTAINS_NEW_TUPLE),
    rm_heap.XLOG_HEAP_UPDATE: (7, rm_heap.XLH_UPDATE_CONTAINS_NEW_TUPLE),
    rm_heap.XLOG_HEAP_HOT_UPDATE: (7, rm_heap.XLH_UPDATE_CONTAINS_NEW_TUPLE),
    rm_heap.XLOG_HEAP_DELETE: (7, rm_heap.XLH_DELETE_CONTAINS_OLD),
}


def scan_start(segments, read_from: int | None, end_lsn: int | None = None) -> ReplicaStart:
    """Read from ``read_from`` (None: the input's first record) until the WAL's wal_level is told.

    The WAL counts as written below logical when any record read says so: a cluster restarted at
    another level writes a parameter-change record, and replica-level decoding takes logical-level
    records as well (their pages are replayed the same way), while logical decoding stops at the first
    replica-level one.  So once a record said logical the scan goes on ``LOGICAL_LOOKAHEAD`` bytes past
    it for one that says replica (logical decoding pays for that little), and once one said replica it
    goes on to the first checkpoint whose redo point is at or after the first record read (from there
    every page's next change carries a full-page image) and to a record after that redo point that
    tells the level.  A drop to replica further on stops the logical decoder there with an error
    (``decode._wal_level_error``)."""
    reader = XLogReader(segments=segments, start_lsn=read_from, end_lsn=end_lsn)
    lowest = None  # (level, evidence, LSN) of the first record that told the lowest level
    first_told = last_told = None  # LSNs of the first and last records that told the level
    checkpoint = ()  # (redo, checkpoint LSN, fullPageWrites)
    first = None
    for rec in reader:
        if lowest is not None and lowest[0] >= WAL_LEVEL_LOGICAL and rec.lsn - first_told > LOGICAL_LOOKAHEAD:
            break
        if first is None:
            first = rec.lsn
        said = wal_level_evidence(rec, segments.major)
        if said is not None:
            first_told = rec.lsn if first_told is None else first_told
            last_told = rec.lsn
            if lowest is None or said[0] < lowest[0]:
                lowest = (*said, rec.lsn)
        if not checkpoint and rec.xl_rmid == RM_XLOG_ID and rec.xl_info & ~XLR_INFO_MASK in (
                XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN):
            redo, _tli, _prev, fpw = CheckPoint.unpack_from(rec.main_data)[:4]
            if redo >= first:
                checkpoint = (redo, rec.lsn, bool(fpw))
        if lowest is not None and lowest[0] < WAL_LEVEL_LOGICAL and checkpoint and last_told >= checkpoint[0]:
            break
    if lowest is None:
        return ReplicaStart(None, "no record read tells it", None, *checkpoint)
    return ReplicaStart(*lowest, *checkpoint)


def checkpoint_redo(rec: DecodedRecord) -> int | None:
    """The redo point a checkpoint record names, else None: where a replica-level read can begin with no page
    known (from there on every page's first change carries a full-page image), so the only restart point an
    offline slot (``slot.SlotKeeper``) can keep for such WAL."""
    if rec.xl_rmid == RM_XLOG_ID and rec.xl_info & ~XLR_INFO_MASK in (XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN):
        return CheckPoint.unpack_from(rec.main_data)[0]
    return None


def heap_form_tuple(attributes, values: list, natts: int | None = None) -> bytes:
    """heap_form_tuple of the values ``heaptuple.deform_tuple`` gives (None: NULL), as a WAL tuple
    (``rmgr.heap.wal_tuple``).  A varlena gets a 4-byte header (what heap_fill_tuple writes for a value it
    cannot make short), a TOAST pointer stays one.  ``natts``: only the first ``natts`` attributes are stored
    (a tuple older than ADD COLUMN keeps its count)."""
    datums = [None if v is None else v.ondisk_datum() if isinstance(v, ToastPointer)
              else struct.pack("<I", (len(v) + 4) << 2) + bytes(v) if att.attlen == -1
              else bytes(v) for att, v in zip(attributes, values)]
    return rm_heap.wal_tuple(attributes, datums, natts)


class ReplicaRows:
    """The rows of a replica-level WAL read, from the pages redo keeps (see the module's docstring).

    ``redo(rec)`` replays each record, in LSN order, before the decoder takes it; ``extractors`` are the
    decoder's record extractors for heap and heap2 records (``decode.HEAP_EXTRACTORS``' signature), reading
    the pages as the record left them; ``ended(ev)`` is told each transaction's end, and refuses the commit
    of one that changed the catalog after the snapshot.
    """

    def __init__(self, catalog: Catalog, major: int, store_dir, start: ReplicaStart | None = None, *,
                 old_rows_full: bool = False, toast_fill: bool = False):
        """``old_rows_full`` (``-o old-rows=full``): every UPDATE's and DELETE's old row whole, as REPLICA
        IDENTITY FULL logs it, whatever the table's identity; ``toast_fill`` (``-o toast=fill``): an UPDATE's
        new row with its unchanged TOAST values read from the TOAST pages (``fill_unchanged_toast``)."""
        self.catalog = catalog
        self.old_rows_full = old_rows_full
        self.toast_fill = toast_fill
        self.database = catalog.database_oid
        self.major = major
        self.start = start
        self.store = PageStore(store_dir)
        database = self.database
        self.heap_redo = HeapRedo(self.store, major, wanted=lambda locator: locator[1] == database)
        # the catalog history's answers once the decoder follows the catalog (``follow``); None: the snapshot's
        # catalog alone, and a commit of DDL after it refused
        self.ddl: ReplicaCatalog | None = None
        self._view = catalog  # the catalog the record being decoded sees
        self._last = None  # (record, RedoRecord) of the record replayed last
        self.catalog_changes: dict[int, tuple[int, str]] = {}  # xid -> (LSN, relation) of its first catalog change
        self.databases: dict[int, int] = {}  # xid -> the database of its first row change (database_of)
        self._last_ended = (None, 0)  # (xid, database) of the last transaction ended
        self.aborted: set[int] = set()  # transactions read aborting: their TOAST chunks are none
        # where full_page_writes was first read off (a checkpoint's fullPageWrites, or XLOG_FPW_CHANGE): pages
        # changed about then may have no image
        self.fpw_off_at = start.checkpoint_lsn if start is not None and start.full_page_writes is False else None
        self.extractors = {
            RM_HEAP_ID: {
                rm_heap.XLOG_HEAP_INSERT: self.insert_changes,
                rm_heap.XLOG_HEAP_UPDATE: self.update_changes,
                rm_heap.XLOG_HEAP_HOT_UPDATE: self.update_changes,
                rm_heap.XLOG_HEAP_DELETE: self.delete_changes,
            },
            RM_HEAP2_ID: {rm_heap.XLOG_HEAP2_MULTI_INSERT: self.multi_insert_changes},
        }

    def close(self) -> None:
        self.store.close()

    def follow(self, history, tracker, hears_invalidations: bool = False, warn=None) -> None:
        """Follow the catalog through the WAL with the decoder's catalog history (None: it has none, and
        DDL stays refused): the catalog a row change sees and TRUNCATE come from ``replica_ddl``."""
        if history is not None:
            self.ddl = ReplicaCatalog(history, tracker, self.database, hears_invalidations, warn)
            # each row change read under every catalog it may see (a subtransaction's, before its commit names
            # its top-level transaction): one answer, or an error
            self.extractors = {rmid: {info: self.ddl.each_catalog(extract, self.written_natts)
                                      for info, extract in table.items()}
                               for rmid, table in self.extractors.items()}

    def written_natts(self, rec: DecodedRecord) -> int | None:
        """The number of attributes of the (first) tuple an insert or update wrote, from the redone page
        (heap_form_tuple gives a tuple its relation's count: HeapTupleHeaderSetNatts); None for a delete, or
        a page not known."""
        rmid, info = rec.xl_rmid, rec.xl_info & rm_heap.XLOG_HEAP_OPMASK
        blk = rec.block(0)
        if rmid == RM_HEAP_ID and info == rm_heap.XLOG_HEAP_INSERT:
            offnum = rm_heap.xl_heap_insert.unpack_from(rec.main_data)[0]
        elif rmid == RM_HEAP_ID and info in (rm_heap.XLOG_HEAP_UPDATE, rm_heap.XLOG_HEAP_HOT_UPDATE):
            offnum = rm_heap.xl_heap_update.unpack_from(rec.main_data)[5]
        elif rmid == RM_HEAP2_ID and info == rm_heap.XLOG_HEAP2_MULTI_INSERT:
            offnum = (bp.FirstOffsetNumber if rec.xl_info & rm_heap.XLOG_HEAP_INIT_PAGE
                      else _u16.unpack_from(rec.main_data, rm_heap.SizeOfHeapMultiInsert)[0])
        else:
            return None
        page = self.store.read((blk.spcOid, blk.dbOid, blk.relNumber), blk.forknum, blk.blkno)
        if page is None or not bp.FirstOffsetNumber <= offnum <= bp.page_get_max_offset_number(page):
            return None
        lp_off, lp_flags, _lp_len = bp.item_id(page, offnum)
        if lp_flags != bp.LP_NORMAL:
            return None
        return ht.infomask2(page, lp_off) & heaptuple.HEAP_NATTS_MASK

    # -- redo and the DDL check ----------------------------------------------------------------------

    def redo(self, rec: DecodedRecord) -> None:
        rr = self.heap_redo.redo(rec)
        self._last = (rec, rr)
        if rec.xl_rmid == RM_XLOG_ID and self.fpw_off_at is None:
            info = rec.xl_info & ~XLR_INFO_MASK
            if ((info == XLOG_FPW_CHANGE and not rec.main_data[0])
                    or (info in (XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN)
                        and not CheckPoint.unpack_from(rec.main_data)[3])):
                self.fpw_off_at = rec.lsn
        if rr is not None and rec.xl_xid and rec.xl_rmid in (RM_HEAP_ID, RM_HEAP2_ID):
            blk = rec.block(0)
            if blk is not None and blk.dbOid and rec.xl_xid not in self.databases:
                self.databases[rec.xl_xid] = blk.dbOid
            if self.ddl is None:
                self._note_catalog_change(rec)

    def smgr_changes(self, rec: DecodedRecord) -> list[Change]:
        """The TRUNCATE an XLOG_SMGR_TRUNCATE stands for, if any (``replica_ddl``); none without DDL followed."""
        return self.ddl.smgr_changes(rec) if self.ddl is not None else []

    def database_of(self, xid: int, subxacts) -> int:
        """The database of a transaction whose commit does not name it (below logical, one without
        invalidations): that of its row changes, 0 when it made none.  Its commit is then skipped for
        another database as a logical-level commit naming it is (DecodeTXNNeedsSkip)."""
        if self._last_ended[0] == xid:
            return self._last_ended[1]  # ended() was told first, and forgot its changes
        return self._database((xid, *subxacts))

    def _database(self, xids) -> int:
        return next((self.databases[x] for x in xids if x in self.databases), 0)

    def _note_catalog_change(self, rec: DecodedRecord) -> None:
        """A transaction's row change to a catalog, or to a relation the snapshot does not know: DDL."""
        info = rec.xl_info & rm_heap.XLOG_HEAP_OPMASK
        if rec.xl_rmid == RM_HEAP_ID:
            if info not in (rm_heap.XLOG_HEAP_INSERT, rm_heap.XLOG_HEAP_UPDATE, rm_heap.XLOG_HEAP_HOT_UPDATE,
                            rm_heap.XLOG_HEAP_DELETE, rm_heap.XLOG_HEAP_INPLACE):
                return
        elif info != rm_heap.XLOG_HEAP2_MULTI_INSERT:
            return
        blk = rec.block(0)
        if blk is None or blk.dbOid != self.database or rec.xl_xid in self.catalog_changes:
            return
        rel = self.catalog.relation_by_filenode(blk.spcOid, blk.relNumber)
        if rel is not None and (not rel.is_catalog or rel.oid in (StatisticRelationId, PgStatisticToastTable)):
            return
        what = (f"the catalog {rel.nspname}.{rel.relname}" if rel is not None
                else f"relation file {blk.spcOid}/{blk.dbOid}/{blk.relNumber}, which the catalog snapshot does not "
                     "know")
        self.catalog_changes[rec.xl_xid] = (rec.lsn, what)

    def ended(self, ev) -> None:
        """A transaction ended (``xact.XactEvent``): a commit of catalog changes made after the snapshot
        was taken is refused."""
        if ev.info == rm_xact.XLOG_XACT_PREPARE:
            return  # told again at COMMIT or ROLLBACK PREPARED
        xids = (ev.xid, *ev.subxacts)
        if self.ddl is not None:
            self.ddl.ended(xids)
        self._last_ended = (ev.xid, self._database(xids))
        for x in xids:
            self.databases.pop(x, None)
        if ev.info in (rm_xact.XLOG_XACT_ABORT, rm_xact.XLOG_XACT_ABORT_PREPARED):
            self.aborted.update(xids)
        found = [self.catalog_changes[x] for x in xids if x in self.catalog_changes]
        for x in xids:
            self.catalog_changes.pop(x, None)
        if not found or ev.info not in (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED):
            return
        if ev.lsn <= self.catalog.lsn:
            return  # the snapshot already holds what it committed
        lsn, what = min(found)
        raise DecodeError(f"transaction {ev.xid}, committed at {format_lsn(ev.lsn)}, changed {what} at "
                          f"{format_lsn(lsn)}: DDL inside a wal_level=replica range is followed only through the "
                          f"catalog history, which this catalog snapshot (taken at {format_lsn(self.catalog.lsn)}) "
                          "does not allow; decode up to the DDL, then on from a catalog snapshot taken after it",
                          lsn=ev.lsn)

    # -- tuples from the pages -------------------------------------------------------------------

    def _rr(self, rec: DecodedRecord):
        last_rec, rr = self._last if self._last is not None else (None, None)
        if last_rec is not rec or rr is None:
            raise DecodeError("replica-level decoding: a heap record was decoded before it was replayed", lsn=rec.lsn)
        return rr

    def _page(self, rec: DecodedRecord, block_id: int, rel: Relation):
        """The page of block ``block_id`` as the record left it; an error naming it when it is not known."""
        rr = self._rr(rec)
        blk = rec.block(block_id)
        page = None
        action = rr.actions.get(block_id)
        if action == BLK_DONE:
            # the store's page was already past this record (only a page copied later than the reading start
            # could be): what the record found on it may be gone
            raise DecodeError(f"relation {rel.nspname}.{rel.relname} (file {blk.spcOid}/{blk.dbOid}/{blk.relNumber}) "
                              f"{fork_name(blk.forknum)} block {blk.blkno} is newer than the row change that needs it",
                              lsn=rec.lsn)
        if action != BLK_NOTFOUND:
            page = self.store.read((blk.spcOid, blk.dbOid, blk.relNumber), blk.forknum, blk.blkno)
        if page is None:
            why = (f"full_page_writes was off (said at {format_lsn(self.fpw_off_at)}): a page changed then has no "
                   "image to start from" if self.fpw_off_at is not None else
                   "it was last changed before the reading start and no full-page image of it was read since; "
                   "start at an earlier checkpoint")
            raise DecodeError(f"page unknown: relation {rel.nspname}.{rel.relname} (file {blk.spcOid}/{blk.dbOid}/"
                              f"{blk.relNumber}) {fork_name(blk.forknum)} block {blk.blkno} is needed to decode the "
                              f"row change, but {why}", lsn=rec.lsn)
        return page

    def _tuple(self, rec: DecodedRecord, page, offnum: int, blkno: int) -> bytes:
        """The tuple at ``offnum`` as a WAL tuple (xl_heap_header, then everything from t_bits on)."""
        if not bp.FirstOffsetNumber <= offnum <= bp.page_get_max_offset_number(page):
            raise DecodeError(f"replica-level decoding: offset {offnum} is past the line pointers of block {blkno} "
                              "after redo", lsn=rec.lsn)
        lp_off, lp_flags, lp_len = bp.item_id(page, offnum)
        if lp_flags != bp.LP_NORMAL or lp_len < SizeofHeapTupleHeader or lp_off + lp_len > len(page):
            raise DecodeError(f"replica-level decoding: no tuple at offset {offnum} of block {blkno} after redo "
                              f"(line pointer flags {lp_flags}, length {lp_len})", lsn=rec.lsn)
        return (rm_heap.xl_heap_header.pack(ht.infomask2(page, lp_off), ht.infomask(page, lp_off),
                                            ht.t_hoff(page, lp_off))
                + bytes(page[lp_off + SizeofHeapTupleHeader:lp_off + lp_len]))

    def _relation(self, rec: DecodedRecord):
        """(block 0, relation) of a record of the decoded database whose relation is logically logged,
        else None: a logical-level record of any other relation carries no tuple either."""
        blk = rec.block(0)
        if blk is None:
            raise DecodeError(f"heap record at {format_lsn(rec.lsn)} has no block 0", lsn=rec.lsn)
        if blk.dbOid != self.database:
            return None
        if self.ddl is not None:
            rel, self._view = self.ddl.relation(rec, blk)
        else:
            rel = self.catalog.relation_by_filenode(blk.spcOid, blk.relNumber)
        if rel is None or not relation_is_logically_logged(rel):
            return None
        return blk, rel

    @staticmethod
    def _change(rec, action, blk, newtuple, oldtuple, clear_toast=True) -> Change:
        return Change(rec.lsn, action, blk.spcOid, blk.relNumber, rec.origin, clear_toast, newtuple, oldtuple, None)

    def insert_changes(self, rec: DecodedRecord, database: int) -> list[Change]:
        """DecodeInsert: the tuple from the record, or from the page when its image left the data out."""
        found = self._relation(rec)
        if found is None:
            return []
        blk, rel = found
        offnum, flags = rm_heap.xl_heap_insert.unpack_from(rec.main_data)
        action = (REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT if flags & rm_heap.XLH_INSERT_IS_SPECULATIVE
                  else REORDER_BUFFER_CHANGE_INSERT)
        if blk.data and not blk.has_image:
            tup = bytes(blk.data)
        else:
            tup = self._tuple(rec, self._page(rec, 0, rel), offnum, blk.blkno)
        return [self._change(rec, action, blk, tup, None)]

    def multi_insert_changes(self, rec: DecodedRecord, database: int) -> list[Change]:
        """DecodeMultiInsert, each tuple from the redone page at its offset."""
        found = self._relation(rec)
        if found is None:
            return []
        blk, rel = found
        main = rec.main_data
        flags, ntuples = rm_heap.xl_heap_multi_insert.unpack_from(main)
        isinit = bool(rec.xl_info & rm_heap.XLOG_HEAP_INIT_PAGE)
        page = self._page(rec, 0, rel)
        last = flags & rm_heap.XLH_INSERT_LAST_IN_MULTI
        out = []
        for i in range(ntuples):
            offnum = (bp.FirstOffsetNumber + i if isinit
                      else _u16.unpack_from(main, rm_heap.SizeOfHeapMultiInsert + 2 * i)[0])
            out.append(self._change(rec, REORDER_BUFFER_CHANGE_INSERT, blk, self._tuple(rec, page, offnum, blk.blkno),
                                    None, clear_toast=bool(last and i + 1 == ntuples)))
        return out

    def update_changes(self, rec: DecodedRecord, database: int) -> list[Change]:
        """DecodeUpdate: the new version from the page redo rebuilt it on (prefix and suffix from the old
        version included), the old one from its page, logged as the replica identity asks."""
        found = self._relation(rec)
        if found is None:
            return self.ddl.truncate_changes(rec) if self.ddl is not None else []
        blk, rel = found
        _oxmax, old_offnum, _obits, _flags, _nxmax, new_offnum = rm_heap.xl_heap_update.unpack_from(rec.main_data)
        newtuple = self._tuple(rec, self._page(rec, 0, rel), new_offnum, blk.blkno)
        old_id = 1 if rec.block(1) is not None else 0
        oldtuple = self._tuple(rec, self._page(rec, old_id, rel), old_offnum, rec.block(old_id).blkno)
        if self.toast_fill:
            newtuple = self.fill_unchanged_toast(rec, rel, newtuple, oldtuple)
        return [self._change(rec, REORDER_BUFFER_CHANGE_UPDATE, blk, newtuple,
                             self.identity(rec, rel, oldtuple, newtuple))]

    def delete_changes(self, rec: DecodedRecord, database: int) -> list[Change]:
        """DecodeDelete: the old version from the page, logged as the replica identity asks."""
        found = self._relation(rec)
        if found is None:
            return []
        blk, rel = found
        _xmax, offnum, _bits, flags = rm_heap.xl_heap_delete.unpack_from(rec.main_data)
        if flags & rm_heap.XLH_DELETE_IS_SUPER:
            return [self._change(rec, REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT, blk, None, None)]
        oldtuple = self._tuple(rec, self._page(rec, 0, rel), offnum, blk.blkno)
        return [self._change(rec, REORDER_BUFFER_CHANGE_DELETE, blk, None, self.identity(rec, rel, oldtuple, None))]

    # -- ExtractReplicaIdentity ------------------------------------------------------------------

    def _values(self, rec, rel: Relation, tup: bytes) -> list:
        t_infomask2, t_infomask, t_hoff = rm_heap.xl_heap_header.unpack_from(tup)
        try:
            return heaptuple.deform_tuple(memoryview(tup)[rm_heap.SizeOfHeapHeader:], t_infomask2, t_infomask, t_hoff,
                                          rel.attributes)
        except Exception as e:
            raise DecodeError(f"cannot read a row of {rel.nspname}.{rel.relname} from its page: {e}", lsn=rec.lsn) \
                from None

    def identity(self, rec: DecodedRecord, rel: Relation, oldtuple: bytes, newtuple: bytes | None) -> bytes | None:
        """ExtractReplicaIdentity (heapam.c) of the old version: what a logical-level record of this update
        (``newtuple``) or delete (None) logs as its old tuple.  A value stored out of line in it would be
        inlined there (toast_flatten_tuple), from the TOAST pages.  With ``old_rows_full`` every table's
        old row is logged as REPLICA IDENTITY FULL logs it."""
        replident = REPLICA_IDENTITY_FULL if self.old_rows_full else rel.relreplident
        if replident == REPLICA_IDENTITY_NOTHING:
            return None
        old = self._values(rec, rel, oldtuple)
        if replident == REPLICA_IDENTITY_FULL:
            # the tuple as stored (a column added since with a default is read as the slot reads it), its
            # values stored out of line inlined (toast_flatten_tuple)
            if not any(isinstance(v, ToastPointer) for v in old):
                return oldtuple
            natts = rm_heap.xl_heap_header.unpack_from(oldtuple)[0] & heaptuple.HEAP_NATTS_MASK
            return heap_form_tuple(rel.attributes, self._flatten(rec, rel, old), natts)
        key = [a - 1 for a in rel.replica_identity_key]
        if not key:
            return None  # no identity index: treated as a key not required
        if newtuple is not None:
            # heap_update's key_required: an identity column changed (HeapDetermineColumnsInfo compares the
            # stored datums byte for byte) or is stored out of line in the old version
            new = self._values(rec, rel, newtuple)
            if not any(old[i] != new[i] or isinstance(old[i], ToastPointer) for i in key):
                return None
        keep = set(key)
        key_values = [v if i in keep else None for i, v in enumerate(old)]
        self._refuse_missing(rec, rel, key_values)
        return heap_form_tuple(rel.attributes, self._flatten(rec, rel, key_values))

    def _flatten(self, rec, rel: Relation, values: list) -> list:
        """toast_flatten_tuple: the values stored out of line, read from the redone TOAST pages."""
        return [self._toast_fetch(rec, rel, i, v) if isinstance(v, ToastPointer) else v for i, v in enumerate(values)]

    def fill_unchanged_toast(self, rec, rel: Relation, newtuple: bytes, oldtuple: bytes) -> bytes:
        """``-o toast=fill``: the new version with the values it shares with the old one out of line inlined,
        read from the TOAST pages.  heap_toast_insert_or_update keeps the old version's TOAST pointer for a
        value the update left unchanged, whose chunks the transaction then never writes: logical decoding
        cannot give it (test_decoding's ``unchanged-toast-datum``).  A pointer the old version does not hold is
        a value this transaction stored, which the reorder buffer rebuilds from its chunks as at logical
        level."""
        new = self._values(rec, rel, newtuple)
        old = self._values(rec, rel, oldtuple)
        unchanged = [i for i, v in enumerate(new)
                     if isinstance(v, ToastPointer) and i < len(old) and old[i] == v]
        if not unchanged:
            return newtuple
        for i in unchanged:
            new[i] = self._toast_fetch(rec, rel, i, new[i], "new row")
        natts = rm_heap.xl_heap_header.unpack_from(newtuple)[0] & heaptuple.HEAP_NATTS_MASK
        return heap_form_tuple(rel.attributes, new, natts)

    def _toast_fetch(self, rec, rel: Relation, column: int, pointer: ToastPointer, row: str = "old row") -> bytes:
        """toast_fetch_datum over the TOAST table's pages in the store: the chunks of the value whose
        inserter was not read aborting (HeapTupleSatisfiesToast), chunk 0 to the last, each once.  Pages
        the WAL read never imaged are not there: a chunk missing is an error naming the value."""
        # lazy: the data-directory readers load construct and crc32c, which only an old row's TOAST value needs
        from ..catalog.datadir.heapscan import heap_page_items
        from ..redo.table import TOAST_ATTRIBUTES

        toast = self._view.relation(pointer.va_toastrelid)
        what = (f"TOAST value {pointer.va_valueid} of column {rel.attributes[column].attname} of the {row} of "
                f"{rel.nspname}.{rel.relname}")
        if toast is None:
            raise DecodeError(f"{what}: its TOAST table (OID {pointer.va_toastrelid}) is not in the catalog",
                              lsn=rec.lsn)
        locator = (toast.reltablespace or self._view.database_tablespace, self.database, toast.relfilenode)
        parts: dict[int, bytes] = {}
        try:
            for blkno in self.store.blocks(locator, 0):
                page = bytes(self.store.read(locator, 0, blkno))
                for _o, lp_off, lp_len, xmin, _x, infomask2, infomask, t_hoff in heap_page_items(page, what, blkno):
                    if (infomask & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID) == HEAP_XMIN_INVALID
                            or xmin in self.aborted):
                        continue
                    chunk_id, chunk_seq, data = heaptuple.deform_tuple(page, infomask2, infomask, t_hoff,
                                                                       TOAST_ATTRIBUTES, start=lp_off + 23,
                                                                       end=lp_off + lp_len)
                    if int.from_bytes(chunk_id, "little") != pointer.va_valueid:
                        continue
                    seq = int.from_bytes(chunk_seq, "little", signed=True)
                    if seq in parts:
                        raise DecodeError(f"{what}: chunk {seq} is twice in {toast.relname}", lsn=rec.lsn)
                    parts[seq] = bytes(data)
            n = 0
            while n in parts:
                n += 1
            data = b"".join(parts[i] for i in range(n))
            if len(parts) != n or len(data) < pointer.extsize:
                raise DecodeError(f"{what}: chunk {n} is on no page of {toast.nspname}.{toast.relname} the WAL read "
                                  "imaged since its start (the value was stored before it)", lsn=rec.lsn)
            return decompress_toast_value(data, pointer)
        except (WALError, CatalogError) as e:
            if isinstance(e, DecodeError):
                raise
            raise DecodeError(f"{what}: {e}", lsn=rec.lsn) from None

    @staticmethod
    def _refuse_missing(rec, rel: Relation, values: list) -> None:
        for i, v in enumerate(values):
            if isinstance(v, heaptuple.MissingValue):
                raise DecodeError(f"the old row of {rel.nspname}.{rel.relname} changed at {format_lsn(rec.lsn)} lacks "
                                  f"key column {rel.attributes[i].attname} (added later with a default), which its "
                                  "replica identity logs: not done yet", lsn=rec.lsn)
