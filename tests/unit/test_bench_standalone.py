"""``bench --spark-standalone`` without Spark: a run's CPU found under a cluster's daemons (counted from the
run's start), the row's target and report, and ``spark.standalone``'s start and stop failures told by log."""

from __future__ import annotations

import sys
import textwrap
import time

import pytest

from waldecode.bench import report, runner, sparkrun
from waldecode.bench.measure import Measurement
from waldecode.spark import standalone as S

# A stand-in worker daemon: CPU of its own before the run (not the run's) and an "executor" of a previous
# run that burns CPU during this one (not this run's either), then, when the run's driver creates GO, an
# "executor" child that burns CPU and starts a "Python worker" that does too.  Scripts in
# files, so that each command line carries only its own mark (what sparkrun files processes by).
_SCRIPTS = {
    "burn.py": """
        import time
        def burn(s):
            t = time.process_time()
            while time.process_time() - t < s:
                pass
    """,
    "daemon.py": """
        import os, subprocess, sys, time
        from burn import burn
        burn(1.5)
        go, ready, done = sys.argv[1:4]
        here = os.path.dirname(os.path.abspath(__file__))
        # a previous run's executor, still ending when the run starts: not the run's
        subprocess.Popen([sys.executable, os.path.join(here, "leftover.py"), go,
                          "org.apache.spark.executor.CoarseGrainedExecutorBackend"])
        open(ready, "w").close()
        while not os.path.exists(go):
            time.sleep(0.02)
        subprocess.run([sys.executable, os.path.join(here, "executor.py"),
                        "org.apache.spark.executor.CoarseGrainedExecutorBackend"])
        open(done, "w").close()
        time.sleep(60)
    """,
    "leftover.py": """
        import os, sys, time
        from burn import burn
        while not os.path.exists(sys.argv[1]):
            time.sleep(0.02)
        burn(0.6)
    """,
    "executor.py": """
        import os, subprocess, sys
        from burn import burn
        burn(0.6)
        subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "worker.py"),
                        "-m", "pyspark.daemon"])
    """,
    "worker.py": """
        from burn import burn
        burn(0.6)
    """,
}


def test_cpu_under_the_daemons_counts_from_the_runs_start(tmp_path):
    import subprocess

    for name, text in _SCRIPTS.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    go, ready, done = (tmp_path / n for n in ("go", "ready", "done"))
    daemon = subprocess.Popen([sys.executable, str(tmp_path / "daemon.py"), str(go), str(ready), str(done),
                               "org.apache.spark.deploy.worker.Worker"])
    try:
        while not ready.exists():
            assert daemon.poll() is None
            time.sleep(0.05)
        driver = (f"import os, time\nopen({str(go)!r}, 'w').close()\n"
                  f"while not os.path.exists({str(done)!r}): time.sleep(0.05)\ntime.sleep(0.3)")
        m = sparkrun.run_spark_measured([sys.executable, "-c", driver], what="driver", daemons=[daemon.pid])
    finally:
        daemon.kill()
        daemon.wait()
    e = m.extra
    assert e["executors_seen"] == 1 and e["workers_seen"] == 1, e  # not the leftover
    assert 0.5 <= e["executor_cpu_s"] < 1.0 and e["worker_cpu_s"] >= 0.5, e
    # the daemon's 1.5 s before the run are not the run's
    assert e["daemon_cpu_s"] < 0.5, e
    assert m.cpu_seconds < 2.5, m


def test_a_child_started_through_jspawnhelper_is_filed_by_what_it_execs(tmp_path):
    """A JVM starts its children through jspawnhelper (a path under the JDK: filed as a JVM) which execs
    the child: an executor's Python worker seen first as jspawnhelper is a Python worker."""
    burn = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.6: pass"
    script = tmp_path / "child.sh"
    script.write_text(f"sleep 0.3\nm=pyspark\nexec {sys.executable} -c '{burn}' -m $m.daemon\n")
    argv = ["bash", "-c", f"exec -a /usr/lib/jvm/java-17-openjdk-amd64/lib/jspawnhelper sh {script}"]
    m = sparkrun.run_spark_measured(argv, what="jspawnhelper")
    assert m.extra["worker_cpu_s"] >= 0.4 and m.extra["jvm_cpu_s"] < 0.2, m.extra


def test_a_local_run_has_no_cluster_columns():
    m = sparkrun.run_spark_measured([sys.executable, "-c", "pass"], what="python")
    assert "executor_cpu_s" not in m.extra and "daemon_cpu_s" not in m.extra and "executors_seen" not in m.extra


class _Cluster:
    """What the runner asks of a ``StandaloneCluster``."""

    url, env, pids = "spark://127.0.0.1:7077", {"SPARK_LOCAL_IP": "127.0.0.1"}, [7, 8, 9]
    workers, cores_per_worker = 2, 1


def test_the_standalone_row_runs_on_the_cluster():
    tools = runner._tools(["cython"], True, _Cluster())
    assert [t.key for t in tools[-3:]] == ["spark_decode_local1", "spark_decode_local2", "spark_decode_standalone_2x1"]
    row = tools[-1]
    assert (row.label, row.reference) == ("waldecode spark decode standalone 2x1 [cython]", "decode_cython")
    master, env, daemons, memory = runner._spark_target(row, _Cluster(), None)
    assert (master, daemons, memory) == (_Cluster.url, [7, 8, 9], sparkrun.STANDALONE_MEMORY)
    assert env == {"SPARK_LOCAL_IP": "127.0.0.1", "WALDECODE_IMPL": "cython"}
    assert runner._spark_target(row, _Cluster(), "512m")[3] == "512m"
    master, env, daemons, memory = runner._spark_target(tools[-2], None, None)
    assert (master, daemons, memory, env["WALDECODE_IMPL"]) == ("local[2]", [], None, "cython")
    assert runner._tools(["cython"], True, None)[-1].key == "spark_decode_local2"


def test_the_breakdown_says_what_the_model_gives_for_the_run_and_the_model():
    m = Measurement(30.0, 100.0, 40.0, extra={"worker_cpu_s": 8.0})
    timings = {"method": "ranges", "cores": 2, "phases": {"context": 6.0, "phase1": 9.0, "ranges": 3.0,
                                                          "appends": 0.5}}
    b = sparkrun.breakdown(m, timings, sparkrun.TIB // 4096)
    assert (b["cores"], b["modelled_s"]) == (2, 6.0 + 0.5 + 8.0 / 2)
    row = {"key": "spark_decode_standalone_2x1", "label": "waldecode spark decode standalone 2x1 [cython]",
           "median_seconds": 30.0, "runs": [{"seconds": 30.0, "phases": b}]}
    text = report.format_spark_breakdown([{"name": "pgbench", "tools": [row]}])
    first, model = text.splitlines()
    assert first.startswith("waldecode spark decode standalone 2x1 [cython]: 30.00 s wall; fixed 6.00 s")
    assert "the model gives 10.50 s on this WAL and 2 cores" in first
    assert f"{6.0 + 0.5 * 4096 + 8.0 * 4096 / 256:,.0f} s on 256 cores" in first
    assert model == f"model: {sparkrun.MODEL}"


# -- spark.standalone's daemons, without Spark -----------------------------------------------------


def test_a_daemon_that_exits_is_an_error_naming_its_log(tmp_path):
    cluster = S.StandaloneCluster(log_dir=tmp_path)
    cluster._spawn("master", ["sh", "-c", "echo 'JAVA_HOME is not set'; exit 3"])
    with pytest.raises(S.StandaloneError, match=r"the standalone master exited with status 3 before logging "
                                                r"'I have been elected leader'; its log, .*master\.log, ends:\n"
                                                r"JAVA_HOME is not set"):
        cluster._wait_for("master", S.MASTER_UP)
    cluster.stop()
    assert (tmp_path / "master.log").exists()  # the caller's directory stays


def test_a_daemon_that_never_says_it_is_up_times_out_and_is_stopped(tmp_path):
    cluster = S.StandaloneCluster(log_dir=tmp_path, timeout=1)
    proc = cluster._spawn("worker-1", ["sh", "-c", "echo starting; exec sleep 60"])
    with pytest.raises(S.StandaloneError, match=r"the standalone worker-1 did not log 'Successfully registered "
                                                r"with master' within 1 s; its log, .*worker-1\.log, ends:\nstarting"):
        cluster._wait_for("worker-1", S.WORKER_UP)
    cluster.stop()
    assert proc.poll() is not None and cluster.pids == []


def test_stop_ends_what_the_daemons_left_running(tmp_path, monkeypatch):
    """An executor that outlives its worker daemon (SIGTERM reaches the daemon only) is killed by its PID."""
    monkeypatch.setattr(S, "STOP_TIMEOUT", 1)
    cluster = S.StandaloneCluster(log_dir=tmp_path)
    child = tmp_path / "child"
    cluster._spawn("worker-1", ["sh", "-c", f"sleep 60 & echo $! > {child}.tmp; mv {child}.tmp {child}; wait"])
    for _ in range(200):
        if child.exists():
            break
        time.sleep(0.05)
    pid = int(child.read_text())
    assert _state(pid) not in ("gone", "Z")
    cluster.stop()
    assert _state(pid) in ("gone", "Z")


def test_an_own_log_directory_goes_with_a_clean_stop():
    import tempfile
    from pathlib import Path

    cluster = S.StandaloneCluster()  # no log_dir: start() makes a temporary one; made here, as start() would
    cluster.log_dir = Path(tempfile.mkdtemp(prefix="waldecode-standalone-"))
    cluster._spawn("master", ["sleep", "60"])
    cluster.stop()
    assert not cluster.log_dir.exists()


def _stat(pid: int) -> list:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()


def _state(pid: int) -> str:
    try:
        return _stat(pid)[0].decode()
    except OSError:
        return "gone"
