"""The Python workers' daemon for waldecode's contexts (``spark.python.daemon.module``): pyspark's own
daemon (``pyspark.daemon``), run with pyspark imported from the installed package.

Spark puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's source zip first on the workers' path
(``PythonUtils.sparkPythonPath``). Modules imported from a zip are compiled from source in every new
process (zipimport writes no bytecode): the daemon, and each worker it forks when that imports
``pyspark.worker``, spent 1.1 s compiling pyspark where the installed package's cached bytecode takes
0.2 s, which was most of the first job's 2 s. When pyspark and py4j are installed outside those zips
(a pip install: ``SPARK_HOME`` is the installed package, so the zips hold the same version), the zips
leave the path before anything of pyspark is imported; otherwise the path stays as Spark made it.
"""

from __future__ import annotations

import sys
from importlib.machinery import PathFinder


def _without_spark_zips(path: list) -> list:
    """``path`` without Spark's zips of pyspark and py4j, when both packages are found without them;
    else ``path`` as it is."""
    rest = [p for p in path if not (p.endswith(".zip") and ("pyspark" in p or "py4j" in p))]
    if len(rest) == len(path):
        return path
    if all(PathFinder.find_spec(name, rest) is not None for name in ("pyspark", "py4j")):
        return rest
    return path


if __name__ == "__main__":
    sys.path[:] = _without_spark_zips(sys.path)
    from pyspark.daemon import manager

    manager()
