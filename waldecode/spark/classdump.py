"""The child process of ``classdata.prepare`` (``python -m waldecode.spark.classdump FILE``): a local context
started as ``spark decode`` starts one, with ``-XX:ArchiveClassesAtExit=FILE``, a job through a Python
worker, a stop, and a wait for the JVM, which writes the class-data archive as it exits (on its standard
input's end, PythonGatewayServer).  A module of its own: it needs ``context``, which needs ``classdata``."""

from __future__ import annotations

import sys

from .classdata import LOCAL_JVM_OPTIONS, PREPARE_TIMEOUT
from .context import spark_context


def dump(tmp: str) -> None:
    from pyspark import SparkContext  # lazy: the optional [spark] extra; only the child of prepare runs this

    sc = spark_context("local[1]", {"spark.driver.extraJavaOptions":
                                    f"{LOCAL_JVM_OPTIONS} -XX:ArchiveClassesAtExit={tmp}"})
    bc = sc.broadcast(b"x")
    sc.parallelize(range(2), 2).mapPartitions(lambda it: [len(bc.value) + sum(it)]).collect()
    bc.unpersist()
    proc = SparkContext._gateway.proc
    sc.stop()
    SparkContext._gateway.shutdown()
    proc.stdin.close()
    sys.exit(proc.wait(timeout=PREPARE_TIMEOUT))


if __name__ == "__main__":
    dump(sys.argv[1])
