"""Benchmark: one big transaction (2,000,000 rows by default), decoded by waldecode and by PostgreSQL.

A thin script over ``waldecode bench --workloads big_txn`` (``waldecode/bench``): the
same cluster, slot, WAL and comparisons, and the same table, JSON and chart.  On top
it holds ``waldecode decode`` to its memory target: a transaction far larger than the
spill threshold must decode in under 300 MB peak RSS.  Exits non-zero when the output
differs from pg_recvlogical's or the target is missed.

Run: ``.venv/bin/python benchmarks/bench_big_txn.py [--rows N] [--runs N] [--impl python,cython]``
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from waldecode.bench.workloads import BY_NAME
from waldecode.cli import main as waldecode

RSS_TARGET_MB = 300


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--runs", default="1")
    ap.add_argument("--impl", help="implementations, comma-separated (default: those available)")
    ap.add_argument("--output-dir", type=Path, default=Path("bench-results/big_txn"))
    args = ap.parse_args()
    argv = ["bench", "--workloads", "big_txn", "--scale", repr(args.rows / BY_NAME["big_txn"].base_size),
            "--runs", args.runs, "--output-dir", str(args.output_dir)]
    if args.impl:
        argv += ["--impl", args.impl]
    status = waldecode(argv)
    if status != 0:
        return status
    (result,) = json.loads((args.output_dir / "bench.json").read_text())["workloads"]
    ok = True
    for tool in result["tools"]:
        if tool["key"].startswith("decode_"):
            met = tool["peak_rss_mb"] < RSS_TARGET_MB
            ok &= met
            print(f"{tool['label']}: peak RSS {tool['peak_rss_mb']:.0f} MB, target < {RSS_TARGET_MB} MB: "
                  f"{'met' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
