"""``waldecode decode`` from each archive layout, against the same WAL as plain files.

Takes the work directory ``waldecode bench --keep`` leaves (``<dir>/<workload>/``: ``wal/``,
``catalog.json``, ``pg_recvlogical.txt``; the LSNs from its ``bench.json``), builds the layouts
the backup tools write from those segments with the compressors' own command-line tools at the
tools' default levels (pgBackRest: gz level 6, lz4 level 1, zst level 3, ``<segment>-<sha1>`` in
``archive/<stanza>/15-1/<16 hex>/``; barman: gzip, bzip2 under the bare name in ``wals/<16 hex>/``;
WAL-G: ``wal_005/<segment>.lz4|.lzma|.br|.zst``), then times ``decode`` from each (the median of
``--runs``), checks every output equals ``pg_recvlogical``'s, and prints a table: size on disk,
seconds, ratio to plain files.  (tests/live/test_archives.py checks the same layouts as the real
tools write them.)

    python benchmarks/bench_archives.py --bench-json bench-results/bench.json --work /tmp/waldecode-bench-XXXX
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# name -> (layout, the compressor's command reading stdin, the file name's extension)
LAYOUTS = {
    "plain": ("plain", None, ""),
    "pgbackrest-gz": ("pgbackrest", ["gzip", "-6", "-c"], "gz"),
    "pgbackrest-lz4": ("pgbackrest", ["lz4", "-1", "-c"], "lz4"),
    "pgbackrest-zst": ("pgbackrest", ["zstd", "-3", "-c", "-q"], "zst"),
    "barman-gzip": ("barman", ["gzip", "-6", "-c"], ""),
    "barman-bzip2": ("barman", ["bzip2", "-9", "-c"], ""),
    "walg-lz4": ("walg", ["lz4", "-1", "-c"], "lz4"),
    "walg-lzma": ("walg", ["xz", "--format=lzma", "-6", "-c"], "lzma"),
    "walg-br": ("walg", ["brotli", "-q", "3", "-c"], "br"),
    "walg-zst": ("walg", ["zstd", "-3", "-c", "-q"], "zst"),
}


def build(name: str, wal: Path, root: Path) -> Path:
    """The layout ``name`` of the segments in ``wal`` under ``root``: the path to give decode."""
    layout, cmd, ext = LAYOUTS[name]
    if layout == "plain":
        return wal
    base = root / name
    for seg in sorted(wal.iterdir()):
        data = seg.read_bytes()
        packed = subprocess.run(cmd, input=data, capture_output=True, check=True).stdout
        if layout == "pgbackrest":
            leaf = base / "archive" / "main" / "15-1" / seg.name[:16]
            target = leaf / f"{seg.name}-{hashlib.sha1(data).hexdigest()}.{ext}"
        elif layout == "barman":
            leaf = base / "wals" / seg.name[:16]
            target = leaf / seg.name
        else:
            leaf = base / "wal_005"
            target = leaf / f"{seg.name}.{ext}"
        leaf.mkdir(parents=True, exist_ok=True)
        target.write_bytes(packed)
    if layout == "pgbackrest":
        from waldecode.wal.segments import identity_of

        first = sorted(wal.iterdir())[0]
        sysid = identity_of(first.read_bytes()[:8192], first).xlp_sysid
        (base / "backup" / "main").mkdir(parents=True)
        (base / "archive" / "main" / "archive.info").write_text(
            f"[db]\ndb-id=1\ndb-system-id={sysid}\ndb-version=\"15\"\n\n"
            f"[db:history]\n1={{\"db-id\":{sysid},\"db-version\":\"15\"}}\n")
    if layout == "barman":
        (base / "base").mkdir()
    return base


def size_of(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench-json", required=True, help="bench.json of a 'waldecode bench --keep' run")
    p.add_argument("--work", required=True, help="the work directory it kept (holds <workload>/wal)")
    p.add_argument("--workload", default="pgbench")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    args = p.parse_args()
    bench = json.load(open(args.bench_json))
    w = next(x for x in bench["workloads"] if x["name"] == args.workload)
    work = Path(args.work) / args.workload
    expected = (work / "pg_recvlogical.txt").read_bytes()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-archives-") as tmp:
        tmp = Path(tmp)
        for name in args.layouts.split(","):
            path = build(name, work / "wal", tmp)
            out = tmp / f"{name}.out"
            argv = [sys.executable, "-m", "waldecode.cli", "decode", "--quiet", "--catalog", str(work / "catalog.json"),
                    "--start-lsn", w["wal"]["decode_start_lsn"], "--end-lsn", w["wal"]["end_lsn"],
                    "--output", str(out), str(path)]
            times = []
            for _ in range(args.runs):
                started = time.perf_counter()
                subprocess.run(argv, check=True, stderr=subprocess.DEVNULL, env=dict(os.environ, WALDECODE_IMPL="cython"))
                times.append(time.perf_counter() - started)
            same = out.read_bytes() == expected
            rows.append((name, size_of(path), statistics.median(times), same))
            if name != "plain":
                shutil.rmtree(path)
    plain = next(r[2] for r in rows if r[0] == "plain") if any(r[0] == "plain" for r in rows) else None
    print(f"{'layout':<16} {'MiB on disk':>11} {'decode s':>9} {'vs plain':>9}  identical")
    for name, size, secs, same in rows:
        ratio = f"{secs / plain:.2f}x" if plain else "-"
        print(f"{name:<16} {size / 2**20:>11.1f} {secs:>9.2f} {ratio:>9}  {'yes' if same else 'NO'}")
    return 0 if all(r[3] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
