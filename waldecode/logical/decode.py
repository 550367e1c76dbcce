"""Decode dispatch: WAL records into reorder-buffer changes, transactions into output.

Owns src/backend/replication/logical/decode.c's part: per record, register the
(sub)transaction, feed the snapshot builder, turn heap/heap2 records into changes,
logical messages into messages, and xact records into commit, abort and two-phase
events, each filtered by database and origin as PostgreSQL does.  Dispatch is by
table: every resource manager names the record types it decodes and the ones it
knowingly ignores; anything else is an error naming the rmgr and info.

Every record first goes to the transaction tracker (``xact``) and the catalog
history (``catalog.history``), which keeps the catalog as of each LSN from the catalog
rows the WAL carries; the replayer
decodes each change with that catalog.  Takes ``DecodedRecord``s (from any reader),
hands committed transactions to ``replay.Replayer`` and through it to an output
plugin.  Changes that cannot be decoded (a relation the history cannot resolve) are
skipped with a warning in ``warnings`` (and to ``on_warning``), not an error.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ..catalog import Catalog
from ..catalog.history import CatalogHistory
from ..errors import DecodeError, format_lsn
from ..xact import RunningXacts, TransactionListener, TransactionTracker, XactEvent  # noqa: F401
from ..output.base import CatalogView, OutputPlugin, OutputPluginOptions, Transaction
from .replay import Replayer
from .diagnostics import Diagnostics
from .reorderbuffer import (
    REORDER_BUFFER_CHANGE_DELETE,
    REORDER_BUFFER_CHANGE_INSERT,
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT,
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_CONFIRM,
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT,
    REORDER_BUFFER_CHANGE_MESSAGE,
    REORDER_BUFFER_CHANGE_TRUNCATE,
    REORDER_BUFFER_CHANGE_UPDATE,
    Change,
    ReorderBuffer,
    invalidation_distribution,
)
from ..pg.settings import DEFAULT_MEMORY_BUDGET, DEFAULT_SPILL_THRESHOLD
from ..rmgr import (
    RM_HEAP2_ID,
    RM_HEAP_ID,
    RM_LOGICALMSG_ID,
    RM_SMGR_ID,
    RM_STANDBY_ID,
    RM_XACT_ID,
    RM_XLOG_ID,
)
from ..rmgr import heap as rm_heap
from ..rmgr import xact as rm_xact
from ..rmgr import standby as rm_standby
from ..rmgr.logicalmsg import parse_message
from .snapbuild import SNAPBUILD_CONSISTENT, SNAPBUILD_FULL_SNAPSHOT, SnapBuilder
from ..wal.xlogrecord import DecodedRecord
from ..wal.xlogreader import _end_lsn, decode_in
from .. import _impl
from ..rmgr.heap import (  # heapam_xlog.h, declared once in the rmgr module
    SizeOfHeapDelete,
    SizeOfHeapUpdate,
    SizeOfMultiInsertTuple,
    XLH_DELETE_CONTAINS_OLD,
    XLH_DELETE_IS_SUPER,
    XLH_INSERT_CONTAINS_NEW_TUPLE,
    XLH_INSERT_IS_SPECULATIVE,
    XLH_INSERT_LAST_IN_MULTI,
    XLH_UPDATE_CONTAINS_NEW_TUPLE,
    XLH_UPDATE_CONTAINS_OLD,
    xl_multi_insert_tuple,
)
from ..rmgr.heap import xl_heap_header as _xl_heap_header
from ..rmgr.heap import XLOG_HEAP_OPMASK
from ..rmgr.xact import XLOG_XACT_OPMASK
from ..rmgr.xlog import WAL_LEVEL_LOGICAL, XLOG_PARAMETER_CHANGE, parameter_change_wal_level

_u32 = struct.Struct("<I")
_u16 = struct.Struct("<H")

# Record types each rmgr knowingly ignores (rmgr.heap's table; Spark's phase 1 reads these sets too)
HEAP_IGNORED = rm_heap.record_types(rm_heap.HEAP_IGNORED_TYPES)
HEAP2_IGNORED = rm_heap.record_types(rm_heap.HEAP2_IGNORED_TYPES)




def _wal_level_error(lsn: int, evidence: str) -> DecodeError:
    """Replica-level WAL met by a decoder without the page store that rebuilds its rows (``replica``): one
    that ``decode_wal`` told logical at its start, or one driven by another command (Spark's, diverge)."""
    return DecodeError(f"the WAL was written with wal_level below logical ({evidence}): its heap records lack "
                       "the row data logical decoding needs, which only a reading begun at replica level rebuilds "
                       "from the pages ('waldecode decode' starting at or after this LSN; docs/replica.md)", lsn=lsn)


# -- pure extractors: a record's changes, with no decoder state (decode.c DecodeInsert & co.) ----------
# Each takes a heap/heap2 record and the database being decoded, and returns the changes it
# carries for that database (none for another one).  Usable on any record by itself: the
# sequential decoder gates them with the snapshot builder; a Spark task runs them on one
# segment's records.


def _block0(rec: DecodedRecord):
    b = rec.blocks[0] if rec.blocks and rec.blocks[0].block_id == 0 else rec.block(0)
    if b is None:
        raise DecodeError(f"heap record at {format_lsn(rec.lsn)} has no block 0", lsn=rec.lsn)
    return b


_new_tuple = tuple.__new__  # Change's own __new__ is a Python frame per change


def _change(rec: DecodedRecord, action: int, blk, newtuple, oldtuple, clear_toast: bool = True) -> Change:
    return _new_tuple(Change, (rec.lsn, action, blk.spcOid, blk.relNumber, rec.origin, clear_toast, newtuple,
                               oldtuple, None))


def insert_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeInsert."""
    flags = rec.main_data[2]
    if not flags & XLH_INSERT_CONTAINS_NEW_TUPLE:
        return []
    blk = _block0(rec)
    if blk.dbOid != database:
        return []
    action = (REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT if flags & XLH_INSERT_IS_SPECULATIVE
              else REORDER_BUFFER_CHANGE_INSERT)
    return [_change(rec, action, blk, bytes(blk.data), None)]


def update_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeUpdate."""
    blk = _block0(rec)
    if blk.dbOid != database:
        return []
    flags = rec.main_data[7]
    newtuple = oldtuple = None
    if flags & XLH_UPDATE_CONTAINS_NEW_TUPLE:
        newtuple = bytes(blk.data)
    if flags & XLH_UPDATE_CONTAINS_OLD:
        oldtuple = bytes(rec.main_data[SizeOfHeapUpdate:])
    return [_change(rec, REORDER_BUFFER_CHANGE_UPDATE, blk, newtuple, oldtuple)]


def delete_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeDelete (a super-deletion is the abort of a speculative insertion)."""
    blk = _block0(rec)
    if blk.dbOid != database:
        return []
    flags = rec.main_data[7]
    action = REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT if flags & XLH_DELETE_IS_SUPER else \
        REORDER_BUFFER_CHANGE_DELETE
    oldtuple = None
    if flags & XLH_DELETE_CONTAINS_OLD:
        oldtuple = bytes(rec.main_data[SizeOfHeapDelete:])
    return [_change(rec, action, blk, None, oldtuple)]


def truncate_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeTruncate: the relations travel in the record's main data."""
    if _u32.unpack_from(rec.main_data, 0)[0] != database:
        return []
    return [Change(rec.lsn, REORDER_BUFFER_CHANGE_TRUNCATE, 0, 0, rec.origin, True, None, None,
                   bytes(rec.main_data))]


def confirm_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeSpecConfirm."""
    blk = _block0(rec)
    if blk.dbOid != database:
        return []
    return [_change(rec, REORDER_BUFFER_CHANGE_INTERNAL_SPEC_CONFIRM, blk, None, None)]


def multi_insert_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeMultiInsert: one change per tuple; only the last one of the last record clears TOAST."""
    main = rec.main_data
    flags, ntuples = main[0], _u16.unpack_from(main, 2)[0]
    if not flags & XLH_INSERT_CONTAINS_NEW_TUPLE:
        return []
    blk = _block0(rec)
    if blk.dbOid != database:
        return []
    data = blk.data
    pos = 0
    last = flags & XLH_INSERT_LAST_IN_MULTI
    out = []
    for i in range(ntuples):
        pos += pos & 1  # SHORTALIGN
        if pos + SizeOfMultiInsertTuple > len(data):
            raise DecodeError(f"multi-insert record at {format_lsn(rec.lsn)} is shorter than its "
                              f"{ntuples} tuples", lsn=rec.lsn)
        datalen, infomask2, infomask, hoff = xl_multi_insert_tuple.unpack_from(data, pos)
        pos += SizeOfMultiInsertTuple
        tup = _xl_heap_header.pack(infomask2, infomask, hoff) + bytes(data[pos:pos + datalen])
        pos += datalen
        out.append(_change(rec, REORDER_BUFFER_CHANGE_INSERT, blk, tup, None,
                           clear_toast=bool(last and i + 1 == ntuples)))
    return out


def message_changes(rec: DecodedRecord, database: int) -> list[Change]:
    """DecodeLogicalMsg, transactional: a change queued at the record's end LSN, as
    ReorderBufferQueueMessage is given buf->endptr (a non-transactional message is no change)."""
    main = rec.main_data
    if not main[4] or _u32.unpack_from(main, 0)[0] != database:
        return []
    return [Change(rec.end_lsn, REORDER_BUFFER_CHANGE_MESSAGE, 0, 0, rec.origin, False, None, None, bytes(main))]


# record type -> extractor, per resource manager
HEAP_EXTRACTORS = {
    rm_heap.XLOG_HEAP_INSERT: insert_changes,
    rm_heap.XLOG_HEAP_UPDATE: update_changes,
    rm_heap.XLOG_HEAP_HOT_UPDATE: update_changes,
    rm_heap.XLOG_HEAP_DELETE: delete_changes,
    rm_heap.XLOG_HEAP_TRUNCATE: truncate_changes,
    rm_heap.XLOG_HEAP_CONFIRM: confirm_changes,
}
HEAP2_EXTRACTORS = {rm_heap.XLOG_HEAP2_MULTI_INSERT: multi_insert_changes}


def changes_of(rec: DecodedRecord, database: int) -> list[Change]:
    """The changes a record carries for ``database``: rows and transactional messages (none for most)."""
    if rec.xl_rmid == RM_HEAP_ID:
        fn = HEAP_EXTRACTORS.get(rec.xl_info & XLOG_HEAP_OPMASK)
    elif rec.xl_rmid == RM_HEAP2_ID:
        fn = HEAP2_EXTRACTORS.get(rec.xl_info & XLOG_HEAP_OPMASK)
    elif rec.xl_rmid == RM_LOGICALMSG_ID:
        fn = message_changes
    else:
        return []
    return fn(rec, database) if fn is not None else []


def _hears_invalidations(plugin: OutputPlugin) -> bool:
    """Does ``plugin`` act on catalog cache invalidations (its own ``invalidate``)?  Only it is given the
    ones executed inside transactions; for the others they change nothing."""
    return (type(plugin).invalidate is not OutputPlugin.invalidate
            or type(plugin).invalidate_all is not OutputPlugin.invalidate_all)


def _distribution(catalog: Catalog) -> str | None:
    """How the server of ``catalog`` distributes invalidations (``invalidation_distribution``).  A snapshot
    read from a data directory or a backup knows the major version only (server_version "15",
    server_version_num 150000): its server is taken to be of the major's latest minor release."""
    if "." not in catalog.server_version:
        return invalidation_distribution(catalog.major * 10000 + 9999)
    return invalidation_distribution(catalog.server_version_num)


class NotDecoded(NamedTuple):
    """A transaction that ended inside the WAL read and was not decoded, and why."""

    xid: int
    lsn: int  # of its commit, abort or prepare record
    outcome: str  # "committed", "aborted", "prepared"
    gid: str
    reason: str

    def describe(self) -> str:
        gid = f" (prepared as {self.gid!r})" if self.gid else ""
        return f"transaction {self.xid}{gid} {self.outcome} at {format_lsn(self.lsn)}, not decoded: {self.reason}"


def plugin_replayer(decoder: "LogicalDecoder") -> Replayer:
    """The replayer a ``LogicalDecoder`` builds for itself: each committed transaction's changes decoded
    with the catalog history's view (the snapshot without one) and given to the decoder's plugin."""
    options = decoder.plugin_options
    return Replayer(decoder.catalog, decoder.plugin, decoder.snapshot, options.receive_rewrites,
                    history=decoder.history, warn=decoder.warn, wal_tuples=options.receive_wal_tuples,
                    whole_old_rows=decoder.whole_old_rows)


class LogicalDecoder(TransactionListener):
    """LogicalDecodingProcessRecord for one database, as a slot created at the first record read.

    The reorder buffer learns which subtransactions belong to which transaction, and which
    transactions crashed, from the transaction tracker, as the catalog history does: the decoder
    listens to it on the reorder buffer's behalf."""

    def __init__(self, catalog: Catalog, plugin: OutputPlugin, *, plugin_options: dict | None = None,
                 two_phase: bool = False, spill_dir: str | None = None,
                 spill_threshold: int = DEFAULT_SPILL_THRESHOLD, memory_budget: int = DEFAULT_MEMORY_BUDGET,
                 segment_size: int,
                 start_decoding_at: int = 0, assume_consistent: bool = False, major: int | None = None,
                 catalog_history=True, on_warning=None, reorder_buffer: ReorderBuffer | None = None,
                 snapbuilder: SnapBuilder | None = None, tracker: TransactionTracker | None = None,
                 replayer=plugin_replayer, replica=None, whole_old_rows: bool = False):
        """The parts the decoder drives, as decode.c's LogicalDecodingContext holds them, may be given;
        by default it builds its own from the arguments above.  ``reorder_buffer``, ``snapbuilder``,
        ``tracker``: a ``ReorderBuffer``, ``SnapBuilder``, ``TransactionTracker`` (Spark's driver gives a
        reorder buffer that counts changes instead of keeping them); the native fast path keeps these
        three parts' state itself, so it runs only while each is of exactly those classes.
        ``catalog_history``: True, the decoder's own, following the catalog through the records it
        takes; False, none; or a history built elsewhere that takes no records and answers for the whole
        WAL read (``spark.plan.FrozenCatalogHistory``: the driver's, for Spark's ranges).  ``replayer``:
        called with the decoder, its other parts built, it returns what replays committed transactions
        (``plugin_replayer``, or Spark driver's, which records them).  ``replica``: for WAL written at
        wal_level=replica, a ``replica.ReplicaRows`` that replays each record onto its page store before the
        decoder takes it and gives the heap records' changes from the pages (the Python path only).
        ``whole_old_rows`` (``-o old-rows=full`` on logical-level WAL): an UPDATE or DELETE of a table whose
        records do not carry the whole old row (replica identity other than FULL) is an error
        (``Replayer.whole_old_rows``; the Python path only)."""
        self.catalog = catalog
        self.database = catalog.database_oid
        self.plugin = plugin
        # CreateDecodingContext: the plugin's startup parses its options before anything is decoded
        self.snapshot = CatalogView(catalog, at=self._view_at)
        self.plugin_options = plugin.startup(dict(plugin_options or {}), self.snapshot) or OutputPluginOptions()
        self.two_phase = (two_phase or self.plugin_options.two_phase) and plugin.supports_two_phase()
        self.major = major or catalog.major
        if reorder_buffer is None:
            reorder_buffer = ReorderBuffer(spill_dir, spill_threshold, memory_budget, segment_size=segment_size)
        self.rb = reorder_buffer
        # Catalog cache invalidations as logical decoding executes them, for a plugin that hears them
        # (``invalidate``): a transaction's own at their records among its changes and at its end, and those
        # distributed into it by catalog changes committed while it was open, as its server's minor
        # release does (reorderbuffer.invalidation_distribution)
        self.hears_invalidations = _hears_invalidations(plugin)
        self.distribution = _distribution(catalog) if self.hears_invalidations else None
        self.snapbuild = SnapBuilder(start_decoding_at, assume_consistent) if snapbuilder is None else snapbuilder
        # The confirmed position asked for: every commit from it on must be decoded, or reported
        self.requested_start = start_decoding_at or None
        self.not_decoded: list[NotDecoded] = []
        self.finished_early: dict[int, NotDecoded] = {}  # xid -> how it ended before the consistent point
        self.first_running: tuple[int, set] | None = None  # (LSN, xids) of the first running-xacts record
        self.warnings: list[str] = []  # every Diagnostic, in order
        self.diagnostics = Diagnostics()  # the same, by cause
        self.on_warning = on_warning
        # the one transaction tracker: the history listens to it
        self.txns = TransactionTracker(self.major) if tracker is None else tracker
        self.txns.subscribe(self)
        if catalog_history is True:
            history = CatalogHistory(catalog, self.major, warn=self.warn, txns=self.txns)
        else:
            # none, or one built elsewhere that takes no records (the driver's, for Spark's ranges)
            history = catalog_history or None
        if history is not None and not history.active:
            self.warn(history.inactive_reason)
            history = None
        self.history = history
        self.whole_old_rows = whole_old_rows
        self.replayer = replayer(self)
        # decode_framed's native loop reads and writes these parts' state as their own classes keep it
        self.replica = replica
        if replica is not None:
            # DDL in the range: the catalog from the redone catalog pages
            replica.follow(history, self.txns, self.hears_invalidations, self.warn)
        self.native_parts = (type(self.rb) is ReorderBuffer and type(self.snapbuild) is SnapBuilder
                             and type(self.txns) is TransactionTracker and replica is None and not whole_old_rows)
        # record type -> extractor, per rmgr: the records' own tuples, or at wal_level=replica the pages'
        self._extractors = {RM_HEAP_ID: HEAP_EXTRACTORS, RM_HEAP2_ID: HEAP2_EXTRACTORS}
        if replica is not None:
            self._extractors = {rmid: {**table, **replica.extractors.get(rmid, {})}
                                for rmid, table in self._extractors.items()}
        self.crashed: list = []  # transactions dropped by ReorderBufferAbortOld (reorderbuffer.TXN)
        self._filter_origin = plugin.filter_by_origin  # FilterByOrigin, asked per change
        self._dispatch = {
            RM_XLOG_ID: self._xlog,
            RM_XACT_ID: self._xact,
            RM_STANDBY_ID: self._standby,
            RM_HEAP2_ID: self._heap2,
            RM_HEAP_ID: self._heap,
            RM_LOGICALMSG_ID: self._logicalmsg,
        }
        if replica is not None:
            self._dispatch[RM_SMGR_ID] = self._replica_smgr

    def _view_at(self, lsn: int) -> CatalogView:
        """CatalogView.at: the committed catalog at ``lsn``, from the history once there is one."""
        history = getattr(self, "history", None)
        if history is None:
            return self.snapshot
        view = history.view(lsn, 0)
        return self.snapshot if view is self.catalog else CatalogView(view, view.output_context)

    def warn(self, message: str) -> None:
        """A diagnostic (``diagnostics.Diagnostic``, or a plain message: one that fails the run)."""
        d, _first = self.diagnostics.add(message)
        self.warnings.append(d)
        if not d.lacks:
            # a note: it fails the run once a row change it may concern is decoded after it
            self.replayer.watch(d, self.diagnostics.escalate)
        if self.on_warning is not None:
            self.on_warning(d)

    # -- what the transaction tracker tells ---------------------------------------------------------

    def subxact_assigned(self, top: int, sub: int, lsn: int) -> None:
        self.rb.assign_child(top, sub, lsn)

    def running_xacts(self, ev: RunningXacts) -> None:
        self.crashed.extend(self.rb.abort_crashed(ev.crashed))

    # -- per record ----------------------------------------------------------------------------

    def process(self, rec: DecodedRecord) -> None:
        if self.replica is not None:
            self.replica.redo(rec)  # the pages as this record leaves them, before its changes are read
        self.txns.process(rec)  # assignments and crashed transactions reach the reorder buffer from here
        if self.history is not None:
            self.history.process(rec)
        handler = self._dispatch.get(rec.xl_rmid)
        if handler is None:
            self.rb.process_xid(rec.xl_xid, rec.lsn)
        else:
            handler(rec)

    def process_framed(self, path, records: list, start: int, after=None) -> None:
        """``process`` for one segment's framed records (``XLogReader.frames()``: ``(lsn, raw_end,
        bytes)``, those before ``start`` skipped); ``after(rec)`` is called with every record
        decoded here.  Under Cython the common records are decoded and queued in C, and plain
        transactions written at their commit (``waldecode._logical.decode_framed``), ``after`` then
        called every 1024 of those only."""
        decode = _impl.decode_record
        major = self.major
        process = self.process

        def slow(rec: bytes, lsn: int, end_lsn: int) -> None:
            r = decode_in(decode, rec, lsn, end_lsn, major, path)
            process(r)
            if after is not None:
                after(r)

        logical = _impl.logical() if self.native_parts else None
        if logical is not None:
            tick = None
            if after is not None:
                def tick(rec: bytes, lsn: int, end_lsn: int) -> None:
                    after(decode_in(decode, rec, lsn, end_lsn, major, path))
            logical.decode_framed(self, records, start, major, slow, tick)
            return
        seg_size = self.rb.segment_size
        for lsn, raw_end, rec in records:
            if lsn >= start:
                slow(rec, lsn, _end_lsn(rec, lsn, raw_end, seg_size))

    def _xlog(self, rec: DecodedRecord) -> None:
        # Checkpoints, switches, FPIs...: nothing for decoding offline (no serialized snapshots;
        # full-page images of catalog pages went to the catalog history).
        self.rb.process_xid(rec.xl_xid, rec.lsn)
        if rec.xl_info & 0xF0 == XLOG_PARAMETER_CHANGE and self.replica is None:
            wal_level = parameter_change_wal_level(rec.main_data)
            if wal_level < WAL_LEVEL_LOGICAL:
                raise _wal_level_error(rec.lsn, f"a parameter change record sets wal_level to {wal_level}")

    def _standby(self, rec: DecodedRecord) -> None:
        self.rb.process_xid(rec.xl_xid, rec.lsn)
        info = rec.xl_info & 0xF0
        if info == rm_standby.XLOG_RUNNING_XACTS:
            xcnt, subxcnt, _overflow, nextXid, oldestRunningXid, _latest = \
                rm_standby.xl_running_xacts.unpack_from(rec.main_data, 0)
            if self.first_running is None:
                # What was running where the builder started: those transactions began before it
                self.first_running = (rec.lsn, set(struct.unpack_from(
                    f"<{xcnt + subxcnt}I", rec.main_data, rm_standby.xl_running_xacts.size)))
            self.snapbuild.process_running_xacts(rec.lsn, rec.end_lsn, nextXid, oldestRunningXid)
        elif info not in (rm_standby.XLOG_STANDBY_LOCK, rm_standby.XLOG_INVALIDATIONS):
            raise DecodeError(f"unexpected RM_STANDBY_ID record type: {info}", lsn=rec.lsn)

    def _heap(self, rec: DecodedRecord) -> None:
        xid = rec.xl_xid
        rb = self.rb
        rb.process_xid(xid, rec.lsn)
        if self.snapbuild.state < SNAPBUILD_FULL_SNAPSHOT:
            return
        info = rec.xl_info & XLOG_HEAP_OPMASK
        extract = self._extractors[RM_HEAP_ID].get(info)
        if extract is not None:
            if self._process_change(xid, rec.lsn):
                self._queue(rec, extract)
        elif info == rm_heap.XLOG_HEAP_INPLACE:
            # Only catalog tuples are updated in place: the transaction changed the catalog
            if xid:
                self._process_change(xid, rec.lsn)
                rb.set_catalog_changes(xid, rec.lsn)
        elif info not in HEAP_IGNORED:
            raise DecodeError(f"unexpected RM_HEAP_ID record type: {info}", lsn=rec.lsn)

    def _heap2(self, rec: DecodedRecord) -> None:
        xid = rec.xl_xid
        self.rb.process_xid(xid, rec.lsn)
        if self.snapbuild.state < SNAPBUILD_FULL_SNAPSHOT:
            return
        info = rec.xl_info & XLOG_HEAP_OPMASK
        extract = self._extractors[RM_HEAP2_ID].get(info)
        if extract is not None:
            if self._process_change(xid, rec.lsn):
                self._queue(rec, extract)
        elif info == rm_heap.XLOG_HEAP2_NEW_CID:
            # SnapBuildProcessNewCid: the transaction changed the catalog
            self.rb.set_catalog_changes(xid, rec.lsn)
        elif info not in HEAP2_IGNORED:
            raise DecodeError(f"unexpected RM_HEAP2_ID record type: {info}", lsn=rec.lsn)

    def _replica_smgr(self, rec: DecodedRecord) -> None:
        """Below logical, a TRUNCATE of a table created or given new storage earlier in its transaction
        is an XLOG_SMGR_TRUNCATE (heap_truncate_one_rel) and no XLOG_HEAP_TRUNCATE: DecodeTruncate's part."""
        self.rb.process_xid(rec.xl_xid, rec.lsn)
        if self.snapbuild.state < SNAPBUILD_FULL_SNAPSHOT:
            return
        changes = self.replica.smgr_changes(rec)
        if changes and self._process_change(rec.xl_xid, rec.lsn):
            self._queue(rec, lambda rec, database: changes)

    def _queue(self, rec: DecodedRecord, extract) -> None:
        if self._filter_origin(rec.origin):
            return  # FilterByOrigin: the plugin does not want this origin's changes
        queue = self.rb.queue_change
        for change in extract(rec, self.database):
            queue(rec.xl_xid, change)

    def _process_change(self, xid: int, lsn: int) -> bool:
        """SnapBuildProcessChange: may the change be collected? Sets the base snapshot."""
        if not self.snapbuild.process_change(xid):
            return False
        self.rb.set_base_snapshot(xid, lsn)
        return True

    def _logicalmsg(self, rec: DecodedRecord) -> None:
        xid = rec.xl_xid
        self.rb.process_xid(xid, rec.lsn)
        sb = self.snapbuild
        if sb.state < SNAPBUILD_FULL_SNAPSHOT:
            return
        main = rec.main_data
        dbId, transactional = _u32.unpack_from(main, 0)[0], main[4]
        if transactional and not self._process_change(xid, rec.lsn):
            return
        if not transactional and (sb.state != SNAPBUILD_CONSISTENT or sb.xact_needs_skip(rec.lsn)):
            return
        if dbId != self.database or self._filter_origin(rec.origin):
            return
        if transactional:
            self._queue(rec, message_changes)
        else:
            _t, prefix, content = parse_message(main)
            txn = self.rb.txn_by_xid(xid, False) if xid else None
            # ReorderBufferQueueMessage: the transaction it was written in, if any, still open
            ptxn = Transaction(xid, txn.first_lsn, 0, 0, 0) if txn is not None else None
            self.plugin.message(ptxn, rec.end_lsn, False, prefix, content)

    # -- transactions --------------------------------------------------------------------------

    def _xact(self, rec: DecodedRecord) -> None:
        rb = self.rb
        rb.process_xid(rec.xl_xid, rec.lsn)
        info = rec.xl_info & XLOG_XACT_OPMASK
        if info == rm_xact.XLOG_XACT_ASSIGNMENT:
            return  # the transaction tracker told the reorder buffer
        ended = self.snapbuild.state >= SNAPBUILD_FULL_SNAPSHOT
        if info == rm_xact.XLOG_XACT_INVALIDATIONS:
            # The catalog history follows the catalog rows themselves, not invalidations; but they
            # mark the transaction as one that changed the catalog (xact_decode) and, for a plugin
            # that hears them, are gathered and queued in it (ReorderBufferAddInvalidations); those
            # of a transaction without xid (VACUUM's in-place updates) are executed at once
            # (ReorderBufferImmediateInvalidation)
            if not ended:
                return
            nmsgs = struct.unpack_from("<i", rec.main_data, 0)[0]
            msgs = bytes(rec.main_data[4:4 + nmsgs * rm_xact.SizeOfSharedInvalidationMessage])
            if rec.xl_xid:
                if self.hears_invalidations:
                    rb.add_invalidations(rec.xl_xid, rec.lsn, msgs)  # executed at this point of its replay
                rb.set_catalog_changes(rec.xl_xid, rec.lsn)
            else:
                self.plugin.invalidate(msgs)
            return
        ev = self.txns.event_of(rec)
        if ev is None:
            raise DecodeError(f"unexpected RM_XACT_ID record type: {info}", lsn=rec.lsn)
        if self.replica is not None:
            self.replica.ended(ev)  # refuses a commit of DDL the catalog snapshot does not hold
        if not ended:
            # xact_decode bails out here; offline, what ended is still told, never left "open"
            self._ended_before_snapshot(rec, ev)
            return
        parsed, xid = ev.parsed, ev.xid
        if info in (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED):
            two_phase = info == rm_xact.XLOG_XACT_COMMIT_PREPARED and self._decode_prepared(xid, ev.gid)
            self._decode_commit(rec, parsed, xid, two_phase)
        elif info in (rm_xact.XLOG_XACT_ABORT, rm_xact.XLOG_XACT_ABORT_PREPARED):
            two_phase = info == rm_xact.XLOG_XACT_ABORT_PREPARED and self._decode_prepared(xid, ev.gid)
            self._decode_abort(rec, parsed, xid, two_phase)
        elif not self._decode_prepared(xid, ev.gid):  # XLOG_XACT_PREPARE, decoded at COMMIT PREPARED
            # FilterPrepare: not DecodePrepare's, so not marked RBTXN_PREPARE
            rb.prepare(xid, ev.gid, rec.lsn, rec.end_lsn, self._prepare_time(parsed), remember=False)
        else:
            self._decode_prepare(rec, parsed)

    def _ended_before_snapshot(self, rec: DecodedRecord, ev: XactEvent) -> None:
        rb = self.rb
        if ev.info == rm_xact.XLOG_XACT_PREPARE:
            rb.prepare(ev.xid, ev.gid, rec.lsn, rec.end_lsn, self._prepare_time(ev.parsed), remember=False)
            self._ended_early(ev.xid, rec, "prepared", ev.gid, ev.dbId)
            return
        gid = ev.gid
        if not gid:
            txn = rb.txn_by_xid(ev.xid, False)
            gid = txn.gid if txn is not None else ""
        # No change of these was collected (SnapBuildProcessChange refuses them before FULL_SNAPSHOT)
        for sub in ev.subxacts:
            rb.forget(sub)
        rb.forget(ev.xid)
        committed = ev.info in (rm_xact.XLOG_XACT_COMMIT, rm_xact.XLOG_XACT_COMMIT_PREPARED)
        self._ended_early(ev.xid, rec, "committed" if committed else "aborted", gid, ev.dbId, ev.subxacts)

    def _ended_early(self, xid: int, rec: DecodedRecord, outcome: str, gid: str, dbId: int,
                     subxacts=()) -> None:
        reason = "before the consistent point"
        if self.first_running is not None and ({xid, *subxacts} & self.first_running[1]):
            reason += (f": it was running at the first running-xacts record read ({format_lsn(self.first_running[0])}),"
                       " so it began before")
        nd = NotDecoded(xid, rec.lsn, outcome, gid or "", reason)
        self.finished_early[xid] = nd
        if outcome == "committed" and self._wanted(rec.lsn, dbId, rec.origin):
            self.not_decoded.append(nd)

    def _wanted(self, lsn: int, dbId: int, origin: int) -> bool:
        """Is a transaction ending at ``lsn`` one the caller asked for (at or after the requested start)?"""
        return (self.requested_start is not None and lsn >= self.requested_start
                and dbId in (0, self.database) and not self._filter_origin(origin))

    def _decode_prepared(self, xid: int, gid: str) -> bool:
        """not FilterPrepare(): is this transaction decoded at PREPARE time?"""
        return self.two_phase and not self.plugin.filter_prepare(xid, gid)

    def _needs_skip(self, lsn: int, dbId: int, origin: int) -> bool:
        """DecodeTXNNeedsSkip."""
        return (self.snapbuild.xact_needs_skip(lsn) or (dbId != 0 and dbId != self.database)
                or self._filter_origin(origin))

    @staticmethod
    def _commit_time(parsed) -> int:
        return parsed.origin_timestamp if parsed.xinfo & rm_xact.XACT_XINFO_HAS_ORIGIN else parsed.xact_time

    @staticmethod
    def _prepare_time(parsed) -> int:
        return parsed.origin_timestamp if parsed.origin_lsn else parsed.xact_time

    @staticmethod
    def _plugin_txn(txn, rec: DecodedRecord, parsed, xact_time: int) -> Transaction:
        """The plugin's view of ``txn``, ended by ``rec``."""
        return Transaction(txn.xid, txn.first_lsn, rec.lsn, rec.end_lsn, xact_time, rec.origin, parsed.origin_lsn,
                           txn.gid or parsed.twophase_gid or None, parsed.msgs)

    def _decode_commit(self, rec: DecodedRecord, parsed, xid: int, two_phase: bool) -> None:
        rb = self.rb
        if not parsed.xinfo & rm_xact.XACT_XINFO_HAS_DBINFO:
            # XactLogCommitRecord adds the database to every commit when wal_level is logical
            if self.replica is None:
                raise _wal_level_error(rec.lsn, f"the commit record of transaction {xid} has no database info")
            parsed = parsed._replace(dbId=self.replica.database_of(xid, parsed.subxacts))
        if parsed.msgs:
            rb.set_catalog_changes(xid, rec.lsn)  # DecodeCommit: the commit carries invalidations
            if self.replica is not None and self.hears_invalidations:
                # below logical no XLOG_XACT_INVALIDATIONS gathered them: the commit's are the transaction's
                # (ReplicaCatalog refuses a row change after them, which logical level has them executed before)
                rb.add_invalidations(xid, rec.lsn, parsed.msgs)
        self.snapbuild.commit_txn(rec.lsn, xid)
        if rb.has_catalog_changes(xid, parsed.subxacts):
            # SnapBuildCommitTxn: a transaction that changed the catalog gets a base snapshot at its
            # commit if it has none ("we might need to execute invalidations"), so even one without
            # a change of its own is replayed: an empty BEGIN/COMMIT
            rb.set_base_snapshot(xid, rec.lsn)
            # SnapBuildDistributeSnapshotAndInval, skipped or not: its invalidations go into the
            # transactions still open, for the caches their replay builds before this commit
            rb.distribute_invalidations(xid, rec.lsn, self.distribution)
        if self._needs_skip(rec.lsn, parsed.dbId, rec.origin):
            if self.snapbuild.state < SNAPBUILD_CONSISTENT:
                self._ended_early(xid, rec, "committed", parsed.twophase_gid or "", parsed.dbId, parsed.subxacts)
            for sub in parsed.subxacts:
                rb.forget(sub)
            txn = rb.txn_by_xid(xid, False)
            if txn is not None and txn.has_base_snapshot and txn.invalidations:
                self.plugin.invalidate(txn.invalidations)  # ReorderBufferForget
            rb.forget(xid)
            return
        for sub in parsed.subxacts:
            rb.commit_child(xid, sub, rec.lsn, rec.end_lsn)
        commit_time = self._commit_time(parsed)
        if two_phase:
            txn = rb.txn_by_xid(xid, False)
            if txn is None:
                return
            self.plugin.commit_prepared(self._plugin_txn(txn, rec, parsed, commit_time), rec.lsn)
            self._finish_prepared_invalidations(txn)
            rb.cleanup(txn)
            return
        txn = rb.txn_by_xid(xid, False)
        if txn is None:
            return
        txn.final_lsn = rec.lsn
        txn.end_lsn = rec.end_lsn
        if not txn.has_base_snapshot:
            if parsed.msgs:
                self.plugin.invalidate(parsed.msgs)  # ReorderBufferReplay without a base snapshot
            rb.cleanup(txn)
            return
        ptxn = self._plugin_txn(txn, rec, parsed, commit_time)
        try:
            self.replayer.replay(ptxn, rb.iter_changes(txn, runs=True), lambda: self.plugin.commit(ptxn, rec.lsn),
                                 first_lsn=txn.first_change_lsn())
            self._replayed_invalidations(txn)
        finally:
            rb.cleanup(txn)

    def _decode_abort(self, rec: DecodedRecord, parsed, xid: int, two_phase: bool) -> None:
        rb = self.rb
        for sub in parsed.subxacts:
            rb.abort(sub)
        if two_phase and not self._needs_skip(rec.lsn, parsed.dbId, rec.origin):
            txn = rb.txn_by_xid(xid, False)
            if txn is not None:
                self.plugin.rollback_prepared(self._plugin_txn(txn, rec, parsed, self._commit_time(parsed)),
                                              txn.end_lsn, txn.xact_time)
                self._finish_prepared_invalidations(txn)
                rb.cleanup(txn)
            return
        rb.abort(xid)

    def _decode_prepare(self, rec: DecodedRecord, parsed) -> None:
        rb = self.rb
        xid = parsed.twophase_xid
        if self._needs_skip(rec.lsn, parsed.dbId, rec.origin):
            if self.snapbuild.state < SNAPBUILD_CONSISTENT:
                self._ended_early(xid, rec, "prepared", parsed.twophase_gid, parsed.dbId)
            txn = rb.prepare(xid, parsed.twophase_gid, rec.lsn, rec.end_lsn, self._prepare_time(parsed))
            if txn.has_base_snapshot and txn.invalidations:
                self.plugin.invalidate(txn.invalidations)  # ReorderBufferInvalidate
            return  # ReorderBufferSkipPrepare: decoded at COMMIT PREPARED instead
        for sub in parsed.subxacts:
            rb.commit_child(xid, sub, rec.lsn, rec.end_lsn)
        prepare_time = self._prepare_time(parsed)
        txn = rb.prepare(xid, parsed.twophase_gid, rec.lsn, rec.end_lsn, prepare_time, create=False)
        if txn is None:
            return
        if txn.has_base_snapshot:
            ptxn = self._plugin_txn(txn, rec, parsed, prepare_time)
            self.replayer.replay(ptxn, rb.iter_changes(txn, runs=True), lambda: self.plugin.prepare(ptxn, rec.lsn),
                                 prepare=True, first_lsn=txn.first_change_lsn())
            self._replayed_invalidations(txn)
        # The transaction stays known, without its changes, until COMMIT/ROLLBACK PREPARED
        rb.truncate(txn)

    def _replayed_invalidations(self, txn) -> None:
        """The end of ReorderBufferProcessTXN ("make sure there's no cache pollution"): the transaction's
        own invalidations, then those distributed into it — or every cache when it was given more than it
        keeps (RBTXN_DISTR_INVAL_OVERFLOWED: InvalidateSystemCaches)."""
        if txn.distr_inval_overflowed:
            self.plugin.invalidate_all()
            return
        if txn.invalidations:
            self.plugin.invalidate(txn.invalidations)
        if txn.invalidations_distributed:
            self.plugin.invalidate(txn.invalidations_distributed)

    def _finish_prepared_invalidations(self, txn) -> None:
        """ReorderBufferFinishPrepared's cleanup, after COMMIT or ROLLBACK PREPARED: its own invalidations."""
        if txn.invalidations:
            self.plugin.invalidate(txn.invalidations)

    # -- end -----------------------------------------------------------------------------------

    def finish(self, include_uncommitted: bool = False, hint: str = "start earlier or read further",
               ended: bool = True):
        """The transactions left open at the end of the WAL read; spill files are removed.

        With ``include_uncommitted``, the changes of each open transaction are replayed
        too, in first-LSN order, ended by the plugin's ``uncommitted`` line instead of a
        commit: what a crashed or cut-off primary had in flight.  The plugin is shut down.
        ``ended``: reading came to its end; otherwise an error stopped it, and it alone is reported.
        """
        if self.snapbuild.state < SNAPBUILD_CONSISTENT and ended:
            self.warn("no consistent point was reached: the WAL read holds no XLOG_RUNNING_XACTS record that "
                       "lets decoding start (one is written at every checkpoint and about every 15 s of "
                       f"activity); {hint}")
        open_txns = self.rb.open_transactions()
        try:
            if include_uncommitted:
                for txn in list(self.rb.toplevel.values()):
                    # a prepared transaction decoded at PREPARE kept nothing: its changes were printed
                    if txn.has_base_snapshot and not (txn.prepared and not txn.total_changes):
                        ptxn = Transaction(txn.xid, txn.first_lsn, 0, 0, 0, gid=txn.gid or None)
                        self.replayer.replay(ptxn, self.rb.iter_changes(txn, runs=True),
                                             lambda ptxn=ptxn: self.plugin.uncommitted(ptxn),
                                             first_lsn=txn.first_change_lsn())
        finally:
            self.rb.close()
            self.plugin.shutdown()
        return open_txns
