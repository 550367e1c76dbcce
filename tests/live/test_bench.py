"""``waldecode bench`` end to end on a real PostgreSQL 15, and the measurement it rests on.

A tiny run of one workload must time every tool, find waldecode's output equal to
pg_recvlogical's, and write the JSON and the PNG; a run whose decode output differs
must say so and exit non-zero.  Peak RSS must be the tool's own, not the benchmark's
(a child forked by a big process starts with that process's peak).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pytest

from waldecode import _impl
from waldecode.bench import measure, tools
from waldecode.testing.cluster import ClusterError, find_bindir


def _need_pg15():
    try:
        find_bindir(15)
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")


def test_peak_rss_is_the_tools_own_not_the_benchmarks():
    ballast = bytearray(300 * 2**20)
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched: resident
    floor = measure.rss_floor()
    assert floor.rss_mb < 20, floor
    big = measure.run_measured([sys.executable, "-c", "b = bytearray(150 * 2**20); b[::4096] = b'x' * len(b[::4096])"])
    assert 150 < big.rss_mb < 250, big
    assert big.seconds > 0 and big.cpu_seconds > 0
    del ballast


def test_a_failing_tool_is_an_error_with_its_stderr():
    with pytest.raises(measure.BenchError, match="exited with status 3: boom"):
        measure.run_measured(["sh", "-c", "echo boom >&2; exit 3"], what="sh")


@pytest.mark.server
@pytest.mark.slow
def test_bench_times_every_tool_and_finds_the_outputs_equal(tmp_path):
    _need_pg15()
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", "bench", "--workloads", "types", "--scale", "0.001",
                          "--runs", "1", "--output-dir", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr
    doc = json.loads((out / "bench.json").read_text())
    assert doc["ok"] is True
    assert doc["options"]["workloads"] == ["types"] and doc["options"]["runs"] == 1
    assert doc["versions"]["postgres"].startswith("postgres (PostgreSQL) 15")
    (wl,) = doc["workloads"]
    assert wl["name"] == "types" and wl["size"] == 100
    # 100 inserts, 10 updates, 5 deletes
    assert wl["changes"] == 115 and wl["records"] > wl["changes"]
    expected_keys = [t.key for t in tools.tools_for(_impl.available())]
    assert [t["key"] for t in wl["tools"]] == expected_keys
    for t in wl["tools"]:
        assert len(t["runs"]) == 1 and t["median_seconds"] > 0, t
        if t["key"] == "peek":
            assert t["peak_rss_mb"] is None  # the server's backend: not measured
        else:
            assert t["peak_rss_mb"] > 0, t
        if t["reference"]:
            ref = next(r for r in wl["tools"] if r["key"] == t["reference"])
            assert t["ratio"] == pytest.approx(t["median_seconds"] / ref["median_seconds"])
    checks = {c["what"]: c["ok"] for c in wl["checks"]}
    for impl in _impl.available():
        assert checks[f"waldecode decode [{impl}] output equals pg_recvlogical's byte for byte (run 1)"] is True
        assert checks[f"waldecode inspect --stats [{impl}] printed what pg_waldump --stats=record printed (run 1)"]
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the table on stdout: a line per tool
    for t in wl["tools"]:
        assert any(line.startswith("types") and t["label"] in line for line in run.stdout.splitlines()), t["label"]
    # after it, the verdict of each comparison checked, with the size compared
    verdicts = [line for line in run.stdout.splitlines() if line.startswith(("identical: ", "DIFFERENT: "))]
    for impl in _impl.available():
        assert any(v.startswith(f"identical: waldecode decode [{impl}] = pg_recvlogical -f (") for v in verdicts)
        assert f"identical: waldecode inspect --stats [{impl}] = pg_waldump --stats=record (" in run.stdout
    assert len(verdicts) == sum(1 for c in wl["checks"] if "compared" in c)


@pytest.mark.server
@pytest.mark.slow
def test_bench_reports_a_decode_that_differs_and_fails(tmp_path, monkeypatch, capsys):
    _need_pg15()
    from waldecode.cli import main

    real = tools.decode_argv
    # BEGIN/COMMIT without xids: not what pg_recvlogical wrote
    monkeypatch.setattr(tools, "decode_argv", lambda *a: real(*a) + ["-o", "include-xids=0"])
    code = main(["bench", "--workloads", "toast", "--scale", "0.001", "--runs", "1", "--impl", _impl.IMPL,
                 "--no-chart", "--output-dir", str(tmp_path)])
    captured = capsys.readouterr()
    err = captured.err
    assert code == 1
    assert f"DIFFERENT: waldecode decode [{_impl.IMPL}] != pg_recvlogical -f (" in captured.out
    assert f"MISMATCH in toast: waldecode decode [{_impl.IMPL}] output equals pg_recvlogical's" in err
    doc = json.loads((tmp_path / "bench.json").read_text())
    assert doc["ok"] is False
    # the outputs are kept for a post-mortem; not this test's
    kept = err.split("kept the work directory ")[1].split()[0]
    shutil.rmtree(kept)
