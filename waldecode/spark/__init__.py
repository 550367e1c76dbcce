"""waldecode on Spark: decoding fanned out over archived WAL segments.

Owns the Spark path (docs/spark-decode.md): ``job`` wires a run (phase 1 over
runs of segments, the driver's sequential pass in ``plan``, phase 2 over ranges of output
order, ordered output), ``tasks`` holds what executors run, ``cli`` the ``waldecode spark``
command, and ``datasource`` the ``pgwal`` DataFrame source.  It reuses the single-process
reader, extractors, decoder, replayer and plugins; nothing here decodes on its own.
Importing this package does not import pyspark.
"""

from __future__ import annotations


def register(spark) -> None:
    """Register the ``pgwal`` data source with ``spark``.  An installed waldecode is found by Spark
    itself (the top-level ``pyspark_waldecode`` module); this is for an editable install, whose modules
    Spark's lookup does not list, or waldecode shipped with ``--py-files``."""
    try:
        # lazy: the data source imports pyspark and the decoder (0.2 s): importing this package must not
        from pyspark_waldecode import DefaultSource
    except ImportError:
        from .datasource import PgWalDataSource as DefaultSource  # lazy: as above

    spark.dataSource.register(DefaultSource)
