"""Recovery targets (``logical.targets``): the transaction-end scan and what times become.

The scan (header-only framing, each commit or abort read as far as its time and flags) must
find exactly the COMMIT, ABORT, COMMIT_PREPARED and ABORT_PREPARED records pg_waldump printed
for every fixture, with their xids and times, under both implementations.  On WAL written by
``walgen`` (origin and top-level-xid headers, long records across pages, times out of LSN
order, equal times), ``resolve_times`` follows recoveryStopsBefore: the end is the first commit
or abort whose time is after the target, the start the first commit at or after it, and a time
before or after the WAL's commits is one line naming the WAL's first or last commit.  Times
read and print as PostgreSQL's timestamptz text does.  The catalog check (``catalog.choose``)
on the same scan: a commit with invalidations counts when its transaction wrote a tracked
catalog's row, or may have begun before the first running-xacts record read; ANALYZE's shape
(pg_statistic rows, pg_class in place) does not.
"""

from __future__ import annotations

import re
import struct
from datetime import timedelta, timezone

import pytest

from fixture_data import all_fixtures
from walgen import Block, Record, WALWriter
from waldecode.errors import UsageError
from waldecode.logical.targets import (
    TimeTargetError,
    XactScan,
    format_timestamp,
    parse_timestamp,
    resolve_times,
    zone_named,
)
from waldecode.pg.lsn import parse_lsn
from waldecode.rmgr import RM_HEAP_ID, RM_XACT_ID
from waldecode.rmgr.xact import (
    XACT_XINFO_HAS_DBINFO,
    XACT_XINFO_HAS_INVALS,
    XACT_XINFO_HAS_SUBXACTS,
    XLOG_XACT_ABORT,
    XLOG_XACT_COMMIT,
    XLOG_XACT_HAS_INFO,
)
from waldecode.wal.segments import discover

# pg_waldump's transaction-end description: "COMMIT 2026-11-24 14:38:43.095092 UTC", "COMMIT_PREPARED 912: ..."
_END = re.compile(r"tx:\s+(\d+), lsn: (\S+), prev \S+, desc: (COMMIT|ABORT|COMMIT_PREPARED|ABORT_PREPARED) "
                  r"(?:(\d+): )?(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{6}) UTC")


def _utc_text(ts: int) -> str:
    """A TimestampTz as pg_waldump prints it with TZ=UTC (timestamptz_to_str: always six digits)."""
    return format_timestamp(ts - ts % 1_000_000, timezone.utc)[:19] + f".{ts % 1_000_000:06d}"


@pytest.mark.parametrize("fx", all_fixtures(), ids=lambda f: f.name)
def test_the_scan_finds_what_pg_waldump_printed(fx, impl):
    segments = discover([fx.wal_dir])
    want = []
    for line in fx.waldump_lines():
        m = _END.search(line)
        if m:
            want.append((parse_lsn(m[2]), int(m[4]) if m[4] else int(m[1]), m[3].split("_")[0], m[5]))
    got = [(x.lsn, x.xid, "COMMIT" if x.is_commit else "ABORT", _utc_text(x.time))
           for x in XactScan(segments, fx.start_lsn, fx.end_lsn)]
    assert got == want
    assert want  # every fixture commits something


# -- synthetic WAL ---------------------------------------------------------------------------------

T0 = parse_timestamp("2026-11-24 14:00:00+00", timezone.utc)
SECOND = 1_000_000


def xact(op: int, xid: int, t: int, *, xinfo: int | None = None, subxacts=(), origin=None, toplevel=None,
         pad: int = 0) -> Record:
    main = struct.pack("<q", t)
    info = op
    if xinfo is not None:
        info |= XLOG_XACT_HAS_INFO
        main += struct.pack("<I", xinfo)
        if xinfo & XACT_XINFO_HAS_DBINFO:
            main += struct.pack("<II", 5, 1663)
        if xinfo & XACT_XINFO_HAS_SUBXACTS:
            main += struct.pack("<i", len(subxacts)) + struct.pack(f"<{len(subxacts)}I", *subxacts)
        if xinfo & XACT_XINFO_HAS_INVALS:
            main += struct.pack("<i", pad) + bytes(16 * pad)  # many invalidations: a long record
    return Record(RM_XACT_ID, info, xid=xid, main_data=main, origin=origin, toplevel_xid=toplevel)


def heap(xid: int, n: int = 40) -> Record:
    return Record(RM_HEAP_ID, 0x00, xid=xid, main_data=bytes(3), blocks=(Block(0, data=bytes(n)),))


# (op, xid, seconds after T0): times out of LSN order, two equal ones, an abort after the target
ENDS = [(XLOG_XACT_COMMIT, 740, 10), (XLOG_XACT_COMMIT, 741, 20), (XLOG_XACT_ABORT, 742, 30),
        (XLOG_XACT_COMMIT, 744, 25), (XLOG_XACT_COMMIT, 743, 40), (XLOG_XACT_COMMIT, 745, 40),
        (XLOG_XACT_COMMIT, 746, 50)]


@pytest.fixture(scope="module")
def wal(tmp_path_factory):
    d = tmp_path_factory.mktemp("targets")
    w = WALWriter(major=15, seg_size=1 << 20)
    lsns = []
    for i, (op, xid, secs) in enumerate(ENDS):
        w.append(heap(xid, 3000 if i == 3 else 40))
        kw = {}
        if i == 1:
            kw = dict(xinfo=XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_SUBXACTS, subxacts=(900, 901), origin=7)
        elif i == 3:
            kw = dict(xinfo=XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_INVALS, pad=700, toplevel=None)
        elif i == 5:
            kw = dict(xinfo=0, toplevel=745)
        lsns.append(w.append(xact(op, xid, T0 + secs * SECOND, **kw)).lsn)
        w.fill_to(w.insert_lsn + 20000)  # some records between, and the last ones in the next segment
    w.write(d)
    return discover([d]), lsns


def test_synthetic_ends_are_scanned_with_their_times_and_subtransactions(wal, impl):
    segments, lsns = wal
    got = list(XactScan(segments))
    assert [(x.lsn, x.xid, x.time) for x in got] == [(lsn, xid, T0 + s * SECOND) for lsn, (_op, xid, s) in
                                                      zip(lsns, ENDS)]
    assert got[1].subxacts == (900, 901) and [x.is_commit for x in got] == [op == XLOG_XACT_COMMIT for op, *_ in ENDS]


def at(secs: float) -> str:
    return format_timestamp(T0 + int(secs * SECOND), timezone.utc)


def test_end_time_stops_before_the_first_end_after_it(wal):
    segments, lsns = wal
    utc = timezone.utc
    # At 20 s: the abort at 30 s is the first end after it (the commit at 25 s after that is not read)
    assert resolve_times(segments, None, at(20), utc).end_lsn == lsns[2]
    assert resolve_times(segments, None, at(29.5), utc).end_lsn == lsns[2]
    # Two commits at 40 s: both included at 40 s, the end is the commit at 50 s
    assert resolve_times(segments, None, at(40), utc).end_lsn == lsns[6]
    assert resolve_times(segments, None, at(39.999999), utc).end_lsn == lsns[4]
    # From a start: ends before it do not count (the abort at 30 s)
    b = resolve_times(segments, None, at(30), utc, start_lsn=lsns[3])
    assert (b.start_lsn, b.end_lsn) == (lsns[3], lsns[4])
    with pytest.raises(TimeTargetError, match=r"^--end-time .* is before the first commit or abort at the start, "
                                              r"the commit of transaction 744 "):
        resolve_times(segments, None, at(20), utc, start_lsn=lsns[3])


def test_start_time_is_the_first_commit_at_or_after_it(wal):
    segments, lsns = wal
    utc = timezone.utc
    assert resolve_times(segments, at(20), None, utc).start_lsn == lsns[1]
    assert resolve_times(segments, at(20.5), None, utc).start_lsn == lsns[3]  # the abort at 30 s is no start
    assert resolve_times(segments, at(26), None, utc).start_lsn == lsns[4]
    b = resolve_times(segments, at(20), at(40), utc)
    assert (b.start_lsn, b.end_lsn) == (lsns[1], lsns[6])


def test_times_outside_the_wal_are_one_line(wal):
    segments, lsns = wal
    utc = timezone.utc
    with pytest.raises(TimeTargetError) as e:
        resolve_times(segments, at(5), None, utc)
    assert str(e.value) == (f"--start-time {at(5)} is at or before the first commit in the WAL, the commit of "
                            f"transaction 740 at 0/{lsns[0]:X} ({at(10)}): commits between {at(5)} and the input's "
                            f"first segment 000000010000000000000001 cannot be seen; add the segments before it, "
                            "or give a later --start-time")
    with pytest.raises(TimeTargetError, match=r"^--start-time .* is after the last commit in the WAL, the commit "
                                              r"of transaction 746 .*: nothing to decode$"):
        resolve_times(segments, at(51), None, utc)
    with pytest.raises(TimeTargetError, match=r"^--end-time .* is before the first commit or abort in the WAL, "
                                              r"the commit of transaction 740 .*: nothing to decode$"):
        resolve_times(segments, None, at(9), utc)
    b = resolve_times(segments, None, at(60), utc)
    assert b.end_lsn is None and len(b.notes) == 1
    assert b.notes[0].startswith(f"the WAL ends before --end-time {at(60)}: no commit or abort after it (the last: "
                                 "the commit of transaction 746 at ")
    with pytest.raises(UsageError, match="--end-time .* is before --start-time"):
        resolve_times(segments, at(30), at(20), utc)


def test_time_text_reads_as_postgresql_writes_it():
    berlin = zone_named("Europe/Berlin", "TimeZone")
    t = parse_timestamp("2026-11-24 14:03:00+00", berlin)
    assert parse_timestamp("2026-11-24 15:03", berlin) == t  # no offset: the zone given (CET)
    assert parse_timestamp("2026-11-24T14:03:00Z", berlin) == t
    assert parse_timestamp("2026-11-24 16:03:00+02", berlin) == t
    assert parse_timestamp("2026-11-24 09:03:00 America/New_York", timezone.utc) == t
    assert parse_timestamp("2026-11-24 14:03:00.25+00", berlin) == t + 250_000
    assert format_timestamp(t, berlin) == "2026-11-24 15:03:00+01"
    assert format_timestamp(t + 250_000, timezone.utc) == "2026-11-24 14:03:00.25+00"
    assert format_timestamp(t, zone_named("Asia/Kolkata", "TimeZone")) == "2026-11-24 19:33:00+05:30"
    assert parse_timestamp("2000-01-01 00:00:00+00", berlin) == 0
    assert zone_named("UTC", "x") is timezone.utc and zone_named("GMT", "x").utcoffset(None) == timedelta(0)
    with pytest.raises(UsageError, match="'yesterday' is not a timestamp"):
        parse_timestamp("yesterday", berlin, "--end-time")
    with pytest.raises(UsageError, match="'Mars/Olympus' is not a time zone"):
        parse_timestamp("2026-11-24 14:03 Mars/Olympus", berlin, "--end-time")


# -- the catalog check's use of the scan (catalog.choose.first_catalog_change) ----------------------------

DB, SPC = 16384, 1663
PG_CLASS_NODE, PG_STATISTIC_NODE = 1259, 2619


def _catalog(lsn: int):
    """A snapshot taken at ``lsn`` whose tracked catalogs live in relfilenode = OID (pg_class 1259...)."""
    from waldecode.catalog import Catalog, Relation, TRACKED_CATALOGS

    rels = {oid: Relation(oid, name, "pg_catalog", "r", "p", oid, 0, "n") for oid, name in TRACKED_CATALOGS.items()}
    return Catalog("15.0", 150000, 15, lsn, "db", DB, SPC, {"TimeZone": "UTC"}, rels, {},
                   system_identifier=None)


def running_xacts(next_xid: int, running=()) -> Record:
    main = struct.pack("<iiB3xIII", len(running), 0, 0, next_xid, min(running, default=next_xid), next_xid - 1)
    return Record(8, 0x10, main_data=main + struct.pack(f"<{len(running)}I", *running))  # RM_STANDBY_ID


def catalog_write(xid: int, node: int, op: int = 0x20) -> Record:
    """A heap record of ``xid`` on relfilenode ``node`` (UPDATE by default; 0x70 INPLACE)."""
    return Record(RM_HEAP_ID, op, xid=xid, main_data=bytes(14), blocks=(Block(0, rel=(SPC, DB, node), data=bytes(30)),))


def invals_commit(xid: int, t: int = T0) -> Record:
    return xact(XLOG_XACT_COMMIT, xid, t, xinfo=XACT_XINFO_HAS_DBINFO | XACT_XINFO_HAS_INVALS, pad=2)


def _first_change(tmp_path, records, snapshot_after: int = -1, beyond: int = 0):
    """first_catalog_change over ``records`` for a snapshot taken after the record at ``snapshot_after``
    (default: after all; ``beyond`` bytes later), reading from the first record."""
    from waldecode.catalog.choose import first_catalog_change

    w = WALWriter(major=15, seg_size=1 << 20)
    written = [w.append(r) for r in records]
    w.write(tmp_path)
    lsn = (written[snapshot_after].end if snapshot_after >= 0 else w.insert_lsn) + beyond
    return first_catalog_change(discover([tmp_path]), _catalog(lsn), written[0].lsn), written


def test_analyze_like_commits_do_not_count_but_catalog_rows_do(tmp_path):
    """ANALYZE: pg_statistic rows and an in-place pg_class update, a commit with invalidations: not a
    change.  A pg_class UPDATE is, and so is a transaction running at the reading start (what it wrote
    before is not read)."""
    records = [running_xacts(800, running=(799,)),
               catalog_write(800, PG_STATISTIC_NODE), catalog_write(800, PG_CLASS_NODE, op=0x70), invals_commit(800),
               catalog_write(799, PG_STATISTIC_NODE), invals_commit(799),
               catalog_write(801, PG_STATISTIC_NODE), catalog_write(801, PG_CLASS_NODE), invals_commit(801)]
    found, w = _first_change(tmp_path / "a", records)
    assert found is not None and (found.xid, found.lsn) == (799, w[5].lsn)
    found, w = _first_change(tmp_path / "b", records[:4] + records[6:])
    assert found is not None and (found.xid, found.lsn) == (801, w[6].lsn)
    # the snapshot taken before that commit: nothing changed before it
    found, _w = _first_change(tmp_path / "c", records[:4] + records[6:], snapshot_after=5)
    assert found is None
    # no running-xacts record before the commit: what began before the start cannot be told apart
    found, _w = _first_change(tmp_path / "d", records[1:4])
    assert found is not None and found.xid == 800
    # a snapshot taken after the end of the WAL given: what happened in between cannot be seen
    stop, w = _first_change(tmp_path / "e", records[:4], beyond=2 << 20)
    assert (stop.kind, stop.lsn) == ("end", (w[-1].end + 7) & ~7), stop


def test_check_snapshot_says_why_in_one_line(tmp_path):
    from waldecode.catalog.choose import SnapshotMismatchError, check_snapshot

    w = WALWriter(major=15, seg_size=1 << 20, sysid=7300000000000000001)
    written = [w.append(r) for r in (running_xacts(800), catalog_write(800, PG_CLASS_NODE), invals_commit(800),
                                     running_xacts(801))]
    w.write(tmp_path)
    segments = discover([tmp_path])
    start = written[0].lsn
    late = _catalog(w.insert_lsn)
    late.source = "late.json"
    with pytest.raises(SnapshotMismatchError) as e:
        check_snapshot(late, segments, start)
    assert str(e.value).startswith(f"the catalog snapshot late.json was taken at 0/{w.insert_lsn:X}, after the "
                                   f"reading start 0/{start:X}, and transaction 800 changed the catalog in between "
                                   f"(committed at 0/{written[2].lsn:X}, 2026-11-24 14:00:00+00): ")
    # taken after the WAL's end (from the live server, after the archive's last segment): no change in the
    # WAL read, taken with a note that what came after its end cannot be seen
    beyond = _catalog(w.insert_lsn + (1 << 20))
    notes = []
    check_snapshot(beyond, segments, written[2].end, say=notes.append)
    assert len(notes) == 1 and re.match(r"note: the catalog snapshot was taken at .*, after the end of the WAL "
                                        r"read .*: no transaction changed the catalog from the start .* to there; "
                                        r"changes after it cannot be seen", notes[0]), notes
    assert beyond.valid_from == written[2].end
    with pytest.raises(SnapshotMismatchError, match="transaction 800 changed the catalog"):
        check_snapshot(_catalog(w.insert_lsn + (1 << 20)), segments, start)
    foreign = _catalog(0)
    foreign.system_identifier = 7300000000000000002
    with pytest.raises(SnapshotMismatchError, match=r"^the catalog snapshot is of the cluster with system identifier "
                                                    r"7300000000000000002, the WAL \(.*000000010000000000000001\) of "
                                                    r"the cluster with system identifier 7300000000000000001: "):
        check_snapshot(foreign, segments, start)
    ok = _catalog(w.insert_lsn)
    check_snapshot(ok, segments, written[2].end)  # nothing in between: valid, and remembered
    assert ok.valid_from == written[2].end


@pytest.mark.parametrize("text,needs", [("2026-11-27 14:00", True), ("2026-11-27T14:00:05", True),
                                        ("2026-11-27 14:00+01", False), ("2026-11-27T13:00Z", False),
                                        ("2026-11-27 14:00 Europe/Berlin", False), ("yesterday", False)])
def test_a_time_needs_the_snapshots_zone_only_without_an_offset_or_a_zone_name(text, needs):
    """A backup repository as --catalog has no TimeZone to give before its snapshot is chosen: it is asked
    for only when a time needs it (a text that is no timestamp is left to parse_timestamp's error)."""
    from waldecode.logical.targets import needs_zone

    assert needs_zone(text) is needs
