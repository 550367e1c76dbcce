"""One workload end to end: its WAL on a throw-away cluster, every tool timed on it, the outputs compared.

``run_workload`` starts a PostgreSQL 15 cluster (16 MB segments, wal_level=logical),
runs the workload's setup, takes the catalog snapshot, creates the test_decoding slots
(one for the peek and one per ``pg_recvlogical`` run, since a run moves its slot on),
CHECKPOINT, runs the workload, CHECKPOINT, and archives the WAL from the slots'
restart segment.  Then, ``runs`` times, each tool in ``tools.tools_for`` order.  It
checks that every ``waldecode decode`` output equals the first ``pg_recvlogical``
file byte for byte (and the other ``pg_recvlogical`` runs too), that decode left no
spill file, and that ``inspect --stats`` printed what ``pg_waldump --stats=record``
printed.  Hands ``report`` a dict: sizes, every run's numbers, medians, ratios, checks.
"""

from __future__ import annotations

import filecmp
import json
import shutil
import statistics
import time
from pathlib import Path

from ..catalog.dsn import snapshot_from_connection
from ..testing.cluster import Cluster
from ..wal.xlogreader import parse_lsn
from . import tools as T
from .measure import Measurement, run_measured, time_peek
from .sparkrun import (STANDALONE_MEMORY, breakdown, run_spark_measured, spark_decode_argv,
                       spark_decode_standalone)
from .workloads import DB, Workload

CLUSTER_SETTINGS = {"wal_keep_size": "8GB", "max_wal_size": "8GB", "checkpoint_timeout": "1h"}
PEEK_SLOT = "bench_peek"


def run_workload(wl: Workload, *, scale: float, runs: int, impls: list[str], work_dir: Path, keep: bool,
                 wal_compression: str, log, spark: bool = False, spark_memory: str | None = None,
                 standalone=None) -> dict:
    """``standalone``: a running ``spark.standalone.StandaloneCluster`` to time ``spark decode`` on too."""
    n = wl.size(scale)
    work_dir.mkdir(parents=True)
    result: dict = {"name": wl.name, "description": wl.describe(scale), "size": n, "checks": []}
    with Cluster(15, wal_segsize_mb=16, settings=CLUSTER_SETTINGS, wal_compression=wal_compression,
                 keep=keep) as c:
        result["server"] = c.version
        c.sql(f"CREATE DATABASE {DB}")
        recv_slots = [f"bench_recv_{i + 1}" for i in range(runs)]
        with c.connect(DB) as conn:
            log(f"setting up ({wl.describe(scale)})")
            wl.setup(c, conn, n)
            catalog = work_dir / "catalog.json"
            # The snapshot session must be like pg_recvlogical's, which empties search_path on connecting
            # (so test_decoding schema-qualifies every type name but pg_catalog's)
            with c.connect(DB, options="-c search_path=") as snap_conn:
                catalog.write_text(snapshot_from_connection(snap_conn).to_json())
            for slot in [PEEK_SLOT, *recv_slots]:
                conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (slot,))
            conn.execute("CHECKPOINT")
            restart, confirmed, first_seg = conn.execute(
                "SELECT min(restart_lsn)::text, min(confirmed_flush_lsn)::text, pg_walfile_name(min(restart_lsn)) "
                "FROM pg_replication_slots").fetchone()
            log("running the workload")
            t = time.perf_counter()
            wl.run(c, conn, n)
            result["workload_seconds"] = time.perf_counter() - t
            conn.execute("CHECKPOINT")
            end, last_seg = conn.execute("SELECT lsn::text, pg_walfile_name(lsn) "
                                         "FROM pg_current_wal_insert_lsn() lsn").fetchone()
            wal = c.archive_wal(work_dir / "wal", first_seg, last_seg)
            w = T.WalUnderTest(wal, catalog, restart, confirmed, end, c.bindir, c.socket_dir, c.port, DB,
                               c.tool_env())
            result["wal"] = {"start_lsn": restart, "decode_start_lsn": confirmed, "end_lsn": end,
                             "segment_files": len(list(wal.iterdir())), "bytes": parse_lsn(end) - parse_lsn(restart)}
            log(f"WAL {restart}..{end}: {result['wal']['bytes'] / 2**20:,.0f} MiB; "
                f"the workload took {result['workload_seconds']:.1f} s on the server")
            _measure_all(w, conn, result, runs=runs, impls=impls, work_dir=work_dir, log=log, spark=spark,
                         spark_memory=spark_memory, standalone=standalone)
    _summarise(result, _tools(impls, spark, standalone))
    return result


def _tools(impls: list[str], spark: bool, standalone) -> list[T.Tool]:
    """``tools.tools_for``'s (``spark``: with the local runs of ``spark decode``), and ``spark decode`` on the
    standalone cluster when there is one."""
    tools = T.tools_for(impls, spark)
    if standalone is not None:
        impl = "cython" if "cython" in impls else impls[0]
        tools.append(spark_decode_standalone(impl, standalone.workers, standalone.cores_per_worker))
    return tools


def _spark_target(tool: T.Tool, standalone, spark_memory: str | None) -> tuple[str, dict, list, str | None]:
    """(master, the driver's environment, the cluster's daemons to measure under, memory) of a ``spark decode``
    tool: ``local[N]``, or the standalone cluster's master with executors of ``--spark-memory`` (else
    ``sparkrun.STANDALONE_MEMORY``, what its workers offer)."""
    if "_standalone_" in tool.key:
        return (standalone.url, dict(standalone.env, WALDECODE_IMPL=tool.impl), standalone.pids,
                spark_memory or STANDALONE_MEMORY)
    return f"local[{int(tool.key.rsplit('local', 1)[1])}]", T.impl_env(tool.impl), [], spark_memory


def _measure_all(w: T.WalUnderTest, conn, result: dict, *, runs: int, impls: list[str], work_dir: Path,
                 log, spark: bool = False, spark_memory: str | None = None, standalone=None) -> None:
    tools = _tools(impls, spark, standalone)
    samples: dict[str, list[Measurement]] = {t.key: [] for t in tools}
    reference = work_dir / "pg_recvlogical.txt"
    stats_ref = work_dir / "pg_waldump-stats.txt"
    checks = result["checks"]

    def check(what: str, ok: bool, detail: str = "", compared: tuple | None = None) -> None:
        """``compared``: (this tool, the reference, the reference's size in bytes) of an equality check,
        which ``report.format_verdicts`` prints after the table."""
        checks.append({"what": what, "ok": ok, "detail": detail})
        if compared is not None:
            checks[-1]["compared"] = list(compared)
        if not ok:
            log(f"MISMATCH: {what}{': ' + detail if detail else ''}")

    # Runs interleave the tools, so a slow spell of the shared machine touches all of them alike
    for run in range(1, runs + 1):
        for tool in tools:
            out = work_dir / f"{tool.key}.out"
            if tool is T.WALDUMP_STATS:
                m = run_measured(T.waldump_argv(w, True), stdout=stats_ref, what="pg_waldump --stats")
            elif tool is T.WALDUMP:
                m = run_measured(T.waldump_argv(w, False), what="pg_waldump")
            elif tool is T.PEEK:
                m, rows = time_peek(conn, PEEK_SLOT, w.end_lsn)
                result["rows"] = rows
            elif tool is T.RECVLOGICAL:
                target = reference if run == 1 else out
                m = run_measured(T.recvlogical_argv(w, f"bench_recv_{run}", target), env=w.tool_env,
                                 what="pg_recvlogical")
                if run > 1:
                    check(f"pg_recvlogical run {run} wrote what run 1 wrote", filecmp.cmp(reference, out, False),
                          compared=(f"pg_recvlogical -f run {run}", "pg_recvlogical -f run 1",
                                    reference.stat().st_size))
                    out.unlink()
            elif tool.key.startswith("inspect_stats_"):
                m = run_measured(T.inspect_argv(w, True), stdout=out, env=T.impl_env(tool.impl), what=tool.label)
                check(f"{tool.label} printed what pg_waldump --stats=record printed (run {run})",
                      filecmp.cmp(stats_ref, out, False),
                      compared=(tool.label, "pg_waldump --stats=record", stats_ref.stat().st_size))
                out.unlink()
            elif tool.key.startswith("spark_decode_"):
                master, env, daemons, memory = _spark_target(tool, standalone, spark_memory)
                parts = work_dir / "spark-parts"
                parts.mkdir(exist_ok=True)
                timings = work_dir / "spark-timings.json"
                m = run_spark_measured(spark_decode_argv(w, out, master, memory, parts, timings), env=env,
                                       what=tool.label, daemons=daemons)

                m.phases = breakdown(m, json.loads(timings.read_text()), result["wal"]["bytes"])
                log(f"run {run}/{runs}: {tool.label}: fixed {m.phases['fixed_s']} s, serial {m.phases['serial_s']} s, "
                    f"parallel {m.phases['parallel_cpu_s']} CPU s ({m.phases['method']} path; phases "
                    + ", ".join(f"{k} {v:.2f}" for k, v in m.phases["phases"].items()) + "); 1 TiB predicted: "
                    + ", ".join(f"{v:,.0f} s on {n} cores" for n, v in m.phases["predicted_1tib_s"].items()))
                same = filecmp.cmp(reference, out, False)
                check(f"{tool.label} output equals pg_recvlogical's byte for byte (run {run})", same,
                      "" if same else f"compare {out} with {reference}",
                      compared=(tool.label, "pg_recvlogical -f", reference.stat().st_size))
                if spark_memory:
                    check(f"{tool.label}: Python workers' peak RSS under 300 MB with {spark_memory} of memory "
                          f"(run {run})", m.rss_mb < 300, f"{m.rss_mb:.0f} MB")
                result.setdefault("spark", {"memory": spark_memory or "Spark's default"})
                if same:
                    out.unlink()
            elif tool.key.startswith("inspect_"):
                m = run_measured(T.inspect_argv(w, False), env=T.impl_env(tool.impl), what=tool.label)
            else:
                spill = work_dir / f"spill-{tool.impl}"
                spill.mkdir(exist_ok=True)
                m = run_measured(T.decode_argv(w, out, spill), env=T.impl_env(tool.impl), what=tool.label)
                same = filecmp.cmp(reference, out, False)
                check(f"{tool.label} output equals pg_recvlogical's byte for byte (run {run})", same,
                      "" if same else f"compare {out} with {reference}",
                      compared=(tool.label, "pg_recvlogical -f", reference.stat().st_size))
                left = sorted(p.name for p in spill.iterdir())
                check(f"{tool.label} left no spill files (run {run})", not left, ", ".join(left[:5]))
                if same:
                    out.unlink()  # outputs that differ stay for a post-mortem
            samples[tool.key].append(m)
            rss = "RSS n/a" if m.rss_mb is None else f"{m.rss_mb:,.0f} MB"
            if m.extra:
                rss += " (Python workers' peak; " + ", ".join(f"{k} {v:,.0f}" for k, v in m.extra.items()) + ")"
            log(f"run {run}/{runs}: {tool.label}: {m.seconds:.2f} s, {rss}")
        if run == 1:
            result["records"] = _waldump_total(stats_ref)
            result["changes"] = _count_changes(reference)
    result["tools"] = {key: [m.to_json() for m in ms] for key, ms in samples.items()}


def _waldump_total(stats: Path) -> int:
    """The record count of pg_waldump --stats: the 'Total' line's first number."""
    for line in reversed(stats.read_text().splitlines()):
        if line.startswith("Total"):
            return int(line.split()[1])
    raise ValueError(f"no Total line in {stats}")


def _count_changes(decoded: Path) -> int:
    """Changes in test_decoding text: one line each ('table ...', 'message: ...'), BEGIN/COMMIT aside."""
    with open(decoded, "rb") as f:
        return sum(1 for line in f if line.startswith((b"table ", b"message:")))


def _summarise(result: dict, tools: list[T.Tool]) -> None:
    """Medians, ratios to the reference tool, peak RSS and rates, next to the raw runs."""
    runs = result.pop("tools")
    summary = []
    medians = {t.key: statistics.median(m["seconds"] for m in runs[t.key]) for t in tools}
    for t in tools:
        med = medians[t.key]
        rss = [m["rss_mb"] for m in runs[t.key] if m["rss_mb"] is not None]
        count = result["records"] if t.unit == "records" else result["changes"]
        summary.append({
            "key": t.key, "label": t.label, "unit": t.unit, "reference": t.reference, "impl": t.impl,
            "median_seconds": med,
            "ratio": med / medians[t.reference] if t.reference else None,
            "peak_rss_mb": max(rss) if rss else None,
            "rate_per_second": count / med if med > 0 else None,
            "runs": runs[t.key],
        })
    result["tools"] = summary
    result["ok"] = all(c["ok"] for c in result["checks"])


def remove_work_dir(work_dir: Path) -> None:
    shutil.rmtree(work_dir, ignore_errors=True)
