"""``waldecode decode`` from each archive layout, against the same WAL as plain files.

Takes the work directory ``waldecode bench --keep`` leaves (``<dir>/<workload>/``: ``wal/``,
``catalog.json``, ``pg_recvlogical.txt``; the LSNs from its ``bench.json``), builds the layouts
the backup tools write from those segments with the compressors' own command-line tools at the
tools' default levels (pgBackRest: gz level 6, lz4 level 1, zst level 3, ``<segment>-<sha1>`` in
``archive/<stanza>/15-1/<16 hex>/``; barman: gzip, bzip2 under the bare name in ``wals/<16 hex>/``;
WAL-G: ``wal_005/<segment>.lz4|.lzma|.br|.zst``), then times ``decode`` from each (the median of
``--runs``), checks every output equals ``pg_recvlogical``'s, and prints a table: size on disk,
seconds, ratio to plain files.  (tests/live/test_archives.py checks the same layouts as the real
tools write them.)  With ``--s3``, each layout is also uploaded to an S3-compatible server on
127.0.0.1 (the tests' moto server over TLS, tests/support/s3server.py, ``--s3-delay`` seconds added
to every answer as a remote store's latency) and decoded from there.

    python benchmarks/bench_archives.py --bench-json bench-results/bench.json --work /tmp/waldecode-bench-XXXX [--s3]
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


def timed_decode(argv: list, out: Path, runs: int, env: dict) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(argv + ["--output", str(out)], check=True, stderr=subprocess.DEVNULL,
                       env=dict(env, WALDECODE_IMPL="cython"))
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--bench-json", required=True, help="bench.json of a 'waldecode bench --keep' run")
    p.add_argument("--work", required=True, help="the work directory it kept (holds <workload>/wal)")
    p.add_argument("--workload", default="pgbench")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--layouts", default=",".join(LAYOUTS))
    p.add_argument("--s3", action="store_true", help="also decode each layout from a local S3-compatible server")
    p.add_argument("--s3-delay", type=float, default=0.0, metavar="SECONDS",
                   help="latency added to every answer of the S3 server")
    args = p.parse_args()
    s3 = None
    if args.s3:
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "support"))
        from s3server import S3Server

        s3 = S3Server(buckets=["bench"], delay=args.s3_delay).__enter__()
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
                    "--start-lsn", w["wal"]["decode_start_lsn"], "--end-lsn", w["wal"]["end_lsn"]]
            local = timed_decode(argv + [str(path)], out, args.runs, dict(os.environ))
            same = out.read_bytes() == expected
            remote = None
            if s3 is not None:
                out.unlink()
                s3.upload("bench", {f"{name}/{f.relative_to(path)}": f.read_bytes()
                                    for f in sorted(path.rglob("*")) if f.is_file()})
                remote = timed_decode(argv + ["--endpoint-url", s3.endpoint_url, "--no-verify-tls", f"s3://bench/{name}"],
                                      out, args.runs, dict(os.environ, **s3.env()))
                same = same and out.read_bytes() == expected
            rows.append((name, size_of(path), local, remote, same))
            if name != "plain":
                shutil.rmtree(path)
    if s3 is not None:
        s3.__exit__(None, None, None)
    plain = next(r[2] for r in rows if r[0] == "plain") if any(r[0] == "plain" for r in rows) else None
    print(f"{'layout':<16} {'MiB on disk':>11} {'decode s':>9} {'vs plain':>9} {'from S3 s':>10} {'vs plain':>9}  identical")
    for name, size, secs, remote, same in rows:
        ratio = f"{secs / plain:.2f}x" if plain else "-"
        r_secs = f"{remote:.2f}" if remote is not None else "-"
        r_ratio = f"{remote / plain:.2f}x" if remote is not None and plain else "-"
        print(f"{name:<16} {size / 2**20:>11.1f} {secs:>9.2f} {ratio:>9} {r_secs:>10} {r_ratio:>9}  "
              f"{'yes' if same else 'NO'}")
    return 0 if all(r[4] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
