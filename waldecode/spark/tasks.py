"""What Spark tasks run: phase 1 over a run of consecutive segments, phase 2 over whole transactions.

Owns the per-task functions of the Spark path (``/work/shared/spark-design.md`` §4), built
only from the single-process pieces: framing and record decoding (``_impl``, as
``xlogreader`` uses them), the pure change extractors of ``decode``, and, per transaction,
``replay.Replayer`` with the output plugin.  Nothing here keeps state across tasks.

Phase 1 (``read_run`` then ``control_items`` / ``change_rows``): a run of segments is
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
* the *change rows* of phase 2: every change the decoder would queue (``decode.changes_of``
  for this database, filtered by origin as the plugin asks), tuples kept as WAL bytes, for
  the transactions the driver says are replayed, each tagged with its output order.

Phase 2 (``write_partition``): rows sorted by (range, order, LSN) are cut into
transactions and fed, as a stream, to ``Replayer.replay`` with the plugin writing into a
part file per range: the partition's output, in commit order.
"""

from __future__ import annotations

import copyreg
import os
import pickle
import struct
import zlib

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
from ..logical.decode import HEAP2_EXTRACTORS, HEAP_EXTRACTORS, message_changes
from ..rmgr import heap as rm_heap
from ..rmgr.heap import XLOG_HEAP_OPMASK
from ..wal.xlogpage import FrameState, ReadStop
from ..wal.xlogreader import _end_lsn, decode_in

# decode.py's knowingly ignored heap/heap2 record types: anything else non-extracting goes to the
# driver whole, so that the sequential pass raises the decoder's own "unexpected record type" error
_HEAP_QUIET = {rm_heap.XLOG_HEAP_LOCK}
_HEAP2_QUIET = {rm_heap.XLOG_HEAP2_REWRITE, 0x10, 0x20, 0x30, rm_heap.XLOG_HEAP2_VISIBLE,
                rm_heap.XLOG_HEAP2_LOCK_UPDATED}
XLOG_PARAMETER_CHANGE = 0x60
_ALWAYS_WHOLE = frozenset((RM_XACT_ID, RM_STANDBY_ID, RM_RELMAP_ID, RM_LOGICALMSG_ID))
_xl_xid = struct.Struct("<I").unpack_from
#: the resource managers whose records phase 2 takes changes from (``change_rows``)
CHANGE_RMIDS = frozenset((RM_HEAP_ID, RM_HEAP2_ID, RM_LOGICALMSG_ID))


# -- phase 1 ---------------------------------------------------------------------------------------


def read_run(segments, first: int, last: int, start: int | None, end_lsn: int | None, verify_crc: bool = True,
             keep=None):
    """Frame segments ``first``..``last`` as the sequential reader does (from ``start`` when it lies in
    ``first``, else from the first record that starts there) and complete the record crossing into
    ``last`` + 1.  Yields ``DecodedRecord``s; ``("stop", ReadStop)`` or ``("error", exc)`` ends it.
    A run ending the input reports running out as ``XLogReader`` does.  ``keep(xid, rmid)``: decode
    only the records it accepts (read from the XLogRecord header before decoding)."""
    seg_size = segments.seg_size
    major = segments.major
    run_start = first * seg_size
    if start is not None and start > run_start:
        run_start = start
    page_start = run_start - run_start % segments.page_size
    st = FrameState(segments.page_size, seg_size, segments.magic, segments.sysid, page_start, 0, end_lsn or 0)
    decode = _impl.decode_record
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
            buf, path = segments.load(segno)
            raw, stop = _impl.frame_segment(buf, segno * seg_size, st, verify_crc, path)
            for lsn, raw_end, rec in raw:
                if lsn < run_start:
                    continue
                if keep is not None and not keep(_xl_xid(rec, 4)[0], rec[17]):
                    continue  # XLogRecord: xl_tot_len, xl_xid at 4, xl_prev, xl_info, xl_rmid at 17
                yield decode_in(decode, rec, lsn, _end_lsn(rec, lsn, raw_end, seg_size), major, path)
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
        if rmid == RM_HEAP_ID:
            if info == rm_heap.XLOG_HEAP_INPLACE or (info not in HEAP_EXTRACTORS and info not in _HEAP_QUIET):
                return rec
        elif info == rm_heap.XLOG_HEAP2_NEW_CID or (info not in HEAP2_EXTRACTORS and info not in _HEAP2_QUIET):
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


def control_items(records, nodes: frozenset, database: int, filtered_origins: frozenset) -> list:
    """Phase 1 for the driver: ``(lsn, item)`` in LSN order (see the module docstring)."""
    out = []
    state = {"xlog_xid": False}
    seg_records: list = []
    seg_of = None

    def flush():
        if not seg_records:
            return
        wholes = [_whole(rec, nodes, state) for rec in seg_records]
        # Per transaction in this block of records: its last change record not sent whole (where a
        # marker sets the base snapshot, as the decoder's _process_change does at each change record)
        # and how many changes those records queue
        last: dict = {}
        for i, rec in enumerate(seg_records):
            if rec.xl_xid and wholes[i] is None and _is_change_record(rec):
                n = 0 if rec.origin in filtered_origins else len(_extract(rec, database))
                prev = last.get(rec.xl_xid)
                last[rec.xl_xid] = (i, n + (prev[1] if prev else 0))
        at = {i: (xid, n) for xid, (i, n) in last.items()}
        seen = set()
        for i, rec in enumerate(seg_records):
            xid = rec.xl_xid
            if rec.toplevel_xid:
                out.append((rec.lsn, ("a", rec.toplevel_xid, xid)))
            if xid and xid not in seen:
                seen.add(xid)
                out.append((rec.lsn, ("x", xid)))
            if wholes[i] is not None:
                out.append((rec.lsn, ("r", wholes[i])))
            mark = at.get(i)
            if mark is not None:
                out.append((rec.lsn, ("c", mark[0], mark[1])))
        seg_records.clear()

    for rec in records:
        if isinstance(rec, tuple) and len(rec) == 2 and isinstance(rec[0], str):
            flush()
            kind, what = rec
            out.append((getattr(what, "lsn", None) or 0, (kind, what)))
            break
        seg_records.append(rec)
        if len(seg_records) >= 4096:
            # A bound on memory: markers per 4096 records instead of per segment (still at most two
            # per transaction and block of records)
            flush()
    flush()
    return out


def _extract(rec, database):
    if rec.xl_rmid == RM_HEAP_ID:
        fn = HEAP_EXTRACTORS[rec.xl_info & XLOG_HEAP_OPMASK]
    else:
        fn = HEAP2_EXTRACTORS[rec.xl_info & XLOG_HEAP_OPMASK]
    return fn(rec, database)


def _reduce_struct(s: struct.Struct):
    return struct.Struct, (s.format,)


copyreg.pickle(struct.Struct, _reduce_struct)  # the catalog history's row converters hold precompiled structs


def pack(obj) -> bytes:
    """Compressed pickle; cloudpickle (pyspark's) where plain pickle cannot (the catalog history's
    row converters are closures)."""
    try:
        data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    except (pickle.PicklingError, AttributeError, TypeError):
        from pyspark import cloudpickle

        data = cloudpickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    return zlib.compress(data, 1)


def unpack(blob: bytes):
    return pickle.loads(zlib.decompress(blob))


def change_rows(records, database: int, filtered_origins: frozenset, members: dict, cutoff: int | None):
    """Phase 1 for phase 2: ``(xid, rec_lsn, sub, Change, order, rng)`` for each change the decoder
    would queue for a replayed transaction.  ``members``: xid -> (order, collect-after LSN, range)."""
    for rec in records:
        if isinstance(rec, tuple) and len(rec) == 2 and isinstance(rec[0], str):
            return
        if cutoff is not None and rec.lsn >= cutoff:
            return
        xid = rec.xl_xid
        m = members.get(xid)
        if m is None:
            continue
        rmid = rec.xl_rmid
        if rmid == RM_HEAP_ID or rmid == RM_HEAP2_ID:
            if not _is_change_record(rec):
                continue
            changes = _extract(rec, database)
        elif rmid == RM_LOGICALMSG_ID:
            changes = message_changes(rec, database)
        else:
            continue
        if not changes or rec.origin in filtered_origins or rec.lsn <= m[1]:
            continue
        for i, c in enumerate(changes):
            yield xid, rec.lsn, i, c, m[0], m[2]


#: a blob of phase 2 holds at most this many changes, or about this many bytes of tuples: small enough
#: for a batch of blobs to keep the memory bound, big enough to keep Spark's per-row costs out of the way
BLOB_CHANGES = 500
BLOB_BYTES = 512 << 10


def change_blobs(rows, run: int):
    """Phase 1 for phase 2, compactly: ``change_rows`` of one run as ``(order, rng, run, seq, n, blob)``,
    each blob ``n`` consecutive changes of one output event in LSN order, in the reorder buffer's spill
    format (``reorderbuffer.changes_to_batch``).  Sorted by (order, run, seq), the blobs give each event's
    changes in LSN order: runs are in LSN order, and a run's changes of one event are cut in order."""
    from ..logical.reorderbuffer import change_size, changes_to_batch as serialize

    groups: dict = {}  # order -> [rng, next seq, changes, bytes]
    held = 0

    def cut(order, g):
        blob = (order, g[0], run, g[1], len(g[2]), serialize(g[2]))
        g[1] += 1
        g[2] = []
        g[3] = 0
        return blob

    for _xid, _rlsn, _sub, c, order, rng in rows:
        g = groups.get(order)
        if g is None:
            g = groups[order] = [rng, 0, [], 0]
        g[2].append(c)
        size = change_size(c)
        g[3] += size
        held += size
        if len(g[2]) >= BLOB_CHANGES or g[3] >= BLOB_BYTES:
            held -= g[3]
            yield cut(order, g)
        if held >= 8 * BLOB_BYTES:
            # Many small events open at once: cut them all (an event's next blob gets the next seq)
            for o, g in groups.items():
                if g[2]:
                    yield cut(o, g)
            held = 0
    for o, g in groups.items():
        if g[2]:
            yield cut(o, g)


def changes_of_blobs(blobs):
    """The changes of ``(n, blob)`` pairs (``change_blobs``), in order; None blobs (event rows) skipped."""
    from ..logical.reorderbuffer import changes_of_batch

    for n, blob in blobs:
        if blob is not None:
            yield from changes_of_batch(blob, n)


# -- phase 2 ---------------------------------------------------------------------------------------


class PartWriter:
    """The output of one range: ``part-NNNNN`` under ``directory``, written under a temporary name and
    renamed when complete, so that a retried or speculative task leaves one whole file."""

    def __init__(self, directory: str, rng: int):
        self.final = os.path.join(directory, f"part-{rng:05d}")
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
    """What every phase-2 task gets (broadcast once): the catalog, the plugin to make, the catalog
    timeline and the events of the plan."""

    def __init__(self, catalog, make_plugin, plugin_options: dict, timeline, events: list):
        self.catalog = catalog
        self.make_plugin = make_plugin  # write -> OutputPlugin (a picklable callable)
        self.plugin_options = plugin_options
        self.timeline = timeline
        self.events = events


def decode_rows(rows, ctx: Phase2, open_writer) -> dict:
    """Phase 2 for one partition: ``rows`` ((range, order, n, blob), sorted by range, order and then as
    ``change_blobs`` says; an event's own row has no blob) are cut into events and run through a fresh
    plugin and ``Replayer`` exactly as the single-process decoder runs them, each range's output going
    to ``open_writer(range)``.  Returns {range: {"lines", "warnings", "error"}}; an error ends the
    partition (what came before it is written)."""
    from itertools import groupby

    from ..output.base import CatalogView, OutputWriter
    from ..output.test_decoding import TestDecoding
    from ..logical.apply import Replayer

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
    events = ctx.events
    try:
        for rng, rows_of_range in groupby(rows, key=_first):
            writer = current[0] = open_writer(rng)
            info = summary[rng] = {"lines": 0, "warnings": [], "error": None}
            warnings.clear()
            try:
                for order, group in groupby(rows_of_range, key=_second):
                    writer.event = order  # the output position, for writers that record it
                    ev = events[order]
                    if ev[0] == "call":
                        for _ in group:
                            pass
                        getattr(plugin, ev[1])(*ev[2])
                        continue
                    _kind, txn, prepare, end_call, _members, _n = ev
                    changes = changes_of_blobs((r[2], r[3]) for r in group)
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
    finally:
        plugin.shutdown()
    return summary


def _first(row):
    return row[0]


def _second(row):
    return row[1]


def _call(plugin, call) -> None:
    """The call that ends a replay, as the driver's decoder made it."""
    if call is not None:
        getattr(plugin, call[0])(*call[1])
