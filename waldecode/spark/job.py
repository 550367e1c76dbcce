"""One ``spark decode`` run: by ranges where that gives decode's output, else plan, phase 1 on the
executors, the driver's pass, phase 2, ordered output.

The range path (``ranges``) comes first: a cheap phase 1 per run (``ranges.run_spans``), the
driver's ``ranges.plan_ranges``, then each output range decoded by ``session.decode_wal`` in a
task of its own (``ranges.decode_range``) into its part file, with the catalog history of the whole
read when the catalog changes in it (``_catalog_for_ranges``); when phase 1 or the ranges show it
cannot give the single-process output (a catalog change the catalog pass cannot follow, reading
errors), nothing has been written and the event path below runs.  It needs only a
SparkContext (RDD jobs): a SQL session is made when the event path or a Hadoop input needs one.

Owns the wiring of the Spark path, as ``session.decode_wal`` owns the single-process one,
and with the same checks and the same result: the segments and where reading starts
(``startpoint``, ``XLogReader``'s own checks), runs of consecutive segments for phase 1,
the driver's sequential pass (``plan``), phase 2 over ranges of output order, and the
concatenation of the ranges' part files, in order, into the output.  Errors the single
process raises are raised here as the same exceptions, after the output that precedes
them, so the CLI prints the same line and exits with the same status.

The executors that run the task functions below are ``executors.SparkExecutor`` and
``executors.LocalExecutor``; ``decode_spark`` takes either.
"""

from __future__ import annotations

import functools
import gc
import os
import shutil
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace

from .. import _impl
from ..catalog import Catalog
from ..errors import Error, UsageError, format_lsn
from ..output.base import CatalogView
from ..logical.request import DecodeRequest
from ..logical.session import VersionMismatchError, version_mismatch
from ..logical.startpoint import reading_start
from ..wal.segments import SegmentSet, discover
from ..wal.xlogreader import XLogReader
from . import plan as _plan
from . import ranges as _ranges
from . import tasks

#: under a file-writing plugin's directory: each phase-2 task attempt's files, until the driver keeps
#: the successful attempts' (a leading "_": Parquet readers skip it, as they skip Spark's _temporary)
ATTEMPTS_DIR = "_attempts"


class PhaseTimes(dict):
    """Wall seconds per phase of one ``decode_spark`` run (``executor.timings``; ``spark decode --timings``
    writes them): the range path's ``phase1``, ``catalog_pass`` (its tasks), ``catalog_history`` (the
    driver's), ``ranges`` (the range job, appends included when they stream) and ``appends`` (the driver
    appending part files); the event path's ``driver_pass`` (its phase 1 included) and ``phase2``.
    ``range_tasks``: each range's task, as the range path last ran them."""

    def __init__(self):
        super().__init__()
        self.range_tasks: list = []

    @contextmanager
    def phase(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self[name] = self.get(name, 0.0) + time.perf_counter() - t


@dataclass
class Scan:
    """What phase 1 reads: the segments, runs of them, and the reader's bounds."""

    segments: SegmentSet
    runs: list  # [(first segno, last segno)]
    start: int | None
    end_lsn: int | None
    database: int
    filtered_origins: frozenset
    impl: str = "cython"  # the implementation the tasks use (the driver's)


def plan_scan(segments: SegmentSet, start: int | None, end_lsn: int | None, per_run: int, database: int,
              filtered_origins: frozenset, last_segno: int | None = None) -> Scan:
    """``last_segno``: read no run past this segment (the record crossing out of it is still completed)."""
    seg_size = segments.seg_size
    # XLogReader's own checks (start in the input, end after start, no missing segment), as it makes them
    reader = iter(XLogReader(segments=segments, start_lsn=start, end_lsn=end_lsn))
    try:
        next(reader, None)
    finally:
        reader.close()
    first = (start if start is not None else segments.first_segno * seg_size) // seg_size
    last = segments.last_segno
    if end_lsn is not None:
        last = min(last, (end_lsn - 1) // seg_size)
    if last_segno is not None:
        last = max(first, min(last, last_segno))
    runs = [(s, min(s + per_run - 1, last)) for s in range(first, last + 1, per_run)]
    return Scan(segments, runs, start, end_lsn, database, filtered_origins, _impl.IMPL)


def use_impl(name: str) -> None:
    """Run this task with the driver's implementation (WALDECODE_IMPL on executors makes a missing
    Cython extension fail at import; this makes a test's choice reach them)."""
    if _impl.IMPL != name:
        _impl.use(name)


def settle_gc() -> None:
    """In a task's Python worker: collections less often (``cli._settle_gc``'s reason: millions of
    short-lived tuples, hardly any cycles; the defaults cost a tenth of the CPU and more as the
    driver's plan grows)."""
    gc.set_threshold(50_000, 20, 20)


def _segments_per_run(segments: SegmentSet, first: int, last: int, slots: int, per_run: int | None) -> int:
    if per_run:
        return max(1, per_run)
    n = last - first + 1
    # 2-4 runs per core, at least 64 MB of WAL a run (and never below one segment): docs/spark-decode.md
    by_cores = max(1, -(-n // (3 * max(1, slots))))
    by_size = max(1, (64 << 20) // segments.seg_size)
    return max(1, min(by_cores, by_size) if n >= 3 * slots else by_cores)


def run_phase1(scan: Scan, run_index: int, nodes: frozenset, control: list, keep=None):
    """Phase 1 of one run, one read of its WAL: yields its change blobs (``tasks.change_blobs``: xid, lo,
    hi, run, seq, n, blob) and appends its control items to ``control`` (a list, or a ``tasks.ControlFile``
    that writes them in bounded blocks; complete at the end).
    ``keep(xid, rmid)``: decode only those records (for callers that want only some changes)."""
    first, last = scan.runs[run_index]
    records = tasks.read_run(scan.segments, first, last, scan.start, scan.end_lsn, keep=keep)
    return tasks.change_blobs(tasks.run_items(records, nodes, scan.database, scan.filtered_origins, control),
                              run_index)


def run_spans(scan: Scan, run_index: int, nodes: frozenset | None = None) -> _ranges.RunSpans:
    """Phase 1 of the range path over one run (``ranges.run_spans``; ``nodes``: with the catalog pass's
    records of those relfilenodes)."""
    first, last = scan.runs[run_index]
    return _ranges.run_spans(scan.segments, run_index, first, last, scan.start, scan.end_lsn, nodes)


def run_catalog_records(scan: Scan, run_index: int, nodes: frozenset) -> list:
    """The records of one run the catalog history needs (``ranges.run_catalog_records``)."""
    first, last = scan.runs[run_index]
    return _ranges.run_catalog_records(scan.segments, first, last, scan.start, scan.end_lsn, nodes)


def range_runs(scan: Scan, executor) -> Scan:
    """``scan`` in the runs of the range path's phase 1: it holds a few xids per run, not a run's changes,
    so runs as large as the ranges and the cores allow (each task costs tens of ms), not the event path's
    64 MB; the ranges start at run starts chosen to even out their commits, so several runs per range."""
    first, last = scan.runs[0][0], scan.runs[-1][1]
    nranges = getattr(executor, "ranges", 1)
    nruns = nranges * max(8, -(-3 * executor.slots // nranges))  # ranges pick their starts among 8 runs
    size = max(1, -(-(last - first + 1) // nruns))
    return replace(scan, runs=[(s, min(s + size - 1, last)) for s in range(first, last + 1, size)])


def range_scan(scan: Scan, rplan: _ranges.RangePlan) -> Scan:
    """``scan`` with a run per range: the segments each range reads, from its restart to its end."""
    seg_size = scan.segments.seg_size
    first_segno = scan.runs[0][0]
    last_segno = scan.runs[-1][1]
    runs = []
    for r in rplan.ranges:
        # the first range reads from where the whole run reads (its start plan's, as the scan's runs)
        lo = first_segno * seg_size if r.first else r.restart
        hi = last_segno if r.end is None else min(last_segno, max(lo, r.end - 1) // seg_size)
        runs.append((max(first_segno, lo // seg_size), hi))
    return replace(scan, runs=runs)


def phase2_rows(blobs, members: dict, cutoff, chunks) -> list:
    """Phase 2's input in this process, as Spark's join and sort make it: (rng, order, lo, hi, after, trim,
    n, blob) of the ``blobs`` of members (xid -> (order, collect-after LSN, range)) and the ``chunks``
    of events (``tasks.event_chunks``), sorted by (rng, order, lo, seq)."""
    rows = []
    for xid, lo, hi, _run, seq, n, blob in blobs:
        m = members.get(xid)
        if m is None:
            continue
        order, after, rng = m
        if hi <= after or (cutoff is not None and lo >= cutoff):
            continue
        trim = lo <= after or (cutoff is not None and hi >= cutoff)
        rows.append((rng, order, lo, seq, hi, after, trim, n, blob))
    rows += [(rng, order, tasks.CHUNK, 0, tasks.CHUNK, 0, False, 0, blob) for rng, order, blob in chunks]
    rows.sort(key=lambda r: r[:4])
    return [(r[0], r[1], r[2], r[4], r[5], r[6], r[7], r[8]) for r in rows]


def scan_blobs(scan: Scan, members: dict) -> list:
    """Every run's change blobs of ``members``' xids, read in this process."""
    rmids = tasks.CHANGE_RMIDS
    out = []
    for i in range(len(scan.runs)):
        out += run_phase1(scan, i, frozenset(), [], keep=lambda xid, rmid: rmid in rmids and xid in members)
    return out


# -- files a file-writing plugin's tasks stage ------------------------------------------------------


def files_directory(make_plugin) -> str | None:
    """The directory a file-writing plugin (``ParquetOutput``) is made to write into, as ``spark decode
    --parquet`` makes it (``functools.partial(..., directory=DIR)``); None for a line-writing plugin."""
    if isinstance(make_plugin, functools.partial):
        return (make_plugin.keywords or {}).get("directory")
    return None


def keep_staged_files(directory: str, staged: set) -> None:
    """Move the files of the task attempts that succeeded (``staged``: their directories, as their
    summaries name them) into ``directory``, at the same relative paths, and remove every attempt's
    directory: what failed or lost attempts wrote is dropped."""
    for attempt in sorted(d for d in staged if d):
        for root, _dirs, files in os.walk(attempt):
            target = os.path.join(directory, os.path.relpath(root, attempt))
            os.makedirs(target, exist_ok=True)
            for name in files:
                os.replace(os.path.join(root, name), os.path.join(target, name))
    shutil.rmtree(os.path.join(directory, ATTEMPTS_DIR), ignore_errors=True)


# -- the run ---------------------------------------------------------------------------------------


def decode_spark(executor, paths, catalog: Catalog, make_plugin, out, request: DecodeRequest | None = None, *,
                 segments_per_run: int | None = None, parts_dir: str | None = None, on_warning=None,
                 method: str = "auto", **fields):
    """Decode ``paths`` through ``make_plugin(write)`` on ``executor`` as ``request`` (a ``DecodeRequest``;
    its fields may be given as keywords instead, as ``session.decode_wal`` takes them) asks, writing the
    output bytes to ``out`` (a binary file) in the single-process order; returns the
    ``session.DecodeResult``.  An error is raised after the output that precedes it was written, as
    ``decode`` writes it.  The request's spilling settings are the ranges' (each spills in its own
    temporary directory, as its task's).

    ``method``: "ranges" (each output range decoded as a restarted slot, ``ranges``), "events" (the
    driver's pass plans every plugin call, ``plan``), or "auto": ranges when phase 1 and the ranges show
    they give the single-process output, else events.  ``executor.method`` says which ran, and
    ``executor.fallback`` why the range path was left."""
    if method not in ("auto", "ranges", "events"):
        raise ValueError(f"unknown method {method!r}")
    request = DecodeRequest.given(request, fields)
    start_lsn, restart_lsn, end_lsn = request.start_lsn, request.restart_lsn, request.end_lsn
    segments = paths if isinstance(paths, SegmentSet) else discover(paths, request.timeline)
    mismatch = version_mismatch(segments, catalog)
    if mismatch:
        raise VersionMismatchError(mismatch)
    if not getattr(make_plugin, "ranges_apart", True):
        if not getattr(make_plugin, "in_one_range", False):
            raise UsageError(f"the {getattr(make_plugin, '__name__', 'output')} plugin's output spans the whole run "
                             "(DDL written once, undo reversed): use 'waldecode decode' for it")
        if executor.ranges != 1:
            raise UsageError(f"the {getattr(make_plugin, '__name__', 'output')} plugin decodes as one output range "
                             "(--ranges 1): what it writes depends on what it wrote before")
    request.refuse_decoder_options("spark decode")  # its decoders take the plugin's options alone
    probe = make_plugin(lambda line: None)
    probe.startup(dict(request.plugin_options), CatalogView(catalog))  # bad options fail here, before reading
    filtered_origins = frozenset(o for o in range(1 << 16) if probe.filter_by_origin(o))
    start_plan, read_from = reading_start(segments, start_lsn, restart_lsn)
    seg_size = segments.seg_size
    first = (read_from if read_from is not None else segments.first_segno * seg_size) // seg_size
    last = segments.last_segno if end_lsn is None else min(segments.last_segno, (end_lsn - 1) // seg_size)
    per_run = _segments_per_run(segments, first, last, executor.slots, segments_per_run)
    try:
        scan = plan_scan(segments, read_from, end_lsn, per_run, catalog.database_oid, filtered_origins)
    except Error as e:
        # The reader refuses the range before its first record: the decoder still finishes (and warns)
        scan, refused = None, e
    nodes = _plan.tracked_relfilenodes(catalog)
    directory = tempfile.mkdtemp(prefix="waldecode-spark-", dir=parts_dir)
    error = None
    executor.method = executor.fallback = None
    executor.timings = timings = PhaseTimes()
    executor.rewound = False  # the range path took back ranges it had written (``_stream_ranges``)
    try:
        if scan is not None and method != "events" and not probe.events_apart and getattr(executor, "ranges", 1) > 1:
            if method == "ranges":
                raise UsageError("the range path cannot decode this WAL: the plugin's output for a call "
                                 "depends on the transaction before it")
            executor.fallback = "the plugin's output for a call depends on the transaction before it"
        elif scan is not None and method != "events":
            ranges_scan = scan if segments_per_run else range_runs(scan, executor)
            result, reason = _decode_by_ranges(executor, ranges_scan, catalog, make_plugin, out, directory, request,
                                               on_warning)
            if result is not None:
                executor.method = "ranges"
                return result
            if method == "ranges":
                raise UsageError(f"the range path cannot decode this WAL: {reason}")
            executor.fallback = reason
        executor.method = "events"
        while True:
            items = (executor.control(scan, nodes, directory) if scan is not None
                     else iter([(0, ("error", refused))]))
            with timings.phase("driver_pass"):
                p = _plan.run_driver_pass(items, catalog, make_plugin(lambda line: None), request,
                                          start_plan=start_plan, read_from=read_from, segments=segments,
                                          nranges=getattr(executor, "ranges", 1), nodes=nodes,
                                          on_warning=on_warning)
            if p.nodes <= nodes:
                break
            # A catalog rewrite or relation-map update made new catalog relfilenodes: read their records too
            nodes = nodes | p.nodes
        result = p.result
        ctx = tasks.Phase2(catalog, make_plugin, request, p.timeline, p.cutoff, p.watched)
        if p.events and scan is not None:
            with timings.phase("phase2"):
                summary = executor.phase2(scan, p, ctx, directory)
        else:
            summary = []
        by_range = dict(summary)
        for rng in range(p.nranges):
            with timings.phase("appends"):
                _append(out, tasks.part_path(directory, rng))
            info = by_range.get(rng)
            if info is None:
                continue
            for w in info["warnings"]:
                # counted by the driver's decoder too, so that the report checks the notes as decode's does
                w = result.decoder.diagnostics.add(w)[0]
                result.warnings.append(w)
                if on_warning is not None:
                    on_warning(w)
            for index, why in info["escalations"]:  # range order: the first hit of each note wins
                result.decoder.replayer.escalated(index, why)
            if info["error"] is not None:
                error = info["error"]
                break
    finally:
        release = getattr(executor, "release", None)
        if release is not None:
            release()
        shutil.rmtree(directory, ignore_errors=True)
    if error is None:
        error = p.error  # a replay's error comes before the reading error: it was output earlier
    if error is not None:
        raise error
    return result


def _decode_by_ranges(executor, scan: Scan, catalog: Catalog, make_plugin, out, directory: str,
                      request: DecodeRequest, on_warning):
    """The range path (``ranges``): (result, None) after writing the output, or (None, why not) having
    written nothing."""
    timings = executor.timings
    with timings.phase("phase1"):
        # the catalog pass's records taken in the same read: whether the catalog changes is known only after it
        spans = executor.spans(scan, _plan.tracked_relfilenodes(catalog))
    with timings.phase("plan"):
        rplan = _ranges.plan_ranges(spans, getattr(executor, "ranges", 1), request.start_lsn, request.restart_lsn,
                                    request.end_lsn)
    if rplan.reason is not None:
        return None, rplan.reason
    history, history_warnings = None, []
    if any(s.catalog_changes for s in spans):
        history = _catalog_for_ranges(executor, scan, catalog, spans, history_warnings)
        if isinstance(history, str):
            return None, history
    for s in spans:
        s.catalog_records = None  # in the history now: not held while the ranges run
    files_dir = files_directory(make_plugin)
    if files_dir is not None:
        # the ranges' files go to a directory of their own until the ranges show they are right
        make_plugin = functools.partial(make_plugin, directory=os.path.join(files_dir, ATTEMPTS_DIR, "ranges"))
    parts = os.path.join(directory, "ranges")
    os.makedirs(parts, exist_ok=True)
    ctx = tasks.Phase2(catalog, make_plugin, request, history, None)
    appended = 0
    with timings.phase("ranges"):
        if files_dir is None and getattr(executor, "streams_ranges", False) and getattr(out, "can_rewind", False):
            summaries, appended = _stream_ranges(executor, scan, rplan, ctx, parts, out)
        else:
            summaries = executor.decode_ranges(scan, rplan, ctx, parts)
    # each range's bytes read (from its restart point), seconds and CPU, for ``--timings``
    first_began = min((s.get("began", 0.0) for s in summaries.values()), default=0.0)
    timings.range_tasks = [{"range": r.rng,
                            "read_bytes": (r.end or request.end_lsn or 0) - (r.restart or r.start or 0),
                            "began": round(summaries[r.rng].get("began", 0.0) - first_began, 3),
                            "seconds": round(summaries[r.rng].get("seconds", 0.0), 3),
                            "cpu": round(summaries[r.rng].get("cpu", 0.0), 3),
                            "on_driver": summaries[r.rng].get("on_driver", False)}
                           for r in rplan.ranges if r.rng in summaries]
    result, reason = _ranges.combine(rplan, summaries, request.end_lsn)
    if result is None:
        if appended:
            out.rewind()  # the event path writes the whole output again
            executor.rewound = True
        if files_dir is not None:
            shutil.rmtree(os.path.join(files_dir, ATTEMPTS_DIR), ignore_errors=True)
        return None, reason
    if files_dir is not None:
        keep_staged_files(files_dir, {os.path.join(files_dir, ATTEMPTS_DIR, "ranges")})
    for r in rplan.ranges[appended:]:
        with timings.phase("appends"):
            _append(out, tasks.part_path(parts, r.rng))
    result.warnings = history_warnings + result.warnings
    if on_warning is not None:
        for w in result.warnings:
            on_warning(w)
    return result, None


def _catalog_for_ranges(executor, scan: Scan, catalog: Catalog, spans: list, warnings: list):
    """The catalog history of the whole WAL read, for ranges whose transactions the catalog changes under:
    the records it needs collected on the executors (``catalog_records``), fed to one history here in LSN
    order; read again with the relfilenodes a catalog rewrite gave (as the event path's driver pass does).
    A ``plan.FrozenCatalogHistory``, its warnings appended to ``warnings``; or why the ranges cannot use it.
    The first round takes the records phase 1 collected (``RunSpans.catalog_records``) when it did."""
    nodes = _plan.tracked_relfilenodes(catalog)
    timings = executor.timings
    records = [s.catalog_records for s in spans]
    if any(r is None for r in records):
        records = None
    while True:
        found: list = []
        try:
            if records is None:
                with timings.phase("catalog_pass"):
                    records = executor.catalog_records(scan, nodes)
            with timings.phase("catalog_history"):
                history = _ranges.catalog_history(catalog, records, scan.segments.major, spans, warn=found.append)
        except Error as e:
            return f"the catalog pass met an error: {e}"
        if isinstance(history, str):
            return history
        more = frozenset(history.redo.nodes)
        if more <= nodes:
            break
        nodes = nodes | more
        records = None
    warnings += found
    return _plan.FrozenCatalogHistory(history)


#: how often the driver looks for ranges that ended, while the range job runs
RANGE_POLL_SECONDS = 0.05


def _stream_ranges(executor, scan: Scan, rplan: _ranges.RangePlan, ctx: tasks.Phase2, parts: str,
                   out) -> tuple[dict, int]:
    """``executor.decode_ranges`` with the output written as it comes: the job runs in a thread while
    this one appends each range's part to ``out`` as soon as it and every range before it have ended
    and ``ranges.range_refusal`` accepts it (deleting the part: its pages need not reach the disk).
    Writing a range at the end instead of meanwhile kept two cores idle for seconds (1.8 GB of
    output, its writes held back to the disk's pace).  Returns (summaries, ranges appended): when
    ``combine`` refuses after some were, the caller rewinds ``out``; an error rewinds it here."""
    box: dict = {}

    def job():
        try:
            box["summaries"] = executor.decode_ranges(scan, rplan, ctx, parts)
        except BaseException as e:  # re-raised in the caller's thread
            box["error"] = e

    thread = threading.Thread(target=job, name="waldecode-ranges", daemon=True)
    thread.start()
    appended = 0
    try:
        while appended < len(rplan.ranges):
            r = rplan.ranges[appended]
            ended = not thread.is_alive()  # before looking: a range ending meanwhile is seen next time
            blob = _ranges.read_done(parts, r.rng)
            if blob is not None:
                info, _impl_name, _staged = tasks.unpack(blob)
                if _ranges.range_refusal(rplan, r, info) is not None:
                    break  # combine says why; nothing more goes out
                part = tasks.part_path(parts, r.rng)
                with executor.timings.phase("appends"):
                    _append(out, part)
                os.unlink(part)
                appended += 1
                continue
            if ended:
                break
            thread.join(RANGE_POLL_SECONDS)
        thread.join()
        if "error" in box:
            raise box["error"]
    except BaseException:
        if appended:
            out.rewind()
        raise
    return box["summaries"], appended


def _append(out, path: str) -> None:
    """A range's part file (when it has one) onto the output, by the kernel where the output can."""
    if not os.path.exists(path):
        return
    append_file = getattr(out, "append_file", None)
    if append_file is not None:
        append_file(path)
        return
    with open(path, "rb") as f:
        shutil.copyfileobj(f, out, 1 << 20)


def describe_size(segments: SegmentSet) -> str:
    n = len(segments.files)
    return f"{n} segment(s) of {segments.seg_size >> 20} MB, {format_lsn(segments.first_segno * segments.seg_size)}"


def _warn(msg: str) -> None:
    print(f"waldecode: warning: {msg}", file=sys.stderr)
