"""The executors that run a ``spark decode``'s tasks (``job``'s task functions): ``SparkExecutor`` on Spark,
``LocalExecutor`` in this process.

``SparkExecutor``: the range path's phase 1 and ranges as RDD jobs (a task per run, a task per range, each
range's part file written where the driver appends it as it ends); the event path's phase 1 as one
``mapInArrow`` over ``spark.range`` that reads each run once, its change blobs persisted on the executors'
disks and its control items written to files the driver's pass reads while later runs are still read;
its phase 2 joins the blobs to the plan's members in the JVM, adds each range's own events as chunk rows,
and one hash shuffle whose keys map each range to its own partition and ``sortWithinPartitions`` give
transaction and LSN order, so Spark's external sorter holds big transactions instead of memory.
``LocalExecutor``: the same task functions in this process, for tests and for seeing what Spark adds.
"""

from __future__ import annotations

import functools
import os
import threading
import time
from dataclasses import replace

from .. import _impl
from ..errors import SparkJobError
from ..faults import crashpoint
from ..wal.storage import Store
from . import plan as _plan
from . import ranges as _ranges
from . import tasks
from .context import PendingContext, local_slots
from .hadoopfs import HadoopSegmentSet
from .job import (ATTEMPTS_DIR, Scan, files_directory, keep_staged_files, phase2_rows, range_scan, run_catalog_records,
                  run_phase1, run_spans, settle_gc, use_impl)

BLOB_SCHEMA = "xid long, lo long, hi long, run long, seq long, n long, blob binary"
DECODE_COLUMNS = ("rng", "order", "lo", "hi", "after", "trim", "n", "blob")
SUMMARY_SCHEMA = "rng long, lines long, warnings binary, error binary, impl string, staged string"
RUN_FILE_SCHEMA = "key long, run long, segno long, content binary"
KEYED_SCHEMA = "key long, blob binary"
BLOBS_PER_BATCH = 16


class LocalExecutor:
    """The task functions, in this process: for tests, and to see what Spark adds."""

    slots = 1
    impl_seen: set = set()

    def __init__(self, keep_blobs: bool = True):
        self.keep_blobs = keep_blobs  # False: only the driver's pass is wanted (the DataFrame source plans)
        self.blobs: list = []

    def control(self, scan: Scan, nodes: frozenset, directory: str | None = None):
        self.blobs = []
        for i in range(len(scan.runs)):
            control: list = []
            for blob in run_phase1(scan, i, nodes, control):
                if self.keep_blobs:
                    self.blobs.append(blob)
            yield from control

    def phase2(self, scan: Scan, p: _plan.Plan, ctx: tasks.Phase2, directory: str) -> list:
        rows = phase2_rows(self.blobs, p.members, p.cutoff, tasks.event_chunks(p.events, p.range_of))
        summary = tasks.decode_rows(iter(rows), ctx, lambda rng: tasks.PartWriter(directory, rng))
        return sorted(summary.items())

    def release(self) -> None:
        self.blobs = []

    def spans(self, scan: Scan, nodes: frozenset | None = None) -> list:
        return [run_spans(scan, i, nodes) for i in range(len(scan.runs))]

    def catalog_records(self, scan: Scan, nodes: frozenset) -> list:
        return [run_catalog_records(scan, i, nodes) for i in range(len(scan.runs))]

    def decode_ranges(self, scan: Scan, rplan: _ranges.RangePlan, ctx: tasks.Phase2, directory: str) -> dict:
        return {r.rng: _ranges.decode_range(scan.segments, ctx.catalog, ctx.make_plugin, ctx.request, r,
                                            writer=tasks.PartWriter(directory, r.rng), history=ctx.timeline)
                for r in rplan.ranges}


class SparkExecutor:
    """Phase 1 and 2 as Spark jobs on ``spark`` (see the module docstring)."""

    #: its range tasks leave ``ranges.write_done`` files as they end: the driver appends ranges meanwhile
    streams_ranges = True

    def __init__(self, spark, ranges: int | None = None):
        """``spark``: a SparkSession, or a SparkContext (the range path needs no more; a session is made
        on it when the event path or a Hadoop input needs one), or a ``context.PendingContext`` still
        starting: phase 1 then runs on the driver until it is ready (``spans``), when its master's cores
        are known beforehand (a local master's)."""
        self._pending = None
        slots = None
        if isinstance(spark, PendingContext):
            self._pending = spark
            slots = local_slots(spark.master)
            shuffle = spark.confs.get("spark.sql.shuffle.partitions")
            if slots is None:  # a cluster's cores are known once its context is up
                self._pending = None
                spark = spark.get()
        if self._pending is None:
            self._sc = sc = getattr(spark, "sparkContext", spark)
            self._spark = spark if sc is not spark else None
            slots = max(1, sc.defaultParallelism)
            conf = sc.getConf()
            shuffle = conf.get("spark.sql.shuffle.partitions") if conf.contains("spark.sql.shuffle.partitions") else None
        else:
            self._sc = self._spark = None
        self.slots = slots
        if ranges is None and shuffle is not None:
            ranges = int(shuffle)
        # four per core: the tasks even out what the ranges' weights miss (docs/spark-decode.md)
        self.ranges = ranges or 4 * self.slots
        self.impl_seen: set = set()
        self.driver_runs = 0  # phase 1's runs read on the driver while the context started
        self.driver_cpu = 0.0  # ... and the CPU seconds they took
        self.driver_ranges = 0  # the ranges the driver decoded while the context started

    @property
    def sc(self):
        if self._sc is None:
            self._sc = self._pending.get(warmed=True)
        return self._sc

    @property
    def spark(self):
        if self._spark is None:
            from pyspark.sql import SparkSession  # lazy: the optional [spark] extra; LocalExecutor runs without it

            self._spark = SparkSession(self.sc)
        return self._spark

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
                    want.setdefault(Store.name(str(f.path)), []).append((keys[r], r, segno))
        bc = self.spark.sparkContext.broadcast(want)

        def assign(batches):
            import pyarrow as pa  # lazy: pyarrow (0.13 s, the optional [spark] extra), in Spark's tasks only

            wanted = bc.value
            schema = _schema(RUN_FILE_SCHEMA)
            for batch in batches:
                paths = batch.column(0).to_pylist()
                for i, path in enumerate(paths):
                    for key, run, segno in wanted.get(path.rsplit("/", 1)[-1], ()):
                        yield pa.RecordBatch.from_arrays(
                            [pa.array([key], pa.int64()), pa.array([run], pa.int64()), pa.array([segno], pa.int64()),
                             batch.column(1).slice(i, 1)], schema=schema)

        uris = sorted({str(segs.files[s].path) for per in want.values() for _k, _r, s in per})
        files = self.spark.read.format("binaryFile").load(uris).select("path", "content") \
            .mapInArrow(assign, RUN_FILE_SCHEMA)
        markers = self.spark.createDataFrame([(keys[r], r, -1, None) for r in range(n)], RUN_FILE_SCHEMA)
        return files.unionByName(markers).repartition(n, "key").sortWithinPartitions("run", "segno")

    def control(self, scan: Scan, nodes: frozenset, directory: str):
        """Phase 1 as one Spark job, each run read once: its change blobs into a persisted DataFrame (phase
        2's input), its control items into a file under ``directory``, which this generator yields from
        in run order while later runs are still being read (the driver's pass overlaps phase 1)."""
        from pyspark import StorageLevel  # lazy: the optional [spark] extra; LocalExecutor runs without it

        self.release()
        for run in range(len(scan.runs)):  # a previous pass's (new catalog relfilenodes make another)
            if os.path.exists(tasks.control_path(directory, run)):
                os.remove(tasks.control_path(directory, run))
        sc = self.spark.sparkContext
        bc = sc.broadcast((scan, nodes, directory))

        def phase1(batches):
            s, nd, d = bc.value
            use_impl(s.impl)
            settle_gc()
            schema = _schema(BLOB_SCHEMA)
            for run, rs in _run_inputs(batches, s):
                control = tasks.ControlFile(d, run)
                try:
                    cols = ([], [], [], [], [], [], [])
                    held = 0
                    for row in run_phase1(rs, run, nd, control):
                        for col, v in zip(cols, row):
                            col.append(v)
                        held += len(row[6])
                        if held >= 8 << 20:
                            yield _batch(cols, schema)
                            cols = ([], [], [], [], [], [], [])
                            held = 0
                    if cols[0]:
                        yield _batch(cols, schema)
                except BaseException:
                    control.discard()
                    raise
                control.close()

        df = self._run_input(scan).mapInArrow(phase1, BLOB_SCHEMA).persist(StorageLevel.DISK_ONLY)
        self._blobs, self._bc1 = df, bc
        done = self._phase1 = {"error": None}

        def materialize():
            try:
                df.count()
            except BaseException as e:  # surfaced by the waiting driver
                done["error"] = e

        thread = self._thread = threading.Thread(target=materialize, name="waldecode-phase1", daemon=True)
        thread.start()
        for run in range(len(scan.runs)):
            path = tasks.control_path(directory, run)
            while not os.path.exists(path):
                if not thread.is_alive():
                    if os.path.exists(path):
                        break
                    self.wait()
                    raise SparkJobError(f"phase 1 left no control items for run {run} in {directory}: the "
                                        "executors must share it with this process (--parts-dir)")
                thread.join(0.02)
            yield from tasks.read_control(path)

    def wait(self) -> None:
        """Phase 1 complete (its error raised)."""
        thread = getattr(self, "_thread", None)
        if thread is not None:
            thread.join()
            self._thread = None
            if self._phase1["error"] is not None:
                raise self._phase1["error"]

    def release(self) -> None:
        self.wait_quietly()
        blobs = getattr(self, "_blobs", None)
        if blobs is not None:
            blobs.unpersist()
            self._bc1.unpersist()
            self._blobs = None

    def wait_quietly(self) -> None:
        try:
            self.wait()
        except Exception:
            pass

    def _keys(self, n: int) -> list:
        """A key per range whose hash sends it to the partition of the same number (``partition_keys``)."""
        return partition_keys(n)

    def phase2(self, scan: Scan, p: _plan.Plan, ctx: tasks.Phase2, directory: str) -> list:
        # lazy: pyarrow and pyspark (0.3 s, the optional [spark] extra); LocalExecutor runs without them
        import pyarrow as pa
        from pyspark.sql import functions as F

        self.wait()
        sc = self.spark.sparkContext
        keys = self._keys(p.nranges)
        bc_ctx = sc.broadcast((os.urandom(8).hex(), tasks.pack(ctx)))
        impl = scan.impl
        # xid -> its event, range and the LSN its changes count after: joined to the blobs in the JVM
        xids = list(p.members)
        ms = p.members.values()
        members = self.spark.createDataFrame(pa.table({
            "xid": pa.array(xids, pa.int64()),
            "key": pa.array([keys[m[2]] for m in ms], pa.int64()),
            "rng": pa.array([m[2] for m in ms], pa.int64()),
            "order": pa.array([m[0] for m in ms], pa.int64()),
            "after": pa.array([m[1] for m in ms], pa.int64())}))
        chunks = list(tasks.event_chunks(p.events, p.range_of))
        n = len(chunks)
        events = self.spark.createDataFrame(pa.table({
            "key": pa.array([keys[c[0]] for c in chunks], pa.int64()),
            "rng": pa.array([c[0] for c in chunks], pa.int64()),
            "order": pa.array([c[1] for c in chunks], pa.int64()),
            "lo": pa.array([tasks.CHUNK] * n, pa.int64()), "hi": pa.array([tasks.CHUNK] * n, pa.int64()),
            "after": pa.array([0] * n, pa.int64()), "trim": pa.array([False] * n, pa.bool_()),
            "seq": pa.array([0] * n, pa.int64()), "n": pa.array([0] * n, pa.int64()),
            "blob": pa.array([c[2] for c in chunks], pa.binary())}))
        lo, hi, after = F.col("lo"), F.col("hi"), F.col("after")
        keep = hi > after
        trim = lo <= after
        if p.cutoff is not None:
            keep = keep & (lo < F.lit(p.cutoff))
            trim = trim | (hi >= F.lit(p.cutoff))
        changes = (self._blobs.join(F.broadcast(members), "xid").where(keep)
                   .select("key", "rng", "order", "lo", "hi", "after", trim.alias("trim"), "seq", "n", "blob"))

        def decode(batches):
            # lazy: pyarrow and pyspark (0.3 s, the optional [spark] extra); LocalExecutor runs without them
            import pyarrow as pa
            from pyspark import TaskContext

            use_impl(impl)
            settle_gc()
            c = _context(bc_ctx)
            task = TaskContext.get()
            make_plugin, staged = _staged_plugin(c.make_plugin, _attempt_name(task))
            if staged is not None:
                c = tasks.Phase2(c.catalog, make_plugin, c.request, c.timeline, c.cutoff)
            rows = (row for batch in batches
                    for row in zip(*(batch.column(i).to_pylist() for i in range(batch.num_columns))))
            summary = tasks.decode_rows(rows, c, lambda rng: tasks.PartWriter(directory, rng))
            if task.attemptNumber() == 0:
                crashpoint("spark-phase2-first-attempt")  # the retry test: a task lost after writing its output
            out = [{"rng": rng, "lines": info["lines"], "warnings": tasks.pack(info["warnings"]),
                    "error": tasks.pack(info["error"]) if info["error"] is not None else None, "impl": _impl.IMPL,
                    "staged": staged}
                   for rng, info in sorted(summary.items())]
            if not out:
                out = [{"rng": -1, "lines": 0, "warnings": None, "error": None, "impl": _impl.IMPL,
                        "staged": staged}]
            yield pa.RecordBatch.from_pylist(out, schema=_schema(SUMMARY_SCHEMA))

        df = (changes.unionByName(events).repartition(p.nranges, "key")
              .sortWithinPartitions("key", "order", "lo", "seq")
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
            bc_ctx.unpersist()
        files_dir = files_directory(ctx.make_plugin)
        if files_dir is not None:
            keep_staged_files(files_dir, {r["staged"] for r in rows})
        out = []
        for r in rows:
            self.impl_seen.add(r["impl"])
            if r["rng"] < 0:
                continue
            out.append((r["rng"], {"lines": r["lines"], "warnings": tasks.unpack(r["warnings"]),
                                   "error": tasks.unpack(r["error"]) if r["error"] is not None else None}))
        return sorted(out)


    def spans(self, scan: Scan, nodes: frozenset | None = None) -> list:
        """Phase 1 of the range path: a task per run, its ``RunSpans`` collected (a few xids per run, and
        with ``nodes`` the few records the catalog history needs).  While the context is still starting
        (``PendingContext``), the driver reads runs itself, from the first, and the tasks take the runs left
        once it is up: on a small archive phase 1 ends before the context does (a local run is read as
        fast as by a task, and the JVM's start leaves a core idle for seconds)."""
        cpu = time.thread_time()
        done = self._runs_on_driver(scan, lambda run: run_spans(scan, run, nodes))
        self.driver_runs, self.driver_cpu = len(done), time.thread_time() - cpu
        if len(done) == len(scan.runs):
            return [done[i] for i in range(len(done))]
        bc = self.sc.broadcast(scan)

        def phase1(runs):
            s = bc.value
            use_impl(s.impl)
            for run, rs in runs:
                yield run, tasks.pack(run_spans(rs, run, nodes))

        try:
            rows = self._map_runs(scan, bc, phase1, last_first=True, skip=len(done))
        finally:
            bc.unpersist()
        for run, blob in rows:
            done[run] = tasks.unpack(blob)
        return [done[i] for i in range(len(scan.runs))]

    def catalog_records(self, scan: Scan, nodes: frozenset) -> list:
        """The catalog pass of the range path: a task per run, the records the catalog history needs
        collected (``ranges.run_catalog_records``; a few per DDL statement and checkpoint).  While the
        context is still starting, the driver reads runs itself, as in ``spans``."""
        done = self._runs_on_driver(scan, lambda run: run_catalog_records(scan, run, nodes))
        if len(done) == len(scan.runs):
            return [done[i] for i in range(len(done))]
        bc = self.sc.broadcast(scan)

        def records(runs):
            s = bc.value
            use_impl(s.impl)
            for run, rs in runs:
                yield run, tasks.pack(run_catalog_records(rs, run, nodes))

        try:
            rows = self._map_runs(scan, bc, records, skip=len(done))
        finally:
            bc.unpersist()
        for run, blob in rows:
            done[run] = tasks.unpack(blob)
        return [done[i] for i in range(len(scan.runs))]

    def _runs_on_driver(self, scan: Scan, read) -> dict:
        """{run: ``read(run)``} for the runs the driver reads itself, from the first, while the context is
        still starting (local segments only: a Hadoop input is read by the tasks)."""
        done: dict = {}
        if self._pending is not None and not isinstance(scan.segments, HadoopSegmentSet):
            while len(done) < len(scan.runs) and not self._pending.ready():
                done[len(done)] = read(len(done))
        return done

    def _map_runs(self, scan: Scan, bc, fn, last_first: bool = False, skip: int = 0) -> list:
        """``fn`` over (run, scan to read it with) in a task per run of ``scan`` (``bc``: ``scan`` broadcast),
        its (key, bytes) results collected.  Local segments: an RDD of run numbers (no SQL session, no
        Arrow: the first such job starts in 2 s here, a first ``mapInArrow`` in 4.7 s); Hadoop paths: the
        segment files through ``binaryFile`` (``_run_input``).  ``last_first``: the tasks start from the
        last run (phase 1 of the range path: when the page cache cannot hold the whole WAL, what it read
        last is what the first ranges read first).  ``skip``: the first runs are done already (read on the
        driver); local segments only."""
        n = len(scan.runs)
        if not isinstance(scan.segments, HadoopSegmentSet):
            def local(runs):
                s = bc.value
                return fn((run, s) for run in runs)

            order = range(n - 1, skip - 1, -1) if last_first else range(skip, n)
            return self.sc.parallelize(order, len(order)).mapPartitions(local).collect()

        def hadoop(batches):
            import pyarrow as pa  # lazy: pyarrow (0.13 s, the optional [spark] extra), in Spark's tasks only

            for key, blob in fn(_run_inputs(batches, bc.value)):
                yield pa.RecordBatch.from_pylist([{"key": key, "blob": blob}], schema=_schema(KEYED_SCHEMA))

        return [(r["key"], r["blob"]) for r in self._run_input(scan).mapInArrow(hadoop, KEYED_SCHEMA).collect()]

    def decode_ranges(self, scan: Scan, rplan: _ranges.RangePlan, ctx: tasks.Phase2, directory: str) -> dict:
        """Phase 2 of the range path: a task per range, decoding it with the single-process decoder into
        its part file under ``directory`` (a file-writing plugin's files staged per attempt).  While the
        context is still starting (``PendingContext``), the driver decodes ranges itself, from the first,
        and the job takes the ranges left once it is up: on 2 cores phase 1 ends seconds before the context
        and its warmed workers do, and that core would be idle."""
        results: dict = {}
        driver = None
        if self._pending is not None and not self._pending.ready() and not isinstance(scan.segments, HadoopSegmentSet):
            driver = _DriverRanges(self._pending, rplan)
        if driver is not None:
            # the job is submitted from another thread as soon as the context is up, with the ranges the
            # driver has not taken, so that the range the driver is decoding then does not hold it back
            driver.start(lambda skip: self._decode_ranges(scan, rplan, ctx, directory, skip))
            for r in driver.claimed():
                results[r.rng], _blob = _decode_part(scan.segments, ctx, r, directory, f"driver-{r.rng}",
                                                     on_driver=True)
            results.update(driver.join())
            self.driver_ranges = driver.taken
        else:
            results = self._decode_ranges(scan, rplan, ctx, directory, 0)
        return self._range_results(results, ctx)

    def _decode_ranges(self, scan: Scan, rplan: _ranges.RangePlan, ctx: tasks.Phase2, directory: str,
                       skip: int) -> dict:
        """The range job over the ranges from ``skip`` on: {rng: (summary, implementation, staged directory)}."""
        rscan = range_scan(scan, rplan)
        bc = self.sc.broadcast(rscan)
        bc_ctx = self.sc.broadcast((os.urandom(8).hex(), tasks.pack((ctx, rplan.ranges))))

        def decode(runs):
            from pyspark import TaskContext  # lazy: the optional [spark] extra; LocalExecutor runs without it

            c, rngs = _context(bc_ctx)
            use_impl(bc.value.impl)
            settle_gc()
            task = TaskContext.get()
            for i, rs in runs:
                _summary, blob = _decode_part(rs.segments, c, rngs[i], directory, _attempt_name(task))
                if task.attemptNumber() == 0:
                    crashpoint("spark-phase2-first-attempt")  # the retry test: a task lost after its output
                yield i, blob

        try:
            rows = self._map_runs(rscan, bc, decode, skip=skip)
        finally:
            bc.unpersist()
            bc_ctx.unpersist()
        return {i: tasks.unpack(blob) for i, blob in rows}

    def _range_results(self, results: dict, ctx: tasks.Phase2) -> dict:
        """The ranges' summaries from their (summary, implementation, staged directory); the staged files
        of the attempts that made them kept."""
        files_dir = files_directory(ctx.make_plugin)
        if files_dir is not None:
            keep_staged_files(files_dir, {staged for _info, _which, staged in results.values()})
        out = {}
        for i, (info, impl, _staged) in results.items():
            self.impl_seen.add(impl)
            out[i] = info
        return out


class _DriverRanges:
    """The driver's share of the ranges while the context starts: ``claimed()`` yields the ranges the driver
    is to decode, from the first, for as long as the context is not ready (all of them if it never is
    before the driver is done: a local run is then over before Spark could have helped); ``start(job)``
    runs ``job(skip)`` in a thread once the context is up, over the ranges from ``skip`` on, the ones the
    driver has not claimed by then."""

    def __init__(self, pending: PendingContext, rplan: _ranges.RangePlan):
        # pending.ready() only ever turns true: once the job has seen it, under the lock, the driver sees it
        # too and claims no more
        self._pending = pending
        self._ranges = rplan.ranges
        self._lock = threading.Lock()
        self.taken = 0  # ranges claimed by the driver
        self._result: dict = {}
        self._error: BaseException | None = None
        self._thread: threading.Thread | None = None

    def start(self, job) -> None:
        def run():
            try:
                while True:
                    with self._lock:
                        if self.taken >= len(self._ranges):
                            return  # the driver took them all
                        if self._pending.ready():
                            skip = self.taken
                            break
                    time.sleep(0.02)
                self._result = job(skip)
            except BaseException as e:  # re-raised by join() in the driver's thread
                self._error = e

        self._thread = threading.Thread(target=run, name="waldecode-range-job", daemon=True)
        self._thread.start()

    def claimed(self):
        while True:
            with self._lock:
                if self.taken >= len(self._ranges) or self._pending.ready():
                    return
                r = self._ranges[self.taken]
                self.taken += 1
            yield r

    def join(self) -> dict:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._result


def _staged_plugin(make_plugin, attempt: str):
    """(make_plugin, staged directory) for one attempt (a task attempt's ``partition-attempt id``, or the
    driver's ``driver-<range>``): a file-writing plugin writes into a directory of the attempt's own, whose
    files the driver keeps only when the attempt succeeded, so a failed or speculative attempt leaves no
    duplicate rows behind (None: a line-writing plugin)."""
    files_dir = files_directory(make_plugin)
    if files_dir is None:
        return make_plugin, None
    staged = os.path.join(files_dir, ATTEMPTS_DIR, attempt)
    return functools.partial(make_plugin, directory=staged), staged


def _decode_part(segments, ctx: tasks.Phase2, r: _ranges.Range, directory: str, attempt: str,
                 on_driver: bool = False) -> tuple:
    """Range ``r`` decoded by the single-process decoder into its part file under ``directory``, by a task
    or by the driver (``on_driver``, which ``--timings`` reports): its (summary, implementation, staged
    directory) and those packed, as written beside the part for the driver appending ranges as they end."""
    make_plugin, staged = _staged_plugin(ctx.make_plugin, attempt)
    info = _ranges.decode_range(segments, ctx.catalog, make_plugin, ctx.request, r,
                                writer=tasks.PartWriter(directory, r.rng), history=ctx.timeline)
    if on_driver:
        info["on_driver"] = True
    result = (info, _impl.IMPL, staged)
    blob = tasks.pack(result)
    _ranges.write_done(directory, r.rng, blob)
    return result, blob


def _attempt_name(task) -> str:
    """A Spark task attempt's name among the staged directories: its partition and attempt id."""
    return f"{task.partitionId()}-{task.taskAttemptId()}"


def _batch(cols, schema):
    """An Arrow record batch of ``schema`` from its columns as Python lists."""
    import pyarrow as pa  # lazy: pyarrow (0.13 s, the optional [spark] extra), in Spark's tasks only

    return pa.RecordBatch.from_arrays([pa.array(c, t) for c, t in zip(cols, schema.types)], schema=schema)


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


_schemas: dict = {}
_contexts: dict = {}


_M32 = 0xFFFFFFFF


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
    """The Arrow schema of a DDL string (docs/spark-decode.md: batches must match the declared types exactly)."""
    s = _schemas.get(ddl)
    if s is None:
        import pyarrow as pa  # lazy: pyarrow (0.13 s, the optional [spark] extra), in Spark's tasks only

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
