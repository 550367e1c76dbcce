"""Spark's static registration of the ``pgwal`` data source, and the door Python workers come in by.

pyspark 4 finds Python data sources by importing every top-level ``pyspark_*`` module on the
worker's path and registering its ``DefaultSource`` (pyspark/sql/worker/lookup_data_sources.py);
``pip install waldecode`` installs this module next to the package, so ``format("pgwal")`` works
in any session.  (An editable install maps modules through an import hook that this lookup does not
list: there, ``waldecode.spark.register(spark)`` registers the source.)

Spark's Python workers run ``python -m pyspark.daemon``, which puts their working directory first on
``sys.path``: from a directory holding a ``waldecode/`` source folder, ``import waldecode`` would load
that folder instead of the installed package and its extensions.  Everything of the source that
Spark pickles (the data source class, its readers, its partitions) is therefore unpickled through
this module, which moves the working directory behind the rest of the path before waldecode is
imported (``safe_path``).
"""

from __future__ import annotations

import os
import sys


def safe_path() -> None:
    """The working directory moved to the end of ``sys.path`` when it holds a ``waldecode`` folder
    and the rest of the path (or an editable install's hook) finds waldecode elsewhere."""
    if "waldecode" in sys.modules:
        return
    try:
        cwd = os.getcwd()
    except OSError:
        return
    if not os.path.exists(os.path.join(cwd, "waldecode")):
        return
    here = [p for p in sys.path if (p or ".") == "." or os.path.abspath(p) == cwd]
    if not here:
        return
    import importlib.util

    saved = list(sys.path)
    sys.path[:] = [p for p in saved if p not in here]
    try:
        spec = importlib.util.find_spec("waldecode")
    except (ImportError, ValueError):
        spec = None
    # Not installed elsewhere: the working directory's copy is the only one (a checkout run in place)
    sys.path[:] = [p for p in saved if p not in here] + here if spec is not None else saved


safe_path()

from waldecode.spark.datasource import PgWalDataSource  # noqa: E402


class DefaultSource(PgWalDataSource):
    """``format("pgwal")`` (``waldecode.spark.datasource.PgWalDataSource``), pickled by this module's
    name so that workers import this module, and so ``safe_path``, first."""


def rebuild(kind: str, state: dict):
    """A reader or partition of the source, unpickled in a worker (``datasource._Pickled``)."""
    safe_path()
    from waldecode.spark.datasource import rebuild as _rebuild

    return _rebuild(kind, state)


__all__ = ["DefaultSource"]
