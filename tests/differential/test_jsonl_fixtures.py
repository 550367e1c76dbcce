"""``--format jsonl`` on every PostgreSQL 15 fixture: each JSON object says what the server's
test_decoding line at its place says (operation, xid, LSN, commit time, table, every column's
name, type and text, old key/row, unchanged TOAST, GIDs, messages, truncates), under both
implementations; and ``--parquet`` holds the same rows."""

from __future__ import annotations

import json

import pytest

from fixture_data import all_fixtures
from td_rows import check_jsonl
from waldecode.catalog import Catalog
from waldecode.cli import main
from waldecode.logical.session import decode_wal
from waldecode.output.jsonl import JsonLines
from waldecode.wal.xlogreader import parse_lsn

# The option sets whose lines map one to one onto JSON objects (skip-empty-xacts leaves BEGIN/COMMIT
# out of test_decoding's output, not out of the JSON lines)
CASES = [pytest.param(fx, out_file, meta, id=f"{fx.name}/{out_file}")
         for fx in all_fixtures() if fx.major == 15
         for out_file, meta in fx.meta.get("decoding_options", {}).items()
         if meta["plugin"] == "test_decoding" and set(meta["options"]) <= {"include-timestamp"}]

pytestmark = pytest.mark.skipif(not CASES, reason="no PostgreSQL 15 fixtures")


def _slot(fx, meta):
    return next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])


def _expected(fx, out_file):
    rows = [json.loads(ln) for ln in (fx.path / out_file).read_text().split("\n") if ln]
    return [r[2] for r in rows], [r[0] for r in rows]


@pytest.mark.parametrize("fx,out_file,meta", CASES)
def test_jsonl_says_what_test_decoding_says(fx, out_file, meta, impl):
    slot = _slot(fx, meta)
    lines: list[str] = []
    decode_wal([fx.wal_dir], Catalog.load(fx.path / "snapshot.json.gz"), JsonLines(lines.append),
               start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn, two_phase=slot["two_phase"])
    expected, lsns = _expected(fx, out_file)
    objects = [json.loads(ln) for ln in lines]
    if "include-timestamp" not in meta["options"]:
        for o in objects:  # the lines carry no time to compare with
            o.pop("commit_time", None)
    check_jsonl(objects, expected, lsns)


PARQUET_CASES = [c for c in CASES if c.id.split("/")[1] in ("types", "toast", "ddl", "prepared", "messages", "truncate")
                 and c.id.startswith("pg15-off/")]


@pytest.mark.parametrize("fx,out_file,meta", PARQUET_CASES)
def test_parquet_rows_are_the_jsonl_rows(fx, out_file, meta, tmp_path):
    """The command line: --parquet's change rows are --format jsonl's, value for value where the Parquet
    value is text (typed values are held to the server's text by tests/live/test_jsonl_parquet.py)."""
    pq = pytest.importorskip("pyarrow.parquet")
    from urllib.parse import unquote

    slot = _slot(fx, meta)
    common = ["decode", "--catalog", str(fx.path / "snapshot.json.gz"), "--start-lsn", slot["confirmed_flush_lsn"],
              "--end-lsn", fx.meta["end_lsn"], "--quiet"] + (["--two-phase"] if slot["two_phase"] else [])
    assert main([*common, "--format", "jsonl", "--output", str(tmp_path / "out.jsonl"), str(fx.wal_dir)]) == 0
    assert main([*common, "--parquet", str(tmp_path / "pq"), str(fx.wal_dir)]) == 0
    objects = [json.loads(ln) for ln in (tmp_path / "out.jsonl").read_text().split("\n") if ln]
    rows = {}
    for f in (tmp_path / "pq" / "changes").rglob("*.parquet"):
        schema, table = (unquote(p.name.split("=", 1)[1]) for p in (f.parent.parent, f.parent))
        for r in _rows(pq, f):
            rows.setdefault((schema, table, r["lsn"], r["op"]), []).append(r)
    n = 0
    for o in objects:
        if o["op"] == "TRUNCATE":  # a row in each truncated table's partition too
            for rel in o["relations"]:
                r = rows[(rel["schema"], rel["table"], parse_lsn(o["lsn"]), o["op"])].pop(0)
                assert r["new"] is None and r["old"] is None
        if o["op"] not in ("INSERT", "UPDATE", "DELETE"):
            continue
        r = rows[(o["schema"], o["table"], parse_lsn(o["lsn"]), o["op"])].pop(0)
        assert r["xid"] == o["xid"] and r["commit_lsn"] == parse_lsn(o["commit_lsn"])
        for which, struct, texts, toast in (("columns", "new", "new_text", "unchanged_toast"),
                                            ("old", "old", "old_text", "old_unchanged_toast")):
            if o[which] is None:
                assert r[struct] is None
                continue
            for c in o[which]:
                value, is_text = r[struct][c["name"]]
                if c.get("unchanged_toast"):
                    assert value is None and c["name"] in (r[toast] or [])
                elif c["value"] is None:
                    assert value is None and c["name"] not in dict(r[texts] or [])
                elif c["name"] in dict(r[texts] or []):
                    assert value is None and dict(r[texts])[c["name"]] == c["value"]
                elif is_text:
                    assert value == c["value"]
                else:
                    assert value is not None
                n += 1
    assert n and all(not v for v in rows.values())


def _rows(pq, path):
    """A file's rows, struct fields as (value or None, whether the field is text); dates and timestamps
    as integers (pyarrow's conversion stops at year 9999)."""
    import pyarrow as pa

    t = pq.read_table(path)
    out = t.drop_columns([c for c in ("new", "old") if c in t.column_names]).to_pylist()
    for name in ("new", "old"):
        if name not in t.column_names:
            for r in out:
                r[name] = None
            continue
        s = t.column(name).combine_chunks()
        valid = s.is_valid().to_pylist()
        fields = []
        for j in range(s.type.num_fields):
            child = s.field(j)
            if pa.types.is_date32(child.type) or pa.types.is_timestamp(child.type):
                child = child.cast(pa.int64() if pa.types.is_timestamp(child.type) else pa.int32())
            fields.append((s.type.field(j).name, pa.types.is_string(child.type), child.to_pylist()))
        for k, r in enumerate(out):
            r[name] = {fname: (vals[k], is_text) for fname, is_text, vals in fields} if valid[k] else None
    return out


def test_parquet_bounds_what_it_buffers(tmp_path, monkeypatch):
    """Rows are written a row group at a time within a transaction (big_txn: 5150 changes in one), and
    when all files' buffers together pass the bound the largest are written early (small_dml: many
    tables): the same rows as without the bounds."""
    from waldecode.output import parquet

    pq = pytest.importorskip("pyarrow.parquet")
    for name in ("big_txn", "small_dml"):
        fx = next(f for f in all_fixtures() if f.name == f"pg15-off/{name}")
        slot = next(s for s in fx.meta["slots"] if s["plugin"] == "test_decoding" and not s["two_phase"])
        catalog = Catalog.load(fx.path / "snapshot.json.gz")
        kw = dict(start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn)

        def decode(directory, rows=parquet.ROW_GROUP_ROWS, **limits):
            for k, v in limits.items():
                monkeypatch.setattr(parquet, k, v)
            plugin = parquet.ParquetOutput(directory=str(directory), row_group_rows=rows)
            decode_wal([fx.wal_dir], catalog, plugin, **kw)
            plugin.shutdown()
            monkeypatch.undo()
            files = sorted(directory.rglob("*.parquet"), key=lambda f: f.relative_to(directory).parent)
            return ([pq.read_table(f).to_pylist() for f in files],
                    sum(pq.ParquetFile(f).metadata.num_row_groups for f in files))

        whole, groups = decode(tmp_path / f"{name}-a")
        bounded, bounded_groups = decode(tmp_path / f"{name}-b", BUFFERED_BYTES=800, rows=500)
        assert bounded == whole
        assert bounded_groups > groups


def test_command_line_refusals(tmp_path, capfd):
    """--parquet is the output: with --output, --slot or --format, or into a directory holding files, it is
    refused before anything is read; the JSON lines and Parquet plugins know no -o option."""
    fx = next(f for f in all_fixtures() if f.name == "pg15-off/small_dml")
    base = ["decode", "--catalog", str(fx.path / "snapshot.json.gz"), "--quiet"]
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    for extra, message in (
            (["--parquet", str(tmp_path / "p1"), "--output", str(tmp_path / "o")], "does not go with --output"),
            (["--parquet", str(tmp_path / "p2"), "--format", "jsonl"], "does not go with"),
            (["--parquet", str(tmp_path / "full")], "is not empty"),
            (["--format", "jsonl", "-o", "include-xids=0"], 'option "include-xids" = "0" is unknown'),
            (["--parquet", str(tmp_path / "p3"), "-o", "x"], 'option "x" = "(null)" is unknown')):
        assert main([*base, *extra, str(fx.wal_dir)]) == 2, extra
        err = capfd.readouterr().err
        assert message in err and err.count("\n") == 1, err
    assert not (tmp_path / "o").exists() and not (tmp_path / "p1").exists()
