"""``waldecode spark prepare``: the class-data archive of Spark's JVM (``spark/classdata.py``).

Each test runs in child processes with its own ``XDG_CACHE_HOME``: the archive is written
there, the JVM of a local context started afterwards maps it (read from ``/proc/PID/maps`` of
the gateway's JVM), ``spark decode`` through it prints decode's bytes, and an archive that is
not one (a stale or damaged file) is passed over: the context runs without it and the JVM
prints nothing on stdout, where the decoded output goes.
"""

from __future__ import annotations

import glob
import os
import subprocess
import sys

import pytest

from test_spark import _fixture, _slot, single_process
from waldecode import _impl

pytestmark = [pytest.mark.spark, pytest.mark.slow]

# A local context's JVM: does it map the archive, and what reaches stdout (only the job's sum)?
_PROBE = """
import sys
from pyspark import SparkContext
from waldecode.spark import classdata
from waldecode.spark.context import spark_context, stop_context
sc = spark_context("local[1]")
maps = open(f"/proc/{SparkContext._gateway.proc.pid}/maps").read()
print(sum(sc.parallelize(range(10), 2).collect()))
sys.stderr.write("archive mapped\\n" if classdata.archive_path() in maps else "archive not mapped\\n")
stop_context(sc)
"""


@pytest.fixture
def cache_env(tmp_path):
    pytest.importorskip("pyspark")
    return dict(os.environ, XDG_CACHE_HOME=str(tmp_path / "cache"), PYSPARK_PYTHON=sys.executable)


def _probe(env) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, timeout=300)


def test_prepare_writes_the_archive_a_local_context_maps(cache_env, tmp_path):
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", "spark", "prepare"], env=cache_env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    archives = glob.glob(str(tmp_path / "cache" / "waldecode" / "spark-classes-*.jsa"))
    assert len(archives) == 1 and os.path.getsize(archives[0]) > 1 << 20, archives
    assert archives[0] in run.stderr and run.stdout == ""
    assert not glob.glob(str(tmp_path / "cache" / "waldecode" / "*.tmp"))

    probe = _probe(cache_env)
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert probe.stdout == "45\n"
    assert "archive mapped" in probe.stderr

    # spark decode on it: decode's bytes
    fx = _fixture("pg15-off/savepoints")
    meta = fx.meta["decoding_options"]["test_decoding.jsonl"]
    slot = _slot(fx, meta)
    out = tmp_path / "spark.out"
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", "spark", "decode", "--master", "local[1]",
                          "--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"],
                          "--end-lsn", fx.meta["end_lsn"], "--output", str(out), str(fx.wal_dir)],
                         env=dict(cache_env, WALDECODE_IMPL=_impl.IMPL), capture_output=True, timeout=600)
    assert run.returncode == 0, run.stderr.decode(errors="replace")[-3000:]
    assert out.read_bytes() == single_process(fx, meta)


def test_a_damaged_archive_is_passed_over(cache_env):
    from waldecode.spark import classdata

    os.environ["XDG_CACHE_HOME"], saved = cache_env["XDG_CACHE_HOME"], os.environ.get("XDG_CACHE_HOME")
    try:
        path = classdata.archive_path()
    finally:
        if saved is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = saved
    os.makedirs(os.path.dirname(path))
    with open(path, "wb") as f:
        f.write(b"not a class-data archive\n" * 4096)
    probe = _probe(cache_env)
    assert probe.returncode == 0, probe.stderr[-3000:]
    assert probe.stdout == "45\n"  # the JVM's complaint, if any, is not on stdout
    assert "archive not mapped" in probe.stderr


def test_workers_import_the_installed_pyspark(spark):
    """The lane's context runs ``spark.pydaemon``: its Python workers import pyspark from the installed
    package, not from Spark's zip (which they compiled from source in every new worker)."""
    files = spark.sparkContext.parallelize(range(2), 2).mapPartitions(
        lambda _it: [__import__("pyspark").__file__]).collect()
    assert files and not any(".zip" in f for f in files), files


_NUMPY_PROBE = """
import sys
from py4j import protocol
from waldecode.spark.context import spark_context, stop_context
sc = spark_context("local[1]")
assert sc.parallelize(range(10), 2).sum() == 45
print("pandas" in sys.modules, "numpy" in sys.modules)
import numpy as np
arrays = [c for c in protocol.INPUT_CONVERTER if type(c).__name__ == "NumpyArrayConverter"]
print(len(arrays), all(c.can_convert(np.array([1, 2])) for c in arrays), any(c.can_convert([1, 2]) for c in arrays))
stop_context(sc)
"""


def test_the_context_starts_without_pandas_and_numpy_converters_still_work():
    """pyspark's NumPy input converters import pandas to look at each argument sent to the JVM; waldecode's
    context asks them only once NumPy is imported: none of the two is imported by starting it and running a
    job, and afterwards a NumPy array is still recognised (and a list is not)."""
    run = subprocess.run([sys.executable, "-c", _NUMPY_PROBE], capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, PYSPARK_PYTHON=sys.executable))
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["False", "False", "1", "True", "False"], run.stdout
