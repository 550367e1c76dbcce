"""The benchmark's report: a text table, a JSON file with every run, and a PNG bar chart.

Takes what ``runner.run_workload`` returned for each workload.  The table has one
line per workload and tool: median seconds, the ratio to the tool it is compared with
(decode to pg_recvlogical, inspect --stats to pg_waldump --stats, inspect to
pg_waldump), peak RSS (n/a for the server's peek, which runs in a backend) and the
rate in records/s or changes/s.  The JSON adds machine and version information and the
checks; the chart shows the medians per workload.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

from .. import _impl
from .sparkrun import MODEL


def _fmt_rate(rate: float | None, unit: str) -> str:
    if rate is None:
        return "-"
    return f"{rate:,.0f} {unit}/s"


def format_table(results: list[dict]) -> str:
    header = ("workload", "tool", "median s", "ratio", "peak RSS MB", "rate")
    rows = []
    for r in results:
        for t in r["tools"]:
            rows.append((r["name"], t["label"], f"{t['median_seconds']:.3f}",
                         f"{t['ratio']:.2f}x" if t["ratio"] is not None else "ref" if t["key"] != "peek" else "",
                         f"{t['peak_rss_mb']:.1f}" if t["peak_rss_mb"] is not None else "n/a",
                         _fmt_rate(t["rate_per_second"], t["unit"])))
    widths = [max(len(str(x[i])) for x in [header, *rows]) for i in range(len(header))]
    right = {2, 3, 4, 5}

    def line(cells) -> str:
        return "  ".join(str(c).rjust(w) if i in right else str(c).ljust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()

    out = [line(header), line(["-" * w for w in widths])]
    previous = None
    for row in rows:
        if previous is not None and row[0] != previous:
            out.append("")
        out.append(line(row))
        previous = row[0]
    notes = []
    for r in results:
        wal = r["wal"]
        notes.append(f"{r['name']}: {r['description']}; WAL {wal['start_lsn']}..{wal['end_lsn']} "
                     f"({wal['bytes'] / 2**20:,.0f} MiB), {r['records']:,} records, {r['changes']:,} changes")
    return "\n".join(out + [""] + notes) + "\n"


def _size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def format_verdicts(results: list[dict]) -> str:
    """After the table: one line per comparison the runs checked, ``identical: A = B (size)`` when every
    run's output equalled the reference byte for byte, ``DIFFERENT: A != B (...)`` otherwise."""
    out = []
    for r in results:
        seen: dict = {}
        for c in r["checks"]:
            if "compared" in c:
                a, b, size = c["compared"]
                seen.setdefault((a, b), []).append((c["ok"], size))
        for (a, b), runs in seen.items():
            size = _size(runs[0][1])
            bad = sum(1 for ok, _ in runs if not ok)
            where = f"{r['name']}: " if len(results) > 1 else ""
            if bad:
                out.append(f"DIFFERENT: {where}{a} != {b} ({size}; {bad} of {len(runs)} runs differ)")
            else:
                out.append(f"identical: {where}{a} = {b} ({size}" + (f", {len(runs)} runs" if len(runs) > 1 else "")
                           + ")")
    return "".join(line + "\n" for line in out)


def format_spark_breakdown(results: list[dict]) -> str:
    """After the verdicts: for each ``spark decode`` timed (local or on a standalone cluster), its fixed, serial
    and parallel parts (the run nearest the median) and the wall time they predict for 1 TiB of WAL; then the
    model they are predicted by, in one line (``sparkrun.MODEL``; ``sparkrun.breakdown`` says more)."""
    out = []
    for r in results:
        for t in r["tools"]:
            runs = [m for m in t["runs"] if m.get("phases")]
            if not runs:
                continue
            m = min(runs, key=lambda m: abs(m["seconds"] - t["median_seconds"]))
            b = m["phases"]
            where = f"{r['name']}: " if len(results) > 1 else ""
            out.append(f"{where}{t['label']}: {m['seconds']:.2f} s wall; fixed {b['fixed_s']:.2f} s (context start, warm-up), "
                       f"serial {b['serial_s']:.2f} s (driver), {b['parallel_cpu_s']:.2f} CPU s in the Python workers "
                       f"({b['method']} path); the model gives {b['modelled_s']:.2f} s on this WAL and "
                       f"{b['cores']} core{'s' if b['cores'] != 1 else ''}; 1 TiB predicted: "
                       + ", ".join(f"{v:,.0f} s on {n} cores" for n, v in b["predicted_1tib_s"].items()))
    if out:
        out.append(f"model: {MODEL}")
    return "".join(line + "\n" for line in out)


def _cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _mem_total_mb() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def _version(pkg: str) -> str | None:
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def _tool_version(path: Path) -> str | None:
    try:
        return subprocess.run([str(path), "--version"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return None


def environment(bindir: Path | None) -> dict:
    """Machine and versions, for the JSON."""
    machine = {"platform": platform.platform(), "cpu": _cpu_model(), "cpus": os.cpu_count(),
               "memory_mb": _mem_total_mb(), "load_average_at_start": os.getloadavg()}
    versions = {"python": sys.version.split()[0], "waldecode": _version("waldecode"),
                "implementations": _impl.available(), "psycopg": _version("psycopg"),
                "tqdm": _version("tqdm"), "matplotlib": _version("matplotlib")}
    if bindir is not None:
        for tool in ("postgres", "pg_waldump", "pg_recvlogical", "pgbench"):
            versions[tool] = _tool_version(bindir / tool)
    return {"machine": machine, "versions": versions}


def write_json(path: Path, document: dict) -> None:
    path.write_text(json.dumps(document, indent=2) + "\n")


def write_chart(path: Path, results: list[dict]) -> None:
    """One panel per workload: median seconds per tool (log scale), ratio to the reference beside each bar."""
    # lazy: matplotlib (0.3 s) is the optional [bench] extra, not needed with --no-chart; pyplot after use()
    import matplotlib

    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt  # lazy: after matplotlib.use("Agg"), which must come first

    height = 0.45 * sum(len(r["tools"]) for r in results) + 1.2 * len(results) + 0.4
    fig, axes = plt.subplots(len(results), 1, figsize=(9, height), squeeze=False)
    for ax, r in zip(axes[:, 0], results):
        tools = r["tools"]
        labels = [t["label"] for t in tools]
        secs = [t["median_seconds"] for t in tools]
        colors = ["#4c72b0" if t["impl"] is None else "#dd8452" if t["impl"] == "cython" else "#c44e52"
                  for t in tools]
        bars = ax.barh(range(len(tools)), secs, color=colors)
        ax.set_yticks(range(len(tools)), labels, fontsize=8)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("median seconds (log scale)", fontsize=8)
        ax.set_title(f"{r['name']}: {r['description']}", fontsize=9, loc="left")
        for bar, t in zip(bars, tools):
            text = f" {t['median_seconds']:.2f} s" + (f"  ({t['ratio']:.1f}x)" if t["ratio"] is not None else "")
            ax.text(bar.get_width(), bar.get_y() + bar.get_height() / 2, text, va="center", fontsize=7)
        ax.set_xlim(right=max(secs) * 20)  # room for the labels
    fig.suptitle("waldecode against PostgreSQL 15's tools on the same WAL (blue: PostgreSQL; orange: waldecode "
                 "Cython; red: pure Python)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.4 / height))  # the top 0.4 inch for the suptitle
    fig.savefig(path, dpi=110)
    plt.close(fig)
