"""The Spark run's CPU time is its whole process tree's, children that nobody waits for included."""

from __future__ import annotations

import sys
import textwrap

from waldecode.bench.sparkrun import run_spark_measured

# A parent that forks a child burning CPU and exits without waiting for it: the kernel's children
# totals (os.times) never see the child's CPU, as they never saw the JVM's and its workers'
_ORPHANING_PARENT = textwrap.dedent("""
    import os, time
    child = os.fork()
    if child == 0:
        t = time.process_time()
        while time.process_time() - t < 0.6:
            pass
        os._exit(0)
    # until the child is a zombie (ended, not reaped), then long enough for a few polls
    while open(f"/proc/{child}/stat", "rb").read().rsplit(b")", 1)[1].split()[0] != b"Z":
        time.sleep(0.05)
    time.sleep(0.5)
""")


def test_cpu_counts_children_that_are_not_waited_for():
    m = run_spark_measured([sys.executable, "-c", _ORPHANING_PARENT], what="orphaning parent")
    assert m.cpu_seconds >= 0.5
    assert m.extra["other_cpu_s"] >= 0.5  # neither driver, JVM nor worker by its command line


def test_a_process_is_filed_by_what_it_execs():
    # spark-class is a shell that execs java: first seen as a shell, the process is the JVM after
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    # the worker's mark only in the exec'd command line, not in the shell's
    argv = ["sh", "-c", f"sleep 0.3; m=pyspark; exec {sys.executable} -c '{burn}' $m.daemon"]
    m = run_spark_measured(argv, what="shell that execs")
    assert m.extra["worker_cpu_s"] >= 0.4


def test_breakdown_predicts_by_its_stated_model():
    """Fixed + serial x scale + parallel CPU x scale / cores, scale = 1 TiB / the WAL read."""
    from waldecode.bench.measure import Measurement
    from waldecode.bench.sparkrun import TIB, breakdown

    m = Measurement(10.0, 100.0, 30.0, extra={"worker_cpu_s": 16.0})
    timings = {"method": "ranges", "phases": {"context": 4.0, "phase1": 1.0, "catalog_pass": 0.5,
                                              "catalog_history": 0.25, "ranges": 5.0, "appends": 0.75}}
    b = breakdown(m, timings, TIB // 1024)
    assert (b["fixed_s"], b["serial_s"], b["parallel_cpu_s"]) == (4.0, 1.0, 16.0)
    assert b["predicted_1tib_s"] == {"16": 4.0 + 1024 + 1024, "64": 4.0 + 1024 + 256, "256": 4.0 + 1024 + 64}
    # the warm-up job is fixed, the range plan serial, and phase 1's runs read on the driver while the context
    # started are work the executors do on a large archive
    timings["phases"].update(warm_up=2.0, plan=0.5)
    timings["phase1_driver_cpu"] = 8.0
    b = breakdown(m, timings, TIB // 1024)
    assert (b["fixed_s"], b["serial_s"], b["parallel_cpu_s"]) == (6.0, 1.5, 24.0)
    assert b["predicted_1tib_s"]["16"] == 6.0 + 1.5 * 1024 + 24.0 * 1024 / 16
