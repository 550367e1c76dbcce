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
from dataclasses import dataclass, replace

from ..catalog import Catalog
from ..errors import Error, UsageError, format_lsn
from ..output.base import CatalogView
from ..logical.session import VersionMismatchError
from ..logical.startpoint import reading_start
from ..wal.segments import SegmentSet, discover
from ..wal.xlogreader import XLogReader
from . import plan as _plan
from . import tasks
from .hadoopfs import HadoopSegmentSet

CHANGE_SCHEMA = "key long, rng long, order long, run long, seq long, n int, blob binary"
DECODE_COLUMNS = ("rng", "order", "n", "blob")
SUMMARY_SCHEMA = "rng long, lines long, warnings binary, error binary, impl string"
CONTROL_SCHEMA = "run long, items binary"
RUN_FILE_SCHEMA = "key long, run long, segno long, content binary"
BLOBS_PER_BATCH = 16


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
    from .. import _impl

    return Scan(segments, runs, start, end_lsn, database, filtered_origins, _impl.IMPL)


def use_impl(name: str) -> None:
    """Run this task with the driver's implementation (WALDECODE_IMPL on executors makes a missing
    Cython extension fail at import; this makes a test's choice reach them)."""
    from .. import _impl

    if _impl.IMPL != name:
        _impl.use(name)


def settle_gc() -> None:
    """In a task's Python worker: collections less often (``cli._settle_gc``'s reason: millions of
    short-lived tuples, hardly any cycles; the defaults cost a tenth of the CPU and more as the
    driver's plan grows)."""
    import gc

    gc.set_threshold(50_000, 20, 20)


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
    rmids = tasks.CHANGE_RMIDS
    # Only the records change_rows takes are decoded (the control pass has decoded, and checked, them all)
    records = tasks.read_run(scan.segments, first, last, scan.start, scan.end_lsn,
                             keep=lambda xid, rmid: rmid in rmids and xid in members)
    return tasks.change_rows(records, scan.database, scan.filtered_origins, members, cutoff)


def run_blobs(scan: Scan, run_index: int, members: dict, cutoff):
    """``tasks.change_blobs`` of one run: (order, rng, run, seq, n, blob)."""
    return tasks.change_blobs(run_changes(scan, run_index, members, cutoff), run_index)


def phase2_rows(scan: Scan, members: dict, cutoff, events_of: list, range_of) -> list:
    """Phase 2's input in this process, sorted: (rng, order, n, blob) of every run's changes and an event
    row for each order in ``events_of``."""
    rows = []
    for i in range(len(scan.runs)):
        for order, rng, run, seq, n, blob in run_blobs(scan, i, members, cutoff):
            rows.append((rng, order, run, seq, n, blob))
    rows += [(range_of[o], o, -1, 0, 0, None) for o in events_of]
    rows.sort(key=lambda r: r[:4])
    return [(r[0], r[1], r[4], r[5]) for r in rows]


# -- executors -------------------------------------------------------------------------------------


class LocalExecutor:
    """The task functions, in this process: for tests, and to see what Spark adds."""

    slots = 1
    impl_seen: set = set()

    def control(self, scan: Scan, nodes: frozenset):
        for i in range(len(scan.runs)):
            yield from run_control(scan, i, nodes)

    def phase2(self, scan: Scan, p: _plan.Plan, ctx: tasks.Phase2, directory: str) -> list:
        rows = phase2_rows(scan, p.members, p.cutoff, range(len(p.events)), p.range_of)
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

    def _run_input(self, scan: Scan):
        """What phase-1 tasks read, one partition per run, for ``_run_inputs``: the run numbers (the
        tasks open local segment files themselves), or, on a Hadoop file system, the run's segment
        files from Spark's ``binaryFile`` source, sorted by segment number (the run's own segments
        and the next run's first, for the record crossing into it) after a marker row."""
        n = len(scan.runs)
        if not isinstance(scan.segments, HadoopSegmentSet):
            return self._runs_df(n)
        segs = scan.segments
        keys = self._keys(n)
        want: dict = {}  # file name -> [(key, run, segno)]
        for r, (first, last) in enumerate(scan.runs):
            for segno in range(first, last + 2):
                f = segs.files.get(segno)
                if f is not None:
                    want.setdefault(f.path.name, []).append((keys[r], r, segno))
        bc = self.spark.sparkContext.broadcast(want)

        def assign(batches):
            import pyarrow as pa

            wanted = bc.value
            schema = _schema(RUN_FILE_SCHEMA)
            for batch in batches:
                paths = batch.column(0).to_pylist()
                for i, path in enumerate(paths):
                    for key, run, segno in wanted.get(path.rsplit("/", 1)[-1], ()):
                        yield pa.RecordBatch.from_arrays(
                            [pa.array([key], pa.int64()), pa.array([run], pa.int64()), pa.array([segno], pa.int64()),
                             batch.column(1).slice(i, 1)], schema=schema)

        uris = sorted({segs.files[s].path.uri for per in want.values() for _k, _r, s in per})
        files = self.spark.read.format("binaryFile").load(uris).select("path", "content") \
            .mapInArrow(assign, RUN_FILE_SCHEMA)
        markers = self.spark.createDataFrame([(keys[r], r, -1, None) for r in range(n)], RUN_FILE_SCHEMA)
        return files.unionByName(markers).repartition(n, "key").sortWithinPartitions("run", "segno")

    def control(self, scan: Scan, nodes: frozenset):
        sc = self.spark.sparkContext
        bc = sc.broadcast((scan, nodes))

        def phase1(batches):
            import pyarrow as pa

            s, nd = bc.value
            use_impl(s.impl)
            settle_gc()
            for run, rs in _run_inputs(batches, s):
                items = run_control(rs, run, nd)
                yield pa.RecordBatch.from_pydict({"run": [run], "items": [tasks.pack(items)]},
                                                 schema=_schema(CONTROL_SCHEMA))

        df = self._run_input(scan).mapInArrow(phase1, CONTROL_SCHEMA)
        # All runs at once (toLocalIterator would run them one task at a time); the items are small
        try:
            rows = df.collect()
        finally:
            bc.unpersist()
        for expected, row in enumerate(rows):
            if row["run"] != expected:
                raise RuntimeError(f"phase 1 returned run {row['run']} where run {expected} was due")
        for row in rows:
            yield from tasks.unpack(row["items"])

    def _keys(self, n: int) -> list:
        """A key per range whose hash sends it to the partition of the same number (``partition_keys``)."""
        return partition_keys(n)

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
            settle_gc()
            schema = _schema(CHANGE_SCHEMA)
            for run, rs in _run_inputs(batches, s):
                cols = ([], [], [], [], [], [], [])
                held = 0
                for order, rng, _run, seq, n, blob in run_blobs(rs, run, members, cutoff):
                    for col, v in zip(cols, (ks[rng], rng, order, run, seq, n, blob)):
                        col.append(v)
                    held += len(blob)
                    if held >= 8 << 20:
                        yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, schema.types)],
                                                         schema=schema)
                        cols = ([], [], [], [], [], [], [])
                        held = 0
                if cols[0]:
                    yield pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, schema.types)],
                                                     schema=schema)

        def event_rows(batches):
            import pyarrow as pa

            _s, _m, _c, range_of, ks = bc_scan.value
            schema = _schema(CHANGE_SCHEMA)
            for batch in batches:
                orders = batch.column(0).to_pylist()
                rngs = [range_of[o] for o in orders]
                n = len(orders)
                yield pa.RecordBatch.from_arrays(
                    [pa.array([ks[r] for r in rngs], pa.int64()), pa.array(rngs, pa.int64()),
                     pa.array(orders, pa.int64()), pa.array([-1] * n, pa.int64()), pa.array([0] * n, pa.int64()),
                     pa.array([0] * n, pa.int32()), pa.nulls(n, pa.binary())], schema=schema)

        def decode(batches):
            import pyarrow as pa
            from pyspark import TaskContext  # noqa: F401  (the executor's own)

            from .. import _impl

            use_impl(bc_scan.value[0].impl)
            settle_gc()
            c = _context(bc_ctx)
            rows = (row for batch in batches
                    for row in zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns))))
            summary = tasks.decode_rows(rows, c, lambda rng: tasks.PartWriter(directory, rng))
            out = [{"rng": rng, "lines": info["lines"], "warnings": tasks.pack(info["warnings"]),
                    "error": tasks.pack(info["error"]) if info["error"] is not None else None, "impl": _impl.IMPL}
                   for rng, info in sorted(summary.items())]
            if not out:
                out = [{"rng": -1, "lines": 0, "warnings": None, "error": None, "impl": _impl.IMPL}]
            yield pa.RecordBatch.from_pylist(out, schema=_schema(SUMMARY_SCHEMA))

        ch = self._run_input(scan).mapInArrow(changes, CHANGE_SCHEMA)
        ev = self.spark.range(0, nevents, 1, max(1, min(p.nranges, nevents))).mapInArrow(event_rows, CHANGE_SCHEMA)
        df = (ch.unionByName(ev).repartition(p.nranges, "key")
              .sortWithinPartitions("key", "order", "run", "seq")
              .select(*DECODE_COLUMNS)
              .mapInArrow(decode, SUMMARY_SCHEMA))
        conf = self.spark.conf
        batch = conf.get("spark.sql.execution.arrow.maxRecordsPerBatch")
        # A batch of blobs into the decoding task: a few MB, not thousands of blobs (the memory bound)
        conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", str(BLOBS_PER_BATCH))
        try:
            rows = df.collect()
        finally:
            conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", batch)
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

_M32 = 0xFFFFFFFF


def _spark_hash_long(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of a long, which ``repartition(n, col)`` places rows by (``pmod(hash, n)``):
    Murmur3_x86_32.hashLong with Spark's seed 42 (a test checks it against Spark itself)."""
    def mix_k1(k1):
        k1 = (k1 * 0xCC9E2D51) & _M32
        k1 = ((k1 << 15) | (k1 >> 17)) & _M32
        return (k1 * 0x1B873593) & _M32

    def mix_h1(h1, k1):
        h1 ^= k1
        h1 = ((h1 << 13) | (h1 >> 19)) & _M32
        return (h1 * 5 + 0xE6546B64) & _M32

    value &= 0xFFFFFFFFFFFFFFFF
    h1 = mix_h1(seed, mix_k1(value & _M32))
    h1 = mix_h1(h1, mix_k1(value >> 32))
    h1 ^= 8
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1 - (1 << 32) if h1 & 0x80000000 else h1


def partition_keys(n: int) -> list:
    """For each partition i of ``repartition(n, "key")``, the smallest key Spark sends there."""
    keys: list = [None] * n
    missing = n
    k = 0
    while missing:
        i = _spark_hash_long(k) % n  # Python's % is pmod
        if keys[i] is None:
            keys[i] = k
            missing -= 1
        k += 1
    return keys



def _run_inputs(batches, scan: Scan):
    """(run, the scan to read it with) for each run of a phase-1 partition (see ``_run_input``)."""
    if not isinstance(scan.segments, HadoopSegmentSet):
        for batch in batches:
            for run in batch.column(0).to_pylist():
                yield run, scan
        return
    current, contents = None, {}
    for batch in batches:
        runs = batch.column(1).to_pylist()
        segnos = batch.column(2).to_pylist()
        data = batch.column(3)
        for i, run in enumerate(runs):
            if run != current:
                if current is not None:
                    yield current, replace(scan, segments=scan.segments.with_contents(contents))
                current, contents = run, {}
            if segnos[i] >= 0:
                contents[segnos[i]] = data[i].as_py()
    if current is not None:
        yield current, replace(scan, segments=scan.segments.with_contents(contents))


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
        if not getattr(make_plugin, "in_one_range", False):
            raise UsageError(f"the {getattr(make_plugin, '__name__', 'output')} plugin's output spans the whole run "
                             "(DDL written once, undo reversed): use 'waldecode decode' for it")
        if executor.ranges != 1:
            raise UsageError(f"the {getattr(make_plugin, '__name__', 'output')} plugin decodes as one output range "
                             "(--ranges 1): what it writes depends on what it wrote before")
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
