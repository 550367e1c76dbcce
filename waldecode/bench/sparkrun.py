"""``waldecode spark decode`` in the benchmark: its command line, and the memory of its Python workers.

A Spark run is a process tree: the ``waldecode`` driver (Python), the JVM it starts, and the
JVM's Python workers (``pyspark.daemon`` and the workers it forks), which run phase 1 and
phase 2.  The bound the Spark path promises is on the workers, so ``run_spark_measured``
polls ``/proc`` while the run lasts, and reads each worker's ``VmHWM`` (its own peak
RSS, kept by the kernel, so a peak between two polls is not missed); the driver's and
the JVM's peaks are reported beside it.  A worker that starts and ends between two polls
(10 per second) is not seen: phase tasks last longer.

On a standalone cluster (``--spark-standalone``: ``spark.standalone``) the executors are other
trees: each worker daemon starts its executor's JVM, which starts the Python workers.  The
daemons' PIDs are passed as ``daemons`` and their trees are polled as the driver's is; the daemons
themselves ran before the run, so their CPU counts from the run's start, and what was under them
then (a previous run's executors, still ending) is not the run's.

CPU time is the trees' too: the JVM and its workers are not waited for by the driver, so
the kernel's children totals (``os.times``) would count the driver alone.  Each process's own
user+system time is read from ``/proc/PID/stat`` at every poll and the last value seen is
summed: the CPU a process spends after its last poll (at most 0.1 s of it) is not counted.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .measure import BenchError, Measurement
from .tools import Tool

POLL_SECONDS = 0.1
SPARK_MEMORY_DEFAULT = None  # Spark's own defaults (1g driver in local mode)
#: ``--spark-standalone``'s cluster: two workers of one core each (the issue's "one master and two workers"),
#: and its executors' memory when ``--spark-memory`` does not say
STANDALONE_WORKERS = 2
STANDALONE_CORES = 1
STANDALONE_MEMORY = "1g"


def spark_decode_standalone(impl: str, workers: int = STANDALONE_WORKERS, cores: int = STANDALONE_CORES) -> Tool:
    """``waldecode spark decode --master spark://...`` on ``workers`` workers of ``cores`` cores each,
    compared with single-process ``decode`` as the local runs are."""
    return Tool(f"spark_decode_standalone_{workers}x{cores}",
                f"waldecode spark decode standalone {workers}x{cores} [{impl}]", "changes", f"decode_{impl}", impl)


def spark_decode_argv(w, out: Path, master: str, memory: str | None, parts_dir: Path,
                      timings: Path | None = None) -> list[str]:
    argv = [sys.executable, "-m", "waldecode.cli", "spark", "decode", "--quiet", "--master", master,
            "--catalog", str(w.catalog), "--start-lsn", w.decode_start_lsn, "--end-lsn", w.end_lsn,
            "--parts-dir", str(parts_dir), "--output", str(out)]
    if timings is not None:
        argv += ["--timings", str(timings)]
    if memory:
        # local mode: the driver JVM is the executor; spark.executor.memory for a cluster's executors
        argv += ["--conf", f"spark.driver.memory={memory}", "--conf", f"spark.executor.memory={memory}"]
    return argv + [str(w.wal_dir)]


_CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _processes() -> tuple[dict, dict]:
    """(parent pid -> child pids, pid -> own user+system CPU seconds) of every process."""
    kids: dict = {}
    cpu: dict = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # proc(5): after "(comm)", field 4 is ppid, fields 14 and 15 utime and stime
        fields = stat.rsplit(b")", 1)[1].split()
        kids.setdefault(int(fields[1]), []).append(int(name))
        cpu[int(name)] = (int(fields[11]) + int(fields[12])) / _CLOCK_TICKS
    return kids, cpu


def _tree(root: int, kids: dict) -> list[int]:
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def _peak_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _kind(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read()
    except OSError:
        return None
    if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd or b"pyspark/daemon" in cmd:
        return "worker"
    # a standalone cluster's JVMs: an executor, started by a worker daemon for the run; the daemons
    if b"CoarseGrainedExecutorBackend" in cmd:
        return "executor"
    if b"org.apache.spark.deploy.master.Master" in cmd or b"org.apache.spark.deploy.worker.Worker" in cmd:
        return "daemon"
    if b"java" in cmd.split(b"\0", 1)[0]:
        return "jvm"
    if b"waldecode.cli" in cmd:
        return "driver"
    return None


def run_spark_measured(argv: list[str], *, env: dict | None = None, what: str | None = None,
                       daemons: list[int] | tuple = ()) -> Measurement:
    """Run a ``spark decode`` to completion; its wall time, the CPU time of its whole process tree, and
    the peak RSS of its Python workers (``rss_mb``), of the driver and of the JVM (``extra``, with
    the CPU seconds of each).  ``daemons``: the PIDs of a standalone cluster's master and workers, whose
    trees hold the run's executors and their Python workers (measured as the driver's tree is; the
    executors' JVMs and the daemons filed apart from the driver's JVM)."""
    peaks = {"worker": 0, "jvm": 0, "driver": 0, "executor": 0}
    kinds: dict = {}
    cpu_seen: dict = {}  # pid -> own CPU seconds at the last poll
    before: dict = {}  # pid -> own CPU seconds at the start, of the daemons
    earlier: set = set()  # processes under the daemons at the start: a run before this one's, still ending
    if daemons:
        kids, cpu = _processes()
        before = {pid: cpu.get(pid, 0.0) for pid in daemons}
        earlier = {pid for root in daemons for pid in _tree(root, kids)} - set(daemons)
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
        while proc.poll() is None:
            kids, cpu = _processes()
            for pid in [pid for root in (proc.pid, *daemons) for pid in _tree(root, kids) if pid not in earlier]:
                # asked at every poll, a process is filed by what it execs last: the JVM starts as spark-class's
                # shell, which execs java; a JVM starts its children (executors, Python workers) through
                # jspawnhelper, a "java" path that execs them; the last kind seen stands (a zombie has no command)
                kind = kinds[pid] = _kind(pid) or kinds.get(pid) or "other"
                if kind in peaks:
                    peaks[kind] = max(peaks[kind], _peak_kb(pid))
                if pid in cpu:
                    cpu_seen[pid] = cpu[pid] - before.get(pid, 0.0)
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip()[-2000:]
            raise BenchError(f"{what or argv[0]} exited with status {proc.returncode}: {tail or '(no stderr)'}")
    cpu_by_kind = {"worker": 0.0, "jvm": 0.0, "driver": 0.0, "other": 0.0}
    if daemons:
        cpu_by_kind.update(executor=0.0, daemon=0.0)
    for pid, seconds in cpu_seen.items():
        kind = kinds.get(pid, "other")
        cpu_by_kind[kind] = cpu_by_kind.get(kind, 0.0) + seconds
    m = Measurement(wall, peaks["worker"] / 1024, sum(cpu_by_kind.values()), "VmHWM of the Python workers (polled /proc)")
    m.extra = {"driver_rss_mb": peaks["driver"] / 1024, "jvm_rss_mb": peaks["jvm"] / 1024,
               **({"executor_rss_mb": peaks["executor"] / 1024,
                   "executors_seen": sum(1 for k in kinds.values() if k == "executor")} if daemons else {}),
               "workers_seen": sum(1 for k in kinds.values() if k == "worker"),
               **{f"{k}_cpu_s": round(v, 2) for k, v in cpu_by_kind.items()}}
    return m


#: the executor cores the breakdown predicts a 1 TiB archive's wall time for
PREDICTED_CORES = (16, 64, 256)
TIB = 1 << 40
#: ``breakdown``'s model in one line, printed under the breakdowns (``report.format_spark_breakdown``)
MODEL = ("1 TiB predicted = fixed + serial x S + parallel CPU x S / cores, S = 1 TiB / the WAL read; fixed: the "
         "context's start and the warm-up job that starts the Python workers; serial: the driver's range plan, "
         "catalog history, event-path pass and appends; parallel: the Python workers' CPU (phase 1, catalog pass, "
         "ranges) and phase 1's runs read on the driver while the context started, assumed to divide over the "
         "cores with storage keeping up; JVM CPU left out")


def breakdown(m: Measurement, timings: dict, wal_bytes: int) -> dict:
    """The serial and parallel parts of one ``spark decode`` run (``--timings``, and the CPU ``run_spark_measured``
    saw), and the wall time they predict for a 1 TiB archive on ``PREDICTED_CORES`` executor cores.

    The model: a fixed part (the context's start and the warm-up job that starts the Python workers:
    ``context``, ``warm_up``), a serial part that grows with the WAL (the driver's range plan, its catalog
    history and its appends of the part files), and the Python workers' CPU (phase 1, the catalog pass, the
    ranges), which grows with the WAL and divides over the cores (with at least as many ranges and runs as
    cores, and the storage keeping up: an assumption, not measured here).  Phase 1's runs read on the driver
    while the context started (``phase1_driver_cpu``), and the ranges the driver decoded then (``range_tasks``
    marked ``on_driver``), are work the executors do on a large archive: they count with the workers' CPU.  On a small archive the fixed part hides behind them, which the model,
    made for 1 TiB, does not credit.  The JVMs' CPU
    (the driver's; on a standalone cluster the executors' and the daemons') is left out: a few seconds,
    mostly their start.  The same model for a local run and a standalone cluster's: on a cluster the Python
    workers are found under the worker daemons (``run_spark_measured``'s ``daemons``)."""
    phases = timings.get("phases", {})
    fixed = phases.get("context", 0.0) + phases.get("warm_up", 0.0)
    serial = (phases.get("plan", 0.0) + phases.get("catalog_history", 0.0) + phases.get("appends", 0.0)
              + phases.get("driver_pass", 0.0))
    # the ranges the driver decoded while the context started are executors' work on a large archive too
    driver_ranges_cpu = sum(t.get("cpu", 0.0) for t in timings.get("range_tasks", ()) if t.get("on_driver"))
    parallel_cpu = ((m.extra or {}).get("worker_cpu_s", 0.0) + timings.get("phase1_driver_cpu", 0.0)
                    + driver_ranges_cpu)
    scale = TIB / wal_bytes if wal_bytes else 0.0
    cores = timings.get("cores") or 1
    return {"fixed_s": round(fixed, 2), "serial_s": round(serial, 2), "parallel_cpu_s": round(parallel_cpu, 2),
            "wal_bytes": wal_bytes, "method": timings.get("method"), "phases": phases, "cores": cores,
            # the model on the run itself (its WAL, its cores), beside its measured wall time: what the model
            # leaves out (the executors' and Python workers' start, scheduling, the driver's own start and
            # planning) is the difference
            "modelled_s": round(fixed + serial + parallel_cpu / cores, 2),
            "predicted_1tib_s": {str(n): round(fixed + serial * scale + parallel_cpu * scale / n, 1)
                                 for n in PREDICTED_CORES}}
