"""The main job on the bundled fixtures: decode real WAL offline and compare with the servers.

``python -m waldecode.demo [--fixtures DIR]`` (what ``./dev demo`` runs): for every
fixture under ``fixtures/`` (WAL written by real PostgreSQL 15, 16 and 18 servers),
print it with ``inspect`` and compare with the server's own ``pg_waldump`` output,
and decode it and compare with the server's own logical decoding: ``test_decoding``'s
rows where the fixture has them (PostgreSQL 15), else ``pgoutput``'s messages (the 16
and 18 servers the fixtures come from are built without contrib, so without
test_decoding).  Needs no server.  Prints one line per fixture and a total; exits
non-zero if anything differs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from . import _impl, waldump
from .catalog import Catalog
from .output.pgoutput import PgOutput
from .output.test_decoding import TestDecoding
from .logical.session import decode_wal
from .wal.xlogreader import XLogReader, parse_lsn

def inspect_matches(path: Path, meta: dict) -> tuple[int, int]:
    reader = XLogReader([path / "wal"], parse_lsn(meta["start_lsn"]), parse_lsn(meta["end_lsn"]))
    lines = [waldump.format_record(r, reader.major) for r in reader]
    expected = [ln for ln in (path / "waldump.txt").read_text().split("\n") if ln]
    return sum(1 for a, b in zip(lines, expected) if a == b), len(expected)


def decode_matches(path: Path, meta: dict, out_file: str, spec: dict) -> tuple[int, int, list[str]]:
    """Decode as the fixture's slot decoded: from its confirmed position."""
    catalog = Catalog.load(path / "snapshot.json.gz")
    slot = next(s for s in meta["slots"] if s["name"] == spec["slot"])
    rows: list[str] = []
    plugin = TestDecoding(rows.append)
    decode_wal([path / "wal"], catalog, plugin, plugin_options=spec["options"],
               start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=parse_lsn(meta["end_lsn"]),
               two_phase=slot["two_phase"])
    expected = [json.loads(line)[2] for line in (path / out_file).read_text(encoding="ascii").splitlines()]
    same = sum(1 for a, b in zip(rows, expected) if a == b)
    return same - abs(len(rows) - len(expected)), len(expected), rows


def pgoutput_matches(path: Path, meta: dict, out_file: str, spec: dict) -> tuple[int, int]:
    """Decode with pgoutput as the fixture's pgoutput slot did; its messages as bytes."""
    catalog = Catalog.load(path / "snapshot.json.gz")
    slot = next(s for s in meta["slots"] if s["name"] == spec["slot"])
    got: list[bytes] = []
    plugin = PgOutput(lambda m: got.append(m.encode("utf-8", "surrogateescape")))
    decode_wal([path / "wal"], catalog, plugin, plugin_options=spec["options"],
               start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=parse_lsn(meta["end_lsn"]),
               two_phase=slot["two_phase"])
    expected = [bytes.fromhex(json.loads(line)[2])
                for line in (path / out_file).read_text(encoding="ascii").splitlines()]
    same = sum(1 for a, b in zip(got, expected) if a == b)
    return same - abs(len(got) - len(expected)), len(expected)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="waldecode.demo", description=__doc__.split("\n\n")[0])
    ap.add_argument("--fixtures", default=str(Path(__file__).resolve().parent.parent / "fixtures"))
    ap.add_argument("--show", default="pg15-lz4/interleaved", help="fixture whose decoded output to print")
    args = ap.parse_args(argv)
    root = Path(args.fixtures)
    dirs = sorted(p for p in root.glob("*/*") if (p / "meta.json").is_file())
    if not dirs:
        print(f"no fixtures under {root}", file=sys.stderr)
        return 2
    print(f"waldecode {_impl.IMPL} implementation; {len(dirs)} fixtures under {root}")
    print(f"{'fixture':32} {'inspect = pg_waldump':>22} {'decode = server slot':>24}")
    bad = 0
    t0 = time.perf_counter()
    shown = None
    for path in dirs:
        meta = json.loads((path / "meta.json").read_text())
        name = f"{path.parent.name}/{path.name}"
        same, total = inspect_matches(path, meta)
        bad += same != total
        dec = "-"
        for out_file, spec in meta.get("decoding_options", {}).items():
            if spec.get("plugin") != "test_decoding" or out_file != "test_decoding.jsonl":
                continue
            dsame, dtotal, rows = decode_matches(path, meta, out_file, spec)
            bad += dsame != dtotal
            dec = f"{dsame}/{dtotal} rows"
            if name == args.show:
                shown = rows
        options = meta.get("decoding_options", {})
        if dec == "-" and options.get("pgoutput.jsonl", {}).get("plugin") == "pgoutput":
            # no test_decoding in this server's build: its pgoutput slot is the oracle
            dsame, dtotal = pgoutput_matches(path, meta, "pgoutput.jsonl", options["pgoutput.jsonl"])
            bad += dsame != dtotal
            dec = f"{dsame}/{dtotal} pgoutput msgs"
        print(f"{name:32} {f'{same}/{total} lines':>22} {dec:>24}")
    print(f"{'all equal' if not bad else f'{bad} DIFFERENCES'} in {time.perf_counter() - t0:.1f}s")
    print("decode: test_decoding's rows where the server had it (15), else pgoutput's messages "
          "(the 16 and 18 servers are built without test_decoding)")
    if shown:
        print(f"\nwaldecode decode of {args.show} (first rows):")
        for row in shown[:12]:
            print("  " + row)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
