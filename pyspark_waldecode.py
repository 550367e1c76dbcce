"""Spark's static registration of the ``pgwal`` data source (pyspark imports every installed top-level
``pyspark_*`` module exposing ``DefaultSource``; see waldecode.spark.datasource)."""

from waldecode.spark.datasource import PgWalDataSource as DefaultSource

__all__ = ["DefaultSource"]
