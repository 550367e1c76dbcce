"""The ``--parquet`` dataset of the DDL fixture (ADD/DROP/RENAME COLUMN, RENAME TABLE, ALTER COLUMN
TYPE inside the range) read back whole: one schema in each table's files, pyarrow reading a table
and every table (the ``_common_metadata`` schema), DuckDB every table (``union_by_name``), each
change row holding the values of ``--format jsonl`` (itself held to the server's rows by
test_jsonl_fixtures.py).  Spark reads it in tests/spark/test_parquet_readers.py."""

from __future__ import annotations

import json
from urllib.parse import unquote

import pytest

from fixture_data import all_fixtures
from parquet_rows import check_table_rows
from waldecode.cli import main

pq = pytest.importorskip("pyarrow.parquet")
ds = pytest.importorskip("pyarrow.dataset")

FIXTURE = "pg15-off/ddl"


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    fx = next((f for f in all_fixtures() if f.name == FIXTURE), None)
    if fx is None:
        pytest.skip(f"no {FIXTURE} fixture")
    tmp = tmp_path_factory.mktemp("parquet-dataset")
    slot = next(s for s in fx.meta["slots"] if s["plugin"] == "test_decoding")
    common = ["decode", "--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"],
              "--end-lsn", fx.meta["end_lsn"], "--quiet"]
    assert main([*common, "--format", "jsonl", "--output", str(tmp / "out.jsonl"), str(fx.wal_dir)]) == 0
    assert main([*common, "--parquet", str(tmp / "pq"), str(fx.wal_dir)]) == 0
    objects = [json.loads(ln) for ln in (tmp / "out.jsonl").read_text().splitlines()]
    tables = sorted({(unquote(d.parent.name.split("=", 1)[1]), unquote(d.name.split("=", 1)[1])): d
                     for d in (tmp / "pq" / "changes").glob("schema=*/table=*")}.items())
    return objects, tmp / "pq" / "changes", tables


def _rows(table) -> list:
    return table.to_pylist()


def test_one_schema_per_table(written):
    _objects, _changes, tables = written
    names = [t for (_s, t), _d in tables]
    assert {"ddl_t", "ddl_renamed", "ddl_tx"} <= set(names)
    for _key, d in tables:
        files = list(d.glob("*.parquet"))
        assert len({str(pq.read_schema(f).remove_metadata()) for f in files}) == 1, d
    # ddl_t's versions: columns added (b, c, d), b dropped; ddl_renamed's: id retyped to bigint
    ddl_t = {f.name: str(f.type) for f in pq.read_schema(next(dict(tables)[("public", "ddl_t")].glob("*.parquet")))
             .field("new").type}
    assert ddl_t == {"id": "int32", "a": "string", "b": "int32", "c": "string", "d": "int32"}
    renamed = pq.read_schema(next(dict(tables)[("public", "ddl_renamed")].glob("*.parquet"))).field("new").type
    assert str(renamed.field("id").type) == "int64"


def test_pyarrow_reads_each_table_and_every_table(written):
    objects, changes, tables = written
    compared = 0
    for (schema, table), d in tables:
        compared += check_table_rows(_rows(ds.dataset(str(d)).to_table()), objects, schema, table)
    assert compared == sum(o["op"] in ("INSERT", "UPDATE", "DELETE") for o in objects)
    whole = ds.dataset(str(changes), partitioning="hive",
                       schema=pq.read_schema(changes / "_common_metadata")).to_table()
    for (schema, table), _d in tables:
        mine = whole.filter((ds.field("schema") == schema) & (ds.field("table") == table))
        check_table_rows(_rows(mine), objects, schema, table)


def test_duckdb_reads_every_table(written):
    duckdb = pytest.importorskip("duckdb")
    objects, changes, tables = written
    rel = duckdb.sql(f"SELECT * FROM read_parquet('{changes}/**/*.parquet', hive_partitioning = true, "
                     "union_by_name = true)")
    rows = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
    for (schema, table), _d in tables:
        mine = [dict(r, new_text=r["new_text"] and list(r["new_text"].items()),
                     old_text=r["old_text"] and list(r["old_text"].items()))
                for r in rows if (r["schema"], r["table"]) == (schema, table)]
        check_table_rows(mine, objects, schema, table)
