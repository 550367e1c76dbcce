"""The ``pgwal`` DataFrame source: one row per decoded output line, with the change's values.

Owns ``spark.read.format("pgwal").option("catalog", FILE).option("startLsn", "X/X").load(PATH)``
(a PySpark Python Data Source; registered automatically through the top-level module
``pyspark_waldecode`` when waldecode is installed, or by ``waldecode.spark.register(spark)``;
its columns in docs/spark.md).  Filters on ``commit_lsn`` prune what is read where Spark pushes
filters to Python sources (``spark.sql.python.filterPushdown.enabled``), and are only applied
by Spark otherwise.

Planning takes ``spark decode``'s range path (``ranges``) in the planning process: phase 1
(``ranges.run_spans``) over every run, the catalog history of the whole read when the catalog
changes in it (``job._catalog_for_ranges``), and ``ranges.plan_ranges``; each partition is one
output range, decoded by the single-process decoder as a slot restarted at its start
(``ranges.decode_range``) through a test_decoding plugin that also reports each change's fields,
and checked by ``ranges.range_refusal`` as ``spark decode`` checks it: a range that cannot give
decode's rows fails the query with the reason, never leaves rows out.  Where the range path
cannot serve (phase 1 meets a reading error, the catalog pass cannot follow a change), planning
takes the event path instead (``plan``: the driver's pass in the planning process, each partition
replaying its events).  The ``line`` column is exactly what ``decode`` prints for that row.

Rows in output order are ``orderBy("position", "seq")``: ``position`` is the LSN of the record
at which decode prints the row's transaction (its commit_lsn) or call outside one (a
non-transactional message, COMMIT PREPARED), whichever partition prints it, so that neither the
partitioning nor a filter changes it; ``seq`` is the line within it.

Options: ``catalog`` (required), ``startLsn``, ``restartLsn``, ``endLsn``, ``timeline``,
``twoPhase``, ``includeUncommitted``, ``ranges`` (partitions), ``segmentsPerPartition``,
test_decoding's options by their names (``include-xids`` …), ``set.<setting>``.

Limits of this version: phase 1 (and the catalog pass) read the WAL in the planning process, and
a partition holds its range's rows in memory until the range is decoded and checked (``spark
decode`` does both on the executors, and streams).
"""

from __future__ import annotations

import base64
import datetime
import os
import re
import sys
from dataclasses import dataclass, replace

from ..catalog import Catalog
from ..errors import Error, RangeRefusedError, UsageError, format_lsn
from ..logical.request import DecodeRequest
from ..output import UNCHANGED_TOAST
from ..output.base import CatalogView
from ..output.rows import leading_fields_ddl
from ..output.test_decoding import TestDecoding

try:
    from pyspark.sql.datasource import (DataSource, DataSourceReader, EqualTo, GreaterThan, GreaterThanOrEqual, In,
                                        InputPartition, LessThan, LessThanOrEqual)
except ImportError:  # waldecode without its spark extra: the module still imports (and no filter is one of these)
    DataSource = DataSourceReader = InputPartition = object
    EqualTo = GreaterThan = GreaterThanOrEqual = In = LessThan = LessThanOrEqual = ()

# The fields of output.rows (what decode --parquet and --format jsonl write) lead, after the output order
SCHEMA = ("position long, seq long, " + leading_fields_ddl() + ", "
          "relid long, new array<struct<name: string, type: string, value: string>>, "
          "old array<struct<name: string, type: string, value: string>>, message_prefix string, "
          "message_content binary, transactional boolean, line binary")

_TD_OPTIONS = TestDecoding.BOOL_OPTIONS

# PostgreSQL's epoch (2000-01-01) in Unix microseconds
_PG_EPOCH_US = 946684800 * 1_000_000

#: the ``position`` of the transactions open at the end (``includeUncommitted``), in the order printed: past
#: every LSN (2^62 bytes of WAL: more than any server writes), within Spark's signed 64-bit long
OPEN_AT_END_POSITIONS = 1 << 62


class RowPlugin(TestDecoding):
    """test_decoding, whose every output line is handed over with the fields of the call that printed
    it: ``write((line, fields))``.  ``fields["position"]``: the LSN of the record whose decoding printed
    the line's transaction or call (the commit, PREPARE, COMMIT or ROLLBACK PREPARED record that ends
    it, as its ``Transaction.final_lsn``; a non-transactional message's), so that the output is in
    position order whichever range printed it; the transactions open at the end come after every LSN."""

    def __init__(self, write):
        self._out = write
        self._fields: dict = {}
        self._position = 0
        self._open_at_end = 0
        super().__init__(self._emit)

    def startup(self, options, catalog):
        opts = super().startup(options, catalog)
        # Each change's column values are wanted, not only its line: the Python path (change())
        self._typeout_module = None
        return replace(opts, receive_wal_tuples=False)

    def _emit(self, line: str) -> None:
        self._out((line, self._fields))

    def _printed_at(self, lsn: int) -> None:
        """A transaction or call outside one begins: printed as the record at ``lsn`` is decoded (0: at the
        end, a transaction without a commit record: ``uncommitted``)."""
        if not lsn:
            self._open_at_end += 1
            lsn = OPEN_AT_END_POSITIONS + self._open_at_end
        self._position = lsn

    def _set(self, txn, lsn, op, **kw):
        self._fields = {"position": self._position,
                        "commit_lsn": (txn.final_lsn or None) if txn is not None else None, "lsn": lsn,
                        "xid": txn.xid if txn is not None else None,
                        "commit_time": txn.xact_time if txn is not None and txn.xact_time else None,
                        "op": op, **kw}

    def begin(self, txn):
        self._printed_at(txn.final_lsn)
        self._set(txn, txn.first_lsn, "BEGIN")
        super().begin(txn)

    def begin_prepare(self, txn):
        self._printed_at(txn.final_lsn)
        self._set(txn, txn.first_lsn, "BEGIN")
        super().begin_prepare(txn)

    def commit(self, txn, commit_lsn):
        self._set(txn, commit_lsn, "COMMIT")
        super().commit(txn, commit_lsn)

    def prepare(self, txn, prepare_lsn):
        self._set(txn, prepare_lsn, "PREPARE")
        super().prepare(txn, prepare_lsn)

    def commit_prepared(self, txn, commit_lsn):
        self._printed_at(commit_lsn)
        self._set(txn, commit_lsn, "COMMIT PREPARED")
        super().commit_prepared(txn, commit_lsn)

    def rollback_prepared(self, txn, prepare_end_lsn, prepare_time):
        self._printed_at(txn.final_lsn)
        self._set(txn, txn.final_lsn, "ROLLBACK PREPARED")
        super().rollback_prepared(txn, prepare_end_lsn, prepare_time)

    def uncommitted(self, txn):
        self._set(txn, 0, "UNCOMMITTED")
        super().uncommitted(txn)

    def _values(self, catalog, rel, values):
        if values is None:
            return None
        ctx = catalog.output_context()
        out = []
        for att, v in zip(rel.attributes, values):
            if att.attisdropped:
                continue
            text = None if v is None else ("unchanged-toast-datum" if v is UNCHANGED_TOAST
                                           else ctx.output(att.atttypid, v))
            out.append({"name": att.attname, "type": att.type_name, "value": text})
        return out

    def change(self, txn, lsn, catalog, relation, action, new, old):
        # The BEGIN that skip-empty-xacts prints late is its own row
        if self.skip_empty_xacts and not self._wrote_changes:
            self._set(txn, txn.first_lsn, "BEGIN")
            self._mark_change(txn)
        self._set(txn, lsn, action, schema=relation.nspname, table=relation.relname, relid=relation.oid,
                  new=self._values(catalog, relation, new), old=self._values(catalog, relation, old))
        super().change(txn, lsn, catalog, relation, action, new, old)

    def truncate(self, txn, lsn, catalog, relations, restart_seqs, cascade):
        if self.skip_empty_xacts and not self._wrote_changes:
            self._set(txn, txn.first_lsn, "BEGIN")
            self._mark_change(txn)
        self._set(txn, lsn, "TRUNCATE", schema=", ".join(r.nspname for r in relations),
                  table=", ".join(r.relname for r in relations))
        super().truncate(txn, lsn, catalog, relations, restart_seqs, cascade)

    def message(self, txn, message_lsn, transactional, prefix, content):
        if not transactional:
            self._printed_at(message_lsn)
        if transactional and self.major >= 17 and self.skip_empty_xacts and not self._wrote_changes:
            self._set(txn, txn.first_lsn, "BEGIN")
            self._mark_change(txn)
        self._set(txn, message_lsn, "MESSAGE", message_prefix=prefix, message_content=bytes(content),
                  transactional=bool(transactional))
        super().message(txn, message_lsn, transactional, prefix, content)


class RowSink:
    """A partition's rows, in output order: ``seq`` numbers the lines of each position (``RowPlugin``'s)."""

    def __init__(self):
        self.rows: list = []
        self.lines = 0
        self._seq = (None, 0)

    def write(self, item) -> None:
        line, fields = item
        row = dict(fields)
        position = fields["position"]
        last, seq = self._seq
        seq = seq + 1 if last == position else 0
        self._seq = (position, seq)
        row["seq"] = seq
        row["line"] = line.encode("utf-8", "surrogateescape")
        self.rows.append(row)
        self.lines += 1

    def close(self) -> None:
        pass


def _row_tuple(r: dict):
    ts = r.get("commit_time")
    when = (datetime.datetime(2000, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=ts)
            if ts else None)
    return (r["position"], r["seq"], r.get("commit_lsn"), r.get("lsn"), r.get("xid"), when, r.get("op"), r.get("schema"),
            r.get("table"), r.get("relid"), r.get("new"), r.get("old"), r.get("message_prefix"),
            r.get("message_content"), r.get("transactional"), r["line"])


def _bool(value, default=False) -> bool:
    if value is None:
        return default
    return str(value).strip().lower() in ("1", "true", "on", "yes")


def commit_lsn_bounds(filters) -> tuple:
    """(lowest, highest) commit LSN that ``filters`` (ANDed Spark filters) let through; None: unbounded."""
    lo = hi = None
    for f in filters:
        if getattr(f, "attribute", None) != ("commit_lsn",):
            continue
        if isinstance(f, In):
            values = [v for v in f.value if isinstance(v, int)]
            if not values:
                continue
            flo, fhi = min(values), max(values)
        elif not isinstance(getattr(f, "value", None), int):
            continue
        elif isinstance(f, EqualTo):
            flo = fhi = f.value
        elif isinstance(f, GreaterThan):
            flo, fhi = f.value + 1, None
        elif isinstance(f, GreaterThanOrEqual):
            flo, fhi = f.value, None
        elif isinstance(f, LessThan):
            flo, fhi = None, f.value - 1
        elif isinstance(f, LessThanOrEqual):
            flo, fhi = None, f.value
        else:
            continue
        if flo is not None:
            lo = flo if lo is None else max(lo, flo)
        if fhi is not None:
            hi = fhi if hi is None else min(hi, fhi)
    return lo, hi


@dataclass
class _Read:
    """What the options ask for (``_read_options``): the run's ``DecodeRequest`` and how it is cut."""

    catalog: object
    segments: object
    request: DecodeRequest
    nranges: int
    per_run: int | None  # segmentsPerPartition (None: as the ranges ask)


def _read_options(options: dict) -> _Read:
    # Spark's lookup of Python data sources imports this module (pyspark_waldecode) in every session:
    # lazy: the WAL reader (13 ms), only when a read is planned
    from ..wal.segments import discover
    from ..wal.xlogreader import parse_lsn
    from .hadoopfs import is_uri

    opts = {k.lower(): v for k, v in options.items()}
    if "catalog" not in opts:
        raise UsageError('the pgwal source needs .option("catalog", FILE): a snapshot written by "waldecode catalog"')
    catalog = Catalog.load(opts["catalog"]).with_settings(
        {options_key(options, k)[4:]: v for k, v in opts.items() if k.startswith("set.")})
    paths = [p for p in opts.get("paths", opts.get("path", "")).split(",") if p]
    foreign = [p for p in paths if is_uri(p) and not p.startswith("file://")]
    if foreign:
        raise UsageError(f"the pgwal source reads local paths and file:// URIs (it plans outside the JVM), "
                         f"not {foreign[0]}: use 'waldecode spark decode' for Hadoop file systems")
    segments = discover([p[7:] if p.startswith("file://") else p for p in paths],
                        int(opts["timeline"]) if opts.get("timeline") else None)
    lsn = {k: parse_lsn(opts[k]) if opts.get(k) else None for k in ("startlsn", "restartlsn", "endlsn")}
    request = DecodeRequest({name: opts[name] for name in _TD_OPTIONS if name in opts}, lsn["startlsn"],
                            lsn["restartlsn"], lsn["endlsn"], two_phase=_bool(opts.get("twophase")),
                            include_uncommitted=_bool(opts.get("includeuncommitted")))
    return _Read(catalog, segments, request, int(opts.get("ranges", 4)),
                 int(opts["segmentsperpartition"]) if opts.get("segmentsperpartition") else None)


def plan_partitions(options: dict, bounds: tuple = (None, None)) -> list:
    """Planning (in the planner process): [the packed part every partition shares, one packed part per
    partition].  By ``spark decode``'s range path (``_plan_by_ranges``) where it can serve, else by its
    event path (``_plan_by_events``).  ``bounds``: the commit LSNs filters let through
    (``commit_lsn_bounds``).

    Pruning by them is sound because decoding is causal: a transaction's rows depend only on the
    WAL up to its commit record, so segments after the highest commit LSN are not read (unless
    ``includeUncommitted``: what is still open depends on where reading stops), and what only
    prints outside the bounds is not decoded; Spark still applies the filters to what is left."""
    # lazy: the decoder and spark.job (60 ms), only when a read is planned (see _read_options)
    from ..catalog.choose import check_snapshot
    from ..logical.session import VersionMismatchError, version_mismatch
    from ..logical.startpoint import reading_start
    from .job import _segments_per_run, plan_scan

    req = _read_options(options)
    segments, catalog, request = req.segments, req.catalog, req.request
    mismatch = version_mismatch(segments, catalog)
    if mismatch:
        raise VersionMismatchError(mismatch)
    request.refuse_decoder_options("the pgwal source")  # its decoders take the plugin's options alone
    probe = RowPlugin(lambda item: None)
    probe.startup(dict(request.plugin_options), CatalogView(catalog))  # bad options fail here, before reading
    filtered = frozenset(o for o in range(1 << 16) if probe.filter_by_origin(o))
    start_plan, read_from = reading_start(segments, request.start_lsn, request.restart_lsn)
    check_snapshot(catalog, segments, read_from, request.start_lsn)  # decode's refusal of a later snapshot, first
    seg_size = segments.seg_size
    first = (read_from if read_from is not None else segments.first_segno * seg_size) // seg_size
    last = (segments.last_segno if request.end_lsn is None
            else min(segments.last_segno, (request.end_lsn - 1) // seg_size))
    per_run = _segments_per_run(segments, first, last, req.nranges, req.per_run)
    _lo, hi = bounds
    last_segno = hi // seg_size if hi is not None and not request.include_uncommitted else None
    try:
        scan = plan_scan(segments, read_from, request.end_lsn, per_run, catalog.database_oid, filtered, last_segno)
    except Error as e:
        # The reader refuses the range before its first record: the decoder still finishes (and warns), which
        # the event path's driver pass reproduces
        return _plan_by_events(req, None, e, start_plan, read_from, bounds)
    if probe.events_apart:
        planned = _plan_by_ranges(req, scan, start_plan, bounds)
        if planned is not None:
            return planned
    # The event path: the plugin's output for a call depends on the call before it, or phase 1 met a reading
    # error, or the catalog pass could not follow a catalog change (ranges.plan_ranges' and
    # job._catalog_for_ranges' reasons; spark decode notes them, the source has nowhere to)
    return _plan_by_events(req, scan, None, start_plan, read_from, bounds)


class RangeJob:
    """What every partition of the range path shares: the catalog, the run's ``DecodeRequest``, the catalog
    history of the whole WAL read (``plan.FrozenCatalogHistory``; None when the catalog does not change in
    it) and the ranges decoded (a ``ranges.RangePlan``: ``range_refusal`` judges each range by it)."""

    def __init__(self, catalog, request: DecodeRequest, history, plan):
        self.catalog = catalog
        self.request = request
        self.history = history
        self.plan = plan


def _plan_by_ranges(req: _Read, scan, start_plan, bounds: tuple) -> list | None:
    """The range path (``ranges``, as ``job._decode_by_ranges`` takes it) planned here: one partition per
    output range that may hold rows within ``bounds``; None when it cannot serve (``plan_ranges``' reason,
    a catalog change the catalog pass cannot follow).

    Each range is decoded alone, so ``ranges.range_refusal``'s check that the first range's snapshot
    builder is consistent before the second range begins (the single process prints nothing before
    then; every later range is restarted consistent) is made twice: here, from the reading start's
    plan (``startpoint``: the same builder over the same running-xacts records), the first range
    taking in the next ones until the builder is consistent before the range after it begins; and in
    the first range's own partition, by ``range_refusal`` on what its decoding reached.  Where the plan
    alone cannot tell (no slot to start as: reading from the input's first record, or an input that
    does not reach back far enough), the first range is always decoded, so that its check is made."""
    # lazy: as in plan_partitions
    from . import ranges as _ranges
    from . import tasks
    from . import plan as _plan
    from .executors import LocalExecutor
    from .job import PhaseTimes, _catalog_for_ranges, range_runs

    segments = req.segments
    executor = LocalExecutor()
    executor.ranges = req.nranges
    executor.timings = PhaseTimes()  # _catalog_for_ranges times its phases on it
    if not req.per_run:
        scan = range_runs(scan, executor)
    # the catalog pass's records taken in phase 1's read (RunSpans.catalog_records)
    spans = executor.spans(scan, _plan.tracked_relfilenodes(req.catalog))
    request = req.request
    rplan = _ranges.plan_ranges(spans, req.nranges, request.start_lsn, request.restart_lsn, request.end_lsn)
    if rplan.reason is not None:
        return None
    history = None
    if any(s.catalog_changes for s in spans):
        history = _catalog_for_ranges(executor, scan, req.catalog, spans, [])
        if isinstance(history, str):
            return None
    read_start = scan.start if scan.start is not None else segments.first_segno * segments.seg_size
    ranges = rplan.ranges
    if len(ranges) > 1:
        consistent = _consistent_lsn(segments, start_plan, read_start, ranges[-1].start)
        while len(ranges) > 1 and (consistent is None or consistent > ranges[1].start):
            ranges = [replace(ranges[0], end=ranges[1].end, last=ranges[1].last)] + \
                     [replace(r, rng=r.rng - 1) for r in ranges[2:]]
    certain = start_plan is not None and (start_plan.assume_consistent or start_plan.reaches)
    lo, hi = bounds
    kept = [r for r in ranges if _may_hold(r, lo, hi, read_start)]
    if kept and kept[0].rng != 0 and not certain:
        kept.insert(0, ranges[0])
    end = _end_after(segments, hi) if hi is not None and kept and not request.include_uncommitted else None
    if end is not None:
        # no commit after ``hi`` is wanted: nothing after the records starting up to it is read
        kept = [replace(r, end=end) if r.end is None or r.end > end else r for r in kept]
    shared = tasks.pack((scan, RangeJob(req.catalog, request, history, _ranges.RangePlan(kept))))
    parts = []
    before = None  # the range decoded before, in ``ranges``
    for r in kept:
        verify = None
        if r.rng != (before.rng + 1 if before is not None else 0):
            # ranges left out before this one: decode stops where their WAL stops, so it is read as decode
            # reads it, up to where this range's reading begins
            since = ranges[before.rng].end if before is not None else scan.start  # None: the input's start
            if since is None or since < r.restart:
                verify = (since, r.restart)
        parts.append(tasks.pack((r, verify)))
        before = r
    return [shared, parts]


def _may_hold(r, lo, hi, read_start: int) -> bool:
    """Whether range ``r`` may print a row whose commit_lsn lies in [lo, hi]: it prints the transactions
    whose commit (or, decoded at PREPARE, prepare; or COMMIT/ROLLBACK PREPARED) record starts in
    [start, end); its other rows (messages outside a transaction, the transactions open at the end) have
    a null commit_lsn, which no bound lets through."""
    if hi is not None and (r.start if r.start is not None else read_start) > hi:
        return False
    return lo is None or r.end is None or r.end > lo


def _end_after(segments, lsn: int) -> int | None:
    """The first record start after ``lsn`` (None: the input ends before one): as a reading end, it takes in
    every record that starts at or before ``lsn`` (reading stops before a record that ends past its end,
    ``FrameState.end_lsn``), and no other."""
    from ..wal.xlogreader import XLogReader  # lazy: as in _read_options

    seg_size = segments.seg_size
    segno = lsn // seg_size
    if segno > segments.last_segno:
        return None
    frames = XLogReader(segments=segments, start_lsn=max(segno, segments.first_segno) * seg_size).frames()
    try:
        for _path, records, _start in frames:
            for rec_lsn, _raw_end, _rec in records:
                if rec_lsn > lsn:
                    return rec_lsn
    finally:
        frames.close()
    return None


def _consistent_lsn(segments, start_plan, read_start: int, until: int) -> int | None:
    """Where the first range's snapshot builder becomes consistent, as the reading start's plan tells (0:
    from its first record, a slot's restart LSN given), or for a slot created where reading starts, the
    builder's own transitions over the running-xacts records read up to ``until``; None: not before."""
    # lazy: as in plan_partitions
    from ..logical.startpoint import consistent_point, running_xacts_of
    from ..rmgr import RM_STANDBY_ID
    from ..wal.xlogreader import read_segment

    if start_plan is not None:
        return 0 if start_plan.assume_consistent else start_plan.consistent_lsn
    seg_size = segments.seg_size
    seen: list = []
    segno = read_start // seg_size
    while segno <= segments.last_segno and segno * seg_size < until:
        records, stop = read_segment(segments, segno, rmid=RM_STANDBY_ID)
        seen += [x for x in running_xacts_of(records) if x.lsn >= read_start]
        c = consistent_point(seen, 0) if seen else None
        if c is not None:
            return c.lsn
        if stop is not None and stop.kind != "end":
            break
        segno += 1
    return None


def _plan_by_events(req: _Read, scan, refused, start_plan, read_from, bounds: tuple) -> list:
    """The event path (``plan``): phase 1 for the driver and the driver's pass in this process; one partition
    per output range of events, with the events whose rows fall within ``bounds``."""
    # lazy: as in plan_partitions
    from . import plan as _plan
    from . import tasks
    from .executors import LocalExecutor

    catalog = req.catalog
    executor = LocalExecutor(keep_blobs=False)
    nodes = _plan.tracked_relfilenodes(catalog)
    while True:
        items = executor.control(scan, nodes) if scan is not None else iter([(0, ("error", refused))])
        p = _plan.run_driver_pass(items, catalog, RowPlugin(lambda item: None), req.request, start_plan=start_plan,
                                  read_from=read_from, segments=req.segments, nranges=req.nranges, nodes=nodes)
        if p.nodes <= nodes:
            break
        nodes = nodes | p.nodes
    if p.error is not None:
        raise surfaced(p.error, p.result.warnings)
    ctx = tasks.Phase2(catalog, RowPlugin, req.request, p.timeline, p.cutoff)
    shared = tasks.pack((scan, ctx))
    parts = []
    lo, hi = bounds
    keep = [lo is None and hi is None or _within(_event_commit_lsn(ev), lo, hi) for ev in p.events]
    for rng in range(p.nranges):
        members = {x: m for x, m in p.members.items() if m[2] == rng and keep[m[0]]}
        orders = [o for o in range(len(p.events)) if p.range_of[o] == rng and keep[o]]
        if not orders:
            continue
        parts.append(tasks.pack((rng, members, list(tasks.event_chunks(p.events, p.range_of, orders)))))
    return [shared, parts]


def _event_commit_lsn(ev):
    """The commit_lsn column of every row an event of the plan makes (RowPlugin._set)."""
    txn = ev[1] if ev[0] == "replay" else (ev[2][0] if ev[2] else None)
    return getattr(txn, "final_lsn", None) or None


def _within(lsn, lo, hi) -> bool:
    return lsn is not None and (lo is None or lsn >= lo) and (hi is None or lsn <= hi)


def options_key(options: dict, lower: str) -> str:
    """The option's name as given (settings names are case-sensitive)."""
    for k in options:
        if k.lower() == lower:
            return k
    return lower


def read_partition(shared: bytes, part: bytes):
    """The rows of one partition (in the executor)."""
    from . import tasks  # lazy: the decoder (30 ms), in a partition's task only (see _read_options)

    scan, ctx = tasks.unpack(shared)
    if isinstance(ctx, RangeJob):
        r, verify = tasks.unpack(part)
        return _range_rows(scan, ctx, r, verify)
    return _event_rows(scan, ctx, tasks.unpack(part))


def _range_rows(scan, job: RangeJob, r, verify):
    """One range decoded by the single-process decoder, restarted at its start; its rows once
    ``ranges.range_refusal`` accepts it (a refusal or error fails the query: no row is left out)."""
    from . import ranges as _ranges  # lazy: as in read_partition

    if verify is not None:
        _read_through(scan.segments, *verify)
    sink = RowSink()
    info = _ranges.decode_range(scan.segments, job.catalog, RowPlugin, job.request, r, writer=sink,
                                history=job.history)
    if info["error"] is not None:
        raise surfaced(info["error"], info["warnings"])
    reason = _ranges.range_refusal(job.plan, r, info)
    if reason is not None:
        raise surfaced(RangeRefusedError(f"the pgwal source cannot give decode's rows here: {reason}"),
                       info["warnings"])
    for row in sink.rows:
        yield _row_tuple(row)


def _read_through(segments, start: int | None, end: int | None) -> None:
    """Read [start, end) as decode reads it (CRC checks, every record's layout), where the commit_lsn filters
    left ranges out: were reading to stop there, decode would print nothing after it."""
    from ..wal.xlogreader import XLogReader  # lazy: as in _read_options

    reader = XLogReader(segments=segments, start_lsn=start, end_lsn=end)
    for _rec in reader:
        pass
    stop = reader.stop
    if stop.kind != "limit":
        raise RangeRefusedError(f"reading stops at {format_lsn(stop.lsn)} ({stop.reason}), before the rows asked "
                                "for: decode prints nothing after it")


def _event_rows(scan, ctx, part):
    """The rows of one output range of the event path."""
    # lazy: as in read_partition
    from . import tasks
    from .job import phase2_rows, scan_blobs

    rng, members, chunks = part
    rows = phase2_rows(scan_blobs(scan, members), members, ctx.cutoff, chunks)
    sink = RowSink()
    summary = tasks.decode_rows(iter(rows), ctx, lambda _rng: sink)
    info = summary.get(rng)
    if info is not None and info["error"] is not None:
        raise info["error"]
    for r in sink.rows:
        yield _row_tuple(r)


def rebuild(kind: str, state: dict):
    """A reader or partition from its pickled state (``_Pickled``)."""
    cls = {"reader": PgWalReader, "filtering": PgWalFilteringReader, "partition": PgWalPartition}[kind]
    obj = cls.__new__(cls)
    obj.__dict__.update(state)
    return obj


def _rebuilder():
    """``pyspark_waldecode.rebuild`` when that module is installed (it keeps a worker's working
    directory from shadowing the installed package: see its docstring), else ``rebuild``."""
    try:
        import pyspark_waldecode  # cycle: it imports this module
    except ImportError:
        return rebuild
    return pyspark_waldecode.rebuild


class _Pickled:
    """Pickled by kind and state, rebuilt through ``_rebuilder()``: a worker unpickling it imports
    the top-level ``pyspark_waldecode`` before anything of waldecode."""

    _kind = ""

    def __reduce__(self):
        return _rebuilder(), (self._kind, dict(self.__dict__))


class PgWalPartition(_Pickled, InputPartition):
    """One output range: the plan shared by all partitions, and this range's part of it."""

    _kind = "partition"

    def __init__(self, shared: bytes, part: bytes):
        self.shared = shared
        self.part = part


class PgWalReader(_Pickled, DataSourceReader):
    """The reader Spark plans with when filters are not pushed to Python data sources."""

    _kind = "reader"

    def __init__(self, options):
        self.options = options
        self.bounds = (None, None)

    def partitions(self):
        try:
            shared, parts = plan_partitions(dict(self.options), self.bounds)
        except SurfacedError:
            raise
        except Error as e:
            raise surfaced(e) from None
        return [PgWalPartition(shared, part) for part in parts] or [PgWalPartition(shared, b"")]

    def read(self, partition):
        if not partition.part:
            return iter(())
        return _surfacing(read_partition(partition.shared, partition.part))


class PgWalFilteringReader(PgWalReader):
    """The reader Spark hands filters to (``spark.sql.python.filterPushdown.enabled=true``).  Spark
    refuses a reader that defines ``pushFilters`` when that setting is off, so that it never ignores
    one silently; ``PgWalDataSource.reader`` gives the plain one to the worker that plans without them."""

    _kind = "filtering"

    def pushFilters(self, filters):
        """Filters on commit_lsn narrow what is read (``plan_partitions``); Spark applies every filter
        still (they are all returned), so pruning never has to be exact, only sound."""
        filters = list(filters)
        self.bounds = commit_lsn_bounds(filters)
        return filters


# pyspark/sql/worker/plan_data_source_read.py: the worker that plans a read when Spark does not push
# filters (with spark.sql.python.filterPushdown.enabled it refuses a reader defining pushFilters, so
# that none is ignored silently); with the setting on, data_source_pushdown_filters.py plans instead
_PLANNING_WORKER = "plan_data_source_read"


def _planning_without_pushdown() -> bool:
    """Whether ``reader()`` is called by the worker that plans reads without pushing filters: that
    one gets the reader without ``pushFilters``; every other caller (the pushdown worker, a direct
    call) the reader that prunes by them."""
    frame = sys._getframe(1)
    while frame is not None:
        spec = frame.f_globals.get("__spec__")
        names = (frame.f_globals.get("__name__") or "", getattr(spec, "name", "") or "",
                 os.path.basename(frame.f_code.co_filename))
        if any(n.rsplit(".", 1)[-1].removesuffix(".py") == _PLANNING_WORKER for n in names):
            return True
        frame = frame.f_back
    return False


# A waldecode error raised in a Python worker reaches the driver as the text of a Spark exception:
# carried in it whole, so that ``spark decode --parquet`` prints decode's line and exits with its status
_SURFACED = re.compile(r"waldecode-error:([A-Za-z0-9+/=]+):end")


class SurfacedError(Error):
    """A waldecode error on its way from a Python worker to the driver, inside Spark's exception text."""


def surfaced(e: Error, warnings=()) -> SurfacedError:
    """``e`` and the warnings decode would have printed before it, as an exception Spark passes on."""
    from . import tasks  # lazy: as in read_partition

    blob = base64.b64encode(tasks.pack((e, list(warnings)))).decode("ascii")
    return SurfacedError(f"{e} (waldecode-error:{blob}:end)")


def _surfacing(rows):
    try:
        yield from rows
    except SurfacedError:
        raise
    except Error as e:
        raise surfaced(e) from None


def error_in(exc: BaseException) -> tuple:
    """(the waldecode error a Spark exception carries (``surfaced``), its warnings); (None, [])."""
    from . import tasks  # lazy: as in read_partition

    m = _SURFACED.search(str(exc))
    return tasks.unpack(base64.b64decode(m.group(1))) if m else (None, [])


class PgWalDataSource(DataSource):
    """``format("pgwal")``: decoded changes of PostgreSQL WAL (see ``waldecode.spark.datasource``)."""

    @classmethod
    def name(cls):
        return "pgwal"

    def schema(self):
        return SCHEMA

    def reader(self, schema):
        return (PgWalReader if _planning_without_pushdown() else PgWalFilteringReader)(self.options)
