"""The Spark lane's one SparkSession (session start and the first data-source job cost seconds each:
docs/spark-decode.md), on local[2] with this Python and this implementation; and its one standalone
cluster on 127.0.0.1 (``standalone``: a master and two workers), started at the first test that decodes
through spark://."""

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


@pytest.fixture(scope="session")
def standalone(tmp_path_factory):
    """A master and two workers of one core each (1 GB for executors: the documents'
    spark.executor.memory=1g fits) on 127.0.0.1 (waldecode.spark.standalone: free ports, spark-class),
    started once for the tests that decode through spark://; its ``url`` and the ``env`` a driver runs in.
    Stopped by PID at the session's end, the daemons and their executors checked to be gone."""
    pytest.importorskip("pyspark")
    from waldecode.spark.standalone import StandaloneCluster

    with StandaloneCluster(workers=2, cores_per_worker=1, memory="1g",
                           log_dir=tmp_path_factory.mktemp("standalone")) as cluster:
        yield cluster
