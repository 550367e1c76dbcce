# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython hot path of logical decoding: the reorder buffer's change storage and the record loop.

``ChangeBuffer`` holds a (sub)transaction's queued changes as bytes, one arena per
transaction: each change is the spill format's header (``reorderbuffer._ChangeHeader``)
followed by its tuples, so the memory budget counts those bytes and a spill writes them
out as they are.  ``logical.reorderbuffer.ChangeList`` is the pure-Python reference with
the same API (Change tuples in a list, the same byte counts and spill batches).

``decode_framed`` runs ``LogicalDecoder.process`` over one segment's framed records for
the records that are most of any WAL: a heap insert, update, delete or multi-insert of a
transaction, once the snapshot is consistent, is queued straight from the record bytes
into its transaction's ``ChangeBuffer``; records that decoding ignores (indexes, pruning,
visibility, row locks) are passed over.  A transaction's first record (of no toplevel xid)
registers it as the tracker and the reorder buffer would.  A plain COMMIT (``_Decoding.commit``
says which: no subtransaction, invalidation, catalog change, origin, two-phase part, of our
database, nothing spilled, every change a row the plugin's row writer prints) is written
whole here — the plugin's BEGIN and COMMIT lines (``txn_lines``), its rows (``row_writer``,
as ``replay`` below appends them) — and the transaction forgotten, as the decoder, the
tracker and an idle catalog history would.  Every other record — standby and XLOG records,
other commits, aborts, catalog pages the catalog history follows, subtransactions, anything
the checks below do not accept — is decoded into a ``DecodedRecord`` and handed to the
Python decoder (``slow``), which stays the one place of decode.c's rules.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython cimport array
from cpython.dict cimport PyDict_GetItem, PyDict_Next, PyDict_SetItem
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from cpython.ref cimport PyObject
from cpython.set cimport PySet_Contains, PySet_Discard
from libc.stdlib cimport qsort
from libc.string cimport memcpy, memset

from pgconsts cimport *
from pgdefs cimport *
# DecodeXLogRecord, the one of every extension (native/wd_xlogrecord.h)
# test_decoding's row line, written from the change arena's bytes (native/waldecode/_typeout.pxd)
from waldecode._typeout cimport append_change_at
from wd_xlogrecord cimport WD_DECODE_OK, WdDecodedBkpBlock, WdDecodedXLogRecord, wd_DecodeXLogRecord

from bisect import bisect_left

from waldecode.errors import WALError
from waldecode.logical.replay import UNMAPPED
from waldecode.logical.reorderbuffer import Change

# A NamedTuple's own __new__ is Python code (a frame per call)
cdef object _tuple_new = tuple.__new__

import array as _array
cdef array.array _Q = _array.array("Q")  # array.clone's template for 64-bit columns

# The most changes a transaction may hold to be committed by _Decoding.commit: the per-transaction
# cost it saves is nothing next to a larger one's changes
cdef enum:
    FAST_COMMIT_MAX_CHANGES = 64

cdef inline void _put_u32(unsigned char *p, unsigned int v) noexcept nogil:
    memcpy(p, &v, 4)


# -- the change store (logical/changes.pxi) -------------------------------------------------------

include "logical/changes.pxi"


# -- the transaction --------------------------------------------------------------------------------

cdef class TXN:
    """``reorderbuffer.TXN`` (ReorderBufferTXN), one (sub)transaction, as a class owning its fields in C:
    made by ``reorderbuffer.new_txn`` under the Cython implementation, so that the record loop below reads
    and writes them as fields of a struct where the reference's are Python attributes (and makes one
    without running Python code).  The same attributes, properties and method as the reference."""

    cdef public object xid
    cdef public unsigned long long first_lsn
    cdef public object final_lsn
    cdef public object end_lsn
    cdef public object toptxn              # its top-level TXN, or None
    cdef public list subtxns
    cdef public object changes             # a ChangeBuffer
    cdef public Py_ssize_t nentries        # all changes, spilled ones included
    cdef public dict spill_files           # segment number -> path, in the order first written
    cdef public bint has_base_snapshot
    cdef public bint is_known_as_subxact
    cdef public bint prepared
    cdef public bint prepare_remembered
    cdef public bint has_catalog_changes
    cdef public bint distr_inval_overflowed
    cdef public object gid
    cdef public object xact_time
    cdef public object origin
    cdef public object invalidations
    cdef public object invalidations_distributed
    cdef public object inval_changes       # a list of Change, or None

    def __init__(self, xid, unsigned long long first_lsn, changes=None):
        self.xid = xid
        self.first_lsn = first_lsn
        self.final_lsn = 0
        self.end_lsn = 0
        self.toptxn = None
        self.subtxns = []
        self.changes = ChangeBuffer() if changes is None else changes
        self.nentries = 0
        self.spill_files = {}
        self.gid = ""
        self.xact_time = 0
        self.origin = 0
        self.invalidations = b""
        self.invalidations_distributed = b""
        self.inval_changes = None

    @property
    def nentries_mem(self):
        return len(self.changes)

    @property
    def size(self):
        return self.changes.nbytes

    @property
    def total_changes(self):
        return self.nentries + sum((<TXN>s).nentries for s in self.subtxns)

    def first_change_lsn(self):
        return min(self.first_lsn, *(s.first_lsn for s in self.subtxns)) if self.subtxns else self.first_lsn


cdef inline TXN _native_txn(PyObject *found):
    """The TXN at ``found`` (a borrowed reference from the reorder buffer's dict), or None when it is not
    one of this class (a reference TXN: the implementation was switched while transactions were open)."""
    if found == NULL or type(<object>found) is not TXN:
        return None
    return <TXN>found


# -- the record loop --------------------------------------------------------------------------------

cdef class _Decoding:
    """What the fast paths read of the Python decoder, fetched again after every record it hands
    to the decoder (which may change any of it)."""

    cdef object decoder
    cdef object rb
    cdef object by_xid                  # ReorderBuffer.by_xid
    cdef object toplevel                # ReorderBuffer.toplevel
    cdef object open_xids               # TransactionTracker.open
    cdef object top_of                  # TransactionTracker.top_of
    cdef object history
    cdef object nodes                   # the catalogs the history follows: relfilenumber -> OID
    cdef object commit_lsns             # CatalogTimeline.commit_lsns: where the catalog changed
    cdef object timeline_txns           # CatalogTimeline.txns: transactions with catalog rows of their own
    # Replayer.whole_catalog's last answer: the catalog (Replayer.shown) it made the one in force, and how
    # many commit_lsns there were
    cdef object latest
    cdef Py_ssize_t latest_epochs
    cdef unsigned long long epoch_lo, epoch_hi  # latest's epoch: the LSNs (lo, hi] its catalog serves
    cdef int state
    cdef unsigned long long start_decoding_at
    cdef unsigned int database
    cdef bint filter_local              # FilterByOrigin for changes of no origin
    cdef object filter_origin
    cdef Py_ssize_t spill_threshold
    cdef long long memory_budget
    # ReorderBuffer.size as of the last refresh, with what was queued and freed here since: written
    # back (sync_size) before any Python code of the decoder runs, and at the end
    cdef long long size
    cdef bint size_dirty
    cdef unsigned char handled[256]     # rmids with a handler in LogicalDecoder._dispatch: 1 (heap: 2)
    # the commit path (``commit``), set up by init_commits
    cdef bint commits                   # the plugin, the replayer and the listeners allow it
    cdef bint quiet                     # ... and, as of the last refresh, the catalog allows it
    cdef object replayer
    cdef object plugin
    cdef object output                  # the plugin's OutputWriter
    cdef object out_buf                 # its buffer
    cdef Py_ssize_t block_size          # its block size
    cdef Py_ssize_t unreported          # row lines appended and not yet told to the plugin (rows_written)
    cdef object targets                 # Replayer.row_targets: (spc, relnumber) -> row_target's answer
    cdef object row_target
    cdef object toast                   # apply.ToastLookup of a transaction that wrote no TOAST value
    cdef object lines_begin, lines_rows, lines_commit  # the plugin's ``txn_lines`` (a _typeout.TxnLines)

    cdef refresh(self):
        d = self.decoder
        self.rb = d.rb
        self.by_xid = self.rb.by_xid
        self.toplevel = self.rb.toplevel
        self.open_xids = d.txns.open
        self.top_of = d.txns.top_of
        self.history = d.history
        self.nodes = self.history.redo.nodes if self.history is not None else None
        if self.history is not None:
            self.commit_lsns = self.history.timeline.commit_lsns
            self.timeline_txns = self.history.timeline.txns
        sb = d.snapbuild
        self.state = sb.state
        self.start_decoding_at = sb.start_decoding_at
        self.spill_threshold = self.rb.spill_threshold
        self.memory_budget = self.rb.memory_budget
        self.size = self.rb.size
        self.size_dirty = False
        self.quiet = self.commits and self.catalog_quiet()

    cdef bint catalog_quiet(self) except -1:
        """Does a commit change nothing in the catalog history but its position (``CatalogHistory.txn_committed``
        of an idle history), with no note watched (whose row changes ``Replayer`` must check)?  Only the
        Python decoder changes either.  Which catalog serves a transaction ``commit`` asks per commit."""
        h = self.history
        return not self.replayer.watching() and (h is None or h.idle())

    cdef init_commits(self):
        """Whether ``commit`` may write plain commits: the plugin gives ``txn_lines``, the replayer
        takes WAL tuples, and the transaction tracker's listeners are the decoder, which does nothing
        at a commit, and the catalog history, whose ``txn_committed`` ``catalog_quiet`` answers for."""
        from waldecode.catalog.history import CatalogHistory
        from waldecode.logical.replay import ToastLookup
        from waldecode.xact import TransactionListener

        d = self.decoder
        self.commits = False
        self.replayer = r = d.replayer
        self.plugin = d.plugin
        txn_lines = getattr(self.plugin, "txn_lines", None)
        if txn_lines is None or not r.wal_tuples or r.history is not d.history:
            return
        if type(d).txn_committed is not TransactionListener.txn_committed:
            return
        if (d.history is not None and d.history in d.txns.listeners
                and type(d.history).txn_committed is not CatalogHistory.txn_committed):
            return
        for listener in d.txns.listeners:
            if listener is not d and listener is not d.history:
                return
        w = txn_lines()
        if w is None:
            return
        lines, self.output = w
        self.lines_begin, self.lines_rows, self.lines_commit = lines.begin, lines.rows_begin, lines.commit
        self.out_buf = self.output.buffer
        self.block_size = self.output.block_size
        self.targets = r.row_targets
        self.row_target = r.row_target
        self.toast = ToastLookup({})
        self.commits = True

    cdef init_handled(self):
        memset(self.handled, 0, sizeof(self.handled))
        for rmid in self.decoder._dispatch:
            self.handled[<unsigned char>rmid] = 1
        if self.history is not None:
            self.handled[RM_RELMAP_ID] = 1  # the catalog history follows the relation mapper
        self.handled[RM_HEAP_ID] = self.handled[RM_HEAP2_ID] = 2  # decoded here

    cdef int queued(self, TXN txn, ChangeBuffer store, Py_ssize_t size) except -1:
        """ReorderBuffer.queue_change's bookkeeping after a change went into ``store``."""
        txn.nentries += 1
        self.size += size
        self.size_dirty = True
        if store.count >= self.spill_threshold:
            self.sync_size()
            self.rb.spill(txn)
            self.size = self.rb.size
        if self.size > self.memory_budget:
            self.sync_size()
            self.rb.enforce_budget()
            self.size = self.rb.size
        return 0

    cdef int sync_size(self) except -1:
        """Write ``size`` back to the reorder buffer."""
        if self.size_dirty:
            self.rb.size = self.size
            self.size_dirty = False
        return 0

    cdef TXN register(self, unsigned int xid, unsigned long long lsn):
        """What the Python decoder does at a transaction's first record, of no toplevel xid, besides
        decoding it: TransactionTracker.process, ReorderBufferProcessXid.  The new TXN."""
        key = xid
        self.open_xids.add(key)
        # ReorderBuffer.txn_by_xid's creation, its store given
        txn = TXN(key, lsn, ChangeBuffer())
        self.by_xid[key] = txn
        self.toplevel[key] = txn
        return txn

    cdef int fast(self, const unsigned char *r, WdDecodedXLogRecord *h, unsigned long long lsn) except -1:
        """Decode one record without Python objects: 1 when done, 0 to hand it to the decoder."""
        cdef unsigned int rmid = r[17], op = r[16] & XLOG_HEAP_OPMASK, xid = h.xl_xid
        cdef const WdDecodedBkpBlock *b0 = &h.blocks[0]  # the heap page's (when h.nblocks)
        cdef unsigned int flags, ntuples, datalen, k
        cdef int action
        cdef Py_ssize_t ln, lo, pos, size
        cdef unsigned char *p
        cdef PyObject *found
        cdef ChangeBuffer store
        cdef bint first = False
        cdef TXN txn = None
        if xid:
            key = xid
            found = PyDict_GetItem(self.by_xid, key)
            if found != NULL and PySet_Contains(self.open_xids, key):
                txn = _native_txn(found)  # the transaction tracker and the reorder buffer know it already
                if txn is None:
                    return 0
            elif found == NULL and not PySet_Contains(self.open_xids, key) and self.state == SNAPBUILD_CONSISTENT:
                first = True  # its first record: registered below if the record is one taken here
            else:
                return 0
        if rmid != RM_HEAP_ID and rmid != RM_HEAP2_ID:
            if first:  # no handler in the decoder: ReorderBufferProcessXid only
                self.register(xid, lsn)
            return 1
        if self.nodes is not None and h.nblocks and PyDict_GetItem(self.nodes, b0.rlocator.relNumber) != NULL:
            return 0  # a catalog page the catalog history follows
        # rmgr.heap's table of what each record type is to decoding
        if (HEAP_IGNORED_TYPES if rmid == RM_HEAP_ID else HEAP2_IGNORED_TYPES) >> (op >> 4) & 1:
            if first:  # no change: ReorderBufferProcessXid only
                self.register(xid, lsn)
            return 1
        if rmid == RM_HEAP_ID:
            if op != XLOG_HEAP_INSERT and op != XLOG_HEAP_UPDATE and op != XLOG_HEAP_HOT_UPDATE \
                    and op != XLOG_HEAP_DELETE:
                return 0  # truncate, confirm, in-place: the decoder's
        elif op != XLOG_HEAP2_MULTI_INSERT:
            return 0  # XLOG_HEAP2_NEW_CID: the decoder's
        if self.state < SNAPBUILD_FULL_SNAPSHOT:
            return 1
        if self.state != SNAPBUILD_CONSISTENT or not xid or h.nblocks == 0 or b0.block_id != 0:
            return 0
        if first:
            # A record refused below goes to the decoder, for which this is then done already
            txn = self.register(xid, lsn)
        if type(txn.changes) is not ChangeBuffer:
            return 0
        store = <ChangeBuffer>txn.changes
        # SnapBuildProcessChange: the transaction (and its top-level one) has a base snapshot
        if not txn.has_base_snapshot:
            txn.has_base_snapshot = True
        top = txn.toptxn
        if top is not None and not top.has_base_snapshot:
            top.has_base_snapshot = True
        # FilterByOrigin
        if h.record_origin == 0:
            if self.filter_local:
                return 1
        elif self.filter_origin(h.record_origin):
            return 1
        if b0.rlocator.dbOid != self.database:
            return 1
        # decode.c DecodeInsert, DecodeUpdate, DecodeDelete, DecodeMultiInsert (as decode.py's extractors)
        if rmid == RM_HEAP_ID:
            if op == XLOG_HEAP_INSERT:
                if h.main_data_len < SizeOfHeapInsert:
                    return 0
                flags = h.main_data[2]
                if not flags & XLH_INSERT_CONTAINS_NEW_TUPLE:
                    return 1
                action = REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT if flags & XLH_INSERT_IS_SPECULATIVE \
                    else REORDER_BUFFER_CHANGE_INSERT
                ln, lo = b0.data_len, -1
            elif op == XLOG_HEAP_DELETE:
                if h.main_data_len < SizeOfHeapDelete:
                    return 0
                flags = h.main_data[7]
                action = REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT if flags & XLH_DELETE_IS_SUPER \
                    else REORDER_BUFFER_CHANGE_DELETE
                ln = -1
                lo = h.main_data_len - SizeOfHeapDelete \
                    if flags & (XLH_DELETE_CONTAINS_OLD_TUPLE | XLH_DELETE_CONTAINS_OLD_KEY) else -1
            else:
                if h.main_data_len < SizeOfHeapUpdate:
                    return 0
                flags = h.main_data[7]
                action = REORDER_BUFFER_CHANGE_UPDATE
                ln = b0.data_len if flags & XLH_UPDATE_CONTAINS_NEW_TUPLE else -1
                lo = h.main_data_len - SizeOfHeapUpdate \
                    if flags & (XLH_UPDATE_CONTAINS_OLD_TUPLE | XLH_UPDATE_CONTAINS_OLD_KEY) else -1
            p = store.put(lsn, action, b0.rlocator.spcOid, b0.rlocator.relNumber, h.record_origin, True, ln, lo,
                          -1)
            if ln > 0:
                memcpy(p, b0.data, ln)
            if lo > 0:
                memcpy(p + (ln if ln > 0 else 0), h.main_data + (SizeOfHeapDelete if op == XLOG_HEAP_DELETE
                                                            else SizeOfHeapUpdate), lo)
            size = SizeOfQueuedChange + (ln if ln > 0 else 0) + (lo if lo > 0 else 0)
            self.queued(txn, store, size)
            return 1
        # XLOG_HEAP2_MULTI_INSERT: one change per tuple, each given its xl_heap_header back
        if h.main_data_len < SizeOfHeapMultiInsert:
            return 0
        flags = h.main_data[0]
        ntuples = pg_u16(h.main_data + 2)
        if not flags & XLH_INSERT_CONTAINS_NEW_TUPLE:
            return 1
        # check every tuple first: one the reference would refuse or cut leaves the whole record to it
        pos = 0
        for k in range(ntuples):
            pos += pos & 1  # SHORTALIGN
            if pos + SizeOfMultiInsertTuple > b0.data_len:
                return 0
            datalen = pg_u16(b0.data + pos)
            pos += SizeOfMultiInsertTuple + datalen
            if pos > b0.data_len:
                return 0
        pos = 0
        for k in range(ntuples):
            pos += pos & 1
            datalen = pg_u16(b0.data + pos)
            p = store.put(lsn, REORDER_BUFFER_CHANGE_INSERT, b0.rlocator.spcOid, b0.rlocator.relNumber,
                          h.record_origin, flags & XLH_INSERT_LAST_IN_MULTI and k + 1 == ntuples,
                          SizeOfHeapHeader + datalen, -1, -1)
            memcpy(p, b0.data + pos + 2, SizeOfHeapHeader)  # t_infomask2, t_infomask, t_hoff
            memcpy(p + SizeOfHeapHeader, b0.data + pos + SizeOfMultiInsertTuple, datalen)
            pos += SizeOfMultiInsertTuple + datalen
            self.queued(txn, store, SizeOfQueuedChange + SizeOfHeapHeader + datalen)
        return 1

    cdef int commit(self, const unsigned char *r, WdDecodedXLogRecord *h, unsigned long long lsn,
                    unsigned long long end) except -1:
        """Write a plain COMMIT's transaction without Python objects: 1 when done, 0 to hand the
        record to the decoder.  Plain: XLOG_XACT_COMMIT of our database, after the consistent
        point and the decoding start, of no origin, with no subtransaction, invalidation,
        dropped relation or two-phase part, of a transaction the reorder buffer holds whole in
        its ChangeBuffer (a base snapshot, no catalog change, nothing spilled, at most
        FAST_COMMIT_MAX_CHANGES changes) whose every change is a row change the replay would
        append through the plugin's row writer or pass over — where decode.py's _decode_commit,
        DecodeTXNNeedsSkip, Replayer.replay and the plugin come to exactly this."""
        cdef unsigned int info = r[16], xid = h.xl_xid, xinfo
        cdef unsigned int plain = XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_SUBXACTS | XACT_XINFO_HAS_AE_LOCKS \
            | XACT_COMPLETION_APPLY_FEEDBACK | XACT_COMPLETION_UPDATE_RELCACHE_FILE \
            | <unsigned int>XACT_COMPLETION_FORCE_SYNC_COMMIT
        cdef const unsigned char *m = h.main_data
        cdef Py_ssize_t size = MinSizeOfXactCommit + SizeOfXactXinfo + SizeOfXactDbinfo, pos, i
        cdef PyObject *found
        cdef TXN txn
        cdef PyObject *targets[FAST_COMMIT_MAX_CHANGES]
        cdef const unsigned char *p
        cdef ChangeBuffer store
        if (info & XLOG_XACT_OPMASK) != XLOG_XACT_COMMIT or not info & XLOG_XACT_HAS_INFO:
            return 0
        if (not xid or h.nblocks or h.record_origin or self.filter_local or self.state != SNAPBUILD_CONSISTENT
                or lsn < self.start_decoding_at or h.main_data_len < size):
            return 0
        xinfo = pg_u32(m + MinSizeOfXactCommit)
        if not xinfo & XACT_XINFO_HAS_DBINFO or xinfo & ~plain:
            return 0
        if pg_u32(m + MinSizeOfXactCommit + SizeOfXactXinfo) != self.database:
            return 0
        if xinfo & XACT_XINFO_HAS_SUBXACTS:  # PostgreSQL sets it with subtransactions only
            if h.main_data_len < size + MinSizeOfXactSubxacts or pg_i32(m + size) != 0:
                return 0
            size += MinSizeOfXactSubxacts
        if h.main_data_len != size:
            return 0
        key = xid
        found = PyDict_GetItem(self.by_xid, key)
        if found == NULL or PyDict_GetItem(self.top_of, key) != NULL:
            return 0
        txn = _native_txn(found)
        if txn is None:
            return 0
        changes = txn.changes
        if type(changes) is not ChangeBuffer:
            return 0
        store = <ChangeBuffer>changes
        if (store.count > FAST_COMMIT_MAX_CHANGES or txn.nentries != store.count or not txn.has_base_snapshot
                or txn.has_catalog_changes or txn.toptxn is not None or txn.subtxns or txn.spill_files
                or txn.prepared):
            return 0
        # the catalog of its changes, one for all (``Replayer.replay``'s question; the row targets are its)
        if self.history is not None and not self.whole_catalog(txn, key, lsn):
            return 0
        # every change a row change with a row writer (or of a relation not decoded): its target
        pos = 0
        i = 0
        while pos < store.used:
            p = store.data + pos
            pos += _change_size(p)
            if p[8] > REORDER_BUFFER_CHANGE_DELETE:
                return 0
            rel = (pg_u32(p + 9), pg_u32(p + 13))
            found = PyDict_GetItem(self.targets, rel)
            if found == NULL:
                self.row_target(pg_u32(p + 9), pg_u32(p + 13))  # kept in targets while the catalog stays
                found = PyDict_GetItem(self.targets, rel)
                if found == NULL:
                    return 0
            target = <object>found
            if target is not False and type(target) is not tuple:
                return 0  # TOAST chunks, a relation not known: apply_change's
            targets[i] = found
            i += 1
        # TransactionTracker: the listeners told (the catalog history, idle: its position), the
        # transaction forgotten
        PySet_Discard(self.open_xids, key)
        if self.history is not None:
            self.history.position = end
        try:
            self.write(xid, store, targets)
        finally:
            # ReorderBuffer.cleanup of a transaction with no subtransaction and no spill file
            self.size -= store.used
            self.size_dirty = True
            store.used = 0
            store.count = 0
            txn.nentries = 0
            del self.by_xid[key]
            self.toplevel.pop(key, None)
        return 1

    cdef bint whole_catalog(self, TXN txn, key, unsigned long long lsn) except -1:
        """``Replayer.whole_catalog`` for a transaction without subtransactions committed at ``lsn``,
        asked only when its answer may differ from the last one given: the transaction began at or before
        the catalog change that opened that one's epoch, or commits after the change that closes it (a
        history built elsewhere holds the changes to come), the history took a change since, the
        transaction has catalog rows of its own, or another catalog was put in force meanwhile."""
        cdef Py_ssize_t n = len(self.commit_lsns), e
        cdef unsigned long long first = txn.first_lsn
        if (n == self.latest_epochs and first > self.epoch_lo and lsn <= self.epoch_hi
                and PyDict_GetItem(self.timeline_txns, key) == NULL and self.replayer.shown is self.latest):
            return True
        if not self.replayer.whole_catalog(key, first, lsn):
            return False
        # the epoch that served it (CatalogTimeline.view: the commits before an LSN): (its opening change, its
        # closing one], which serves every transaction within
        e = bisect_left(self.commit_lsns, first)
        self.epoch_lo = <unsigned long long>self.commit_lsns[e - 1] if e else 0
        self.epoch_hi = <unsigned long long>self.commit_lsns[e] if e < n else <unsigned long long>-1
        self.latest = self.replayer.shown
        self.latest_epochs = n
        return True

    cdef int write(self, unsigned int xid, ChangeBuffer store, PyObject **targets) except -1:
        """The transaction's lines, as ``Replayer.replay`` writes them with one catalog serving
        (``replay`` below) and the plugin's ``begin``, ``rows_begin`` and ``commit`` do.  The rows
        are told to the plugin (``rows_written``) once a block is full, and at the end of the
        records (``report``)."""
        cdef Py_ssize_t pos = 0, i = 0
        cdef bint rows = False
        cdef const unsigned char *p
        self.lines_begin(xid)
        while pos < store.used:
            p = store.data + pos
            pos += _change_size(p)
            target = <object>targets[i]
            i += 1
            if target is False:
                continue
            desc, out, head, _flush_at = <tuple>target
            if not rows:
                self.lines_rows()
                rows = True
            try:
                _append_row(desc, out, head, p, self.toast)
            except WALError as e:
                raise self.replayer.row_error(pg_u32(p + 9), pg_u32(p + 13), e, pg_u64(p)) from None
            self.unreported += 1
        self.lines_commit()
        if len(self.out_buf) >= self.block_size:
            self.report()
        return 0

    cdef int report(self) except -1:
        """Tell the plugin the row lines appended since the last time (``rows_written``, which writes
        a full block out), or only write a full block out."""
        cdef Py_ssize_t n = self.unreported
        if n:
            self.unreported = 0
            self.plugin.rows_written(n)
        elif self.commits:
            self.output.wrote()
        return 0



def decode_framed(decoder, list records, unsigned long long start, int major, slow, after=None,
                  Py_ssize_t after_every=1024):
    """``decoder.process`` for each framed record ``(lsn, raw_end, bytes)`` from ``start`` on.

    Records the fast paths cannot take are passed to ``slow(rec, lsn, end_lsn)``, which decodes
    and processes them; ``after(rec, lsn, end_lsn)``, when given, is called every
    ``after_every`` records taken here (the slot keeper's clock).  Returns how many records
    were taken here."""
    cdef _Decoding d = _Decoding()
    cdef Py_ssize_t n = len(records), nfast
    cdef tuple t
    d.decoder = decoder
    d.latest_epochs = -1
    d.database = decoder.database
    d.filter_origin = decoder._filter_origin
    d.filter_local = bool(d.filter_origin(0))
    d.init_commits()
    d.refresh()
    d.init_handled()
    try:
        nfast = _loop(d, records, start, major, slow, after, after_every)
    finally:
        d.sync_size()
        d.report()
    if d.history is not None and records:
        t = <tuple>records[n - 1]
        if <unsigned long long>t[0] >= start:
            d.history.position = ((<unsigned long long>t[1]) + 7) & ~(<unsigned long long>7)
    return nfast


cdef Py_ssize_t _loop(_Decoding d, list records, unsigned long long start, int major, slow, after,
                      Py_ssize_t after_every) except -1:
    cdef Py_ssize_t i, n = len(records), nfast = 0, since_after = 0
    cdef tuple t
    cdef bytes rec
    cdef const unsigned char *r
    cdef unsigned long long lsn, end = 0
    cdef unsigned int rmid
    cdef WdDecodedXLogRecord h
    cdef bint done
    for i in range(n):
        t = <tuple>records[i]
        lsn = t[0]
        if lsn < start:
            continue
        rec = <bytes>t[2]
        r = <const unsigned char *>PyBytes_AS_STRING(rec)
        end = ((<unsigned long long>t[1]) + 7) & ~(<unsigned long long>7)
        rmid = r[17]
        done = False
        if d.handled[rmid] != 1:
            if wd_DecodeXLogRecord(r, PyBytes_GET_SIZE(rec), major, &h) == WD_DECODE_OK and h.toplevel_xid == 0:
                done = d.fast(r, &h, lsn)
        elif rmid == RM_XACT_ID and d.quiet:
            if wd_DecodeXLogRecord(r, PyBytes_GET_SIZE(rec), major, &h) == WD_DECODE_OK and h.toplevel_xid == 0:
                done = d.commit(r, &h, lsn, end)
        if done:
            nfast += 1
            if after is not None:
                since_after += 1
                if since_after >= after_every:
                    since_after = 0
                    d.sync_size()
                    after(rec, lsn, end)
        else:
            d.sync_size()
            slow(rec, lsn, end)
            d.refresh()
    return nfast



# -- phase 1 of Spark's range path (logical/spans.pxi) ---------------------------------------------

include "logical/spans.pxi"


# -- replay -----------------------------------------------------------------------------------------

def replay(replayer, txn, state, changes, bint rows, list bounds=None):
    """The loop of ``apply.Replayer.replay`` over ``changes`` (``ReorderBuffer.iter_changes``: Change
    tuples and ChangeBuffers).  With ``rows`` (the plugin takes WAL tuples, no note is watched), a
    row change of a relation whose ``replayer.row_target`` is a row writer is appended to the
    plugin's buffer here, one of a relation not decoded is passed over; every other change goes to
    ``replayer.apply_change``, as all do without ``rows``.  ``bounds`` (``Replayer.catalog_bounds``,
    None when one catalog serves every change): a change past the next of them first makes the
    catalog it sees the one in force (``replayer.follow``), whose row targets ``row_target`` gives."""
    cdef ChangeBuffer buf
    cdef const unsigned char *p
    cdef Py_ssize_t pos, size, written = 0, flush_at
    cdef unsigned int action
    cdef bint begun = False, pending_spec = False, toast_held = False
    cdef PyObject *found
    cdef Py_ssize_t nbounds = len(bounds) if bounds is not None else 0, k = 0
    cdef unsigned long long lsn, next_bound = 0
    cdef bint moving = bounds is not None  # follow at the first change, then past each bound
    cdef bint followed = False
    xid = txn.xid
    apply = replayer.apply_change
    if not rows:
        for item in changes:
            if type(item) is Change:
                apply(txn, item, state)
            else:
                for change in item:
                    apply(txn, change, state)
        return
    plugin = replayer.plugin
    targets = replayer.row_targets
    row_target = replayer.row_target
    toast = state.toast
    toast_hash = state.toast_hash
    for item in changes:
        if type(item) is not ChangeBuffer:
            if written:
                plugin.rows_written(written)
                written = 0
            for change in ((item,) if type(item) is Change else item):
                apply(txn, change, state)
            pending_spec = state.specinsert is not None
            toast_held = len(toast_hash) > 0
            continue
        buf = <ChangeBuffer>item
        pos = 0
        while pos < buf.used:
            p = buf.data + pos
            size = _change_size(p)
            pos += size
            action = p[8]
            if moving:
                lsn = pg_u64(p)
                if not followed or lsn > next_bound:
                    while k < nbounds and <unsigned long long>bounds[k] < lsn:
                        k += 1
                    replayer.follow(xid, lsn)
                    followed = True
                    if k < nbounds:
                        next_bound = bounds[k]  # the catalog holds up to it
                    else:
                        moving = False  # the catalog after the last bound serves the rest
            if action <= REORDER_BUFFER_CHANGE_DELETE and not pending_spec:
                found = PyDict_GetItem(targets, (pg_u32(p + 9), pg_u32(p + 13)))
                target = <object>found if found != NULL else row_target(pg_u32(p + 9), pg_u32(p + 13))
                if target is False:
                    continue  # a relation not decoded (a catalog, unlogged, a sequence, a rewrite heap)
                if target is UNMAPPED and <int>pg_u32(p + 20) < 0 and <int>pg_u32(p + 24) < 0:
                    continue  # no relation, no tuple: what apply_change passes over without a word
                if type(target) is tuple:
                    desc, out, head, flush_at = <tuple>target
                    if not begun:
                        plugin.rows_begin(txn)
                        begun = True
                    try:
                        _append_row(desc, out, head, p, toast)
                    except WALError:
                        # the reference path names the row (or re-raises the TOAST value's error)
                        if written:
                            plugin.rows_written(written)
                            written = 0
                        apply(txn, _change_at(p), state)
                        raise
                    written += 1
                    if p[19] and toast_held:  # clear_toast_afterwards
                        toast_hash.clear()
                        toast_held = False
                    if len(out) >= flush_at:
                        plugin.rows_written(written)
                        written = 0
                    continue
            if written:
                plugin.rows_written(written)
                written = 0
            apply(txn, _change_at(p), state)
            pending_spec = state.specinsert is not None
            toast_held = len(toast_hash) > 0
    if written:
        plugin.rows_written(written)
