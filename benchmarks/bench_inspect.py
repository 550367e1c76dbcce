"""Benchmark: ``waldecode inspect`` against pg_waldump on pgbench's WAL.

A thin script over ``waldecode bench --workloads pgbench`` (``waldecode/bench``), which
times every tool on the same WAL and checks ``inspect --stats`` prints what
``pg_waldump --stats=record`` prints; this prints the reading side of its results:
records/s of ``pg_waldump`` and ``waldecode inspect`` (text and --stats) under each
implementation, and the ratio to pg_waldump.

Run: ``.venv/bin/python benchmarks/bench_inspect.py [--transactions N] [--runs N]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from waldecode.bench.workloads import BY_NAME
from waldecode.cli import main as waldecode


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transactions", type=int, default=20_000, help="pgbench transactions (default 20,000)")
    ap.add_argument("--runs", default="3")
    ap.add_argument("--wal-compression", default="lz4", help="the server's wal_compression (default lz4)")
    ap.add_argument("--output-dir", type=Path, default=Path("bench-results/inspect"))
    args = ap.parse_args()
    status = waldecode(["bench", "--workloads", "pgbench", "--runs", args.runs,
                        "--scale", repr(args.transactions / BY_NAME["pgbench"].base_size),
                        "--wal-compression", args.wal_compression, "--output-dir", str(args.output_dir)])
    if status != 0:
        return status
    (result,) = json.loads((args.output_dir / "bench.json").read_text())["workloads"]
    print(f"\n{result['records']:,} records, {result['wal']['bytes'] / 2**20:,.0f} MiB of WAL")
    print(f"{'tool':40} {'seconds':>8} {'records/s':>12} {'x pg_waldump':>13}")
    for t in result["tools"]:
        if t["unit"] == "records":
            ratio = f"{t['ratio']:13.1f}" if t["ratio"] is not None else f"{'ref':>13}"
            print(f"{t['label']:40} {t['median_seconds']:8.2f} {t['rate_per_second']:12,.0f} {ratio}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
