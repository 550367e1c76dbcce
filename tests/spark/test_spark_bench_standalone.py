"""``waldecode bench --spark-standalone`` end to end: a PostgreSQL 15 server writes the WAL, the benchmark
starts its own standalone cluster (a master and two workers of one core each on 127.0.0.1), times
``spark decode`` on it (without --spark: not on local masters), finds its output equal to
pg_recvlogical's, breaks the run down from its ``--timings`` with the Python workers' CPU found under
the worker daemons, and stops the cluster."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from waldecode import _impl
from waldecode.testing.cluster import ClusterError, find_bindir

pytestmark = [pytest.mark.slow, pytest.mark.server, pytest.mark.spark]


def _daemons_with(text: bytes) -> list[int]:
    found = []
    for name in os.listdir("/proc"):
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
        except OSError:
            continue
        if text in cmd:
            found.append(int(name))
    return found


def test_bench_times_spark_decode_on_a_standalone_cluster(tmp_path):
    pytest.importorskip("pyspark")
    try:
        find_bindir(15)
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    out = tmp_path / "results"
    run = subprocess.run([sys.executable, "-m", "waldecode.cli", "bench", "--workloads", "pgbench", "--scale", "0.02",
                          "--runs", "1", "--impl", _impl.IMPL, "--spark-standalone", "--no-chart",
                          "--output-dir", str(out)], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    doc = json.loads((out / "bench.json").read_text())
    assert doc["ok"] is True and doc["options"]["spark_standalone"] is True
    cluster = doc["spark_standalone"]
    assert (cluster["workers"], cluster["cores_per_worker"], cluster["memory"]) == (2, 1, "1g")
    (wl,) = doc["workloads"]
    rows = {t["key"]: t for t in wl["tools"]}
    row = rows["spark_decode_standalone_2x1"]
    label = f"waldecode spark decode standalone 2x1 [{_impl.IMPL}]"
    assert row["label"] == label and row["reference"] == f"decode_{_impl.IMPL}"
    assert not {"spark_decode_local1", "spark_decode_local2"} & rows.keys()  # --spark's, not asked for
    checks = {c["what"]: c["ok"] for c in wl["checks"]}
    assert checks[f"{label} output equals pg_recvlogical's byte for byte (run 1)"] is True
    (m,) = row["runs"]
    b = m["phases"]
    assert b["method"] == "ranges" and b["cores"] == 2
    assert {"context", "phase1", "ranges"} <= b["phases"].keys(), b
    assert b["fixed_s"] > 0 and b["parallel_cpu_s"] > 0
    assert set(b["predicted_1tib_s"]) == {"16", "64", "256"}
    # the executors (one per worker) and their Python workers ran under the worker daemons, and were measured
    e = m["extra"]
    assert e["executors_seen"] == 2 and e["workers_seen"] >= 2, e
    assert e["worker_cpu_s"] > 0 and e["executor_cpu_s"] > 0, e
    assert b["parallel_cpu_s"] == e["worker_cpu_s"]
    assert m["rss_mb"] > 0
    # stdout: the row, its verdict, its breakdown line and the model
    lines = run.stdout.splitlines()
    assert any(line.startswith("pgbench") and label in line for line in lines)
    assert f"identical: {label} = pg_recvlogical -f (" in run.stdout
    assert any(line.startswith(f"{label}: ") and "1 TiB predicted: " in line and "on 256 cores" in line
               for line in lines), run.stdout
    assert any(line.startswith("model: 1 TiB predicted = fixed + serial x S") for line in lines)
    # and the cluster is gone
    assert not _daemons_with(cluster["url"].encode()), cluster["url"]
    assert not _daemons_with(f"--port\0{cluster['url'].rsplit(':', 1)[1]}\0".encode())
