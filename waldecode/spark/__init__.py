"""waldecode on Spark: decoding fanned out over archived WAL segments.

Owns the Spark path (``/work/shared/spark-design.md``): ``job`` wires a run (phase 1 over
runs of segments, the driver's sequential pass in ``plan``, phase 2 over ranges of output
order, ordered output), ``tasks`` holds what executors run, ``cli`` the ``waldecode spark``
command, and ``datasource`` the ``pgwal`` DataFrame source.  It reuses the single-process
reader, extractors, decoder, replayer and plugins; nothing here decodes on its own.
Importing this package does not import pyspark.
"""

from __future__ import annotations


def register(spark) -> None:
    """Register the ``pgwal`` data source with ``spark`` (needed when waldecode is not installed on the
    driver's Python path, e.g. shipped with ``--py-files``)."""
    from .datasource import PgWalDataSource

    spark.dataSource.register(PgWalDataSource)
