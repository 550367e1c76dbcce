"""What Spark tasks run: phase 1 over a run of consecutive segments, phase 2 over whole transactions.

Owns the per-task functions of the Spark path (docs/spark-decode.md), built
only from the single-process pieces: framing and record decoding (``_impl``, as
``xlogreader`` uses them), the pure change extractors of ``decode``, and, per transaction,
``replay.Replayer`` with the output plugin.  Nothing here keeps state across tasks.

Phase 1 (``read_run`` then ``run_items`` and ``change_blobs``, one pass): a run of segments is
framed as ``xlogreader.XLogReader`` frames it, from the first record that starts in its
first segment, completing the record that crosses into the next run from that
segment's head (``read_segment``'s rule).  It yields

* the *control items* the driver's sequential pass needs (``plan``): whole records for
  transaction, standby, relation-map, logical-message and parameter-change records and
  the catalog-relevant heap records and page images (``CatalogHistory``'s selection, from
  the tracked relfilenodes), plus small markers in their place for the rest: the first
  record of a transaction in a segment (``x``), the last change record of a transaction in
  a segment with its number of changes (``c``, what sets a base snapshot), a subtransaction's
  top-level link (``a``), and where and why reading stopped or failed;
* the *change blobs* of phase 2: every change the decoder would queue (``decode``'s
  extractors, for this database, filtered by origin as the plugin asks), tuples kept as WAL
  bytes, in the reorder buffer's spill format, per xid; which of them are replayed, and in
  which event, the driver's pass says afterwards (phase 2 joins them to its members).

Phase 2 (``decode_rows``): rows sorted by (range, order, LSN) — each range's events in chunk
rows ahead of their changes — are cut into transactions, whose member xids' blobs are merged
by LSN (``merged_changes``) and fed, as a stream, to ``Replayer.replay`` with the plugin
writing into a part file per range: the partition's output, in commit order.
"""

from __future__ import annotations

import copyreg
import heapq
import os
import pickle
import struct
import zlib
from itertools import groupby

from .. import _impl
from ..errors import Error, format_lsn
from ..rmgr import (
    RM_HEAP2_ID,
    RM_HEAP_ID,
    RM_LOGICALMSG_ID,
    RM_RELMAP_ID,
    RM_STANDBY_ID,
    RM_XACT_ID,
    RM_XLOG_ID,
)
from ..output.base import CatalogView, OutputWriter, Transaction
from ..output.test_decoding import TestDecoding
from ..logical.replay import Replayer
from ..logical.decode import HEAP2_EXTRACTORS, HEAP2_IGNORED, HEAP_EXTRACTORS, HEAP_IGNORED, message_changes
from ..logical.reorderbuffer import Change, change_size, changes_of_batch, new_change_store
from ..logical.request import DecodeRequest
from ..rmgr import heap as rm_heap
from ..rmgr.heap import XLOG_HEAP_OPMASK
from ..rmgr.xlog import XLOG_PARAMETER_CHANGE
from ..wal._pyframe import bkpimage_compressed_mask
from ..wal.xlogpage import FrameState, ReadStop, SizeOfXLogLongPHD
from ..wal.xlogreader import _end_lsn, decode_in
from ..wal.xlogrecord import XL_XID_OFFSET, unpack_xl_xid

_ALWAYS_WHOLE = frozenset((RM_XACT_ID, RM_STANDBY_ID, RM_RELMAP_ID, RM_LOGICALMSG_ID))
_xl_xid = unpack_xl_xid  # XLogRecord.xl_xid at XL_XID_OFFSET (wal/xlogrecord.py)
#: the resource managers whose records phase 2 takes changes from (``run_items``)
CHANGE_RMIDS = frozenset((RM_HEAP_ID, RM_HEAP2_ID, RM_LOGICALMSG_ID))


# -- phase 1 ---------------------------------------------------------------------------------------


def frame_run(segments, first: int, last: int, start: int | None, end_lsn: int | None, verify_crc: bool = True,
              firsts: dict | None = None, catalog_nodes: frozenset | None = None):
    """Frame segments ``first``..``last`` as the sequential reader does (from ``start`` when it lies in
    ``first``, else from the first record that starts there) and complete the record crossing into
    ``last`` + 1.  Yields ``(path, [(lsn, raw end, record bytes)])`` pieces; ``("stop", ReadStop)`` or
    ``("error", exc)`` ends it.  A run ending the input reports running out as ``XLogReader`` does.
    ``firsts``: after the first piece holding a record of the run (so that its first record is seen,
    whatever it is), framing goes on in ``FrameState.firsts`` mode, noting other xids there;
    ``catalog_nodes`` (with ``firsts``): the records the catalog history may need of those relfilenodes
    are returned whole too (``FrameState.catalog``)."""
    seg_size = segments.seg_size
    run_start = first * seg_size
    if start is not None and start > run_start:
        run_start = start
    page_start = run_start - run_start % segments.page_size
    st = FrameState(segments.page_size, seg_size, segments.magic, segments.sysid, page_start, 0, end_lsn or 0)
    if catalog_nodes is not None:
        st.catalog = (catalog_nodes, bkpimage_compressed_mask(segments.major))
    segno = first
    try:
        while True:
            if end_lsn is not None and segno * seg_size >= end_lsn:
                yield ("stop", ReadStop(segno * seg_size, "limit", "end of requested range"))
                return
            if segno > last:
                if segno > segments.last_segno:
                    yield ("stop", _ran_out(segments, st, segno))
                    return
                if st.partial is None:
                    return
                st.stop_after_partial = True
            # mapped (XLogReader.frames' reason): the framed records are copies, or only headers are read
            buf, path = segments.load(segno, mapped=True)
            for raw, stop in _frame_pieces(buf, segno * seg_size, st, verify_crc, path):
                if raw and raw[0][0] < run_start:
                    raw = [r for r in raw if r[0] >= run_start]
                if raw and firsts is not None:
                    st.firsts = firsts
                yield path, raw
                if stop is not None:
                    if segno <= last or stop.lsn < (last + 1) * seg_size or stop.kind != "end":
                        yield ("stop", stop)
                    return
            if segno > last:
                return
            # One segment's bytes and framed records at a time (the next load would hold two: the memory bound)
            raw = buf = None
            segno += 1
    except Error as e:
        yield ("error", e)


def read_run(segments, first: int, last: int, start: int | None, end_lsn: int | None, verify_crc: bool = True,
             keep=None):
    """``frame_run``'s records decoded: yields ``DecodedRecord``s, then its ``("stop", ...)`` or
    ``("error", ...)`` item.  ``keep(xid, rmid)``: decode only the records it accepts (read from the
    XLogRecord header before decoding)."""
    seg_size = segments.seg_size
    major = segments.major
    decode = _impl.decode_record
    try:
        for item in frame_run(segments, first, last, start, end_lsn, verify_crc):
            path, raw = item
            if path == "stop" or path == "error":
                yield item
                return
            for lsn, raw_end, rec in raw:
                if keep is not None and not keep(_xl_xid(rec, XL_XID_OFFSET)[0], rec[17]):
                    continue  # XLogRecord: xl_tot_len, xl_xid at 4, xl_prev, xl_info, xl_rmid at 17
                yield decode_in(decode, rec, lsn, _end_lsn(rec, lsn, raw_end, seg_size), major, path)
    except Error as e:
        yield ("error", e)


#: WAL bytes framed at a time: a segment's records framed at once (a copy of each, plus a tuple) were
#: the biggest thing a phase-1 worker held, growing with how many records a segment has
FRAME_PIECE = 2 << 20


def _frame_pieces(buf, seg_lsn: int, st: FrameState, verify_crc: bool, path):
    """``frame_segment``'s ``(records, stop)`` of one segment in pieces of about ``FRAME_PIECE`` bytes:
    the framer stops before a record ending past ``st.end_lsn`` ("limit") and resumes there from
    ``st.next_lsn``, so a piece's limit is lent to it and only the last piece's stop is the segment's."""
    frame = _impl.frame_segment
    end = st.end_lsn
    seg_end = seg_lsn + st.seg_size
    limit = max(st.next_lsn, seg_lsn)
    if st.partial is not None:
        # The record carried in from the previous segment must end before the first piece's limit (it
        # would stop at its start, in that segment): past its remaining bytes, a page header on each page
        page = st.page_size
        limit += (st.partial_total - len(st.partial)) // (page - SizeOfXLogLongPHD) * page + 2 * page
    try:
        while not st.stop_after_partial:
            limit = max(limit, st.next_lsn) + FRAME_PIECE
            if limit >= seg_end or (end and limit >= end):
                break
            st.end_lsn = limit
            raw, stop = frame(buf, seg_lsn, st, verify_crc, path)
            if stop is None or stop.kind != "limit":
                yield raw, stop
                return
            yield raw, None  # the lent limit: the rest of the segment is the next pieces'
        st.end_lsn = end
        yield frame(buf, seg_lsn, st, verify_crc, path)
    finally:
        st.end_lsn = end


def _ran_out(segments, st: FrameState, segno: int) -> ReadStop:
    """XLogReader._ran_out."""
    lsn = segno * segments.seg_size
    if st.partial is not None:
        return ReadStop(st.partial_lsn, "end", f"record at {format_lsn(st.partial_lsn)} continues into segment "
                                               f"{segments.name(segno)}, which is not among the input")
    return ReadStop(lsn, "end", f"end of the input after segment {segments.name(segno - 1)}")


def _strip_images(rec, nodes):
    """An XLOG record with its page images of non-catalog relations emptied (the history looks only
    at those of tracked catalogs)."""
    blocks = tuple(b if (b.has_image and b.relNumber in nodes) else b._replace(image=b"", data=b"")
                   for b in rec.blocks)
    return rec._replace(blocks=blocks)


def _is_change_record(rec) -> bool:
    rmid = rec.xl_rmid
    if rmid == RM_HEAP_ID:
        return (rec.xl_info & XLOG_HEAP_OPMASK) in HEAP_EXTRACTORS
    if rmid == RM_HEAP2_ID:
        return (rec.xl_info & XLOG_HEAP_OPMASK) in HEAP2_EXTRACTORS
    return False


def _whole(rec, nodes, state) -> object | None:
    """The record as the driver needs it, or None when markers stand for it."""
    rmid = rec.xl_rmid
    if rmid in _ALWAYS_WHOLE:
        return rec
    if rmid == RM_HEAP_ID or rmid == RM_HEAP2_ID:
        blocks = rec.blocks
        if not blocks:
            return rec if rmid == RM_HEAP2_ID else None  # NEW_CID
        if blocks[0].relNumber in nodes:
            return rec
        info = rec.xl_info & XLOG_HEAP_OPMASK
        # a type the decoder neither extracts nor ignores goes to the driver whole: by rmgr.heap's table, the
        # catalog-changing ones (XLOG_HEAP_INPLACE, XLOG_HEAP2_NEW_CID)
        if rmid == RM_HEAP_ID:
            if info == rm_heap.XLOG_HEAP_INPLACE or (info not in HEAP_EXTRACTORS and info not in HEAP_IGNORED):
                return rec
        elif info == rm_heap.XLOG_HEAP2_NEW_CID or (info not in HEAP2_EXTRACTORS and info not in HEAP2_IGNORED):
            return rec
        return None
    if rmid == RM_XLOG_ID:
        if rec.xl_info & 0xF0 == XLOG_PARAMETER_CHANGE:
            return rec
        if rec.blocks:
            if any(b.has_image and b.relNumber in nodes for b in rec.blocks):
                return rec
            # The catalog history notes the first xid (and top-level links) of any XLOG record with blocks
            if (rec.xl_xid and not state["xlog_xid"]) or rec.toplevel_xid:
                state["xlog_xid"] = True
                return _strip_images(rec, nodes)
    return None


def _changes_of(rec, database: int):
    """The changes the decoder would queue for ``rec`` (``decode``'s extractors), None for a record that
    is no change record (a logical message: its transactional changes, which the markers leave out)."""
    rmid = rec.xl_rmid
    if rmid == RM_HEAP_ID or rmid == RM_HEAP2_ID:
        return _extract(rec, database) if _is_change_record(rec) else None
    if rmid == RM_LOGICALMSG_ID:
        return message_changes(rec, database)
    return None


def run_items(records, nodes: frozenset, database: int, filtered_origins: frozenset, control: list):
    """Phase 1 of one run, in one pass over its records: yields ``(xid, lsn, Change)`` for each change the
    decoder would queue (any xid: the driver's pass says later which are replayed), and appends the
    driver's control items, ``(lsn, item)`` in LSN order (see the module docstring), to ``control``
    (complete when the generator is)."""
    state = {"xlog_xid": False}
    seg_records: list = []
    seg_counts: list = []  # per record: the changes a heap change record queues (None: not one)

    def flush():
        if not seg_records:
            return
        wholes = [_whole(rec, nodes, state) for rec in seg_records]
        # Per transaction in this block of records: its last change record not sent whole (where a
        # marker sets the base snapshot, as the decoder's _process_change does at each change record)
        # and how many changes those records queue
        last: dict = {}
        for i, rec in enumerate(seg_records):
            n = seg_counts[i]
            if rec.xl_xid and wholes[i] is None and n is not None:
                prev = last.get(rec.xl_xid)
                last[rec.xl_xid] = (i, n + (prev[1] if prev else 0))
        at = {i: (xid, n) for xid, (i, n) in last.items()}
        seen = set()
        for i, rec in enumerate(seg_records):
            xid = rec.xl_xid
            if rec.toplevel_xid:
                control.append((rec.lsn, ("a", rec.toplevel_xid, xid)))
            if xid and xid not in seen:
                seen.add(xid)
                control.append((rec.lsn, ("x", xid)))
            if wholes[i] is not None:
                control.append((rec.lsn, ("r", wholes[i])))
            mark = at.get(i)
            if mark is not None:
                control.append((rec.lsn, ("c", mark[0], mark[1])))
        seg_records.clear()
        seg_counts.clear()

    for rec in records:
        if isinstance(rec, tuple) and len(rec) == 2 and isinstance(rec[0], str):
            flush()
            kind, what = rec
            control.append((getattr(what, "lsn", None) or 0, (kind, what)))
            break
        changes = _changes_of(rec, database)
        filtered = rec.origin in filtered_origins
        seg_records.append(rec)
        seg_counts.append(None if changes is None or rec.xl_rmid == RM_LOGICALMSG_ID
                          else 0 if filtered else len(changes))
        if changes and not filtered:
            xid, lsn = rec.xl_xid, rec.lsn
            for c in changes:
                yield xid, lsn, c
        if len(seg_records) >= 4096:
            # A bound on memory: markers per 4096 records instead of per segment (still at most two
            # per transaction and block of records)
            flush()
    flush()


def control_path(directory: str, run: int) -> str:
    return os.path.join(directory, f"control-{run:05d}")


#: control items per block of a control file: what a phase-1 task holds of them at once (a run of
#: many small transactions has hundreds of thousands: held whole, they were most of a worker's memory)
CONTROL_BLOCK = 16384


class ControlFile:
    """A run's control items for the driver (``read_control``), written as they come in blocks of
    ``CONTROL_BLOCK`` (each a pickled list), whole or not at all: under a temporary name, renamed
    by ``close``, so that a retried task leaves one complete file and a failed one none."""

    def __init__(self, directory: str, run: int):
        self.path = control_path(directory, run)
        self.tmp = f"{self.path}.{os.getpid()}.tmp"
        self.f = open(self.tmp, "wb")
        self.block: list = []

    def append(self, item) -> None:
        block = self.block
        block.append(item)
        if len(block) >= CONTROL_BLOCK:
            self.f.write(pack(block, compress=False))
            self.block = []

    def close(self) -> None:
        if self.block:
            self.f.write(pack(self.block, compress=False))
            self.block = []
        self.f.close()
        os.replace(self.tmp, self.path)

    def discard(self) -> None:
        """A task that failed or was stopped: no file."""
        self.f.close()
        self.block = []
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


def read_control(path: str):
    """The control items of a ``ControlFile``, block by block."""
    with open(path, "rb") as f:
        while True:
            try:
                block = pickle.load(f)  # a fresh unpickler per block: each block is a pickle of its own
            except EOFError:
                return
            yield from block


def _extract(rec, database):
    if rec.xl_rmid == RM_HEAP_ID:
        fn = HEAP_EXTRACTORS[rec.xl_info & XLOG_HEAP_OPMASK]
    else:
        fn = HEAP2_EXTRACTORS[rec.xl_info & XLOG_HEAP_OPMASK]
    return fn(rec, database)


def _reduce_struct(s: struct.Struct):
    return struct.Struct, (s.format,)


copyreg.pickle(struct.Struct, _reduce_struct)  # the catalog history's row converters hold precompiled structs


def _reduce_transaction(t: Transaction):
    # A frozen slotted dataclass pickles through Python-level __getstate__/__setstate__: its fields as
    # arguments instead (each event of the plan holds one; the driver pickles hundreds of thousands)
    return Transaction, (t.xid, t.first_lsn, t.final_lsn, t.end_lsn, t.xact_time, t.origin_id, t.origin_lsn, t.gid,
                         t.invalidations)


copyreg.pickle(Transaction, _reduce_transaction)


def pack(obj, compress: bool = True) -> bytes:
    """Compressed pickle (``compress``: else plain, cheaper for what is read once nearby); cloudpickle
    (pyspark's) where plain pickle cannot (the catalog history's row converters are closures)."""
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        from pyspark import cloudpickle  # lazy: pyspark (0.15 s, the optional [spark] extra), only for closures

        data = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return zlib.compress(data, 1) if compress else data


def unpack(blob: bytes):
    # a pickle (protocol 2 and up) starts with PROTO (0x80), a zlib stream never does
    return pickle.loads(blob if blob[:1] == b"\x80" else zlib.decompress(blob))


#: a blob of phase 2 holds at most this many changes, or about this many bytes of tuples: small enough
#: for a batch of blobs to keep the memory bound, big enough to keep Spark's per-row costs out of the way
BLOB_CHANGES = 500
BLOB_BYTES = 512 << 10


def change_blobs(rows, run: int):
    """Phase 1 for phase 2, compactly: ``run_items``' changes of one run as ``(xid, lo, hi, run, seq, n,
    blob)``, each blob ``n`` consecutive changes of one xid in LSN order (``lo``/``hi``: the LSNs of
    its first and last), in the reorder buffer's spill format (``reorderbuffer.changes_to_batch``).
    An xid's blobs sorted by (lo, seq) give its changes in LSN order; a transaction's member xids
    are merged by LSN in phase 2 (``merged_changes``)."""
    groups: dict = {}  # xid -> [store, next seq, lo, hi, bytes]
    held = 0

    def cut(xid, g):
        store = g[0]
        blob = (xid, g[2], g[3], run, g[1], len(store), store.getvalue())
        g[0] = new_change_store()
        g[1] += 1
        g[4] = 0
        return blob

    for xid, lsn, c in rows:
        g = groups.get(xid)
        if g is None:
            g = groups[xid] = [new_change_store(), 0, lsn, lsn, 0]
        elif not len(g[0]):
            g[2] = lsn
        g[0].append(c)
        g[3] = lsn
        size = change_size(c)
        g[4] += size
        held += size
        if len(g[0]) >= BLOB_CHANGES or g[4] >= BLOB_BYTES:
            held -= g[4]
            yield cut(xid, g)
        if held >= 8 * BLOB_BYTES:
            # Many small transactions open at once: cut them all (an xid's next blob gets the next seq)
            for x, g in groups.items():
                if len(g[0]):
                    yield cut(x, g)
            groups = {}
            held = 0
    for x, g in groups.items():
        if len(g[0]):
            yield cut(x, g)


def _blob_changes(n: int, blob: bytes, after: int, cutoff: int | None, trim: bool):
    """A blob's changes: a ``ChangeBuffer`` under Cython (which the replayer reads natively), else
    Change tuples; with ``trim``, only those after ``after`` and before ``cutoff``."""
    changes = changes_of_batch(blob, n)
    if trim:
        return [c for c in changes if c.lsn > after and (cutoff is None or c.lsn < cutoff)]
    return changes


def _with_invalidations(changes, invals: list):
    """A replay's changes with its invalidation changes among them by LSN, each after a change of the same
    LSN, as ``ReorderBuffer.iter_changes`` merges them (Change tuples: a ``ChangeBuffer`` taken apart)."""
    flat = (c for item in changes for c in ((item,) if isinstance(item, Change) else item))
    return heapq.merge(flat, invals, key=lambda c: c.lsn)


def merged_changes(rows, cutoff: int | None):
    """The changes of one event's blob rows (``(lo, hi, after, trim, n, blob)``, sorted by (lo, seq)) in
    LSN order, as items ``Replayer.replay`` takes (Change tuples, or ``ChangeBuffer``s under Cython):
    member xids' blobs that overlap are merged by LSN, as ``ReorderBuffer.iter_changes`` merges
    subtransactions, holding only the blobs open at the current LSN."""
    native = _impl.logical() is not None
    it = iter(rows)
    pending = next(it, None)
    heap: list = []
    k = 0

    def push(changes) -> None:
        nonlocal k
        ci = iter(changes)
        c = next(ci, None)
        if c is not None:
            heapq.heappush(heap, (c.lsn, k, c, ci))
            k += 1

    while pending is not None or heap:
        if not heap:
            lo, hi, after, trim, n, blob = pending
            pending = next(it, None)
            changes = _blob_changes(n, blob, after, cutoff, trim)
            if pending is None or pending[0] > hi:
                # alone at these LSNs: the whole blob (natively, as the single process replays a buffer)
                if native and not trim:
                    yield changes
                else:
                    yield from changes
                continue
            push(changes)
            continue
        while pending is not None and pending[0] <= heap[0][0]:
            lo, hi, after, trim, n, blob = pending
            pending = next(it, None)
            push(_blob_changes(n, blob, after, cutoff, trim))
        _lsn, kk, c, ci = heapq.heappop(heap)
        yield c
        c = next(ci, None)
        if c is not None:
            heapq.heappush(heap, (c.lsn, kk, c, ci))


# -- phase 2 ---------------------------------------------------------------------------------------


def part_path(directory: str, rng: int) -> str:
    """Where range ``rng``'s output goes under ``directory`` (``PartWriter``), for the driver to append."""
    return os.path.join(directory, f"part-{rng:05d}")


class PartWriter:
    """The output of one range: ``part-NNNNN`` under ``directory``, written under a temporary name and
    renamed when complete, so that a retried or speculative task leaves one whole file."""

    def __init__(self, directory: str, rng: int):
        self.final = part_path(directory, rng)
        self.tmp = f"{self.final}.{os.getpid()}.tmp"
        self.f = open(self.tmp, "wb", buffering=1 << 20)
        self.lines = 0
        self.event = 0

    def write(self, line: str) -> None:
        self.f.write(line.encode("utf-8", "surrogateescape"))
        self.f.write(b"\n")
        self.lines += 1

    def write_block(self, data: bytes) -> None:
        """Whole lines (``base.OutputWriter``'s blocks)."""
        self.f.write(data)
        self.lines += data.count(b"\n")

    def close(self) -> None:
        self.f.close()
        os.replace(self.tmp, self.final)


class Phase2:
    """What every phase-2 task gets (broadcast once): the catalog, the plugin to make, the run's
    ``DecodeRequest``, the catalog timeline and where reading stopped.  The events of the plan travel
    with the rows, each range getting only its own (``event_chunks``)."""

    def __init__(self, catalog, make_plugin, request: DecodeRequest, timeline, cutoff: int | None = None,
                 watched: tuple = ()):
        self.catalog = catalog
        self.make_plugin = make_plugin  # write -> OutputPlugin (a picklable callable)
        self.request = request
        self.timeline = timeline
        self.cutoff = cutoff  # no change at or after this LSN is replayed (where reading stopped)
        self.watched = watched  # the driver's notes (``plan.Watched``), in event order

    @property
    def plugin_options(self) -> dict:
        return self.request.plugin_options


#: events per chunk row of phase 2: a chunk is unpickled whole in the task
EVENTS_PER_CHUNK = 1000
#: the ``lo`` of a chunk row: before every change row of its first event
CHUNK = -1


def event_chunks(events, range_of, orders=None):
    """``(rng, first order, blob)`` for chunks of consecutive events of one range: what phase 2 sorts before
    the change rows of their first event, so that a range's task gets its own events and no other.  A
    chunk is a pickled list of (order, event), a replay event cut to ("replay", txn, prepare, end call,
    invalidation changes)."""
    chunk: list = []
    rng = None
    for order in (range(len(events)) if orders is None else orders):
        r = range_of[order]
        if chunk and (r != rng or len(chunk) >= EVENTS_PER_CHUNK):
            yield rng, chunk[0][0], pack(chunk, compress=False)
            chunk = []
        rng = r
        ev = events[order]
        # a replay's member xids and change count are the driver's (phase 2 has the rows): not shipped
        chunk.append((order, ev[:4] + ev[6:7] if ev[0] == "replay" else ev))
    if chunk:
        yield rng, chunk[0][0], pack(chunk, compress=False)


class _RowCursor:
    """Phase 2's sorted rows of one range, taken event by event."""

    __slots__ = ("it", "row")

    def __init__(self, rows):
        self.it = iter(rows)
        self.row = next(self.it, None)

    def take(self, order: int):
        """The change rows of ``order``, as (lo, hi, after, trim, n, blob)."""
        row = self.row
        it = self.it
        while row is not None and row[1] == order and row[2] != CHUNK:
            yield row[2:]
            row = self.row = next(it, None)


def decode_rows(rows, ctx: Phase2, open_writer) -> dict:
    """Phase 2 for one partition: ``rows`` ((range, order, lo, hi, after, trim, n, blob), sorted by range,
    order, lo and seq; each range's events in chunk rows, ``lo`` = ``CHUNK``, before their first
    event's changes) are cut into events and run through a fresh plugin and ``Replayer`` exactly as
    the single-process decoder runs them, each range's output going to ``open_writer(range)``.
    Returns {range: {"lines", "warnings", "escalations", "error"}}; an error ends the partition (what came
    before it is written).  The driver's notes are watched from their event on, as the single-process
    replayer watches them from the record that made them; "escalations" are the (note index, why) of
    those a row change of the range hit, for ``plan.RecordingReplayer.escalated``."""
    current = [None]
    writer_out = None
    if ctx.make_plugin is TestDecoding:
        # decode's own output path: lines built natively from WAL tuples, written in blocks
        writer_out = OutputWriter(lambda data: current[0].write_block(data))
        plugin = TestDecoding(output=writer_out)
    else:
        plugin = ctx.make_plugin(lambda line: current[0].write(line))
    snapshot = CatalogView(ctx.catalog)
    opts = plugin.startup(dict(ctx.plugin_options or {}), snapshot) or None
    warnings: list = []
    replayer = Replayer(ctx.catalog, plugin, snapshot, bool(opts and opts.receive_rewrites),
                        history=ctx.timeline, warn=warnings.append,
                        wal_tuples=bool(opts and opts.receive_wal_tuples))
    summary: dict = {}
    cutoff = ctx.cutoff
    watched = ctx.watched
    nwatched = 0  # the notes watched so far (those of the events up to the current one)
    escalations: list = []

    def escalate(note, why: str) -> None:
        escalations.append((note.index, why))

    try:
        for rng, rows_of_range in groupby(rows, key=_first):
            writer = current[0] = open_writer(rng)
            info = summary[rng] = {"lines": 0, "warnings": [], "escalations": [], "error": None}
            warnings.clear()
            escalations.clear()
            cursor = _RowCursor(rows_of_range)
            try:
                while cursor.row is not None:
                    row = cursor.row
                    if row[2] != CHUNK:
                        raise RuntimeError(f"phase 2: changes of event {row[1]} without the event")
                    chunk = unpack(row[7])
                    cursor.row = next(cursor.it, None)
                    for order, ev in chunk:
                        writer.event = order  # the output position, for writers that record it
                        while nwatched < len(watched) and watched[nwatched].order <= order:
                            replayer.watch(watched[nwatched], escalate)
                            nwatched += 1
                        group = cursor.take(order)
                        if ev[0] == "call":
                            for _ in group:
                                pass
                            getattr(plugin, ev[1])(*ev[2])
                            continue
                        _kind, txn, prepare, end_call, invals = ev
                        changes = merged_changes(group, cutoff)
                        if invals:
                            changes = _with_invalidations(changes, invals)
                        replayer.replay(txn, changes, lambda: _call(plugin, end_call), prepare=prepare)
                        for _ in group:  # a replay that stopped early (it never does without an error)
                            pass
            except Error as e:
                info["error"] = e
                return summary  # an error ends the partition, as it ends a single-process run
            finally:
                if writer_out is not None:
                    writer_out.flush()
                writer.close()
                info["lines"] = writer.lines
                info["warnings"] = list(warnings)
                info["escalations"] = list(escalations)
    finally:
        plugin.shutdown()
    return summary


def _first(row):
    return row[0]


def _call(plugin, call) -> None:
    """The call that ends a replay, as the driver's decoder made it."""
    if call is not None:
        getattr(plugin, call[0])(*call[1])
