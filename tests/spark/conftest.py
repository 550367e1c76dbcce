"""The Spark lane's one SparkSession (session start and the first data-source job cost seconds each:
docs/spark-decode.md), on local[2] with this Python and this implementation; and its one standalone
cluster on 127.0.0.1 (``standalone``), started at the first test that decodes through spark://."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    from waldecode.spark.context import spark_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2",
                                         "spark.sql.python.filterPushdown.enabled": "true"},
                            app_name="waldecode-tests")
    yield session
    session.stop()


# -- a standalone cluster ------------------------------------------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for(path, text, proc, timeout=90):
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if text in path.read_text(errors="replace"):
            return
        if proc.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(f"{text!r} not seen in {path}:\n{path.read_text(errors='replace')[-3000:]}")


class Standalone:
    """A running standalone cluster: its master's URL and the environment its drivers run in."""

    def __init__(self, url: str, env: dict):
        self.url, self.env = url, env


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """A master and one worker (2 cores, 1 GB for executors: the documents' spark.executor.memory=1g fits)
    on 127.0.0.1 (free ports, spark-class), started once for the tests that decode through spark://;
    both daemons stopped by PID, and checked to be gone."""
    pyspark = pytest.importorskip("pyspark")
    import subprocess

    spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
    env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_CONF_DIR", None)  # the daemons log at INFO (what is waited for below), not as our sessions do
    port, wport = _free_port(), _free_port()
    logs_dir = tmp_path_factory.mktemp("standalone")
    logs = {n: logs_dir / f"{n}.log" for n in ("master", "worker")}
    procs = []
    try:
        with open(logs["master"], "wb") as log:
            procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                                           "--port", str(port), "--webui-port", str(_free_port())],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
        _wait_for(logs["master"], "I have been elected leader", procs[0])
        with open(logs["worker"], "wb") as log:
            procs.append(subprocess.Popen([spark_class, "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1",
                                           "--port", str(wport), "--webui-port", str(_free_port()), "--cores", "2",
                                           "--memory", "1g", f"spark://127.0.0.1:{port}"],
                                          env=env, stdout=log, stderr=subprocess.STDOUT))
        _wait_for(logs["worker"], "Successfully registered with master", procs[1])
        yield Standalone(f"spark://127.0.0.1:{port}", env)
    finally:
        for proc in reversed(procs):
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    assert all(p.poll() is not None for p in procs)
