"""Benchmark: decoding through catalog changes, and how the time per WAL segment holds up after them.

A thin script over ``waldecode bench --workloads pgbench_ddl`` (``waldecode/bench``): pgbench in
sixteen parts, each followed by a DDL statement (ADD/RENAME COLUMN, ALTER COLUMN TYPE with a
rewrite, CREATE TABLE, VACUUM FULL, TRUNCATE) and a prepared transaction; the same comparisons
with pg_recvlogical, the same table and JSON.  On the kept WAL it then runs ``waldecode decode``
once more, in this process, timing each segment file: a decoder that leaves its fast path at the
first catalog change shows it as segments after the first DDL taking many times the first ones'
time.  Prints the per-segment times, the sixteenths' (segments grouped by position), and the two
targets: ``decode`` at most 0.6x pg_recvlogical's time, and each sixteenth within 1.5x of the first.
Exits non-zero when the output differs from pg_recvlogical's or a target is missed.

Run: ``.venv/bin/python benchmarks/bench_ddl.py [--scale 3] [--runs 3]`` (``--scale 3``: about
590 MiB of WAL), or on a kept work directory: ``--work-dir /tmp/waldecode-bench-.../pgbench_ddl``.
"""

from __future__ import annotations

import argparse
import io
import json
import re
import sys
import tempfile
import time
from contextlib import redirect_stderr
from pathlib import Path

from waldecode import progress
from waldecode.cli import main as waldecode

RATIO_TARGET = 0.6  # decode / pg_recvlogical
FLATNESS_TARGET = 1.5  # slowest sixteenth / the first
PARTS = 16


def timed_segments(work_dir: Path, start_lsn: str) -> list[tuple[str, float, int]]:
    """``waldecode decode`` of the work directory's WAL from ``start_lsn``, to a scratch file: for each
    segment file, the seconds spent decoding its records (between the reader handing it over and
    asking for the next) and the changes written meanwhile."""
    times: list[tuple[str, float, int]] = []
    original = progress.track

    def track(reader, **kwargs):
        tracker = original(reader, **kwargs)
        frames = tracker.frames
        written = [lambda: 0]
        count_changes = tracker.count_changes

        def counting(changes):
            written[0] = changes
            count_changes(changes)

        def timed():
            for item in frames():
                n, t = written[0](), time.perf_counter()
                yield item
                times.append((Path(str(item[0])).name, time.perf_counter() - t, written[0]() - n))
        tracker.frames = timed
        tracker.count_changes = counting
        return tracker

    progress.track = track
    try:
        with tempfile.TemporaryDirectory() as tmp:
            status = waldecode(["decode", "-q", "--catalog", str(work_dir / "catalog.json"), "--start-lsn", start_lsn,
                                "--output", str(Path(tmp) / "out.txt"), str(work_dir / "wal")])
    finally:
        progress.track = original
    if status != 0:
        raise SystemExit(f"waldecode decode exited {status}")
    return times


def sixteenths(times: list[tuple[str, float, int]]) -> list[float]:
    """Microseconds per change written in each sixteenth of the changes (the workload's parts hold
    about the same number each; the segments do not: the first ones are mostly full-page images),
    each segment's time counted in the sixteenth its changes end in."""
    total = sum(n for _, _, n in times) or 1
    seconds = [0.0] * PARTS
    changes = [0] * PARTS
    done = 0
    for _, t, n in times:
        done += n
        k = min(PARTS - 1, (done - 1) * PARTS // total) if done else 0
        seconds[k] += t
        changes[k] += n
    return [1e6 * s / c for s, c in zip(seconds, changes) if c]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", default="3", help="of the pgbench_ddl workload (1: about 190 MiB of WAL)")
    ap.add_argument("--runs", default="3")
    ap.add_argument("--impl", default="cython")
    ap.add_argument("--output-dir", type=Path, default=Path("bench-results/ddl"))
    ap.add_argument("--work-dir", type=Path, help="a kept pgbench_ddl work directory: time its segments only")
    args = ap.parse_args()
    ok = True
    work_dir = args.work_dir
    if work_dir is None:
        err = io.StringIO()
        with redirect_stderr(err):
            status = waldecode(["bench", "--workloads", "pgbench_ddl", "--scale", args.scale, "--runs", args.runs,
                                "--impl", args.impl, "--keep", "--no-chart", "--output-dir", str(args.output_dir)])
        sys.stderr.write(err.getvalue())
        if status != 0:
            return status
        kept = re.search(r"kept the work directory (\S+)", err.getvalue())
        work_dir = Path(kept.group(1)) / "pgbench_ddl"
        (result,) = json.loads((args.output_dir / "bench.json").read_text())["workloads"]
        tools = {t["key"]: t for t in result["tools"]}
        decode = next(t for k, t in tools.items() if k.startswith("decode_"))
        ratio = decode["median_seconds"] / tools["pg_recvlogical"]["median_seconds"]
        met = ratio <= RATIO_TARGET
        ok &= met
        print(f"decode {decode['median_seconds']:.2f} s, pg_recvlogical {tools['pg_recvlogical']['median_seconds']:.2f} s: "
              f"{ratio:.2f}x, target <= {RATIO_TARGET}x: {'met' if met else 'MISSED'}")
        start_lsn = result["wal"]["decode_start_lsn"]
    else:
        start_lsn = None
        bench_json = work_dir.parent.parent
        for candidate in (args.output_dir / "bench.json",):
            if candidate.exists():
                start_lsn = json.loads(candidate.read_text())["workloads"][0]["wal"]["decode_start_lsn"]
        if start_lsn is None:
            raise SystemExit(f"no bench.json in {args.output_dir} (--output-dir of the bench run that kept "
                             f"{bench_json})")
    times = timed_segments(work_dir, start_lsn)
    for name, t, n in times:
        print(f"  {name}  {t:6.3f} s  {n:8,} changes" + (f"  {1e6 * t / n:5.2f} us/change" if n else ""))
    parts = sixteenths(times)
    print("sixteenths (us/change): " + " ".join(f"{t:.2f}" for t in parts))
    worst = max(parts[1:]) / parts[0] if len(parts) > 1 and parts[0] > 0 else 1.0
    met = worst <= FLATNESS_TARGET
    ok &= met
    print(f"slowest sixteenth / first: {worst:.2f}x, target <= {FLATNESS_TARGET}x: {'met' if met else 'MISSED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
