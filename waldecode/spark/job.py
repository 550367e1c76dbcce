"""One ``spark decode`` run: plan, phase 1 on the executors, the driver's pass, phase 2, ordered output.

Owns the wiring of the Spark path, as ``session.decode_wal`` owns the single-process one,
and with the same checks and the same result: the segments and where reading starts
(``startpoint``, ``XLogReader``'s own checks), runs of consecutive segments for phase 1,
the driver's sequential pass (``plan``), phase 2 over ranges of output order, and the
concatenation of the ranges' part files, in order, into the output.  Errors the single
process raises are raised here as the same exceptions, after the output that precedes
them, so the CLI prints the same line and exits with the same status.

Two executors run the tasks: ``SparkExecutor`` (DataFrames: ``mapInArrow`` over
``spark.range`` for the runs, one hash shuffle whose keys map each range to its own
partition, ``sortWithinPartitions`` for transaction and LSN order, so Spark's external
sorter holds big transactions instead of memory) and ``LocalExecutor`` (the same task
functions in this process, for tests and for seeing what Spark adds).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from dataclasses import dataclass

from ..catalog import Catalog
from ..errors import Error, UsageError, format_lsn
from ..output.base import CatalogView
from ..logical.session import VersionMismatchError
from ..logical.startpoint import reading_start
from ..wal.segments import SegmentSet, discover
from ..wal.xlogreader import XLogReader
from . import plan as _plan
from . import tasks

CHANGE_SCHEMA = ("key long, rng long, order long, rlsn long, sub int, lsn long, action int, spc long, rel long, "
                 "origin int, clear_toast boolean, newtuple binary, oldtuple binary, extra binary")
SUMMARY_SCHEMA = "rng long, lines long, warnings binary, error binary, impl string"
CONTROL_SCHEMA = "run long, items binary"


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
              filtered_origins: frozenset) -> Scan:
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
    runs = [(s, min(s + per_run - 1, last)) for s in range(first, last + 1, per_run)]
    from .. import _impl

    return Scan(segments, runs, start, end_lsn, database, filtered_origins, _impl.IMPL)


def use_impl(name: str) -> None:
    """Run this task with the driver's implementation (WALDECODE_IMPL on executors makes a missing
    Cython extension fail at import; this makes a test's choice reach them)."""
    from .. import _impl

    if _impl.IMPL != name:
        _impl.use(name)


def _segments_per_run(segments: SegmentSet, first: int, last: int, slots: int, per_run: int | None) -> int:
    if per_run:
        return max(1, per_run)
    n = last - first + 1
    # 2-4 runs per core, at least 64 MB of WAL a run (and never below one segment): design §4.1
    by_cores = max(1, -(-n // (3 * max(1, slots))))
    by_size = max(1, (64 << 20) // segments.seg_size)
    return max(1, min(by_cores, by_size) if n >= 3 * slots else by_cores)


def run_control(scan: Scan, run_index: int, nodes: frozenset) -> list:
    first, last = scan.runs[run_index]
    records = tasks.read_run(scan.segments, first, last, scan.start, scan.end_lsn)
    return tasks.control_items(records, nodes, scan.database, scan.filtered_origins)


def run_changes(scan: Scan, run_index: int, members: dict, cutoff):
    first, last = scan.runs[run_index]
    records = tasks.read_run(scan.segments, first, last, scan.start, scan.end_lsn)
    return tasks.change_rows(records, scan.database, scan.filtered_origins, members, cutoff)


def change_dict(key, rng, order, rlsn, sub, c) -> dict:
    return {"key": key, "rng": rng, "order": order, "rlsn": rlsn, "sub": sub, "lsn": c.lsn, "action": c.action,
            "spc": c.spcOid, "rel": c.relNumber, "origin": c.origin, "clear_toast": c.clear_toast_afterwards,
            "newtuple": c.newtuple, "oldtuple": c.oldtuple, "extra": c.extra}


def event_dict(key, rng, order) -> dict:
    return {"key": key, "rng": rng, "order": order, "rlsn": -1, "sub": 0, "lsn": 0, "action": -1, "spc": 0,
            "rel": 0, "origin": 0, "clear_toast": False, "newtuple": None, "oldtuple": None, "extra": None}


# -- executors -------------------------------------------------------------------------------------


class LocalExecutor:
    """The task functions, in this process: for tests, and to see what Spark adds."""

    slots = 1
    impl_seen: set = set()

    def control(self, scan: Scan, nodes: frozenset):
        for i in range(len(scan.runs)):
            yield from run_control(scan, i, nodes)

    def phase2(self, scan: Scan, p: _plan.Plan, ctx: tasks.Phase2, directory: str) -> list:
        rows = []
        for i in range(len(scan.runs)):
            for xid, rlsn, sub, c, order, rng in run_changes(scan, i, p.members, p.cutoff):
                rows.append(change_dict(rng, rng, order, rlsn, sub, c))
        rows += [event_dict(p.range_of[o], p.range_of[o], o) for o in range(len(p.events))]
        rows.sort(key=lambda r: (r["rng"], r["order"], r["rlsn"], r["sub"]))
        summary = tasks.decode_rows(iter(rows), ctx, lambda rng: tasks.PartWriter(directory, rng))
        return sorted(summary.items())


class SparkExecutor:
    """Phase 1 and 2 as Spark jobs on ``spark`` (see the module docstring)."""

    def __init__(self, spark, ranges: int | None = None):
        self.spark = spark
        sc = spark.sparkContext
        self.slots = max(1, sc.defaultParallelism)
        conf = sc.getConf()
        if ranges is None and conf.contains("spark.sql.shuffle.partitions"):
            ranges = int(conf.get("spark.sql.shuffle.partitions"))
        self.ranges = ranges or 2 * self.slots
        self.impl_seen: set = set()

    def _runs_df(self, n: int):
        return self.spark.range(0, n, 1, n)

    def control(self, scan: Scan, nodes: frozenset):
        sc = self.spark.sparkContext
        bc = sc.broadcast((scan, nodes))

        def phase1(batches):
            import pyarrow as pa

            s, nd = bc.value
            use_impl(s.impl)
            for batch in batches:
                for run in batch.column(0).to_pylist():
                    items = run_control(s, run, nd)
                    yield pa.RecordBatch.from_pydict({"run": [run], "items": [tasks.pack(items)]},
                                                     schema=_schema(CONTROL_SCHEMA))

        df = self._runs_df(len(scan.runs)).mapInArrow(phase1, CONTROL_SCHEMA)
        expected = 0
        try:
            for row in df.toLocalIterator():
                if row["run"] != expected:
                    raise RuntimeError(f"phase 1 returned run {row['run']} where run {expected} was due")
                expected += 1
                yield from tasks.unpack(row["items"])
        finally:
            bc.unpersist()

    def _keys(self, n: int) -> list:
        """A key per range whose hash sends it to the partition of the same number."""
        rows = self.spark.range(0, 64 * n).selectExpr("id", f"pmod(hash(id), {n}) AS p") \
            .groupBy("p").min("id").collect()
        by_p = {r[0]: r[1] for r in rows}
        return [by_p.get(i, i) for i in range(n)]

    def phase2(self, scan: Scan, p: _plan.Plan, ctx: tasks.Phase2, directory: str) -> list:
        sc = self.spark.sparkContext
        keys = self._keys(p.nranges)
        bc_scan = sc.broadcast((scan, p.members, p.cutoff, p.range_of, keys))
        bc_ctx = sc.broadcast((os.urandom(8).hex(), tasks.pack(ctx)))
        nevents = len(p.events)

        def changes(batches):
            import pyarrow as pa

            s, members, cutoff, _range_of, ks = bc_scan.value
            use_impl(s.impl)
            schema = _schema(CHANGE_SCHEMA)
            for batch in batches:
                for run in batch.column(0).to_pylist():
                    out = []
                    for xid, rlsn, sub, c, order, rng in run_changes(s, run, members, cutoff):
                        out.append(change_dict(ks[rng], rng, order, rlsn, sub, c))
                        if len(out) >= 4096:
                            yield pa.RecordBatch.from_pylist(out, schema=schema)
                            out = []
                    if out:
                        yield pa.RecordBatch.from_pylist(out, schema=schema)

        def event_rows(batches):
            import pyarrow as pa

            _s, _m, _c, range_of, ks = bc_scan.value
            schema = _schema(CHANGE_SCHEMA)
            for batch in batches:
                orders = batch.column(0).to_pylist()
                yield pa.RecordBatch.from_pylist([event_dict(ks[range_of[o]], range_of[o], o) for o in orders],
                                                 schema=schema)

        def decode(batches):
            import pyarrow as pa
            from pyspark import TaskContext  # noqa: F401  (the executor's own)

            from .. import _impl

            use_impl(bc_scan.value[0].impl)
            c = _context(bc_ctx)
            rows = (row for batch in batches for row in batch.to_pylist())
            summary = tasks.decode_rows(rows, c, lambda rng: tasks.PartWriter(directory, rng))
            out = [{"rng": rng, "lines": info["lines"], "warnings": tasks.pack(info["warnings"]),
                    "error": tasks.pack(info["error"]) if info["error"] is not None else None, "impl": _impl.IMPL}
                   for rng, info in sorted(summary.items())]
            if not out:
                out = [{"rng": -1, "lines": 0, "warnings": None, "error": None, "impl": _impl.IMPL}]
            yield pa.RecordBatch.from_pylist(out, schema=_schema(SUMMARY_SCHEMA))

        ch = self._runs_df(len(scan.runs)).mapInArrow(changes, CHANGE_SCHEMA)
        ev = self.spark.range(0, nevents, 1, max(1, min(p.nranges, nevents))).mapInArrow(event_rows, CHANGE_SCHEMA)
        df = (ch.unionByName(ev).repartition(p.nranges, "key")
              .sortWithinPartitions("key", "order", "rlsn", "sub")
              .mapInArrow(decode, SUMMARY_SCHEMA))
        try:
            rows = df.collect()
        finally:
            bc_scan.unpersist()
            bc_ctx.unpersist()
        out = []
        for r in rows:
            self.impl_seen.add(r["impl"])
            if r["rng"] < 0:
                continue
            out.append((r["rng"], {"lines": r["lines"], "warnings": tasks.unpack(r["warnings"]),
                                   "error": tasks.unpack(r["error"]) if r["error"] is not None else None}))
        return sorted(out)


_schemas: dict = {}
_contexts: dict = {}


def _schema(ddl: str):
    """The Arrow schema of a DDL string (design §6.4: batches must match the declared types exactly)."""
    s = _schemas.get(ddl)
    if s is None:
        import pyarrow as pa

        types = {"long": pa.int64(), "int": pa.int32(), "boolean": pa.bool_(), "binary": pa.binary(),
                 "string": pa.string()}
        s = _schemas[ddl] = pa.schema([(name, types[t]) for name, t in
                                       (f.strip().split(" ") for f in ddl.split(","))])
    return s


def _context(bc) -> tasks.Phase2:
    """The phase-2 context, unpickled once per worker process."""
    token, blob = bc.value
    c = _contexts.get(token)
    if c is None:
        _contexts.clear()
        c = _contexts[token] = tasks.unpack(blob)
    return c


# -- the run ---------------------------------------------------------------------------------------


def decode_spark(executor, paths, catalog: Catalog, make_plugin, out, *, plugin_options: dict | None = None,
                 start_lsn: int | None = None, restart_lsn: int | None = None, end_lsn: int | None = None,
                 timeline: int | None = None, two_phase: bool = False, include_uncommitted: bool = False,
                 segments_per_run: int | None = None, parts_dir: str | None = None, on_warning=None):
    """Decode ``paths`` through ``make_plugin(write)`` on ``executor``, writing the output bytes to ``out``
    (a binary file) in the single-process order; returns the ``session.DecodeResult``.  An error is
    raised after the output that precedes it was written, as ``decode`` writes it."""
    segments = paths if isinstance(paths, SegmentSet) else discover(paths, timeline)
    if segments.major != catalog.major:
        raise VersionMismatchError(f"the WAL was written by {segments.describe_version()} but the catalog snapshot "
                                   f"is from PostgreSQL {catalog.major}")
    if not getattr(make_plugin, "ranges_apart", True):
        raise UsageError(f"the {getattr(make_plugin, '__name__', 'output')} plugin's output spans the whole run "
                         "(DDL written once, undo reversed): use 'waldecode decode' for it")
    probe = make_plugin(lambda line: None)
    probe.startup(dict(plugin_options or {}), CatalogView(catalog))  # bad options fail here, before reading
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
    while True:
        items = executor.control(scan, nodes) if scan is not None else iter([(0, ("error", refused))])
        p = _plan.run_driver_pass(items, catalog, make_plugin(lambda line: None),
                                  plugin_options=plugin_options, start_plan=start_plan, read_from=read_from,
                                  start_lsn=start_lsn, end_lsn=end_lsn, two_phase=two_phase,
                                  include_uncommitted=include_uncommitted, segments=segments,
                                  nranges=getattr(executor, "ranges", 1), nodes=nodes, on_warning=on_warning)
        if p.nodes <= nodes:
            break
        # A catalog rewrite or relation-map update made new catalog relfilenodes: read their records too
        nodes = nodes | p.nodes
    result = p.result
    ctx = tasks.Phase2(catalog, make_plugin, plugin_options, p.timeline, p.events)
    directory = tempfile.mkdtemp(prefix="waldecode-spark-", dir=parts_dir)
    error = None
    try:
        if p.events and scan is not None:
            summary = executor.phase2(scan, p, ctx, directory)
        else:
            summary = []
        by_range = dict(summary)
        for rng in range(p.nranges):
            path = os.path.join(directory, f"part-{rng:05d}")
            if os.path.exists(path):
                with open(path, "rb") as f:
                    shutil.copyfileobj(f, out, 1 << 20)
            info = by_range.get(rng)
            if info is None:
                continue
            for w in info["warnings"]:
                result.warnings.append(w)
                if on_warning is not None:
                    on_warning(w)
            if info["error"] is not None:
                error = info["error"]
                break
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    if error is None:
        error = p.error  # a replay's error comes before the reading error: it was output earlier
    if error is not None:
        raise error
    return result


def describe_size(segments: SegmentSet) -> str:
    n = len(segments.files)
    return f"{n} segment(s) of {segments.seg_size >> 20} MB, {format_lsn(segments.first_segno * segments.seg_size)}"


def _warn(msg: str) -> None:
    print(f"waldecode: warning: {msg}", file=sys.stderr)
