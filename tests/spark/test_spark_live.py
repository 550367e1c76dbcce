"""A fresh workload with DDL inside the decoded range, through Spark, against the server's own slot.

A throw-away PostgreSQL 15 (1 MB segments, so the range spans several and every run boundary
falls between tasks) runs schema changes between and inside transactions: ADD/DROP COLUMN, a
rename, CREATE TABLE and ALTER inside one transaction, TRUNCATE, VACUUM FULL (a new
relfilenode), DDL rolled back to a savepoint, messages.  Its test_decoding slot's rows are
the expectation; ``waldecode decode`` must print them, and so must ``waldecode spark decode``
(local paths with one segment per task and 7 output ranges, and ``file://`` URIs read through
Spark's Hadoop file systems), ``spark decode --parquet`` (read back, in position order) and
the ``pgwal`` source, whose commit-LSN filters read fewer segments and partitions for the same rows.
"""

from __future__ import annotations

import io
import sys
import types

import pytest

from damaged_wal import with_bad_crc
from live import SlotRun, live_cluster

pytestmark = [pytest.mark.server, pytest.mark.spark, pytest.mark.slow]

SCHEMA = """
CREATE TABLE items (id int PRIMARY KEY, name text);
INSERT INTO items SELECT g, 'item ' || g FROM generate_series(1, 100) g;
"""

WORKLOAD = [
    "INSERT INTO items SELECT g, repeat('x', 200) || g FROM generate_series(101, 6000) g",
    "SELECT pg_switch_wal()",
    "ALTER TABLE items ADD COLUMN price numeric DEFAULT 1.5",
    "UPDATE items SET price = id / 3.0 WHERE id % 7 = 0",
    "BEGIN",
    "CREATE TABLE orders (id serial PRIMARY KEY, item int, qty int)",
    "INSERT INTO orders (item, qty) SELECT g, g % 5 FROM generate_series(1, 3000) g",
    "ALTER TABLE orders ADD COLUMN note text",
    "INSERT INTO orders (item, qty, note) VALUES (1, 2, 'after the ALTER')",
    "COMMIT",
    "SELECT pg_switch_wal()",
    "ALTER TABLE items DROP COLUMN name",
    "ALTER TABLE items RENAME TO goods",
    "UPDATE goods SET price = price + 1 WHERE id < 50",
    "DELETE FROM goods WHERE id % 11 = 0",
    "TRUNCATE orders",
    "VACUUM FULL goods",
    "INSERT INTO goods (id, price) VALUES (100000, 9)",
    "BEGIN",
    "INSERT INTO goods (id, price) VALUES (100001, 1)",
    "SAVEPOINT a",
    "ALTER TABLE goods ADD COLUMN flag bool",
    "INSERT INTO goods (id, price, flag) VALUES (100002, 2, true)",
    "ROLLBACK TO a",
    "INSERT INTO goods (id, price) VALUES (100003, 3)",
    "SELECT pg_logical_emit_message(true, 'tx', 'inside')",
    "COMMIT",
    "SELECT pg_logical_emit_message(false, 'nontx', 'outside')",
    "INSERT INTO orders (item, qty) SELECT g, 1 FROM generate_series(1, 2000) g",
]


@pytest.fixture(scope="module")
def decoded(tmp_path_factory):
    """(run, catalog file, WAL directory, the server's rows, the single process's rows)."""
    tmp = tmp_path_factory.mktemp("spark-live")
    with live_cluster(SCHEMA) as c:
        run = SlotRun(c)
        with c.connect("live") as conn:
            for s in WORKLOAD:
                conn.execute(s)
        got, expected = run.finish(tmp)
    catalog = tmp / "catalog.json"
    catalog.write_text(run.catalog.to_json())
    return run, catalog, tmp / "wal", expected, got


def _text(rows) -> bytes:
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in rows)


def _cli(argv, capfd):
    from waldecode.cli import main

    status = main(argv)
    err = capfd.readouterr().err
    return status, [ln for ln in err.split("\n") if ln.startswith("waldecode:") and "note:" not in ln]


def _common(run, catalog):
    return ["--catalog", str(catalog), "--start-lsn", run.confirmed_lsn, "--end-lsn", run.end_lsn]


def test_workload_spans_segments(decoded):
    run, _catalog, wal, expected, got = decoded
    assert len(list(wal.iterdir())) >= 4
    assert got == expected
    assert any("ALTER" not in r and "goods" in r for r in expected)  # decoded under the renamed table


@pytest.mark.parametrize("how", ["local", "file-uri"])
def test_spark_decode_equals_server(spark, decoded, tmp_path, capfd, how):
    run, catalog, wal, expected, _got = decoded
    out = tmp_path / "spark.out"
    if how == "local":
        extra, path = ["--segments-per-task", "1", "--ranges", "7"], str(wal)
    else:
        extra, path = ["--ranges", "3"], wal.resolve().as_uri()
        assert path.startswith("file://")
    status, errors = _cli(["spark", "decode", "--master", "local[2]", *_common(run, catalog), *extra,
                           "--output", str(out), path], capfd)
    assert (status, errors) == (0, [])
    assert out.read_bytes() == _text(expected)


def test_spark_decode_parquet(spark, decoded, tmp_path, capfd):
    """--parquet DIR through Spark: the dataset single-process ``decode --parquet`` writes (partitioned by
    schema and table, the renamed table under its new name), its changes those the server printed."""
    from test_spark_rows import dataset

    run, catalog, wal, expected, _got = decoded
    assert _cli(["decode", *_common(run, catalog), "--parquet", str(tmp_path / "single"), str(wal)], capfd) == (0, [])
    status, errors = _cli(["spark", "decode", "--master", "local[2]", *_common(run, catalog), "--parquet",
                           str(tmp_path / "pq"), str(wal)], capfd)
    assert (status, errors) == (0, [])
    got = dataset(tmp_path / "pq")
    assert got == dataset(tmp_path / "single")
    tables = {k[1] for k in got if k != "transactions"}
    assert tables >= {"table=goods", "table=items", "table=orders"}
    # (the table is in the partition's directory name, not in the files)
    changes = sorted((k[1].removeprefix("table="), r["op"]) for k, (rows, _s) in got.items() if k != "transactions"
                     for r in rows if r["op"] in ("INSERT", "UPDATE", "DELETE"))
    lines = sorted((ln.split(":")[0].removeprefix("table public."), ln.split(": ")[1].rstrip(":"))
                   for ln in expected if ln.startswith("table ") and ": TRUNCATE" not in ln)
    assert changes == lines


def _reader(spark, run, catalog, wal, **options):
    reader = (spark.read.format("pgwal").option("catalog", str(catalog)).option("startLsn", run.confirmed_lsn)
              .option("endLsn", run.end_lsn).option("segmentsPerPartition", "1").option("ranges", "4"))
    for k, v in options.items():
        reader = reader.option(k, v)
    return reader.load(str(wal))


def test_commit_lsn_pushdown(spark, decoded):
    """Filters on commit_lsn: fewer segments read (<=) and fewer partitions (>=), the same rows."""
    from pyspark.sql import functions as F
    from pyspark.sql.datasource import GreaterThanOrEqual, LessThanOrEqual

    from waldecode import _impl
    from waldecode.spark import tasks
    from waldecode.spark.datasource import PgWalDataSource, commit_lsn_bounds, plan_partitions

    run, catalog, wal, expected, _got = decoded
    df = _reader(spark, run, catalog, wal)
    full = df.orderBy("position", "seq").collect()
    assert b"".join(r["line"] + b"\n" for r in full) == _text(expected)
    commits = sorted({r["commit_lsn"] for r in full if r["commit_lsn"] is not None})
    early, late = commits[1], commits[-3]

    def rows(cond):
        return [r for r in full if r["commit_lsn"] is not None and cond(r["commit_lsn"])]

    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"
    got_early = df.filter(F.col("commit_lsn") <= early).orderBy("position", "seq").collect()
    assert got_early == rows(lambda x: x <= early) and got_early
    got_late = df.filter(F.col("commit_lsn") >= late).orderBy("position", "seq").collect()
    assert got_late == rows(lambda x: x >= late) and got_late

    # What the planner reads: the same options, with and without the pushed filter
    options = {"catalog": str(catalog), "startLsn": run.confirmed_lsn, "endLsn": run.end_lsn,
               "segmentsPerPartition": "1", "ranges": "4", "path": str(wal)}
    reader = PgWalDataSource(options).reader(None)
    assert list(reader.pushFilters([LessThanOrEqual(("commit_lsn",), early)])) != []  # Spark still filters
    assert reader.bounds == commit_lsn_bounds([LessThanOrEqual(("commit_lsn",), early)]) == (None, early)
    runs_all = tasks.unpack(plan_partitions(options)[0])[0].runs
    runs_early = tasks.unpack(plan_partitions(options, reader.bounds)[0])[0].runs
    assert runs_early[-1][1] < runs_all[-1][1]
    assert len(plan_partitions(options, commit_lsn_bounds([GreaterThanOrEqual(("commit_lsn",), late)]))[1]) \
        < len(plan_partitions(options)[1])
    assert _impl.IMPL in ("cython", "python")


@pytest.mark.parametrize("target", ["file", "stdout"])
def test_ranges_written_then_refused_are_taken_back(spark, decoded, tmp_path, target, monkeypatch):
    """The range path writes ``--output FILE`` range by range as the ranges end (``job._stream_ranges``);
    a later range that stops at a damaged record (phase 1 frames without CRCs) sends the run to the event
    path, which writes the file again from nothing and stops where ``decode`` stops, with its output."""
    from waldecode.catalog import Catalog
    from waldecode.logical.session import decode_wal
    from waldecode.output.base import OutputWriter
    from waldecode.output.test_decoding import TestDecoding
    from waldecode.pg.lsn import parse_lsn
    from waldecode.cli.spark import _LazyBinaryOutput
    from waldecode.spark.executors import SparkExecutor
    from waldecode.spark.job import decode_spark

    from waldecode.spark import ranges as _ranges

    run, catalog, wal, expected, _got = decoded
    # the plan of the ranges (made on the driver) on the sound WAL: the damage goes into the one before the last
    plans = []
    real = _ranges.plan_ranges
    _ranges.plan_ranges = lambda *a, **kw: plans.append(real(*a, **kw)) or plans[-1]
    try:
        decode_spark(SparkExecutor(spark, ranges=7), [str(wal)], Catalog.load(catalog), TestDecoding, io.BytesIO(),
                     start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn), segments_per_run=1)
    finally:
        _ranges.plan_ranges = real
    before_last = plans[0].ranges[-2]
    bad, bad_lsn = with_bad_crc(wal, tmp_path, before_last.start, plans[0].ranges[-1].start)
    blocks: list = []
    writer = OutputWriter(blocks.append)
    single = decode_wal([bad], Catalog.load(catalog), TestDecoding(output=writer), start_lsn=parse_lsn(run.confirmed_lsn),
                        end_lsn=parse_lsn(run.end_lsn))
    writer.flush()
    assert (single.stop.kind, single.stop.lsn) == ("invalid", bad_lsn)
    path = tmp_path / "spark.out"
    if target == "stdout":
        # standard output cannot unwrite: the event path's first bytes are checked against what went out
        stdout = io.BytesIO()
        monkeypatch.setattr(sys, "stdout", types.SimpleNamespace(buffer=stdout))
    out = _LazyBinaryOutput(str(path) if target == "file" else None)
    executor = SparkExecutor(spark, ranges=7)
    result = decode_spark(executor, [str(bad)], Catalog.load(catalog), TestDecoding, out,
                          start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn), segments_per_run=1)
    out.close()
    assert (result.stop.kind, result.stop.lsn) == ("invalid", bad_lsn)
    assert executor.method == "events" and "stopped reading" in executor.fallback
    assert executor.rewound  # the ranges before the damaged one had been written
    got = path.read_bytes() if target == "file" else stdout.getvalue()
    assert got == b"".join(bytes(b) for b in blocks)
    assert len(got) < len(_text(expected))

