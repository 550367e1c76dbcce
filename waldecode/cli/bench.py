"""``waldecode bench``: waldecode against PostgreSQL's own tools, on the same WAL from a real server.

For each workload (``workloads``) a throw-away PostgreSQL 15 cluster writes the WAL;
``runner`` times on it ``pg_waldump --stats``, ``pg_waldump``, the server's
``pg_logical_slot_peek_changes``, ``pg_recvlogical -f`` and ``waldecode inspect
--stats``, ``inspect`` and ``decode`` under each implementation, every process
measured for wall time and peak RSS (``measure``), and checks that waldecode's output
equals the server's byte for byte.  ``report`` prints the table of medians and ratios
and writes JSON and a PNG chart.  This module holds the command's options and its
main, on top of the ``bench`` library.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import os
import sys
import tempfile
import time
from pathlib import Path

from .. import _impl, argtypes
from ..bench.workloads import BY_NAME, WORKLOADS

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
DEFAULT_SCALE = 0.25


def _names(choices: list[str], what: str):
    def parse(text: str) -> list[str]:
        names = [x.strip() for x in text.split(",") if x.strip()]
        bad = [x for x in names if x not in choices]
        if bad or not names:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(bad) or '(none)'}; "
                                             f"choose from {', '.join(choices)}")
        return list(dict.fromkeys(names))
    return parse


def add_arguments(p: argparse.ArgumentParser) -> None:
    sizes = "; ".join(f"{w.name}: {w.describe(1)}" for w in WORKLOADS)
    p.add_argument("--workloads", type=_names([w.name for w in WORKLOADS], "workload"),
                   default=[w.name for w in WORKLOADS], metavar="NAME,...",
                   help=f"which workloads, comma-separated (default: all). At --scale 1: {sizes}")
    p.add_argument("--scale", type=argtypes.positive_float, default=DEFAULT_SCALE,
                   help=f"multiplier of the workload sizes (default {DEFAULT_SCALE}: a few minutes on 2 cores; "
                        "1 is the full benchmark)")
    p.add_argument("--runs", type=argtypes.positive_int, default=3, help="runs of each tool; the table shows the median "
                                                                 "(default 3)")
    p.add_argument("--impl", type=_names(["python", "cython"], "implementation"), default=None,
                   metavar="python,cython", help="waldecode implementations to time (default: those available)")
    p.add_argument("--output-dir", type=Path, default=Path("bench-results"), metavar="DIR",
                   help="where bench.json and bench.png go (default ./bench-results)")
    p.add_argument("--wal-compression", default="off", choices=("off", "pglz", "lz4", "zstd"),
                   help="the server's wal_compression (default off)")
    p.add_argument("--no-chart", action="store_true", help="no PNG (matplotlib not needed)")
    p.add_argument("--keep", action="store_true",
                   help="keep the clusters and the work directory (WAL, catalog, outputs) for a post-mortem")
    p.add_argument("--spark", action="store_true",
                   help="also time 'waldecode spark decode' on local[1] and local[2] (pip install "
                        "'waldecode[spark]'); its peak RSS column is its Python workers' peak")
    p.add_argument("--spark-memory", metavar="SIZE",
                   help="spark.driver.memory and spark.executor.memory of those runs (e.g. 512m); with it, the "
                        "Python workers' peak RSS must stay under 300 MB")
    p.add_argument("--spark-standalone", action="store_true",
                   help="time 'waldecode spark decode' on a Spark standalone cluster the benchmark starts on "
                        "127.0.0.1 (a master and two workers of one core each, executors of --spark-memory or 1g), "
                        "with the same output check and breakdown as --spark's runs (alone: the cluster's run "
                        "only); the CPU of the executors' Python workers is found under the worker daemons")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")


@contextlib.contextmanager
def _standalone(memory: str | None, work_root: Path, say):
    """``--spark-standalone``'s cluster, up for the whole benchmark (its start, 10-30 s, timed in no run); its
    logs in the work directory."""
    # lazy: --help imports this module for bench's arguments; Spark's modules only when a benchmark runs
    from ..spark.standalone import StandaloneCluster
    from ..bench.sparkrun import STANDALONE_CORES, STANDALONE_MEMORY, STANDALONE_WORKERS

    t = time.perf_counter()
    with StandaloneCluster(workers=STANDALONE_WORKERS, cores_per_worker=STANDALONE_CORES,
                           memory=memory or STANDALONE_MEMORY, log_dir=work_root / "standalone") as cluster:
        say(f"Spark standalone cluster {cluster.url}: {cluster.workers} workers of {cluster.cores_per_worker} "
            f"core{'s' if cluster.cores_per_worker > 1 else ''}, {cluster.memory} for executors each, up in "
            f"{time.perf_counter() - t:.1f} s")
        yield cluster
    say("Spark standalone cluster stopped")


def main_bench(args) -> int:
    # lazy: psycopg (0.24 s), Spark and the benchmark's machinery: not for --help, which imports this module
    import psycopg

    from ..spark.standalone import StandaloneError
    from ..testing.cluster import ClusterError, find_bindir
    from ..bench import report
    from ..bench.measure import BenchError, rss_floor
    from ..bench.runner import remove_work_dir, run_workload
    from ..bench.tools import compile_bytecode, spark_class_archive

    def say(msg: str) -> None:
        if not args.quiet:
            print(f"bench: {msg}", file=sys.stderr, flush=True)

    if args.spark_memory and not args.spark_standalone:
        args.spark = True
    available = _impl.available()
    impls = args.impl or available
    missing = [i for i in impls if i not in available]
    if missing:
        print(f"waldecode: error: implementation {', '.join(missing)} is not available here "
              f"(available: {', '.join(available)})", file=sys.stderr)
        return EXIT_USAGE
    if not args.no_chart:
        try:
            import matplotlib  # noqa: F401  # lazy: 0.3 s, optional ([bench] extra), only for the chart
        except ImportError:
            print("waldecode: error: the PNG chart needs matplotlib: pip install 'waldecode[bench]' "
                  "(or pass --no-chart)", file=sys.stderr)
            return EXIT_USAGE
    try:
        bindir = find_bindir(15)
    except ClusterError as e:
        print(f"waldecode: error: {e}", file=sys.stderr)
        return EXIT_FAILED
    args.output_dir.mkdir(parents=True, exist_ok=True)
    work_root = Path(tempfile.mkdtemp(prefix="waldecode-bench-"))
    floor = rss_floor()
    bytecode = compile_bytecode()
    say(f"bytecode: {bytecode}")
    spark_classes = None
    if args.spark:  # local masters' drivers map it (spark.classdata); a cluster's do not
        spark_classes = spark_class_archive()
        say(f"Spark's class-data archive: {spark_classes}")
    document = {
        "command": ["waldecode", *sys.argv[1:]] if sys.argv and sys.argv[0].endswith("waldecode") else sys.argv,
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "options": {"workloads": args.workloads, "scale": args.scale, "runs": args.runs, "impls": impls,
                    "wal_compression": args.wal_compression, "spark": args.spark, "spark_memory": args.spark_memory,
                    "spark_standalone": args.spark_standalone},
        "load_average_at_start": list(os.getloadavg()),
        "bytecode": bytecode,
        "spark_class_archive": spark_classes,
        **report.environment(bindir),
        "rss": {"method": floor.rss_method, "floor_mb": floor.rss_mb,
                "note": "peak RSS (ru_maxrss) of each tool's process; the floor is what /bin/true reports"},
        "workloads": [],
    }
    results = document["workloads"]
    t0 = time.perf_counter()
    failed = False
    try:
        with contextlib.ExitStack() as stack:
            standalone = None
            if args.spark_standalone:
                standalone = stack.enter_context(_standalone(args.spark_memory, work_root, say))
                document["spark_standalone"] = {"url": standalone.url, "workers": standalone.workers,
                                                "cores_per_worker": standalone.cores_per_worker,
                                                "memory": standalone.memory, "logs": str(standalone.log_dir)}
            for name in args.workloads:
                wl = BY_NAME[name]
                say(f"[{name}] {wl.describe(args.scale)}")
                results.append(run_workload(wl, scale=args.scale, runs=args.runs, impls=impls,
                                            work_dir=work_root / name, keep=args.keep,
                                            wal_compression=args.wal_compression,
                                            log=lambda m, name=name: say(f"[{name}] {m}"), spark=args.spark,
                                            spark_memory=args.spark_memory, standalone=standalone))
                failed |= not results[-1]["ok"]
    except (BenchError, ClusterError, psycopg.Error, StandaloneError) as e:
        print(f"waldecode: error: {e}", file=sys.stderr)
        print(f"waldecode: kept the work directory {work_root}", file=sys.stderr)
        return EXIT_FAILED
    document["seconds"] = time.perf_counter() - t0
    document["load_average_at_end"] = list(os.getloadavg())
    document["ok"] = not failed
    sys.stdout.write(report.format_table(results))
    sys.stdout.write("\n" + report.format_verdicts(results))
    breakdown = report.format_spark_breakdown(results)
    if breakdown:
        sys.stdout.write("\n" + breakdown)
    sys.stdout.flush()
    json_path = args.output_dir / "bench.json"
    report.write_json(json_path, document)
    say(f"wrote {json_path}")
    if not args.no_chart:
        png = args.output_dir / "bench.png"
        report.write_chart(png, results)
        say(f"wrote {png}")
    if failed:
        # Loud on purpose: a benchmark of wrong output is worthless
        for r in results:
            for c in r["checks"]:
                if not c["ok"]:
                    print(f"waldecode: MISMATCH in {r['name']}: {c['what']}"
                          + (f" ({c['detail']})" if c["detail"] else ""), file=sys.stderr)
        print(f"waldecode: error: a check failed (outputs, or the Spark memory bound); kept the work directory "
              f"{work_root}", file=sys.stderr)
        return EXIT_FAILED
    if args.keep:
        say(f"kept the work directory {work_root}")
    else:
        remove_work_dir(work_root)
    return EXIT_OK
