"""Access to the real-WAL fixtures under fixtures/ (made by fixtures/generate.py)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from waldecode.wal.xlogreader import parse_lsn

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"

# pg_waldump's record line (pg_waldump.c XLogDumpDisplayRecord)
WALDUMP_LINE = re.compile(
    r"^rmgr: (?P<rmgr>\S+)\s+len \(rec/tot\):\s+(?P<rec>\d+)/\s*(?P<tot>\d+), tx:\s+(?P<xid>\d+), "
    r"lsn: (?P<lsn>[0-9A-F]+/[0-9A-F]+), prev (?P<prev>[0-9A-F]+/[0-9A-F]+), desc: ")
# A per-record row of --stats=record: NAME/TYPE  count (pct) ...
STATS_ROW = re.compile(r"^(?P<label>\S+/\S+)\s+(?P<count>\d+) \(")


class Fixture:
    def __init__(self, path: Path):
        self.path = path
        self.meta = json.loads((path / "meta.json").read_text())
        self.name = f"{path.parent.name}/{path.name}"

    @property
    def wal_dir(self) -> Path:
        return self.path / "wal"

    @property
    def start_lsn(self) -> int:
        return parse_lsn(self.meta["start_lsn"])

    @property
    def end_lsn(self) -> int:
        return parse_lsn(self.meta["end_lsn"])

    @property
    def major(self) -> int:
        return int(self.meta["major"])

    def waldump_lines(self) -> list[str]:
        return [ln for ln in (self.path / "waldump.txt").read_text().split("\n") if ln.startswith("rmgr: ")]

    def waldump_records(self) -> list[tuple]:
        """(lsn, prev, rmgr, xid, rec_len, tot_len) of every line pg_waldump printed."""
        out = []
        for ln in self.waldump_lines():
            m = WALDUMP_LINE.match(ln)
            assert m, f"{self.name}: unparsable pg_waldump line {ln!r}"
            out.append((parse_lsn(m["lsn"]), parse_lsn(m["prev"]), m["rmgr"], int(m["xid"]),
                        int(m["rec"]), int(m["tot"])))
        return out

    def waldump_stats_counts(self) -> dict[str, int]:
        counts = {}
        for ln in (self.path / "waldump-stats.txt").read_text().split("\n"):
            m = STATS_ROW.match(ln)
            if m:
                counts[m["label"]] = int(m["count"])
        return counts


def all_fixtures() -> list[Fixture]:
    if not FIXTURES.is_dir():
        return []
    return [Fixture(p) for p in sorted(FIXTURES.glob("*/*")) if (p / "meta.json").is_file()
            and (p / "waldump.txt").is_file()]
