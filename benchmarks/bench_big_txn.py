"""Benchmark: one 2,000,000-row transaction, decoded by waldecode and by PostgreSQL.

On a throw-away PostgreSQL 15 cluster (16 MB segments): a catalog snapshot, a
test_decoding slot, then ``INSERT ... SELECT generate_series(1, N)`` in one
transaction.  PostgreSQL's own decoding of it is written by ``pg_recvlogical -f``;
``waldecode decode`` decodes the archived segments with the default spill threshold
(4096 changes) under each implementation.  Prints the time, changes/s, peak RSS of
each, and whether waldecode's output is byte-identical to PostgreSQL's.  The target:
peak RSS under 300 MB.  Run: ``.venv/bin/python benchmarks/bench_big_txn.py [--rows N]``.
"""

from __future__ import annotations

import argparse
import filecmp
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from waldecode import _impl
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.testing.cluster import Cluster

RSS_TARGET_MB = 300


def peak_rss_of(cmd: list[str], env: dict) -> tuple[float, float]:
    """(seconds, peak RSS in MB) of a child process, measured with wait4."""
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env)
    _pid, status, usage = os.wait4(proc.pid, 0)
    secs = time.perf_counter() - t
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed with status {status}")
    return secs, usage.ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--impl", action="append", help="only these implementations (python, cython)")
    args = ap.parse_args()
    impls = args.impl or _impl.available()
    settings = {"wal_keep_size": "8GB", "max_wal_size": "8GB", "checkpoint_timeout": "1h"}
    with tempfile.TemporaryDirectory(prefix="waldecode-bench-") as tmp:
        tmp = Path(tmp)
        tmp.chmod(0o755)  # pg_recvlogical runs as the server user and writes below it
        with Cluster(15, wal_segsize_mb=16, settings=settings) as c:
            c.sql("CREATE DATABASE bench")
            with c.connect("bench") as conn:
                conn.execute("CREATE TABLE big (id int PRIMARY KEY, v text, n numeric, ts timestamptz)")
                (tmp / "catalog.json").write_text(snapshot_from_connection(conn).to_json())
                conn.execute("SELECT pg_create_logical_replication_slot('bench', 'test_decoding')")
                start = conn.execute("SELECT restart_lsn::text FROM pg_replication_slots").fetchone()[0]
                t = time.perf_counter()
                conn.execute("INSERT INTO big SELECT g, md5(g::text), g / 7.0, "
                             "'2026-01-01'::timestamptz + g * interval '1 second' "
                             "FROM generate_series(1, %s) g", (args.rows,))
                print(f"server: INSERT of {args.rows} rows took {time.perf_counter() - t:.1f}s")
                conn.execute("CHECKPOINT")
                end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            out_dir = tmp / "pg"
            out_dir.mkdir()
            shutil.chown(out_dir, "postgres")
            t = time.perf_counter()
            c.run_bin("pg_recvlogical", "-h", str(c.socket_dir), "-p", str(c.port), "-d", "bench", "-S", "bench",
                      "--start", "-E", end, "--no-loop", "-f", str(out_dir / "expected.txt"), timeout=3600)
            pg_secs = time.perf_counter() - t
            wal = c.archive_wal(tmp / "wal")
        expected = out_dir / "expected.txt"
        wal_mb = sum(f.stat().st_size for f in wal.iterdir()) / 2**20
        print(f"WAL {start}..{end} ({wal_mb:.0f} MiB of segments); pg_recvlogical -f: {pg_secs:.1f}s, "
              f"{args.rows / pg_secs:,.0f} changes/s")
        ok = True
        for impl in impls:
            got = tmp / f"got-{impl}.txt"
            spill = tmp / f"spill-{impl}"
            spill.mkdir()
            env = dict(os.environ, WALDECODE_IMPL=impl)
            secs, rss = peak_rss_of([sys.executable, "-m", "waldecode.cli", "decode", "--catalog",
                                     str(tmp / "catalog.json"), "-s", start, "-e", end, "--spill-dir", str(spill),
                                     "--output", str(got), str(wal)], env)
            same = filecmp.cmp(expected, got, shallow=False)
            left = list(spill.iterdir())
            ok &= same and rss < RSS_TARGET_MB and not left
            print(f"waldecode decode [{impl}]: {secs:.1f}s, {args.rows / secs:,.0f} changes/s, peak RSS {rss:.0f} MB "
                  f"(target < {RSS_TARGET_MB}), output {'identical' if same else 'DIFFERENT'} to PostgreSQL's, "
                  f"{len(left)} spill files left, {secs / pg_secs:.1f}x pg_recvlogical")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
