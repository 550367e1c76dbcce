"""A Spark standalone cluster on 127.0.0.1: one master and N workers, for runs past one machine.

``StandaloneCluster`` starts the daemons from the pyspark wheel's own ``spark-class`` (no Spark
distribution needed), each on free ports, and waits for the lines its log writes when it is up (the
master elected leader, each worker registered with it); it stops them by PID and checks that they,
and the executors they started, are gone.  It hands out the master's URL (``url``), the environment
a driver runs in to reach it (``env``) and the daemons' PIDs: the executors and their Python workers
are children of the worker daemons, not of the driver, so a measurement of a run's CPU looks under
them (``bench.sparkrun``).  ``waldecode bench --spark-standalone`` and the Spark lane's tests
(tests/spark/conftest.py) use it.

Example::

    with StandaloneCluster(workers=2, cores_per_worker=1, memory="1g") as cluster:
        subprocess.run(["waldecode", "spark", "decode", "--master", cluster.url, ...], env=cluster.env)
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..errors import Error, UsageError

MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
# what the daemons log (at INFO) once they serve: org.apache.spark.deploy.master.Master's
# "I have been elected leader! New state: ALIVE", and the Worker's after the master accepted it
MASTER_UP = "I have been elected leader"
WORKER_UP = "Successfully registered with master"
START_TIMEOUT = 90  # seconds for a daemon's line to appear (a JVM start on a loaded 2-core machine: 5-20 s)
STOP_TIMEOUT = 30  # seconds from SIGTERM to SIGKILL


class StandaloneError(Error):
    """A daemon of the standalone cluster did not start, or did not stop; names its log."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _children() -> dict:
    """parent pid -> [(child pid, its start time)] of every process (proc(5): fields 4 and 22 of stat)."""
    kids: dict = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        kids.setdefault(int(fields[1]), []).append((int(name), fields[19]))
    return kids


def _descendants(pids) -> list:
    """(pid, start time) of every process under ``pids``, not themselves."""
    kids = _children()
    out, todo = [], list(pids)
    while todo:
        for child in kids.get(todo.pop(), ()):
            out.append(child)
            todo.append(child[0])
    return out


def _alive(pid: int, start: bytes) -> bool:
    """Whether the process ``pid`` that started at ``start`` still runs (a zombie does not; nor does a
    new process given the same PID)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
    except OSError:
        return False
    return fields[19] == start and fields[0] != b"Z"


def _tail(path: Path, chars: int = 3000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError as e:
        return f"({e})"


class StandaloneCluster:
    """A master and ``workers`` workers on 127.0.0.1, each worker offering ``cores_per_worker`` cores and
    ``memory`` for executors (an executor asks for ``spark.executor.memory``: at most this).  Their logs,
    and the workers' directories (where executors write theirs), go to ``log_dir``; without one, to a
    temporary directory removed when the cluster stops cleanly (kept when a daemon failed: the error
    names its log)."""

    def __init__(self, workers: int = 2, cores_per_worker: int = 1, memory: str = "1g", log_dir=None,
                 timeout: float = START_TIMEOUT):
        if workers < 1 or cores_per_worker < 1:
            raise UsageError("a standalone cluster needs at least one worker with at least one core")
        self.workers, self.cores_per_worker, self.memory, self.timeout = workers, cores_per_worker, memory, timeout
        self._own_dir = log_dir is None
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.url: str | None = None
        self.env: dict = {}
        self.master_pid: int | None = None
        self.worker_pids: list[int] = []
        self._procs: list[tuple[str, subprocess.Popen, Path]] = []  # (name, daemon, its log)
        self._failed = False

    @property
    def pids(self) -> list[int]:
        """The daemons' PIDs: the master's, then the workers'."""
        return [p.pid for _, p, _ in self._procs]

    def __enter__(self) -> StandaloneCluster:
        self.start()
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.stop()
            return
        try:
            self.stop()
        except StandaloneError:
            pass  # the error leaving the block says more; the logs stay

    def start(self) -> None:
        try:
            import pyspark  # lazy: 0.15 s and the optional [spark] extra
        except ImportError:
            raise UsageError("pyspark is not installed: pip install 'waldecode[spark]'") from None
        spark_class = os.path.join(os.path.dirname(pyspark.__file__), "bin", "spark-class")
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="waldecode-standalone-"))
        self.log_dir.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, SPARK_LOCAL_IP="127.0.0.1", PYSPARK_PYTHON=sys.executable)
        # the daemons log at INFO (what start() waits for), not as waldecode's contexts do (an empty
        # SPARK_CONF_DIR and errors only); a driver given this environment sets its own (spark.context)
        env.pop("SPARK_CONF_DIR", None)
        self.env = env
        port = _free_port()
        self.url = f"spark://127.0.0.1:{port}"
        try:
            master = self._spawn("master", [spark_class, MASTER_CLASS, "--host", "127.0.0.1", "--port", str(port),
                                            "--webui-port", str(_free_port())])
            self.master_pid = master.pid
            self._wait_for("master", MASTER_UP)
            for i in range(1, self.workers + 1):
                work = self.log_dir / f"worker-{i}"  # its executors' directories (else under the pyspark wheel)
                self.worker_pids.append(self._spawn(f"worker-{i}", [
                    spark_class, WORKER_CLASS, "--host", "127.0.0.1", "--port", str(_free_port()),
                    "--webui-port", str(_free_port()), "--cores", str(self.cores_per_worker),
                    "--memory", self.memory, "--work-dir", str(work), self.url]).pid)
            # started together, waited for in turn: their JVMs start meanwhile
            for i in range(1, self.workers + 1):
                self._wait_for(f"worker-{i}", WORKER_UP)
        except BaseException:
            self._failed = True
            try:
                self.stop()
            except StandaloneError:
                pass  # the start's error says more; the logs stay
            raise

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = self.log_dir / f"{name}.log"
        with open(log, "wb") as f:
            proc = subprocess.Popen(argv, env=self.env, stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        self._procs.append((name, proc, log))
        return proc

    def _wait_for(self, name: str, text: str) -> None:
        _, proc, log = next(d for d in self._procs if d[0] == name)
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if text in log.read_text(errors="replace"):
                return
            if proc.poll() is not None:
                raise StandaloneError(f"the standalone {name} exited with status {proc.returncode} before "
                                      f"logging {text!r}; its log, {log}, ends:\n{_tail(log)}")
            time.sleep(0.5)
        raise StandaloneError(f"the standalone {name} did not log {text!r} within {self.timeout:.0f} s; its log, "
                              f"{log}, ends:\n{_tail(log)}")

    def stop(self) -> None:
        """SIGTERM to the workers, then the master (a worker kills its executors as it stops), SIGKILL to
        one still running after ``STOP_TIMEOUT``; then the processes that were under them (executors,
        their Python workers) get as long to go, and are killed by PID if they have not.  Raises
        ``StandaloneError`` if any process is still running after that."""
        if not self._procs:
            return
        under = _descendants(self.pids)
        for _, proc, _ in reversed(self._procs):
            if proc.poll() is None:
                proc.terminate()
        for _, proc, _ in reversed(self._procs):
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        deadline = time.monotonic() + STOP_TIMEOUT
        left = [p for p in under if _alive(*p)]
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = [p for p in left if _alive(*p)]
        if left:
            for pid, _ in left:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            time.sleep(0.2)
            left = [p for p in left if _alive(*p)]
        daemons = [name for name, proc, _ in self._procs if proc.poll() is None]
        self._procs = []
        if daemons or left:
            self._failed = True
            still = ", ".join(daemons + [f"PID {pid}" for pid, _ in left])
            raise StandaloneError(f"still running after stopping the standalone cluster: {still} "
                                  f"(logs in {self.log_dir})")
        if self._own_dir and not self._failed:
            shutil.rmtree(self.log_dir, ignore_errors=True)
