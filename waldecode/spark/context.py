"""Spark contexts and sessions as waldecode runs them, and Spark's failures as one line.

Owns what ``spark decode``, the ``pgwal`` source's tests and the class-data preparation share: a
quiet context with the executors on this Python and this implementation (``spark_context``), a SQL
session on it (``spark_session``), stopping one without pyspark's idle wait (``stop_context``), and
a Spark or Py4J failure told as ``SparkJobError`` (``spark_error``).  The command line is on top
(``cli.spark``); nothing here parses arguments.
"""

from __future__ import annotations

import importlib
import os
import sys
import threading
import time
import warnings

from .. import _impl
from ..errors import SparkJobError, UsageError
from . import classdata, register


def spark_context(master: str, confs: dict | None = None, app_name: str = "waldecode"):
    """A SparkContext for waldecode: quiet (errors only, no console progress, no UI unless asked), the
    executors on this Python and this implementation unless ``confs`` say otherwise.  The range path
    of ``spark decode`` needs no more (a SQL session took 1.9 s more to start here: ``spark_session``
    makes one on this context when asked).  An active context is returned as it is, marked shared."""
    try:
        from pyspark import SparkConf, SparkContext  # lazy: 0.15 s and the optional [spark] extra
    except ImportError:
        raise UsageError("pyspark is not installed: pip install 'waldecode[spark]'") from None

    active = SparkContext._active_spark_context
    if active is not None:
        active._waldecode_shared = True
        return active
    confs = dict(confs or {})
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if "SPARK_CONF_DIR" not in os.environ:
        os.environ["SPARK_CONF_DIR"] = classdata.conf_dir()  # empty (the log settings are a -D option)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    defaults = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.pyspark.python": os.environ["PYSPARK_PYTHON"],
        "spark.executorEnv.WALDECODE_IMPL": _impl.IMPL,
        "spark.executorEnv.PYTHONWARNINGS": "ignore::FutureWarning",
        # Python workers run "python -m pyspark.daemon", which puts their working directory first on
        # sys.path: a waldecode/ source folder there would be imported instead of the installed package
        "spark.executorEnv.PYTHONSAFEPATH": "1",
        "spark.sql.execution.arrow.maxRecordsPerBatch": "4096",
        # pyspark.daemon with pyspark's cached bytecode instead of Spark's zip: the first job 1 s sooner
        "spark.python.daemon.module": "waldecode.spark.pydaemon",
    }
    conf = SparkConf().setMaster(master).setAppName(app_name)
    for key, value in {**defaults, **confs}.items():
        conf.set(key, value)
    conf.set("spark.driver.extraJavaOptions", classdata.driver_options(master, confs))
    _numpy_checks_without_import()
    sc = SparkContext.getOrCreate(conf)
    sc.setLogLevel("ERROR")
    return sc


def _numpy_checks_without_import() -> None:
    """pyspark's Py4J input converters for NumPy arrays and scalars (``pyspark.sql.types``) ask, of every
    argument sent to the JVM, whether it is one, and to know they import ``pyspark.testing.utils``, which
    imports pandas and NumPy: 0.55 s at the context's start, in the driver's thread that phase 1 shares.
    No object is a NumPy array or scalar while NumPy is not imported, so the check says no without
    importing it then, and asks pyspark's once it is."""
    from py4j import protocol  # lazy: py4j comes with the optional [spark] extra

    for converter in protocol.INPUT_CONVERTER:
        if type(converter).__name__ in ("NumpyArrayConverter", "NumpyScalarConverter") and \
                not getattr(converter, "_waldecode_lazy", False):
            ask = converter.can_convert
            converter.can_convert = lambda obj, ask=ask: "numpy" in sys.modules and ask(obj)
            converter._waldecode_lazy = True


def local_slots(master: str) -> int | None:
    """The cores a ``local``, ``local[N]``, ``local[*]`` or ``local[N,F]`` master gives its executors (what
    its context's ``defaultParallelism`` will be), known before the context starts; None for other masters."""
    if master == "local":
        return 1
    if not (master.startswith("local[") and master.endswith("]")):
        return None
    n = master[6:-1].split(",")[0].strip()
    if n == "*":
        return os.cpu_count() or 1
    return int(n) if n.isdigit() and int(n) > 0 else None


def _warm_worker(_part):
    """A warm-up task: the Python worker started, with the modules the range path's tasks import."""
    importlib.import_module("waldecode.spark.job")  # the import is the work
    return []


class PendingContext:
    """``spark_context(master, confs)`` started in a thread, then a warm-up job run on it that starts the
    Python workers (the first job's cost: 0.5-0.6 s here, 2 s before ``pydaemon``): the driver reads
    meanwhile (``spark decode``'s phase 1 runs on the driver until the context is ``ready()``,
    ``SparkExecutor.spans``).  ``get()`` waits
    for the context and raises what starting it raised; ``context_seconds`` and ``warm_seconds`` say how
    long each took."""

    def __init__(self, master: str, confs: dict | None = None, warm: bool = True):
        self.master, self.confs = master, dict(confs or {})
        self.context_seconds = self.warm_seconds = None
        self._sc = None
        self._error: BaseException | None = None
        self._started = threading.Event()  # the context is up (or failed)
        self._done = threading.Event()  # ... and warmed up
        self._thread = threading.Thread(target=self._run, args=(warm,), name="waldecode-spark-start", daemon=True)
        self._thread.start()

    def _run(self, warm: bool) -> None:
        t = time.perf_counter()
        try:
            self._sc = spark_context(self.master, self.confs)
        except BaseException as e:  # re-raised by get() in the driver's thread
            self._error = e
            self._started.set()
            self._done.set()
            return
        self.context_seconds = time.perf_counter() - t
        self._started.set()
        try:
            if warm:
                t = time.perf_counter()
                slots = max(1, self._sc.defaultParallelism)
                self._sc.parallelize(range(slots), slots).mapPartitions(_warm_worker).collect()
                self.warm_seconds = time.perf_counter() - t
        except BaseException:  # a context stopped meanwhile, or workers that fail: the real job says why
            pass
        finally:
            self._done.set()

    def ready(self) -> bool:
        """Whether the context is up and its workers warmed (or starting it failed: ``get`` says how)."""
        return self._done.is_set()

    def get(self, warmed: bool = False):
        """The SparkContext, once started (``warmed``: and its warm-up job done, so that a job submitted
        next does not race it for the cores)."""
        self._started.wait()
        if warmed:
            self._done.wait()
        if self._error is not None:
            raise self._error
        return self._sc

    def stop(self) -> None:
        """Stop the context once it is up (``stop_context``), whatever the driver did meanwhile."""
        self._started.wait()
        if self._sc is not None and not getattr(self._sc, "_waldecode_shared", False):
            self._done.wait()
            stop_context(self._sc)


def spark_session(master: str, confs: dict | None = None, app_name: str = "waldecode"):
    """A SparkSession on ``spark_context``'s context (an active session is returned as it is, marked shared)."""
    from pyspark.sql import SparkSession  # lazy: 0.15 s and the optional [spark] extra

    active = SparkSession.getActiveSession()
    if active is not None:
        active._waldecode_shared = True
        return active
    sc = spark_context(master, confs, app_name)
    spark = SparkSession(sc)
    # Workers do not import from their working directory (PYTHONSAFEPATH): Spark's own lookup of
    # pyspark_* modules misses an editable install's, so the session registers the source itself
    register(spark)
    if getattr(sc, "_waldecode_shared", False):
        spark._waldecode_shared = True
    return spark


def active_session():
    """The SparkSession this process already has (an in-process caller's), else None."""
    try:
        from pyspark.sql import SparkSession  # lazy: 0.15 s and the optional [spark] extra; None without it
    except ImportError:
        return None
    return SparkSession.getActiveSession()


def spark_error(e: BaseException) -> SparkJobError | None:
    """A Spark/Py4J failure as one line (None for other exceptions)."""
    name = type(e).__module__ or ""
    if not (name.startswith("pyspark") or name.startswith("py4j")):
        return None
    text = str(e).strip()
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    # A Python exception on an executor: its last line names it
    for ln in reversed(lines):
        if ln.startswith(("ImportError", "ModuleNotFoundError")) or "Error:" in ln:
            return SparkJobError(f"Spark job failed: {ln}")
    return SparkJobError(f"Spark job failed: {lines[0] if lines else type(e).__name__}")


def stop_context(spark) -> None:
    """``spark.stop()`` for a process about to end, less its wait for pyspark's accumulator server:
    the server's handler polls its socket once a second (accumulators.UpdateRequestHandler) and stop()
    waits for that poll to return, 0.9 s of every run measured here.  The JVM's side stops in full;
    the server's thread is a daemon and goes with the process."""
    sc = getattr(spark, "sparkContext", spark)
    server = getattr(sc, "_accumulatorServer", None)
    if server is not None and hasattr(server, "server_shutdown"):
        sc._accumulatorServer = None
        server.server_shutdown = True  # its handler leaves at its next poll
    spark.stop()
