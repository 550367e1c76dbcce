"""The command line end to end, as scripts and DBAs call it, on real-server fixtures.

``waldecode inspect`` must print pg_waldump's text and ``--stats=record`` table
byte for byte; ``waldecode decode`` must write what the server's test_decoding slot
returned, one row per line as ``pg_recvlogical -f`` writes it, with ``-o`` options
passed as pg_recvlogical passes them.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fixture_data import all_fixtures

FIXTURES = {f.name: f for f in all_fixtures()}
pytestmark = pytest.mark.skipif(not FIXTURES, reason="no fixtures")


def run(*args, env=None):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *map(str, args)], capture_output=True,
                          timeout=300, env=env)


@pytest.mark.parametrize("name", ["pg15-pglz/checkpoint_fpi", "pg16-off/toast", "pg18-off/prepared"])
def test_inspect_prints_pg_waldump_text_and_stats(name):
    fx = FIXTURES[name]
    rng = ["--start-lsn", fx.meta["start_lsn"], "--end-lsn", fx.meta["end_lsn"], fx.wal_dir]
    out = run("inspect", *rng)
    assert out.returncode == 0, out.stderr
    assert out.stdout.decode() == (fx.path / "waldump.txt").read_text()
    for flag in ("--stats", "--stats=record", "-z"):  # bare --stats: the per-record-type table
        stats = run("inspect", flag, *rng)
        assert stats.returncode == 0, stats.stderr
        assert stats.stdout.decode() == (fx.path / "waldump-stats.txt").read_text()
    # As the README writes it: the path right after --stats is a path, not the value of --stats
    stats = run("inspect", *rng[:4], "--stats", fx.wal_dir)
    assert stats.returncode == 0, stats.stderr
    assert stats.stdout.decode() == (fx.path / "waldump-stats.txt").read_text()


@pytest.mark.parametrize("name,out_file,extra", [
    ("pg15-lz4/toast", "test_decoding-ts.jsonl", ["-o", "include-timestamp=1", "-o", "skip-empty-xacts"]),
    ("pg15-off/messages", "test_decoding.jsonl", []),
    ("pg15-zstd/prepared", "test_decoding-2pc.jsonl", ["--two-phase"]),
])
def test_decode_writes_test_decoding_rows(name, out_file, extra, tmp_path):
    fx = FIXTURES[name]
    slot = next(s for s in fx.meta["slots"] if s["name"] == fx.meta["decoding_options"][out_file]["slot"])
    out = run("decode", "--catalog", fx.path / "snapshot.json.gz", "--start-lsn", slot["restart_lsn"],
              "--end-lsn", fx.meta["end_lsn"], "--spill-dir", tmp_path, *extra, fx.wal_dir)
    assert out.returncode == 0, out.stderr
    rows = [json.loads(line)[2] for line in (fx.path / out_file).read_text().splitlines()]
    expected = "".join(r + "\n" for r in rows).encode("utf-8", "surrogateescape")
    assert out.stdout == expected
    assert list(tmp_path.iterdir()) == []


def test_decode_rejects_unknown_plugin_option_as_the_server_does():
    fx = FIXTURES["pg15-off/small_dml"]
    out = run("decode", "--catalog", fx.path / "snapshot.json.gz", "-o", "no-such-option=1", fx.wal_dir)
    assert out.returncode == 2
    assert out.stderr.decode().strip() == 'waldecode: error: option "no-such-option" = "1" is unknown'


def test_decode_refuses_a_catalog_of_another_version():
    fx15, fx16 = FIXTURES["pg15-off/small_dml"], FIXTURES["pg16-off/small_dml"]
    out = run("decode", "--catalog", fx15.path / "snapshot.json.gz", fx16.wal_dir)
    assert out.returncode == 2
    assert "written by PostgreSQL 16" in out.stderr.decode() and "from PostgreSQL 15" in out.stderr.decode()


def test_decode_reports_bad_catalog_file(tmp_path):
    bad = tmp_path / "cat.json"
    bad.write_text("{\"format\": \"something else\"}")
    out = run("decode", "--catalog", bad, FIXTURES["pg15-off/small_dml"].wal_dir)
    assert out.returncode == 2
    assert str(bad) in out.stderr.decode() and "Traceback" not in out.stderr.decode()


def test_decode_with_a_catalog_of_another_database_names_relfilenode_lsn_and_transaction(tmp_path):
    """A wrong catalog: one line naming what could not be resolved, where; no traceback."""
    import gzip

    fx, other = FIXTURES["pg15-off/small_dml"], FIXTURES["pg15-off/types"]
    slot = fx.meta["slot"]
    # the other workload's snapshot is of the same cluster, taken later: dated back to this workload's start,
    # so that it passes the check of a snapshot later than the start (catalog.choose) and is only wrong
    doc = json.loads(gzip.decompress((other.path / "snapshot.json.gz").read_bytes()))
    doc["lsn"] = fx.meta["start_lsn"]
    wrong = tmp_path / "catalog.json"
    wrong.write_text(json.dumps(doc))
    out = run("decode", "--catalog", wrong, "--start-lsn", slot["restart_lsn"],
              "--end-lsn", fx.meta["end_lsn"], fx.wal_dir)
    err = out.stderr.decode()
    assert out.returncode == 1
    assert "Traceback" not in err
    assert "could not map filenumber 1663/16384/" in err and "of transaction" in err, err
    # what to do first, then one line per cause with its count (waldecode.logical.diagnostics)
    what = next(x for x in err.splitlines() if x.startswith("waldecode: error: "))
    assert "the output lacks what" in what and "decode with a catalog snapshot that knows these relations" in what
    assert err.splitlines()[-1].startswith("waldecode:   ") and " x could not map filenumber" in err, err


def test_decode_with_a_catalog_whose_column_types_do_not_fit_the_rows(tmp_path):
    import gzip

    fx = FIXTURES["pg15-off/small_dml"]
    doc = json.loads(gzip.decompress((fx.path / "snapshot.json.gz").read_bytes()))
    for rel in doc["relations"]:
        if rel["relname"] == "dml_pk":
            for att in rel["attributes"]:
                if att["attname"] == "name":  # text -> int8: the rows no longer fit
                    att.update(atttypid=20, attlen=8, attbyval=True, attalign="d", type_name="bigint")
    bad = tmp_path / "catalog.json"
    bad.write_text(json.dumps(doc))
    slot = fx.meta["slot"]
    out = run("decode", "--catalog", bad, "--start-lsn", slot["restart_lsn"], "--end-lsn", fx.meta["end_lsn"],
              fx.wal_dir)
    err = out.stderr.decode()
    assert out.returncode != 0 and "Traceback" not in err, err
    assert "dml_pk" in err and "LSN" in err, err


def test_catalog_pages_option_goes_with_dsn(tmp_path):
    out = run("catalog", "--datadir", tmp_path, "--pages", "none", "-o", tmp_path / "c.json")
    assert out.returncode == 2
    assert out.stderr.decode().strip() == ("waldecode: error: --pages goes with --dsn; with --datadir the pages are "
                                           "read from the files")


PG_WALDUMP_15 = "/usr/lib/postgresql/15/bin/pg_waldump"


@pytest.mark.skipif(not __import__("os").path.exists(PG_WALDUMP_15), reason="pg_waldump 15 not installed")
def test_inspect_stats_rmgr_equals_pg_waldump_stats(tmp_path):
    """--stats=rmgr against PostgreSQL 15's own pg_waldump --stats, run here on the same segments."""
    import gzip

    fx = FIXTURES["pg15-lz4/checkpoint_fpi"]
    for seg in fx.wal_dir.iterdir():
        (tmp_path / seg.name.removesuffix(".gz")).write_bytes(gzip.decompress(seg.read_bytes()))
    rng = ["--start", fx.meta["start_lsn"], "--end", fx.meta["end_lsn"]]
    expected = subprocess.run([PG_WALDUMP_15, "-p", tmp_path, *rng, "--stats"], capture_output=True, check=True)
    out = run("inspect", "--stats=rmgr", "--start-lsn", fx.meta["start_lsn"], "--end-lsn", fx.meta["end_lsn"],
              tmp_path)
    assert out.returncode == 0, out.stderr
    assert out.stdout == expected.stdout
