"""The ``--parquet`` dataset read back whole by pyarrow, Spark and DuckDB after DDL inside the range.

A throw-away PostgreSQL 15 runs, inside the decoded range, ADD COLUMN (with a default), DROP
COLUMN, RENAME COLUMN, RENAME TABLE and ALTER COLUMN TYPE (numeric(10,4) to numeric(14,2),
integer to bigint, integer to text) between changes of one table, and a second table whose
same-named columns have other types.  Its test_decoding slot's rows are the expectation: the
JSON lines (``--format jsonl``) are checked against them, and every change row each reader
returns, from ``decode --parquet`` and from ``spark decode --parquet``, must carry the JSON
line's values (numbers compared as numbers: a value keeps its number at the wider scale).

Read "whole": one table's directory with no options in each reader; the whole ``changes``
dataset with pyarrow (the schema in ``changes/_common_metadata``), Spark (which reads that
file itself) and DuckDB (``union_by_name``).  Before the files of a table were given one schema,
``pyarrow.dataset(...).to_table()`` raised "Rescaling Decimal value would cause data loss".
"""

from __future__ import annotations

import json

import pytest

from live import DB, SlotRun, live_cluster
from parquet_rows import check_table_rows
from td_rows import check_jsonl
from waldecode.cli import main

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")
duckdb = pytest.importorskip("duckdb")

pytestmark = [pytest.mark.server, pytest.mark.spark, pytest.mark.slow]

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, amount numeric(10,4), note text, flag int, qty int);
CREATE TABLE other (id int PRIMARY KEY, amount numeric(6,2), qty text);
"""

WORKLOAD = [
    "INSERT INTO acct VALUES (1, 1.2345, 'one', 1, 10), (2, -0.0001, NULL, 0, 20)",
    "INSERT INTO other VALUES (1, 12.5, 'a few')",
    "ALTER TABLE acct ADD COLUMN extra text DEFAULT 'the default'",
    "INSERT INTO acct VALUES (3, 3.5, 'three', 1, 30, 'x')",
    "UPDATE acct SET note = 'after add column' WHERE id = 1",
    "ALTER TABLE acct DROP COLUMN flag",
    "INSERT INTO acct VALUES (4, 4.25, 'four', 40, 'y')",
    "ALTER TABLE acct RENAME COLUMN note TO remark",
    "INSERT INTO acct VALUES (5, 5, 'five', 50, 'z')",
    "ALTER TABLE acct ALTER COLUMN amount TYPE numeric(14,2)",
    "INSERT INTO acct VALUES (6, 123456789012.25, 'six', 60, NULL)",
    "UPDATE acct SET amount = 7.5 WHERE id = 2",
    "ALTER TABLE acct ALTER COLUMN id TYPE bigint",
    "INSERT INTO acct VALUES (9000000000, 9, 'big key', 90, NULL)",
    "ALTER TABLE acct ALTER COLUMN qty TYPE text",
    "INSERT INTO acct VALUES (8, 8, 'eight', 'many', NULL)",
    "DELETE FROM acct WHERE id = 3",
    "ALTER TABLE acct RENAME TO accounts",
    "UPDATE accounts SET remark = 'renamed table' WHERE id = 4",
    "INSERT INTO other VALUES (2, -3.75, 'more')",
]
TABLES = ("acct", "accounts", "other")


@pytest.fixture(scope="module")
def decoded(tmp_path_factory, spark):
    """(JSON objects checked against the server's rows, {"decode": DIR, "spark": DIR})."""
    tmp = tmp_path_factory.mktemp("parquet-readers")
    with live_cluster(SCHEMA) as c:
        run = SlotRun(c)
        with c.connect(DB) as conn:
            for s in WORKLOAD:
                conn.execute(s)
        got, expected = run.finish(tmp)
    assert got == expected
    catalog = tmp / "catalog.json"
    catalog.write_text(run.catalog.to_json())
    common = ["--catalog", str(catalog), "--start-lsn", run.confirmed_lsn, "--end-lsn", run.end_lsn, "--quiet"]
    assert main(["decode", *common, "--format", "jsonl", "--output", str(tmp / "out.jsonl"), str(run.wal)]) == 0
    objects = [json.loads(ln) for ln in (tmp / "out.jsonl").read_text().splitlines()]
    check_jsonl(objects, expected, run.peek_lsns)
    dirs = {"decode": tmp / "single", "spark": tmp / "spark"}
    assert main(["decode", *common, "--parquet", str(dirs["decode"]), str(run.wal)]) == 0
    assert main(["spark", "decode", "--master", "local[2]", "--ranges", "3", *common,
                 "--parquet", str(dirs["spark"]), str(run.wal)]) == 0
    return objects, dirs


def _table_dir(directory, table):
    return directory / "changes" / "schema=public" / f"table={table}"


def _check(rows, objects, table) -> int:
    n = check_table_rows(rows, objects, "public", table)
    assert n
    return n


def _arrow_rows(table) -> list[dict]:
    return table.select(["lsn", "op", "new", "old"]).to_pylist()


def _duck_rows(sql: str) -> list[dict]:
    rel = duckdb.sql(sql)
    return [dict(zip(rel.columns, r)) for r in rel.fetchall()]


def _spark_rows(df) -> list[dict]:
    return [{"lsn": r["lsn"], "op": r["op"], "new": r["new"] and r["new"].asDict(), "old": r["old"] and r["old"].asDict()}
            for r in df.select("lsn", "op", "new", "old").collect()]


@pytest.mark.parametrize("writer", ["decode", "spark"])
def test_one_schema_per_table(decoded, writer):
    """The DDL left one schema in each table's files; the union of the versions, at wider types."""
    _objects, dirs = decoded
    acct = _table_dir(dirs[writer], "acct")
    schemas = {str(pq.read_schema(f).remove_metadata()) for f in acct.glob("*.parquet")}
    assert len(list(acct.glob("*.parquet"))) >= 4 and len(schemas) == 1
    new = pq.read_schema(next(acct.glob("*.parquet"))).field("new").type
    types = {f.name: str(f.type) for f in new}
    assert types == {"id": "int64", "amount": "decimal128(16, 4)", "note": "string", "flag": "int32",
                     "qty": "string", "extra": "string", "remark": "string"}
    # the file's own columns stay in its metadata
    metas = {pq.read_schema(f).metadata[b"waldecode.columns"] for f in acct.glob("*.parquet")}
    assert len(metas) >= 4


@pytest.mark.parametrize("writer", ["decode", "spark"])
def test_each_reader_reads_a_table_whole(decoded, spark, writer):
    objects, dirs = decoded
    checked = 0
    for table in TABLES:
        d = _table_dir(dirs[writer], table)
        checked += _check(_arrow_rows(ds.dataset(str(d)).to_table()), objects, table)
        _check(_duck_rows(f"SELECT lsn, op, new, old FROM read_parquet('{d}/*.parquet')"), objects, table)
        _check(_spark_rows(spark.read.parquet(str(d))), objects, table)
    assert checked == 14  # every change of the workload


@pytest.mark.parametrize("writer", ["decode", "spark"])
def test_each_reader_reads_changes_whole(decoded, spark, writer):
    objects, dirs = decoded
    changes = dirs[writer] / "changes"
    common = pq.read_schema(changes / "_common_metadata")
    arrow = ds.dataset(str(changes), schema=common, partitioning="hive").to_table()
    duck = _duck_rows(f"SELECT lsn, op, new, old, \"table\" FROM read_parquet('{changes}/**/*.parquet', "
                      "hive_partitioning = true, union_by_name = true)")
    sdf = spark.read.parquet(str(changes))
    for table in TABLES:
        _check(_arrow_rows(arrow.filter(ds.field("table") == table)), objects, table)
        _check([r for r in duck if r["table"] == table], objects, table)
        _check(_spark_rows(sdf.filter(sdf["table"] == table)), objects, table)


def test_decode_and_spark_decode_write_the_same_dataset(decoded):
    _objects, dirs = decoded

    def tables(d):
        out = {}
        for f in sorted((d / "changes").rglob("*.parquet")):
            t = pq.read_table(f)
            rows, schemas = out.setdefault(f.parent.name, ([], set()))
            rows.extend(t.select(["commit_lsn", "lsn", "op", "new", "old"]).to_pylist())
            schemas.add(str(t.schema.remove_metadata()))
        return {k: (sorted(rows, key=lambda r: (r["lsn"], r["op"])), s) for k, (rows, s) in out.items()}

    assert tables(dirs["decode"]) == tables(dirs["spark"])
    assert pq.read_schema(dirs["decode"] / "changes" / "_common_metadata") == \
        pq.read_schema(dirs["spark"] / "changes" / "_common_metadata")
