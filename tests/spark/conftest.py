"""The Spark lane's one SparkSession (session start and the first data-source job cost seconds each:
docs/spark-decode.md), on local[2] with this Python and this implementation."""

from __future__ import annotations

import os
import sys

import pytest


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    from waldecode.spark.cli import spark_session

    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = spark_session("local[2]", {"spark.sql.shuffle.partitions": "2",
                                         "spark.sql.python.filterPushdown.enabled": "true"},
                            app_name="waldecode-tests")
    yield session
    session.stop()
