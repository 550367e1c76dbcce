"""``spark decode --format wal2json`` (its task functions, without Spark) against single-process decode.

Under Spark each partition has a plugin of its own: what wal2json keeps from one transaction to the
next call (format 1's change count) must be in the same partition, which the plan's ranges see to.
The bytes themselves are proven against the server's wal2json in tests/live/test_wal2json.py; here the
same plugin, fanned out over ranges, must print what one process prints, on the bundled fixtures.
"""

from __future__ import annotations

import io

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.logical.session import decode_wal
from waldecode.output.wal2json import Wal2Json
from waldecode.spark.executors import LocalExecutor
from waldecode.spark.job import decode_spark
from waldecode.wal.xlogreader import parse_lsn

# format 1 (a transaction is one message), format 2 (one per change)
OPTION_SETS = [{"include-xids": "1", "pretty-print": "1"},
               {"format-version": "2", "include-xids": "1", "include-lsn": "1", "include-pk": "1"}]

# one compression of each workload: the others differ in reading WAL, which test_spark covers
CASES = [pytest.param(fx, opts, id=f"{fx.name}/{i}") for fx in all_fixtures() if fx.name.startswith("pg15-off/")
         for i, opts in enumerate(OPTION_SETS)]

pytestmark = pytest.mark.skipif(not CASES, reason="no PostgreSQL 15 fixtures")


def _start(fx) -> int:
    # the fixture's first test_decoding slot: where a slot created before its workload stands
    return parse_lsn(fx.meta["slots"][0]["confirmed_flush_lsn"])


def _single(fx, options) -> bytes:
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    rows: list[str] = []
    decode_wal([fx.wal_dir], catalog, Wal2Json(rows.append), plugin_options=options, start_lsn=_start(fx),
               end_lsn=fx.end_lsn)
    single = b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in rows)
    assert single.count(b"\n") > 0
    return single


def _fanned(executor, fx, options) -> bytes:
    out = io.BytesIO()
    result = decode_spark(executor, [fx.wal_dir], Catalog.load(fx.path / "snapshot.json.gz"), Wal2Json, out,
                          plugin_options=options, start_lsn=_start(fx), end_lsn=fx.end_lsn)
    assert result.not_decoded == [] and result.warnings == []
    return out.getvalue()


@pytest.mark.parametrize("ranges", [7])
@pytest.mark.parametrize("fx,options", CASES)
def test_ranges_equal_single_process(fx, options, ranges):
    executor = LocalExecutor()
    executor.ranges = ranges
    assert _fanned(executor, fx, options) == _single(fx, options)


@pytest.mark.slow
@pytest.mark.parametrize("fx,options", [c for c in CASES if c.id.split("/")[1] == "messages"])
def test_spark_partitions_equal_single_process(spark, fx, options):
    """Real Spark: one plugin per partition (a non-transactional message after a transaction of two
    changes ends up in the partition of that transaction)."""
    from waldecode.spark.executors import SparkExecutor

    assert _fanned(SparkExecutor(spark, 7), fx, options) == _single(fx, options)


@pytest.mark.parametrize("fx,options", [c for c in CASES if c.id.split("/")[1] == "messages"])
def test_format_1_takes_the_event_path(fx, options):
    """Format 1's comma before a message depends on the transaction before it, which another range's plugin
    printed: the range path is left to the event path; format 2's objects stand alone and take it."""
    executor = LocalExecutor()
    executor.ranges = 7
    _fanned(executor, fx, options)
    if options.get("format-version") == "2":
        assert (executor.method, executor.fallback) == ("ranges", None)
    else:
        assert executor.method == "events" and "depends on the transaction before it" in executor.fallback
