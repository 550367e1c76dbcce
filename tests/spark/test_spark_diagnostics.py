"""``spark decode`` summarises warnings as ``decode`` does (``cli.report_diagnostics``): on the fixture
``pg15-off/small_dml`` decoded with the snapshot of another workload of the same cluster (dated back to its
start, as tests/differential/test_cli.py does), both print the first warning of each cause, the same
summary, write the same ``--report`` counts and exit 1."""

from __future__ import annotations

import gzip
import json

import pytest

from fixture_data import all_fixtures
from waldecode.cli import main

FIXTURES = {f.name: f for f in all_fixtures()}
pytestmark = pytest.mark.skipif("pg15-off/small_dml" not in FIXTURES, reason="no PostgreSQL 15 fixtures")


@pytest.mark.slow
def test_spark_decode_summarises_warnings_as_decode(spark, tmp_path, capfd):
    fx, other = FIXTURES["pg15-off/small_dml"], FIXTURES["pg15-off/types"]
    doc = json.loads(gzip.decompress((other.path / "snapshot.json.gz").read_bytes()))
    doc["lsn"] = fx.meta["start_lsn"]
    wrong = tmp_path / "catalog.json"
    wrong.write_text(json.dumps(doc))
    common = ["--catalog", str(wrong), "--start-lsn", fx.meta["slot"]["restart_lsn"], "--end-lsn",
              fx.meta["end_lsn"]]
    runs = {}
    for name, cmd in (("decode", ["decode"]), ("spark", ["spark", "decode", "--master", "local[2]"])):
        report = tmp_path / f"{name}.json"
        status = main([*cmd, *common, "--report", str(report), "--output", str(tmp_path / f"{name}.out"),
                       str(fx.wal_dir)])
        err = [ln for ln in capfd.readouterr().err.splitlines()
               if ln.startswith("waldecode:") and not ln.startswith("waldecode: note:")]
        causes = {c["cause"]: (c["count"], c["lacks"]) for c in json.loads(report.read_text())["causes"]}
        runs[name] = status, err, causes
    (s1, e1, c1), (s2, e2, c2) = runs["decode"], runs["spark"]
    assert s1 == s2 == 1
    assert c1 == c2 and sum(n for n, _ in c1.values()) > len(c1) and all(lacks for _, lacks in c1.values())
    warned = [ln for ln in e1 if ln.startswith("waldecode: warning: ")]
    assert len(warned) == len(c1)  # the first of each cause only
    assert sorted(e1) == sorted(e2)
