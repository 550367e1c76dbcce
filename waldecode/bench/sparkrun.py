"""``waldecode spark decode`` in the benchmark: its command line, and the memory of its Python workers.

A Spark run is a process tree: the ``waldecode`` driver (Python), the JVM it starts, and the
JVM's Python workers (``pyspark.daemon`` and the workers it forks), which run phase 1 and
phase 2.  The bound the Spark path promises is on the workers, so ``run_spark_measured``
polls ``/proc`` while the run lasts, and reads each worker's ``VmHWM`` (its own peak
RSS, kept by the kernel, so a peak between two polls is not missed); the driver's and
the JVM's peaks are reported beside it.  A worker that starts and ends between two polls
(10 per second) is not seen: phase tasks last longer.

CPU time is the tree's too: the JVM and its workers are not waited for by the driver, so
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

POLL_SECONDS = 0.1
SPARK_MEMORY_DEFAULT = None  # Spark's own defaults (1g driver in local mode)


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
    if b"java" in cmd.split(b"\0", 1)[0]:
        return "jvm"
    if b"waldecode.cli" in cmd:
        return "driver"
    return None


def run_spark_measured(argv: list[str], *, env: dict | None = None, what: str | None = None) -> Measurement:
    """Run a ``spark decode`` to completion; its wall time, the CPU time of its whole process tree, and
    the peak RSS of its Python workers (``rss_mb``), of the driver and of the JVM (``extra``, with
    the CPU seconds of each)."""
    peaks = {"worker": 0, "jvm": 0, "driver": 0}
    kinds: dict = {}
    cpu_seen: dict = {}  # pid -> own CPU seconds at the last poll
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, env=env)
        while proc.poll() is None:
            kids, cpu = _processes()
            for pid in _tree(proc.pid, kids):
                kind = kinds.get(pid)
                if kind is None or kind == "other":
                    # asked again while unknown: the JVM starts as spark-class's shell, which execs java
                    kind = kinds[pid] = _kind(pid) or "other"
                if kind in peaks:
                    peaks[kind] = max(peaks[kind], _peak_kb(pid))
                if pid in cpu:
                    cpu_seen[pid] = cpu[pid]
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            err.seek(0)
            tail = err.read().decode(errors="replace").strip()[-2000:]
            raise BenchError(f"{what or argv[0]} exited with status {proc.returncode}: {tail or '(no stderr)'}")
    cpu_by_kind = {"worker": 0.0, "jvm": 0.0, "driver": 0.0, "other": 0.0}
    for pid, seconds in cpu_seen.items():
        cpu_by_kind[kinds.get(pid, "other")] += seconds
    m = Measurement(wall, peaks["worker"] / 1024, sum(cpu_by_kind.values()), "VmHWM of the Python workers (polled /proc)")
    m.extra = {"driver_rss_mb": peaks["driver"] / 1024, "jvm_rss_mb": peaks["jvm"] / 1024,
               "workers_seen": sum(1 for k in kinds.values() if k == "worker"),
               **{f"{k}_cpu_s": round(v, 2) for k, v in cpu_by_kind.items()}}
    return m


#: the executor cores the breakdown predicts a 1 TiB archive's wall time for
PREDICTED_CORES = (16, 64, 256)
TIB = 1 << 40


def breakdown(m: Measurement, timings: dict, wal_bytes: int) -> dict:
    """The serial and parallel parts of one ``spark decode`` run (``--timings``, and the CPU ``run_spark_measured``
    saw), and the wall time they predict for a 1 TiB archive on ``PREDICTED_CORES`` executor cores.

    The model: a fixed part (the context's start: ``context``), a serial part that grows with the WAL (the
    driver's catalog history and its appends of the part files), and the Python workers' CPU (phase 1, the
    catalog pass, the ranges), which grows with the WAL and divides over the cores (with at least as many
    ranges and runs as cores, and the storage keeping up: an assumption, not measured here).  The JVM's CPU
    is left out (a few seconds, mostly its start)."""
    phases = timings.get("phases", {})
    fixed = phases.get("context", 0.0)
    serial = phases.get("catalog_history", 0.0) + phases.get("appends", 0.0) + phases.get("driver_pass", 0.0)
    parallel_cpu = (m.extra or {}).get("worker_cpu_s", 0.0)
    scale = TIB / wal_bytes if wal_bytes else 0.0
    return {"fixed_s": round(fixed, 2), "serial_s": round(serial, 2), "parallel_cpu_s": round(parallel_cpu, 2),
            "wal_bytes": wal_bytes, "method": timings.get("method"), "phases": phases,
            "predicted_1tib_s": {str(n): round(fixed + serial * scale + parallel_cpu * scale / n, 1)
                                 for n in PREDICTED_CORES}}
