"""Reorder buffer: changes collected per transaction, handed out at commit in LSN order.

Owns what src/backend/replication/logical/reorderbuffer.c keeps per (sub)transaction:
its changes, its subtransactions, whether it has a base snapshot; spilling to
``.spill`` files when a transaction exceeds the change threshold (4096 by default,
PostgreSQL's max_changes_in_memory) or the global memory budget is exceeded (the
largest transaction is evicted first); and at commit a k-way merge of the
transaction and its subtransactions by LSN, reading spilled changes back in order.
It also keeps what reorderbuffer.c keeps of catalog cache invalidations, for the decoder to
hand to the output plugin: a transaction's own (its XLOG_XACT_INVALIDATIONS records,
ReorderBufferAddInvalidations) and, from PostgreSQL 15.13, 16.9 and 17.5 on, those of transactions
that committed catalog changes while it was open (SnapBuildDistributeSnapshotAndInval), each also an
invalidation change at its LSN among the transaction's changes (``iter_changes`` merges them in).
It knows nothing of WAL records: changes arrive as ``Change`` tuples from the
decoder (or, under Cython, straight from the record bytes: ``waldecode._logical``), and
leave as ``Change`` tuples for the output stage.  A transaction's changes in memory are
held as bytes (``_logical.ChangeBuffer``: the spill format, one arena per transaction;
``ChangeList`` is the pure-Python reference), and the memory budget counts those bytes.

Spill files are named as PostgreSQL names them, one per (sub)transaction and WAL
segment of the changes: ``xid-<xid>-lsn-<HI>-<LO>.spill``, where HI-LO is the start
LSN of the segment.  Each holds batches ``[u32 length][u32 count][lz4 frame]``.
"""

from __future__ import annotations

import heapq
import os
import struct
import tempfile
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import lz4.frame

from .. import _impl
from ..errors import SpillError
from ..faults import crashpoint
from ..pg.settings import DEFAULT_MEMORY_BUDGET, DEFAULT_SPILL_THRESHOLD

# src/include/replication/reorderbuffer.h: ReorderBufferChangeType (the ones that are queued here)
REORDER_BUFFER_CHANGE_INSERT = 0
REORDER_BUFFER_CHANGE_UPDATE = 1
REORDER_BUFFER_CHANGE_DELETE = 2
REORDER_BUFFER_CHANGE_MESSAGE = 3
REORDER_BUFFER_CHANGE_INVALIDATION = 4  # 14+; kept beside the store (TXN.inval_changes), never spilled
REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT = 7
REORDER_BUFFER_CHANGE_INTERNAL_SPEC_CONFIRM = 8
REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT = 9
REORDER_BUFFER_CHANGE_TRUNCATE = 10


# src/include/storage/sinval.h: sizeof(SharedInvalidationMessage)
SizeOfSharedInvalidationMessage = 16
# reorderbuffer.c: the distributed invalidation messages one transaction keeps (8 MB of them); past that
# it is marked RBTXN_DISTR_INVAL_OVERFLOWED and every cache is invalidated instead
MAX_DISTR_INVAL_MSG_PER_TXN = (8 * 1024 * 1024) // SizeOfSharedInvalidationMessage

# How a server distributes a catalog-changing commit's invalidations into the transactions still open
# (SnapBuildDistributeSnapshotAndInval), by its minor release: not at all before 4909b38af0 (back-patched
# into 13.21, 14.18, 15.13, 16.9, 17.5); then into their own invalidations (ReorderBufferAddInvalidations,
# so distributed again when they commit catalog changes themselves); from d87d07b7ad on (13.22, 14.19,
# 15.14, 16.10, 17.6, every 18) apart from them (ReorderBufferAddDistributedInvalidations)
DISTRIBUTE_NONE = None
DISTRIBUTE_AS_OWN = "as own"
DISTRIBUTE_APART = "apart"
_DISTRIBUTION_MINORS = {13: (21, 22), 14: (18, 19), 15: (13, 14), 16: (9, 10), 17: (5, 6)}


def invalidation_distribution(server_version_num: int) -> str | None:
    """DISTRIBUTE_NONE, DISTRIBUTE_AS_OWN or DISTRIBUTE_APART for a server of ``server_version_num``."""
    major, minor = divmod(server_version_num, 10000)
    if major >= 18:
        return DISTRIBUTE_APART
    first, apart = _DISTRIBUTION_MINORS.get(major, (None, None))
    if first is None or minor < first:
        return DISTRIBUTE_NONE
    return DISTRIBUTE_AS_OWN if minor < apart else DISTRIBUTE_APART


class Change(NamedTuple):
    """One queued change.  Tuples are kept as WAL carries them (xl_heap_header + body)."""

    lsn: int
    action: int
    spcOid: int
    relNumber: int
    origin: int
    clear_toast_afterwards: bool
    newtuple: bytes | None
    oldtuple: bytes | None
    extra: bytes | None  # TRUNCATE: xl_heap_truncate; MESSAGE: xl_logical_message (main data)


# A queued change as the reorder buffer holds it and spill batches store it: this header, then its
# tuples (native/pgdefs.pxd: SizeOfQueuedChange).  The memory budget counts these bytes.
_ChangeHeader = struct.Struct("<QBIIHBiii")  # lsn, action, spc, rel, origin, clear_toast, 3 lengths (-1: None)
_BatchHeader = struct.Struct("<II")


def change_size(c: Change) -> int:
    """The bytes a change takes held or spilled: its header and its tuples."""
    n, o, e = c.newtuple, c.oldtuple, c.extra
    return _ChangeHeader.size + (len(n) if n else 0) + (len(o) if o else 0) + (len(e) if e else 0)


def _serialize(changes) -> bytes:
    out = bytearray()
    pack = _ChangeHeader.pack
    for c in changes:
        n, o, e = c.newtuple, c.oldtuple, c.extra
        out += pack(c.lsn, c.action, c.spcOid, c.relNumber, c.origin, c.clear_toast_afterwards,
                    -1 if n is None else len(n), -1 if o is None else len(o), -1 if e is None else len(e))
        if n:
            out += n
        if o:
            out += o
        if e:
            out += e
    return bytes(out)


def _deserialize(buf: bytes, count: int) -> list[Change]:
    out = []
    pos = 0
    unpack = _ChangeHeader.unpack_from
    hsize = _ChangeHeader.size
    for _ in range(count):
        lsn, action, spc, rel, origin, clear, ln, lo, le = unpack(buf, pos)
        pos += hsize
        parts = []
        for length in (ln, lo, le):
            if length < 0:
                parts.append(None)
            else:
                parts.append(buf[pos:pos + length])
                pos += length
        out.append(Change(lsn, action, spc, rel, origin, bool(clear), parts[0], parts[1], parts[2]))
    return out


class ChangeList:
    """A transaction's queued changes: the pure-Python reference of ``waldecode._logical.ChangeBuffer``,
    which holds them as bytes.  The same API and the same numbers: ``append``, iteration in queue
    order, ``len``, ``nbytes`` (``change_size`` summed), ``batches(segment_size)`` (the spill
    batches, ``(segno, count, bytes)`` per WAL segment of the changes in the order first queued)."""

    __slots__ = ("items", "nbytes")

    def __init__(self):
        self.items: list[Change] = []
        self.nbytes = 0

    def append(self, change: Change) -> None:
        self.items.append(change)
        self.nbytes += change_size(change)

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Change]:
        return iter(self.items)

    def clear(self) -> None:
        self.items = []
        self.nbytes = 0

    def getvalue(self) -> bytes:
        return _serialize(self.items)

    def batches(self, segment_size: int) -> list[tuple[int, int, bytes]]:
        groups: dict[int, list[Change]] = {}
        for c in self.items:
            groups.setdefault(c.lsn // segment_size, []).append(c)
        return [(segno, len(changes), _serialize(changes)) for segno, changes in groups.items()]


def changes_to_batch(changes) -> bytes:
    """Changes in the spill format (a change store's bytes): what Spark's phase 2 ships them as."""
    store = new_change_store()
    for c in changes:
        store.append(c)
    return store.getvalue()


def changes_of_batch(batch: bytes, count: int):
    """The ``count`` changes of a batch in the spill format, in order."""
    logical = _impl.logical()
    return _deserialize(batch, count) if logical is None else logical.from_batch(batch, count)


def new_change_store():
    """A transaction's change store: bytes under the Cython implementation, else the reference."""
    logical = _impl.logical()
    return logical.ChangeBuffer() if logical is not None else ChangeList()


def new_txn(xid: int, first_lsn: int):
    """A transaction of the implementation in use: ``_logical.TXN`` under Cython (its fields in C, for the
    record loop), else the reference below."""
    logical = _impl.logical()
    return logical.TXN(xid, first_lsn) if logical is not None else TXN(xid, first_lsn)


class TXN:
    """ReorderBufferTXN: one (sub)transaction (the reference; ``new_txn`` makes the one in use)."""

    __slots__ = ("xid", "first_lsn", "final_lsn", "end_lsn", "toptxn", "subtxns", "changes", "nentries",
                 "spill_files", "has_base_snapshot", "is_known_as_subxact",
                 "prepared", "gid", "xact_time", "origin", "has_catalog_changes",
                 "invalidations", "invalidations_distributed", "distr_inval_overflowed", "inval_changes",
                 "prepare_remembered")

    def __init__(self, xid: int, first_lsn: int, changes=None):
        self.xid = xid
        self.first_lsn = first_lsn
        self.final_lsn = 0
        self.end_lsn = 0
        self.toptxn: TXN | None = None
        self.subtxns: list[TXN] = []
        # the changes in memory (ChangeBuffer or ChangeList): a new one of the implementation in use
        self.changes = new_change_store() if changes is None else changes
        self.nentries = 0  # all changes, spilled ones included
        self.spill_files: dict[int, str] = {}  # segment number -> path, in the order first written
        self.has_base_snapshot = False
        self.is_known_as_subxact = False
        self.prepared = False
        # RBTXN_PREPARE (ReorderBufferRememberPrepareInfo): its PREPARE went to DecodePrepare, decoded or
        # skipped there; one filtered out at its PREPARE, decoded at COMMIT PREPARED, is not marked, and
        # still takes the invalidations distributed while it waits
        self.prepare_remembered = False
        self.gid = ""
        self.xact_time = 0
        self.origin = 0
        self.has_catalog_changes = False
        # txn->invalidations: the messages of its XLOG_XACT_INVALIDATIONS records (and, where the server
        # distributes them as its own, of others), gathered on the top-level transaction
        self.invalidations = b""
        # txn->invalidations_distributed, and RBTXN_DISTR_INVAL_OVERFLOWED past MAX_DISTR_INVAL_MSG_PER_TXN
        self.invalidations_distributed = b""
        self.distr_inval_overflowed = False
        # its REORDER_BUFFER_CHANGE_INVALIDATION changes, in LSN order: apart from ``changes`` (which hold
        # row changes only, in the spill format the native paths read); None while it has none
        self.inval_changes: list[Change] | None = None

    @property
    def nentries_mem(self) -> int:
        return len(self.changes)

    @property
    def size(self) -> int:
        """Bytes of the changes in memory (what the memory budget counts)."""
        return self.changes.nbytes

    @property
    def total_changes(self) -> int:
        return self.nentries + sum(s.nentries for s in self.subtxns)

    def first_change_lsn(self) -> int:
        """The first LSN of its records and its subtransactions': a subtransaction may write before
        its top-level transaction's first record."""
        return min(self.first_lsn, *(s.first_lsn for s in self.subtxns)) if self.subtxns else self.first_lsn


class OpenTransaction(NamedTuple):
    """A transaction with neither commit nor abort by the end of the WAL read."""

    xid: int
    first_lsn: int
    nchanges: int
    subxids: tuple
    prepared: bool
    gid: str


class ReorderBuffer:
    def __init__(self, spill_dir: str | None = None, spill_threshold: int = DEFAULT_SPILL_THRESHOLD,
                 memory_budget: int = DEFAULT_MEMORY_BUDGET, *, segment_size: int):
        # segment_size: the WAL's own (spill files are named per segment); never assumed
        if spill_threshold < 1:
            raise ValueError("the spill threshold must be at least 1 change")
        self.spill_threshold = spill_threshold
        self.memory_budget = memory_budget
        self.segment_size = segment_size
        self._spill_dir = spill_dir
        self._own_spill_dir: tempfile.TemporaryDirectory | None = None
        # Every known (sub)transaction, and the top-level ones.  A transaction is created at the
        # record being decoded, and records come in LSN order: insertion order is first-LSN order
        # (ReorderBuffer's toplevel_by_lsn), so the first one is the oldest, where reading must restart
        self.by_xid: dict[int, TXN] = {}
        self.toplevel: dict[int, TXN] = {}
        self.size = 0
        self.spilled_txns = 0  # statistics: how many times a transaction was spilled
        self.spilled_bytes = 0

    # -- spill directory ----------------------------------------------------------------------

    @property
    def spill_dir(self) -> str:
        if self._spill_dir is None:
            self._own_spill_dir = tempfile.TemporaryDirectory(prefix="waldecode-spill-")
            self._spill_dir = self._own_spill_dir.name
        return self._spill_dir

    def close(self) -> None:
        """Remove every spill file still present (transactions never finished) and our own directory."""
        for txn in list(self.by_xid.values()):
            self._remove_spill_files(txn)
        if self._own_spill_dir is not None:
            self._own_spill_dir.cleanup()
            self._own_spill_dir = None
            self._spill_dir = None

    # -- transactions -------------------------------------------------------------------------

    def txn_by_xid(self, xid: int, create: bool, lsn: int = 0) -> TXN | None:
        txn = self.by_xid.get(xid)
        if txn is None and create:
            # a new transaction is a top-level one until it is assigned (``_logical`` creates them so too)
            txn = self.by_xid[xid] = self.toplevel[xid] = new_txn(xid, lsn)
        return txn

    def process_xid(self, xid: int, lsn: int) -> None:
        """ReorderBufferProcessXid: make sure the transaction is known, from its first record on."""
        if xid and xid not in self.by_xid:
            self.txn_by_xid(xid, True, lsn)

    def assign_child(self, xid: int, subxid: int, lsn: int) -> None:
        """ReorderBufferAssignChild."""
        if not subxid or subxid == xid:
            return
        top = self.txn_by_xid(xid, True, lsn)
        sub = self.txn_by_xid(subxid, True, lsn)
        if sub.is_known_as_subxact:
            if sub.toptxn is not top:
                raise ValueError(f"subtransaction {subxid} is already a child of {sub.toptxn.xid}, not {xid}")
            return
        sub.is_known_as_subxact = True
        sub.toptxn = top
        self.toplevel.pop(subxid, None)
        top.subtxns.append(sub)
        # A subtransaction's base snapshot counts for its top-level transaction
        if sub.has_base_snapshot:
            top.has_base_snapshot = True

    def set_base_snapshot(self, xid: int, lsn: int) -> None:
        txn = self.by_xid.get(xid) or self.txn_by_xid(xid, True, lsn)
        txn.has_base_snapshot = True
        if txn.toptxn is not None:
            txn.toptxn.has_base_snapshot = True

    def set_catalog_changes(self, xid: int, lsn: int) -> None:
        """ReorderBufferXidSetCatalogChanges."""
        self.txn_by_xid(xid, True, lsn).has_catalog_changes = True

    def has_catalog_changes(self, xid: int, subxids=()) -> bool:
        """Did the transaction or one of ``subxids`` change the catalog (SnapBuildXidHasCatalogChanges)?"""
        for x in (xid, *subxids):
            txn = self.by_xid.get(x)
            if txn is not None and txn.has_catalog_changes:
                return True
        return False

    # -- invalidations ------------------------------------------------------------------------

    def _queue_invalidations(self, txn: TXN, lsn: int, msgs: bytes) -> None:
        """ReorderBufferQueueInvalidations: an invalidation change at ``lsn`` among ``txn``'s changes."""
        if txn.inval_changes is None:
            txn.inval_changes = []
        txn.inval_changes.append(Change(lsn, REORDER_BUFFER_CHANGE_INVALIDATION, 0, 0, 0, False, None, None, msgs))

    def add_invalidations(self, xid: int, lsn: int, msgs: bytes) -> None:
        """ReorderBufferAddInvalidations: ``msgs`` (SharedInvalidationMessages) of an XLOG_XACT_INVALIDATIONS
        record of ``xid``: gathered on its top-level transaction (itself while it is not known to be a
        subtransaction), and an invalidation change of ``xid`` at ``lsn``."""
        txn = self.txn_by_xid(xid, True, lsn)
        top = txn.toptxn or txn
        top.invalidations += msgs
        self._queue_invalidations(txn, lsn, msgs)

    def add_distributed_invalidations(self, xid: int, lsn: int, msgs: bytes) -> None:
        """ReorderBufferAddDistributedInvalidations: ``msgs``, another transaction's, distributed into
        ``xid`` at ``lsn``: kept apart on its top-level transaction, up to MAX_DISTR_INVAL_MSG_PER_TXN
        messages (past them none are kept and it is marked overflowed), and an invalidation change."""
        txn = self.txn_by_xid(xid, True, lsn)
        top = txn.toptxn or txn
        if not top.distr_inval_overflowed:
            nmsgs = (len(top.invalidations_distributed) + len(msgs)) // SizeOfSharedInvalidationMessage
            if nmsgs >= MAX_DISTR_INVAL_MSG_PER_TXN:
                top.distr_inval_overflowed = True
                top.invalidations_distributed = b""
            else:
                top.invalidations_distributed += msgs
        self._queue_invalidations(txn, lsn, msgs)

    def distribute_invalidations(self, xid: int, lsn: int, how: str | None) -> list[int]:
        """SnapBuildDistributeSnapshotAndInval's invalidations, at the commit (at ``lsn``) of ``xid``, which
        changed the catalog: its own (ReorderBufferGetInvalidations) go to every transaction of the
        top-level list (some may be subtransactions not yet known as such) that has a base snapshot, is
        not prepared and is not ``xid`` — as their own (DISTRIBUTE_AS_OWN) or apart (DISTRIBUTE_APART).
        The xids they went to."""
        committed = self.by_xid.get(xid)
        msgs = committed.invalidations if committed is not None else b""
        if how is DISTRIBUTE_NONE or not msgs:
            return []
        to = [t.xid for t in self.toplevel.values()
              if t.has_base_snapshot and not t.prepare_remembered and t.xid != xid]
        add = self.add_invalidations if how == DISTRIBUTE_AS_OWN else self.add_distributed_invalidations
        for x in to:
            add(x, lsn, msgs)
        return to

    def queue_change(self, xid: int, change: Change) -> None:
        txn = self.by_xid.get(xid) or self.txn_by_xid(xid, True, change.lsn)
        store = txn.changes
        before = store.nbytes
        store.append(change)
        txn.nentries += 1
        self.size += store.nbytes - before
        if len(store) >= self.spill_threshold:
            self.spill(txn)
        if self.size > self.memory_budget:
            self.enforce_budget()

    def enforce_budget(self) -> None:
        """Spill the largest transactions until the changes in memory fit the memory budget."""
        while self.size > self.memory_budget:
            victim = max((t for t in self.by_xid.values() if len(t.changes)), key=lambda t: t.size, default=None)
            if victim is None:
                break
            self.spill(victim)

    # -- spilling -----------------------------------------------------------------------------

    def _spill_path(self, xid: int, segno: int) -> str:
        lsn = segno * self.segment_size
        return os.path.join(self.spill_dir, f"xid-{xid}-lsn-{lsn >> 32:X}-{lsn & 0xFFFFFFFF:X}.spill")

    def spill(self, txn: TXN) -> None:
        """ReorderBufferSerializeTXN: write the in-memory changes out, one file per WAL segment."""
        store = txn.changes
        if not len(store):
            return
        for segno, count, batch in store.batches(self.segment_size):
            path = txn.spill_files.get(segno)
            if path is None:
                path = self._spill_path(txn.xid, segno)
                txn.spill_files[segno] = path
            payload = lz4.frame.compress(batch, compression_level=0)
            try:
                with open(path, "ab") as f:
                    f.write(_BatchHeader.pack(len(payload), count))
                    f.write(payload)
            except OSError as e:
                raise SpillError(f"could not write spill file {path}: {e.strerror}") from None
            self.spilled_bytes += len(payload)
            crashpoint("spill")
        self.size -= store.nbytes
        store.clear()
        self.spilled_txns += 1

    def _read_spilled(self, txn: TXN, runs: bool = False) -> Iterator:
        """The spilled changes of ``txn``, in order; with ``runs`` (under Cython), a ChangeBuffer per batch."""
        logical = _impl.logical()
        for segno in sorted(txn.spill_files):
            path = txn.spill_files[segno]
            try:
                with open(path, "rb") as f:
                    while True:
                        head = f.read(_BatchHeader.size)
                        if not head:
                            break
                        if len(head) != _BatchHeader.size:
                            raise SpillError(f"spill file {path} is truncated")
                        length, count = _BatchHeader.unpack(head)
                        payload = f.read(length)
                        if len(payload) != length:
                            raise SpillError(f"spill file {path} is truncated")
                        batch = lz4.frame.decompress(payload)
                        if logical is None:
                            yield from _deserialize(batch, count)
                        elif runs:
                            yield logical.from_batch(batch, count)
                        else:
                            yield from logical.from_batch(batch, count)
            except OSError as e:
                raise SpillError(f"could not read spill file {path}: {e.strerror}") from None

    def _remove_spill_files(self, txn: TXN) -> None:
        for path in txn.spill_files.values():
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        txn.spill_files = {}

    # -- finishing ----------------------------------------------------------------------------

    def _txn_changes(self, txn: TXN, runs: bool = False) -> Iterator:
        if txn.spill_files:
            yield from self._read_spilled(txn, runs)
        if runs and not isinstance(txn.changes, ChangeList):
            yield txn.changes
        else:
            yield from txn.changes

    def iter_changes(self, txn: TXN, runs: bool = False) -> Iterable:
        """All changes of a transaction and its subtransactions, in LSN order (ReorderBufferIterTXN),
        their invalidation changes among them (after a change of the same LSN, queued before them).

        With ``runs``, under Cython, runs of them come as the ``ChangeBuffer``s holding them (the
        transaction's own, one per spill batch read back) where no merge with subtransactions'
        changes or invalidation changes is needed: ``_logical.replay`` reads those without a tuple per
        change."""
        parts = [p for p in (txn, *txn.subtxns) if p.nentries]
        invals = [p.inval_changes for p in (txn, *txn.subtxns) if p.inval_changes]
        if invals:
            # heapq.merge keeps the order of its inputs for equal keys: the queued changes first
            return heapq.merge(*(self._txn_changes(p) for p in parts), *invals, key=lambda c: c.lsn)
        if len(parts) > 1:
            if runs and not any(p.spill_files or isinstance(p.changes, ChangeList) for p in parts):
                # all in memory: one run, merged natively (the transaction's bytes copied once)
                return (_impl.logical().merge_buffers([p.changes for p in parts]),)
            return heapq.merge(*(self._txn_changes(p) for p in parts), key=lambda c: c.lsn)
        if not parts:
            return ()
        p = parts[0]
        if runs and not p.spill_files and not isinstance(p.changes, ChangeList):
            return (p.changes,)  # the common case: one transaction's changes, all in memory
        return self._txn_changes(p, runs)

    def commit_child(self, xid: int, subxid: int, commit_lsn: int, end_lsn: int) -> None:
        """ReorderBufferCommitChild."""
        sub = self.by_xid.get(subxid)
        if sub is None:
            return
        sub.final_lsn = commit_lsn
        sub.end_lsn = end_lsn
        self.assign_child(xid, subxid, commit_lsn)

    def prepare(self, xid: int, gid: str, lsn: int, end_lsn: int, prepare_time: int = 0,
                create: bool = True, remember: bool = True) -> TXN | None:
        """ReorderBufferRememberPrepareInfo: the transaction is prepared as ``gid`` at ``lsn``; ``remember``
        False for one whose PREPARE does not reach DecodePrepare (not marked RBTXN_PREPARE)."""
        txn = self.txn_by_xid(xid, create, lsn)
        if txn is not None:
            txn.prepared = True
            txn.prepare_remembered = txn.prepare_remembered or remember
            txn.gid = gid
            txn.final_lsn = lsn
            txn.end_lsn = end_lsn
            txn.xact_time = prepare_time  # what ROLLBACK PREPARED tells the plugin
        return txn

    def truncate(self, txn: TXN) -> None:
        """ReorderBufferTruncateTXN: drop a transaction's changes (its subtransactions whole, spill files
        included) but keep the transaction known, as a prepared one is until COMMIT/ROLLBACK PREPARED."""
        for sub in list(txn.subtxns):
            self.cleanup(sub)
        txn.subtxns = []
        self._remove_spill_files(txn)
        self.size -= txn.changes.nbytes
        txn.changes.clear()
        txn.nentries = 0
        txn.inval_changes = None  # the invalidations gathered stay, for COMMIT/ROLLBACK PREPARED

    def cleanup(self, txn: TXN) -> None:
        """ReorderBufferCleanupTXN: forget a transaction and its subtransactions, spill files included."""
        self.truncate(txn)
        self.by_xid.pop(txn.xid, None)
        self.toplevel.pop(txn.xid, None)
        if txn.toptxn is not None and txn in txn.toptxn.subtxns:
            txn.toptxn.subtxns.remove(txn)

    def abort(self, xid: int) -> None:
        """ReorderBufferAbort: a (sub)transaction rolled back; its changes are dropped."""
        txn = self.by_xid.get(xid)
        if txn is not None:
            self.cleanup(txn)

    def forget(self, xid: int) -> None:
        """ReorderBufferForget: a transaction committed but is not to be decoded."""
        self.abort(xid)

    def abort_crashed(self, xids) -> list[TXN]:
        """ReorderBufferAbortOld: the top-level transactions among ``xids`` crashed (the transaction
        tracker tells which, at each XLOG_RUNNING_XACTS); their changes are dropped."""
        dropped = [txn for txn in self.toplevel.values() if txn.xid in xids]
        for txn in dropped:
            self.cleanup(txn)
        return dropped

    def oldest_first_lsn(self) -> int | None:
        """The first LSN of the oldest transaction still open (ReorderBufferGetOldestTXN), subtransactions
        included: where reading must restart to see every open transaction whole."""
        for txn in self.by_xid.values():
            return txn.first_lsn
        return None

    def open_transactions(self) -> list[OpenTransaction]:
        return [OpenTransaction(t.xid, t.first_lsn, t.total_changes, tuple(s.xid for s in t.subtxns), t.prepared,
                                t.gid) for t in self.toplevel.values()]
