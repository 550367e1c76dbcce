"""Benchmark: ``waldecode inspect`` against pg_waldump on the same WAL.

Makes WAL with pgbench on a throw-away PostgreSQL 15 cluster (16 MB segments),
copies the segments out, then times, best of ``--repeat`` runs each:
pg_waldump --stats, pg_waldump (text), and ``waldecode inspect`` (--stats and
text) under each implementation.  Prints seconds, records/s and the ratio to
pg_waldump.  Run: ``.venv/bin/python benchmarks/bench_inspect.py [--scale 10]``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from waldecode import _impl
from waldecode.testing.cluster import Cluster


def make_wal(scale: int, transactions: int, dest: Path) -> tuple[str, str]:
    settings = {"wal_keep_size": "4GB", "max_wal_size": "8GB", "checkpoint_timeout": "1h"}
    with Cluster(15, wal_segsize_mb=16, settings=settings, wal_compression="lz4") as c:
        start = c.sql("SELECT pg_current_wal_insert_lsn()")[0][0]
        conn = ["-h", str(c.socket_dir), "-p", str(c.port)]
        c.run_bin("pgbench", *conn, "-i", "-s", str(scale), "-q", "postgres")
        c.sql("CHECKPOINT")
        c.run_bin("pgbench", *conn, "-c", "2", "-t", str(transactions), "-n", "postgres")
        end = c.sql("SELECT pg_current_wal_insert_lsn()")[0][0]
        c.sql("CHECKPOINT")
        c.archive_wal(dest)
    return str(start), str(end)


def best(cmd: list[str], repeat: int, env=None) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=env)
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--transactions", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="waldecode-bench-") as tmp:
        wal = Path(tmp)
        start, end = make_wal(args.scale, args.transactions, wal)
        size = sum(f.stat().st_size for f in wal.iterdir())
        waldump = "/usr/lib/postgresql/15/bin/pg_waldump"
        rng = ["--start", start, "--end", end]
        nrec = int(subprocess.run([waldump, "-p", str(wal), *rng], capture_output=True, text=True,
                                  check=True).stdout.count("\n"))
        print(f"WAL: {size / 2**20:.0f} MiB in {len(os.listdir(wal))} segments, {nrec} records, {start}..{end}")
        rows = [("pg_waldump --stats", best([waldump, "-p", str(wal), *rng, "--stats"], args.repeat)),
                ("pg_waldump", best([waldump, "-p", str(wal), *rng], args.repeat))]
        base = {"--stats": rows[0][1], "": rows[1][1]}
        for impl in _impl.available():
            env = dict(os.environ, WALDECODE_IMPL=impl)
            for flag in ("--stats", ""):
                cmd = [sys.executable, "-m", "waldecode.cli", "inspect", "-s", start, "-e", end, str(wal)]
                if flag:
                    cmd.append(flag)
                rows.append((f"waldecode inspect {flag} [{impl}]".replace("  ", " "), best(cmd, args.repeat, env)))
        print(f"{'tool':40} {'seconds':>8} {'records/s':>12} {'x pg_waldump':>13}")
        for name, secs in rows:
            ref = base["--stats" if "--stats" in name else ""]
            print(f"{name:40} {secs:8.2f} {nrec / secs:12,.0f} {secs / ref:13.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
