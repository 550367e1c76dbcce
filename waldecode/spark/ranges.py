"""The range path of ``spark decode``: each output range decoded as a slot restarted at its start.

A logical slot confirmed up to ``L`` and restarted from ``R`` prints every transaction that
commits at or after ``L``, whole, provided every such transaction began at or after ``R``: the
server's own contract for resuming (``restart_lsn``, ReorderBufferGetOldestTXN), and
``decode --start-lsn L --restart-lsn R``'s (``startpoint``).  Commits before ``L`` are read and
skipped (SnapBuildXactNeedsSkip on the commit record's start).  So the single-process output
is the concatenation, in LSN order, of the outputs of ranges ``[L_r, L_r+1)`` each decoded by
``session.decode_wal`` itself with ``start_lsn=L_r``, ``restart_lsn=R_r`` and ``end_lsn=L_r+1``,
when ``R_r`` is at or before the first record of every transaction committing in the range:
phase 2 is the single-process decoder, native path and spill files included, run once per
range, and no change travels through Spark.

Phase 1 (``run_spans``, one cheap pass per run of segments) finds those ``R_r``: for each run,
its first record (the range starts ``L_r``), the xids still open at its end with their first
record in it, and the xids its commit and abort records end.  The driver (``plan_ranges``)
follows the few xids open at a run's end to the run where they end.

When the catalog changes in the WAL read (phase 1 sees a commit with invalidations), a catalog pass
(``run_catalog_records``, a task per run) collects the records the catalog history needs and the
driver builds that history once for the whole read (``catalog_history``); every range decodes with
it, frozen, so that each transaction sees the catalog in force for it as in the single process.

Exactness rests on three facts the single-process run shares, which the driver checks and
otherwise hands the run to the event path (``plan``): each range decodes with the catalog the
single process would (the snapshot, or the driver's history of the whole read; a range's own
history reports any change it was not given), the first range is consistent before the second starts (the snapshot builder's path to
consistency is the first range's alone), and no reading error (the event path places the error
after exactly the output before it) is met in phase 1.  A prepared transaction is open until its
COMMIT or ROLLBACK PREPARED, and the ranges of its PREPARE and of its end read it from its first
record: each decodes it as a slot restarted there does.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from array import array
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from ..catalog.history import CatalogHistory
from ..errors import Error
from ..logical.session import DecodeResult, decode_wal
from ..output.base import OutputWriter
from ..output.test_decoding import TestDecoding
from ..rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_RELMAP_ID, RM_STANDBY_ID, RM_XACT_ID, RM_XLOG_ID
from ..rmgr.heap import XLOG_HEAP2_NEW_CID, XLOG_HEAP_OPMASK
from ..rmgr.xlog import XLOG_PARAMETER_CHANGE
from ..rmgr.xact import (
    XACT_XINFO_HAS_INVALS,
    XLOG_XACT_INVALIDATIONS,
    XLOG_XACT_ABORT,
    XLOG_XACT_ABORT_PREPARED,
    XLOG_XACT_COMMIT,
    XLOG_XACT_COMMIT_PREPARED,
    XLOG_XACT_OPMASK,
    XLOG_XACT_PREPARE,
    parse_commit_or_abort,
)
from ..wal.xlogreader import decode_in
from ..wal.xlogrecord import XL_XID_OFFSET, unpack_xl_xid
from ..xact import xact_event
from . import tasks

_TWO_PHASE = frozenset((XLOG_XACT_PREPARE, XLOG_XACT_COMMIT_PREPARED, XLOG_XACT_ABORT_PREPARED))


@dataclass
class RunSpans:
    """What phase 1 of the range path learns of one run of segments."""

    run: int
    first_lsn: int | None  # the first record that starts in the run (None: none does)
    open: dict  # xid -> its first record in the run, for xids with records here not ended here
    ended_xids: array  # xids a commit or abort record of the run ends (its own and its subtransactions), sorted
    ended_lsns: array  # ... and that record's LSN
    ended_commit: bytes  # ... and whether it is a commit (1) or an abort (0)
    stop: object = None  # ReadStop of a run ending the input, or of a problem
    error: Error | None = None
    # a catalog change: a commit with invalidations, or an XLOG_XACT_INVALIDATIONS record (every transaction
    # that changes a catalog row sends invalidations)
    catalog_changes: bool = False
    prepared: dict | None = None  # xid -> the LSN of its PREPARE record in the run
    # the run's records the catalog history needs (``catalog_records``), taken in the same read when phase 1
    # was given the tracked catalogs' relfilenodes; None: not taken
    catalog_records: list | None = None


class XactEnds:
    """Each xid a COMMIT or ABORT record of a run ends (``xact_spans``): the record's LSN, 1 for a commit,
    0 for an abort; an xid ended again keeps its last end.  The pure-Python reference of
    ``_logical.XactEnds``."""

    def __init__(self):
        self._ends: dict = {}

    def add(self, xid: int, lsn: int, commit) -> None:
        self._ends[xid] = (lsn, 1 if commit else 0)

    def __len__(self) -> int:
        return len(self._ends)

    def columns(self) -> tuple:
        """``RunSpans``' columns, sorted by xid (``plan_ranges`` looks xids up by bisection): array("Q")
        of xids, array("Q") of the LSN of the record ending each, and bytes of 1 for a commit, 0 for an
        abort."""
        xids = array("Q")
        lsns = array("Q")
        commit = bytearray()
        for xid, (lsn, is_commit) in sorted(self._ends.items()):
            xids.append(xid)
            lsns.append(lsn)
            commit.append(is_commit)
        return xids, lsns, bytes(commit)

    def open_of(self, firsts: dict) -> dict:
        """Of ``firsts`` (xid -> LSN), those not ended here, in ``firsts``' order."""
        return {xid: lsn for xid, lsn in firsts.items() if xid not in self._ends}


def xact_spans(records, major: int, firsts: dict, ended: XactEnds, slow=None, prepared: dict | None = None) -> bool:
    """The pure-Python reference of ``_logical.xact_spans``: over framed records ``(lsn, raw end, bytes)``,
    ``firsts`` gets each xid's first record (the lowest LSN there: framing with ``FrameState.firsts``
    notes the other records' xids in it before these are read), and ``ended`` (``XactEnds``) each xid a
    COMMIT or ABORT record ends (the record's own xid and its subtransactions).  COMMIT PREPARED and ROLLBACK PREPARED end the prepared transaction (both
    print with two-phase decoding: 1); a PREPARE ends nothing (the transaction stays open until then) and
    goes to ``prepared`` (xid -> its LSN).
    A commit or abort record is not where its transaction's changes begin: it is not in ``firsts``.
    Returns True when a catalog change is among them (``RunSpans.catalog_changes``).  A record the
    decoder refuses raises its error.  (``slow``: the native version's way back here, unused.)"""
    xl_xid = unpack_xl_xid
    catalog = False
    for lsn, raw_end, rec in records:
        xid = xl_xid(rec, XL_XID_OFFSET)[0]
        if rec[17] == RM_XACT_ID:
            info = rec[16] & XLOG_XACT_OPMASK
            if info in (XLOG_XACT_COMMIT, XLOG_XACT_ABORT, XLOG_XACT_COMMIT_PREPARED, XLOG_XACT_ABORT_PREPARED):
                xid, subxacts, is_commit, xinfo = xact_end(rec, lsn, raw_end, major, with_xinfo=True)
                if info in (XLOG_XACT_COMMIT, XLOG_XACT_COMMIT_PREPARED) and xinfo & XACT_XINFO_HAS_INVALS:
                    catalog = True
                ended.add(xid, lsn, is_commit)
                for sub in subxacts:
                    ended.add(sub, lsn, is_commit)
                continue
            if info == XLOG_XACT_PREPARE:
                if prepared is not None and xid:
                    prepared[xid] = lsn
            elif info == XLOG_XACT_INVALIDATIONS:
                catalog = True
        if xid and (xid not in firsts or lsn < firsts[xid]):
            firsts[xid] = lsn
    return catalog


def xact_end(rec: bytes, lsn: int, raw_end: int, major: int, with_xinfo: bool = False) -> tuple:
    """(xid, subtransactions, 1 for a commit) of a COMMIT or ABORT record (DecodeXactOp's reading), and
    its xinfo ``with_xinfo``.  Of COMMIT PREPARED and ROLLBACK PREPARED: the prepared transaction, and 1
    for both (with two-phase decoding, ROLLBACK PREPARED prints too)."""
    r = tasks._impl.decode_record(rec, lsn, raw_end, major)
    info = r.xl_info & XLOG_XACT_OPMASK
    is_commit = info in (XLOG_XACT_COMMIT, XLOG_XACT_COMMIT_PREPARED)
    parsed = parse_commit_or_abort(r.xl_info, r.main_data, major, is_commit)
    xid = (parsed.twophase_xid or r.xl_xid) if info in _TWO_PHASE else r.xl_xid
    out = (xid, parsed.subxacts, int(is_commit or info == XLOG_XACT_ABORT_PREPARED))
    return out + (parsed.xinfo,) if with_xinfo else out


def _native_or(reference):
    """``_logical``'s function of ``reference``'s name under the Cython implementation, else ``reference``."""
    native = tasks._impl._companion("_logical")
    return getattr(native, reference.__name__, None) or reference


def run_spans(segments, run: int, first: int, last: int, start: int | None, end_lsn: int | None,
              nodes: frozenset | None = None) -> RunSpans:
    """Phase 1 of the range path over segments ``first``..``last`` (``tasks.frame_run``'s records).
    ``nodes`` (the tracked catalogs' relfilenodes): the records the catalog history needs are taken in the
    same read (``RunSpans.catalog_records``, as ``run_catalog_records`` takes them): framing returns whole
    the few it may need (``FrameState.catalog``) besides the xact records, and ``catalog_records`` chooses."""
    major = segments.major
    firsts: dict = {}
    ended = _native_or(XactEnds)()
    prepared: dict = {}  # xid -> its PREPARE's LSN
    first_lsn = None
    catalog = False
    stop = error = None
    spans = _native_or(xact_spans)
    take = _native_or(catalog_records) if nodes is not None else None
    taken: list | None = [] if nodes is not None else None
    xlog_xid = True
    # Without CRC checks (a third of framing's cost): every record read here is read again, checked, by the
    # range decoding it (the ranges' reads cover the whole input), whose failure hands the run to the
    # event path; a damaged record can mislead this pass only into a plan that is not used
    # Only the xact records whole: of the others, framing notes the xids in ``firsts`` from their headers
    for item in tasks.frame_run(segments, first, last, start, end_lsn, verify_crc=False, firsts=firsts,
                                catalog_nodes=nodes):
        path, raw = item
        if path == "stop":
            stop = raw
            break
        if path == "error":
            error = raw
            break
        if not raw:
            continue
        if first_lsn is None:
            first_lsn = raw[0][0]
        try:
            catalog = spans(raw, major, firsts, ended, xact_end, prepared) or catalog
        except Error as e:
            error = e
            break
        if take is not None:
            xlog_xid = take(raw, major, nodes, taken, xlog_xid)
    xids, lsns, commit = ended.columns()
    open_ = ended.open_of(firsts)
    return RunSpans(run, first_lsn, open_, xids, lsns, commit, stop, error, catalog, prepared, taken)


# -- the catalog through the WAL read, for ranges after a catalog change --------------------------------

def catalog_records(records, major: int, nodes: frozenset, out: list, xlog_xid: bool) -> bool:
    """The pure-Python reference of ``_logical.catalog_records``: of framed records ``(lsn, raw end, bytes)``,
    those the catalog history (``CatalogHistory.process``, its transaction tracker) needs are appended to
    ``out``: heap and heap2 records whose first block is in ``nodes`` (the tracked catalogs' relfilenodes)
    and XLOG records imaging one, XLOG_HEAP2_NEW_CID (a subtransaction's top-level xid), XLOG parameter
    changes, every xact record but a commit without invalidations (one changed no catalog row: whoever
    does sends invalidations), standby and relation-map records; and, while ``xlog_xid``, the first XLOG
    record with blocks and an xid (the history's first xid may come from it).  Returns whether that is
    still wanted.  A record whose layout the decoder would refuse is taken: the driver's decoding says why."""
    decode = tasks._impl.decode_record
    for t in records:
        lsn, raw_end, raw = t
        rmid, info = raw[17], raw[16]
        if rmid == RM_XACT_ID and (info & XLOG_XACT_OPMASK) != XLOG_XACT_COMMIT:
            take = True
        elif rmid in (RM_STANDBY_ID, RM_RELMAP_ID):
            take = True
        elif rmid in (RM_XACT_ID, RM_HEAP_ID, RM_HEAP2_ID, RM_XLOG_ID):
            try:
                rec = decode(raw, lsn, raw_end, major)
            except Error:
                out.append(t)
                continue
            if rmid == RM_XACT_ID:
                take = bool(parse_commit_or_abort(rec.xl_info, rec.main_data, major, True).xinfo
                            & XACT_XINFO_HAS_INVALS)
            elif rmid == RM_XLOG_ID and (info & 0xF0) == XLOG_PARAMETER_CHANGE:
                take = True
            elif rec.blocks:
                take = rec.blocks[0].relNumber in nodes
                if not take and rmid == RM_XLOG_ID and xlog_xid and rec.xl_xid:
                    take, xlog_xid = True, False
            else:
                take = rmid == RM_HEAP2_ID and (info & XLOG_HEAP_OPMASK) == XLOG_HEAP2_NEW_CID
        else:
            take = False
        if take:
            out.append(t)
    return xlog_xid


def run_catalog_records(segments, first: int, last: int, start: int | None, end_lsn: int | None,
                        nodes: frozenset) -> list:
    """``catalog_records`` over segments ``first``..``last`` (``tasks.frame_run``'s records, every one): the
    framed records taken, up to where reading ended when it ended early (the ranges meet the same and say
    so)."""
    out: list = []
    take = _native_or(catalog_records)
    xlog_xid = True
    major = segments.major
    for path, raw in tasks.frame_run(segments, first, last, start, end_lsn, verify_crc=False):
        if path in ("stop", "error"):
            break
        if raw:
            xlog_xid = take(raw, major, nodes, out, xlog_xid)
    return out


def catalog_history(catalog, runs_records, major: int, spans: list, warn=None):
    """The catalog history of the whole WAL read, from every run's ``run_catalog_records`` (in run order):
    a ``CatalogHistory`` fed those records in LSN order, as the single-process decoder's is fed all of
    them; or a string saying why it cannot stand for that one: a transaction that wrote rows of a tracked
    catalog committed (as phase 1 saw) without its commit among these records, so without invalidations,
    which ``catalog_records`` counts on (its history would have taken its rows for a crashed one's)."""
    history = CatalogHistory(catalog, major, warn=warn)
    decode = tasks._impl.decode_record
    writers: set = set()  # xids of the catalog rows taken
    ends: set = set()  # xids the commit and abort records taken end
    for records in runs_records:
        for lsn, raw_end, raw in records:
            rec = decode_in(decode, raw, lsn, (raw_end + 7) & ~7, major, None)
            if rec.xl_xid and rec.xl_rmid != RM_XLOG_ID and history.redo.wants(rec):  # a tracked catalog's row
                writers.add(rec.xl_xid)
            ev = xact_event(rec, major)
            if ev is not None:
                ends.add(ev.xid)
                ends.update(ev.subxacts)
            history.process(rec)
    for xid in sorted(writers - ends):
        for s in spans:
            i = bisect_left(s.ended_xids, xid)
            if i < len(s.ended_xids) and s.ended_xids[i] == xid and s.ended_commit[i]:
                return (f"transaction {xid} changed catalog rows and committed at {s.ended_lsns[i]:X} without "
                        "invalidations")
    return history


@dataclass
class Range:
    """One range of the output: commits whose record starts in [start, end), read from ``restart``."""

    rng: int
    start: int | None  # None: the run's own start (the first range: the caller's start)
    restart: int | None
    end: int | None  # None: the caller's end
    first: bool
    last: bool


@dataclass
class RangePlan:
    ranges: list  # [Range]
    reason: str | None = None  # why the range path cannot be taken (None: it can)


def plan_ranges(spans: list, nranges: int, start_lsn: int | None, restart_lsn: int | None,
                end_lsn: int | None) -> RangePlan:
    """The ranges of the output and where each must read from, from every run's ``RunSpans``."""
    for s in spans:
        if s.error is not None:
            return RangePlan([], f"phase 1 met an error in run {s.run}: {s.error}")
        if s.stop is not None and s.stop.kind not in ("end", "limit"):
            return RangePlan([], f"reading stopped early in run {s.run}: {s.stop.reason}")
    for s in spans[:-1]:
        if s.stop is not None:
            return RangePlan([], f"reading stopped in run {s.run}, before the last run: {s.stop.reason}")
    bounds = _bounds(spans, nranges, start_lsn, end_lsn)
    n = len(bounds) + 1
    ranges = []
    edges = [None] + bounds + [None]
    restart = {b: b for b in bounds}
    # Follow every xid open at some run's end to the record that ends it: a commit in a later range moves
    # that range's restart back to the xid's first record; an xid never ended moves the last range's
    # (each run's ended xids are sorted: a few open xids are looked up in them, run after run)
    pending: dict = {}  # xid -> its first record, open at the end of an earlier run, not ended since
    for s in spans:
        # with two-phase decoding a transaction prints at its PREPARE: that range reads it from its start too
        for xid, lsn in (s.prepared or {}).items():
            f = pending.get(xid)
            b = _range_start(bounds, lsn)
            if f is not None and b is not None and f < b:
                restart[b] = min(restart[b], f)
        if pending:
            xids = s.ended_xids
            for xid in list(pending):
                i = bisect_left(xids, xid)
                if i == len(xids) or xids[i] != xid:
                    continue
                f = pending.pop(xid)
                if s.ended_commit[i]:
                    b = _range_start(bounds, s.ended_lsns[i])
                    if b is not None and f < b:
                        restart[b] = min(restart[b], f)
        for xid, lsn in s.open.items():
            pending[xid] = min(lsn, pending.get(xid, lsn))
    if pending and bounds:
        last = bounds[-1]
        restart[last] = min([restart[last]] + list(pending.values()))
    for k in range(n):
        lo, hi = edges[k], edges[k + 1]
        ranges.append(Range(k, lo if k else start_lsn, restart[lo] if k else restart_lsn, hi if hi is not None else end_lsn,
                            k == 0, k == n - 1))
    return RangePlan(ranges)


#: what one MiB read costs a range, in commits of short transactions: a range's work is decoding the
#: transactions it commits and reading its bytes, and the WAL just after a checkpoint is mostly page
#: images, cheap per byte but many bytes.  Fitted to the ranges' own timings (``spark decode --timings``'s
#: ``range_tasks``) on two pgbench archives of 2 and 4 GiB: 0.8-1.3 ms per MiB, 6-9 us per commit
COMMITS_PER_MIB = 100


def _bounds(spans: list, nranges: int, start_lsn: int | None, end_lsn: int | None = None) -> list:
    """The starts of the ranges after the first: run starts (the xids open there are known) splitting the
    work into shares as equal as the runs allow, a run's work its commits plus its bytes
    (``COMMITS_PER_MIB``), each after ``start_lsn``."""
    commits = [s.ended_commit.count(1) for s in spans]
    if nranges <= 1 or not any(commits):
        return []
    weights = []
    following = end_lsn
    for s, count in zip(reversed(spans), reversed(commits)):  # a run's bytes: to the next run's first record
        size = following - s.first_lsn if s.first_lsn is not None and following is not None else 0
        weights.append(count + COMMITS_PER_MIB * size / (1 << 20))
        following = s.first_lsn if s.first_lsn is not None else following
    weights.reverse()
    total = sum(weights)
    candidates = []  # (work before the run, its start)
    seen = 0.0
    for s, weight in zip(spans, weights):
        if s.run and s.first_lsn is not None and (start_lsn is None or s.first_lsn > start_lsn):
            candidates.append((seen, s.first_lsn))
        seen += weight
    bounds: list = []
    for k in range(1, nranges):
        share = total * k / nranges
        best = min(candidates, key=lambda c: abs(c[0] - share), default=None)
        if best is not None and (not bounds or best[1] > bounds[-1]):
            bounds.append(best[1])
    return bounds


def _range_start(bounds: list, lsn: int) -> int | None:
    """The start of the range (after the first) holding a commit record at ``lsn``."""
    i = bisect_right(bounds, lsn)
    return bounds[i - 1] if i else None


def decode_range(segments, catalog, make_plugin, request, r: Range, *, writer, history=None) -> dict:
    """One range through ``session.decode_wal`` (the single-process decoder) as the run's ``request`` (a
    ``DecodeRequest``) asks it of the range (``DecodeRequest.for_range``: a slot restarted at the range's
    restart point, spilling in a directory of its own), its lines to ``writer``
    (``tasks.PartWriter``); returns its summary: lines, warnings, error, and the facts of its
    ``DecodeResult`` the driver combines and checks.  ``history``: the catalog history of the whole WAL
    read (``plan.FrozenCatalogHistory``, the driver's) when the catalog changes in it: the range decodes
    each transaction with the catalog in force for it, as the single process does."""
    out = None
    if make_plugin is TestDecoding:
        out = OutputWriter(writer.write_block)
        plugin = TestDecoding(output=out)
    else:
        plugin = make_plugin(writer.write)
    # when and for how long the range ran, for ``--timings`` (a range's share of the parallel part)
    info = {"lines": 0, "warnings": [], "error": None, "result": None,
            "began": time.time(), "seconds": 0.0, "cpu": 0.0}
    began, cpu = time.perf_counter(), time.process_time()
    # the range's task may share its machine with others of the run: spill files of its own
    own_spill = tempfile.mkdtemp(prefix="waldecode-range-spill-", dir=request.spill_dir)
    try:
        try:
            asked = request.for_range(r.start, r.restart, r.end, r.last, own_spill)
            result = decode_wal(segments, catalog, plugin, asked,
                                catalog_history=history if history is not None else True)
        except Error as e:
            info["error"] = e
            result = None
        finally:
            if out is not None:
                out.flush()
            writer.close()
            info["lines"] = writer.lines
        if result is not None:
            decoder_history = result.decoder.history
            info["warnings"] = list(result.warnings)
            info["result"] = {
                "plan": result.plan, "read_from": result.read_from, "stop": result.stop,
                "open_transactions": result.open_transactions, "not_decoded": result.not_decoded,
                "ended_early": result.ended_early, "consistent_lsn": result.consistent_lsn,
                "last_end_lsn": result.last_end_lsn,
                # the range's own history follows what it reads from the snapshot on: right only if nothing
                # changed before the range (the driver's, given, holds the whole WAL read's changes)
                "catalog_changed": history is None and decoder_history is not None and decoder_history.has_changes,
                "problems": list(getattr(plugin, "problems", ())),
            }
    finally:
        shutil.rmtree(own_spill, ignore_errors=True)
        info["seconds"] = time.perf_counter() - began
        info["cpu"] = time.process_time() - cpu
    return info


def range_refusal(plan: RangePlan, r: Range, s: dict) -> str | None:
    """Why range ``r``'s summary ``s`` shows the range path does not give the single-process output,
    or None.  Each range is judged by its own summary (and the plan), so that the driver can write
    the ranges out in order as they end (``job._stream_ranges``)."""
    if s["error"] is not None:
        return f"range {r.rng} failed: {s['error']}"
    res = s["result"]
    if not r.last and (res["stop"] is None or res["stop"].kind != "limit"):
        # a damaged record phase 1 passed (it frames without CRCs): the single process stops there
        return f"range {r.rng} stopped reading before its end: {res['stop'].reason if res['stop'] else 'no stop'}"
    if res["catalog_changed"]:
        return "the catalog changes in the WAL read"
    if r.rng and (s["warnings"] or res["not_decoded"] or res["ended_early"] or res["problems"]):
        return f"range {r.rng} has warnings or commits it could not decode"
    if r.rng == 0 and len(plan.ranges) > 1:
        # the snapshot builder's way to consistency is the first range's alone
        consistent = res["consistent_lsn"]
        if consistent is None or consistent > plan.ranges[1].start:
            if not (res["plan"] is not None and res["plan"].assume_consistent):
                return "the first range is not consistent before the second begins"
    return None


def write_done(directory: str, rng: int, blob: bytes) -> None:
    """A range task's summary beside its part file (``part-NNNNN.done``), written once the part is whole
    and put in place whole: the driver reads it while the job still runs.  A retried attempt writes
    the same bytes again."""
    final = tasks.part_path(directory, rng) + ".done"
    tmp = f"{final}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.write(blob)
    os.replace(tmp, final)


def read_done(directory: str, rng: int) -> bytes | None:
    try:
        with open(tasks.part_path(directory, rng) + ".done", "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def combine(plan: RangePlan, summaries: dict, end_lsn: int | None):
    """The ``DecodeResult`` of the whole run from the ranges' summaries, or (None, reason) when a range
    shows the range path does not give the single-process output (the caller takes the event path)."""
    ranges = plan.ranges
    for r in ranges:
        s = summaries.get(r.rng)
        if s is None:
            return None, f"range {r.rng} left no summary"
        reason = range_refusal(plan, r, s)
        if reason is not None:
            return None, reason
    first = summaries[0]
    f = first["result"]
    last = summaries[ranges[-1].rng]["result"]
    result = DecodeResult(f["plan"], f["read_from"], last["stop"], end_lsn)
    result.open_transactions = last["open_transactions"]
    result.not_decoded = f["not_decoded"]
    result.ended_early = f["ended_early"]
    result.warnings = list(first["warnings"]) + [w for r in ranges[1:] for w in summaries[r.rng]["warnings"]]
    result.consistent_lsn = f["consistent_lsn"]
    result.last_end_lsn = last["last_end_lsn"]
    return result, None
