"""``spark decode --format jsonl`` and ``--parquet`` against single-process ``decode``.

The JSON lines are byte for byte ``decode``'s; the Parquet dataset holds the same rows, table by
table, with the same Arrow schemas (every range's task writes its own files into the one
dataset).  The task functions are checked in this process (``LocalExecutor``, every split of
the output into ranges), then through Spark from the command line.
"""

from __future__ import annotations

import functools
import io

import pytest

from fixture_data import all_fixtures
from waldecode.catalog import Catalog
from waldecode.cli import main
from waldecode.logical.session import decode_wal
from waldecode.output.jsonl import JsonLines
from waldecode.output.parquet import ParquetOutput
from waldecode.spark.executors import LocalExecutor
from waldecode.spark.job import decode_spark
from waldecode.wal.xlogreader import parse_lsn

pq = pytest.importorskip("pyarrow.parquet")

NAMES = ("types", "toast", "ddl", "prepared", "messages", "truncate", "interleaved")
CASES = [pytest.param(fx, slot["two_phase"], id=fx.name + ("/2pc" if slot["two_phase"] else ""))
         for fx in all_fixtures() if fx.name.split("/")[0] == "pg15-off" and fx.name.split("/")[1] in NAMES
         for slot in fx.meta["slots"] if slot["plugin"] == "test_decoding"]

pytestmark = pytest.mark.skipif(not CASES, reason="no PostgreSQL 15 fixtures")


def _slot(fx, two_phase: bool):
    return next(s for s in fx.meta["slots"] if s["plugin"] == "test_decoding" and s["two_phase"] == two_phase)


def _kw(fx, two_phase):
    slot = _slot(fx, two_phase)
    return dict(start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn, two_phase=two_phase)


def dataset(directory) -> dict:
    """{(schema, table) or "transactions": (sorted rows, {schemas of its files})} of a --parquet directory
    (how many files a table's rows are in depends on the split into ranges)."""
    import pyarrow as pa

    out: dict = {}
    for f in sorted(directory.rglob("*.parquet")):
        key = "transactions" if f.parent.name == "transactions" else (f.parent.parent.name, f.parent.name)
        t = pq.read_table(f)
        # dates and timestamps as integers: pyarrow's datetime conversion stops at year 9999
        t = pa.Table.from_arrays([_plain(pa, c.combine_chunks()) for c in t.columns], names=t.column_names)
        rows, schemas = out.setdefault(key, ([], set()))
        rows.extend(_nan_free(r) for r in t.to_pylist())
        schemas.add(str(pq.read_schema(f).remove_metadata()))
    for rows, _schemas in out.values():
        rows.sort(key=lambda r: (r["commit_lsn"] or 0, r["lsn"] or 0, r["op"]))
    return out


def _nan_free(v):
    """NaN as a string, so that equal rows compare equal."""
    if isinstance(v, float) and v != v:
        return "NaN"
    if isinstance(v, dict):
        return {k: _nan_free(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_nan_free(x) for x in v]
    return v


def _plain(pa, arr):
    typ = arr.type
    if pa.types.is_struct(typ):
        return pa.StructArray.from_arrays([_plain(pa, arr.field(j)) for j in range(typ.num_fields)],
                                          names=[typ.field(j).name for j in range(typ.num_fields)],
                                          mask=arr.is_null())
    if pa.types.is_date32(typ):
        return arr.cast(pa.int32())
    if pa.types.is_timestamp(typ):
        return arr.cast(pa.int64())
    return arr


@pytest.mark.parametrize("fx,two_phase", CASES)
def test_tasks_in_process_equal_decode(fx, two_phase, tmp_path):
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    lines: list[str] = []
    decode_wal([fx.wal_dir], catalog, JsonLines(lines.append), **_kw(fx, two_phase))
    executor = LocalExecutor()
    executor.ranges = 3
    out = io.BytesIO()
    decode_spark(executor, [fx.wal_dir], catalog, JsonLines, out, **_kw(fx, two_phase), segments_per_run=1)
    assert out.getvalue() == b"".join(ln.encode() + b"\n" for ln in lines)
    assert lines

    plugin = ParquetOutput(directory=str(tmp_path / "single"))
    decode_wal([fx.wal_dir], catalog, plugin, **_kw(fx, two_phase))
    plugin.shutdown()
    nothing = io.BytesIO()
    decode_spark(executor, [fx.wal_dir], catalog, functools.partial(ParquetOutput, directory=str(tmp_path / "spark")),
                 nothing, **_kw(fx, two_phase), segments_per_run=1)
    assert nothing.getvalue() == b""
    single = dataset(tmp_path / "single")
    assert single and dataset(tmp_path / "spark") == single


def _cli_case():
    """The fixture the command-line tests decode, and the options every run of it takes."""
    pytest.importorskip("pyspark")
    pytest.importorskip("pandas")
    fx = next(c.values[0] for c in CASES if c.id == "pg15-off/types")
    slot = _slot(fx, False)
    return fx, ["--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"],
                "--end-lsn", fx.meta["end_lsn"], "--quiet"]


@pytest.mark.slow
def test_cli_through_spark(tmp_path, capfd):
    fx, common = _cli_case()
    spark = ["spark", "decode", "--master", "local[2]", "--ranges", "2"]
    assert main(["decode", *common, "--format", "jsonl", "--output", str(tmp_path / "a.jsonl"), str(fx.wal_dir)]) == 0
    assert main([*spark, *common, "--format", "jsonl", "--output", str(tmp_path / "b.jsonl"), str(fx.wal_dir)]) == 0
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert main(["decode", *common, "--parquet", str(tmp_path / "a"), str(fx.wal_dir)]) == 0
    assert main([*spark, *common, "--parquet", str(tmp_path / "b"), str(fx.wal_dir)]) == 0
    single = dataset(tmp_path / "a")
    assert single and dataset(tmp_path / "b") == single
    # --parquet writes a fresh dataset: a directory holding files is refused, before anything is read
    assert main([*spark, *common, "--parquet", str(tmp_path / "b"), str(fx.wal_dir)]) == 2
    assert "not empty" in capfd.readouterr().err


@pytest.mark.slow
def test_parquet_of_a_retried_task_is_written_once(tmp_path):
    """Every phase-2 task is killed once, after writing its Parquet files (a lost executor): Spark runs it
    again, and the dataset still holds each row once, the attempts' files kept only for the one that
    succeeded."""
    import os
    import subprocess
    import sys

    fx, common = _cli_case()
    assert main(["decode", *common, "--parquet", str(tmp_path / "a"), str(fx.wal_dir)]) == 0
    # local[2,2]: two slots, a task may fail once; the crash point is passed only by a first attempt
    env = dict(os.environ, WALDECODE_CRASH_AT="spark-phase2-first-attempt")
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", "spark", "decode", "--master", "local[2,2]",
                          "--ranges", "2", *common, "--parquet", str(tmp_path / "b"), str(fx.wal_dir)],
                         env=env, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    single = dataset(tmp_path / "a")
    assert single and dataset(tmp_path / "b") == single
    assert not (tmp_path / "b" / "_attempts").exists()
