"""The ``pgwal`` source plans by ``spark decode``'s range path, and its rows are decode's.

Each partition is one output range decoded as a slot restarted at its start (``ranges.decode_range``),
checked by ``ranges.range_refusal``; the ``line`` column in (position, seq) order must be the bytes
``decode`` prints, and ``position`` the LSN of the record that printed the row.  In this process
(``plan_partitions`` and ``read_partition``, the planner's and the executors' halves) with the event
path's driver pass made to fail, so that it cannot have been used: every PostgreSQL 15 fixture and
option set (DDL, two-phase), and the two-segment one in two partitions; a live workload with DDL, prepared transactions and a transaction open
across DDL over several segments (test_spark_ranges_ddl's) cut into up to 7 partitions, each row's
commit within its range, also as a slot created at the restart LSN, with the transactions still open
at the end, and under commit_lsn bounds (decode's rows within them, from fewer partitions and
segments); a slot created while a transaction runs, whose first range grows to its consistent point;
a damaged record in a range, or in one the bounds leave out, fails the query instead of leaving rows
out.  Where the range path cannot serve, the event path gives the same rows.  Through Spark: the
fixtures with DDL and two-phase, and the live workload in 7 partitions with a pushed filter.
"""

from __future__ import annotations

import pytest

from fixture_data import all_fixtures
from test_spark_ranges_ddl import prepared, workloads  # noqa: F401 (fixtures: the live workload)
from waldecode.catalog import Catalog
from waldecode.logical.session import decode_wal
from waldecode.output.test_decoding import TestDecoding
from waldecode.spark import datasource, tasks
from waldecode.wal.xlogreader import parse_lsn

CASES = [pytest.param(fx, out_file, meta, id=f"{fx.name}/{out_file}")
         for fx in all_fixtures() if fx.major == 15
         for out_file, meta in fx.meta.get("decoding_options", {}).items() if meta["plugin"] == "test_decoding"]


@pytest.fixture
def no_event_path(monkeypatch):
    """The event path's driver pass fails the test if planning takes it."""
    from waldecode.spark import plan

    def refuse(*a, **kw):
        raise AssertionError("the pgwal source planned by the event path")

    monkeypatch.setattr(plan, "run_driver_pass", refuse)


def _slot(fx, meta):
    return next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])


def _decoded(wal, catalog, **kw) -> bytes:
    """What single-process decode prints."""
    rows: list[str] = []
    decode_wal([wal], Catalog.load(catalog), TestDecoding(rows.append), **kw)
    return _text(rows)


def _text(rows) -> bytes:
    return b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in rows)


def _lines(rows) -> bytes:
    return b"".join(r[-1] + b"\n" for r in rows)


def _read(options, bounds=(None, None)):
    """(every partition's (Range or event-path range, rows), the phase-1 scan): the source planned and read
    in this process."""
    shared, parts = datasource.plan_partitions(options, bounds)
    out = [(tasks.unpack(p)[0], list(datasource.read_partition(shared, p))) for p in parts]
    return out, tasks.unpack(shared)[0]


def _in_order(parts) -> list:
    return sorted((row for _r, rows in parts for row in rows), key=lambda row: (row[0], row[1]))


@pytest.mark.parametrize("fx,out_file,meta", CASES)
def test_fixture_rows_in_process_equal_decode(fx, out_file, meta, no_event_path):
    slot = _slot(fx, meta)
    options = {"catalog": str(fx.path / "snapshot.json.gz"), "startLsn": slot["confirmed_flush_lsn"],
               "endLsn": fx.meta["end_lsn"], "twoPhase": str(slot["two_phase"]).lower(), "ranges": "3",
               "segmentsPerPartition": "1", "path": str(fx.wal_dir), **meta["options"]}
    parts, _scan = _read(options)
    _positions(_in_order(parts))
    assert _lines(_in_order(parts)) == _decoded(fx.wal_dir, fx.path / "snapshot.json.gz",
                                                plugin_options=meta["options"],
                                                start_lsn=parse_lsn(slot["confirmed_flush_lsn"]),
                                                end_lsn=fx.end_lsn, two_phase=slot["two_phase"])
    assert all(not isinstance(r, int) for r, _rows in parts)  # ranges.Range, not the event path's range numbers


def test_two_segment_fixture_in_two_partitions(no_event_path):
    """The bundled fixture of two segments, read to its end: a range per segment, each row within its range,
    decode's bytes."""
    fx = next(f for f in all_fixtures() if f.name == "pg15-off/checkpoint_fpi")
    slot = next(s for s in fx.meta["slots"] if s["plugin"] == "test_decoding")
    options = {"catalog": str(fx.path / "snapshot.json.gz"), "startLsn": slot["confirmed_flush_lsn"], "ranges": "4",
               "path": str(fx.wal_dir), "include-xids": "0"}
    parts, _scan = _read(options)
    assert len(parts) == 2 and all(rows for _r, rows in parts)
    _within_ranges(parts)
    assert _lines(_in_order(parts)) == _decoded(fx.wal_dir, fx.path / "snapshot.json.gz",
                                                plugin_options={"include-xids": "0"},
                                                start_lsn=parse_lsn(slot["confirmed_flush_lsn"]))


@pytest.mark.parametrize("name,out_file", [("pg15-off/ddl", "test_decoding-ts.jsonl"),
                                           ("pg15-off/prepared", "test_decoding-2pc.jsonl"),
                                           ("pg15-off/messages", "test_decoding.jsonl")])
def test_event_path_when_the_range_path_cannot_serve(name, out_file, monkeypatch):
    """Where ``plan_ranges`` gives a reason, planning falls back to the event path: the same rows, every column
    (position and seq included)."""
    from waldecode.spark import ranges

    fx = next(f for f in all_fixtures() if f.name == name)
    meta = fx.meta["decoding_options"][out_file]
    slot = _slot(fx, meta)
    options = {"catalog": str(fx.path / "snapshot.json.gz"), "startLsn": slot["confirmed_flush_lsn"],
               "endLsn": fx.meta["end_lsn"], "twoPhase": str(slot["two_phase"]).lower(), "path": str(fx.wal_dir),
               **meta["options"]}
    by_ranges, _scan = _read(options)
    monkeypatch.setattr(ranges, "plan_ranges", lambda *a, **kw: ranges.RangePlan([], "a reason, for the test"))
    by_events, _scan = _read(options)
    assert all(isinstance(r, int) for r, _rows in by_events)
    ranged, evented = _in_order(by_ranges), _in_order(by_events)
    assert ranged == evented and ranged


# -- a live workload over several segments ---------------------------------------------------------


def _live_options(run, wal, ranges: int, **more) -> dict:
    return {"catalog": str(run.catalog_path), "startLsn": run.confirmed_lsn, "endLsn": run.end_lsn,
            "twoPhase": str(run.two_phase).lower(), "ranges": str(ranges), "segmentsPerPartition": "1",
            "path": str(wal), **more}


def _within_ranges(parts) -> None:
    """Every row's commit LSN lies in its range's [start, end) (what pruning by commit_lsn counts on)."""
    for r, rows in parts:
        for row in rows:
            commit_lsn = row[2]
            if commit_lsn is not None:
                assert (r.start is None or commit_lsn >= r.start) and (r.end is None or commit_lsn < r.end), \
                    (r, row[6], commit_lsn)


def _positions(rows) -> None:
    """A row's position is the LSN of the record that printed it: its transaction's commit_lsn, or a message's
    own outside a transaction; the transactions open at the end come after every LSN."""
    for row in rows:
        position, commit_lsn, lsn, op, transactional = row[0], row[2], row[3], row[6], row[14]
        if op == "MESSAGE" and transactional is False:
            assert position == lsn and commit_lsn is None, row
        elif position > datasource.OPEN_AT_END_POSITIONS:
            assert commit_lsn is None, row
        else:
            assert op != "UNCOMMITTED" and position == commit_lsn, row


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("ranges", [2, 7])
def test_live_rows_in_process_equal_server(prepared, ranges, no_event_path):  # noqa: F811
    run, wal, expected = prepared
    parts, _scan = _read(_live_options(run, wal, ranges))
    assert len(parts) > 1
    assert _lines(_in_order(parts)) == _text(expected)
    _within_ranges(parts)
    _positions(_in_order(parts))


@pytest.mark.server
@pytest.mark.slow
def test_live_rows_by_commit_lsn_bounds(prepared, no_event_path):  # noqa: F811
    """Bounds on commit_lsn: the rows decode prints within them (Spark filters the rest), fewer partitions
    below the low bound, fewer segments read above the high one."""
    run, wal, _expected = prepared
    options = _live_options(run, wal, 7)
    full, scan = _read(options)
    rows = _in_order(full)
    commits = sorted({row[2] for row in rows if row[2] is not None})
    lo, hi = commits[len(commits) // 2], commits[-len(commits) // 5]
    for bounds in ((lo, None), (None, hi), (lo, hi)):
        part, part_scan = _read(options, bounds)
        got = [row for row in _in_order(part) if datasource._within(row[2], *bounds)]
        assert got == [row for row in rows if datasource._within(row[2], *bounds)] and got
        if bounds[0] is not None:
            assert len(part) < len(full)
        if bounds[1] is not None:
            assert part_scan.runs[-1][1] < scan.runs[-1][1]


@pytest.mark.server
@pytest.mark.slow
def test_live_rows_as_a_slot_created_at_the_restart_lsn(prepared, no_event_path):  # noqa: F811
    """restartLsn without startLsn (a slot created there): the first range's snapshot builder finds its
    consistent point itself, which the planner foresees and the first range's partition checks."""
    run, wal, _expected = prepared
    options = _live_options(run, wal, 7, restartLsn=run.restart_lsn)
    del options["startLsn"]
    parts, _scan = _read(options)
    assert len(parts) > 1
    rows = _in_order(parts)
    assert _lines(rows) == _decoded(wal, run.catalog_path, restart_lsn=parse_lsn(run.restart_lsn),
                                    end_lsn=parse_lsn(run.end_lsn), two_phase=run.two_phase)
    # bounds past the first range still decode it, for its check
    lo = sorted({row[2] for row in rows if row[2] is not None})[-3]
    pruned, _scan = _read(options, (lo, None))
    assert pruned[0][0].rng == 0 and len(pruned) < len(parts)
    assert [row for row in _in_order(pruned) if datasource._within(row[2], lo, None)] == \
        [row for row in rows if datasource._within(row[2], lo, None)]


@pytest.fixture(scope="module")
def open_at_a_checkpoint(tmp_path_factory):
    """(run, WAL directory, the running-xacts record of a checkpoint taken while a transaction is open, the one
    after it commits): segments of committed rows between the two."""
    from live import SlotRun, live_cluster
    from waldecode.logical.startpoint import running_xacts_of
    from waldecode.rmgr import RM_STANDBY_ID
    from waldecode.wal.segments import discover
    from waldecode.wal.xlogreader import read_segment

    tmp = tmp_path_factory.mktemp("pgwal-open-at-checkpoint")
    with live_cluster("CREATE TABLE t (id int PRIMARY KEY, v text);") as c:
        run = SlotRun(c)
        with c.connect("live") as conn, c.connect("live", autocommit=False) as open_txn:
            conn.execute("INSERT INTO t VALUES (0, 'before')")
            open_txn.execute("INSERT INTO t VALUES (-1, 'open across a checkpoint')")
            conn.execute("CHECKPOINT")
            for i in range(8):  # about 4 MB of WAL
                conn.execute("INSERT INTO t SELECT g, repeat('x', 200) FROM generate_series(%s::int, %s::int) g",
                             (i * 2000 + 1, i * 2000 + 2000))
            open_txn.commit()
            conn.execute("CHECKPOINT")
            for i in range(8, 12):
                conn.execute("INSERT INTO t SELECT g, repeat('y', 200) FROM generate_series(%s::int, %s::int) g",
                             (i * 2000 + 1, i * 2000 + 2000))
        got, expected = run.finish(tmp)
        assert got == expected
    run.catalog_path = tmp / "catalog.json"
    run.catalog_path.write_text(run.catalog.to_json())
    segments = discover([tmp / "wal"], None)
    running = [x for segno in sorted(segments.files)
               for x in running_xacts_of(read_segment(segments, segno, rmid=RM_STANDBY_ID)[0])]
    first = next(x for x in running if x.lsn > parse_lsn(run.confirmed_lsn) and x.oldestRunningXid != x.nextXid)
    later = next(x for x in running if x.lsn > first.lsn and x.oldestRunningXid == x.nextXid)
    return run, tmp / "wal", first, later


@pytest.mark.server
@pytest.mark.slow
def test_first_range_grown_to_its_consistent_point(open_at_a_checkpoint, monkeypatch, no_event_path):
    """A slot created where a transaction is running (restartLsn at that checkpoint's running-xacts record) is
    consistent only at the next one, segments later: the first range takes in the ranges that begin before
    then (the single process prints nothing there), and the rows are decode's."""
    from waldecode.errors import format_lsn
    from waldecode.spark import ranges

    run, wal, first, later = open_at_a_checkpoint
    plans = []
    real = ranges.plan_ranges
    monkeypatch.setattr(ranges, "plan_ranges", lambda *a, **kw: plans.append(real(*a, **kw)) or plans[-1])
    options = _live_options(run, wal, 7, restartLsn=format_lsn(first.lsn))
    del options["startLsn"]
    parts, _scan = _read(options)
    assert len(plans[0].ranges) > 2 and plans[0].ranges[1].start < later.lsn  # planned to end before consistency
    assert parts[0][0].rng == 0 and parts[0][0].end > later.lsn and len(parts) > 1
    rows = _in_order(parts)
    assert _lines(rows) == _decoded(wal, run.catalog_path, restart_lsn=first.lsn, end_lsn=parse_lsn(run.end_lsn))
    assert any(b"'y" in row[-1] for row in rows) and not any(b"'x" in row[-1] for row in rows)
    # were the planner wrong, the first range's partition says so: the query fails, no rows go missing
    monkeypatch.setattr(datasource, "_consistent_lsn", lambda *a: 0)
    shared, packed = datasource.plan_partitions(options)
    with pytest.raises(datasource.SurfacedError) as e:
        list(datasource.read_partition(shared, packed[0]))
    error, _warnings = datasource.error_in(e.value)
    assert "the first range is not consistent before the second begins" in str(error)


@pytest.mark.server
@pytest.mark.slow
def test_live_rows_with_the_transactions_open_at_the_end(workloads, no_event_path):  # noqa: F811
    """includeUncommitted: the last range prints the transaction still prepared at the end, whatever the bounds."""
    run, wal, _expected = workloads[False]
    options = _live_options(run, wal, 7, includeUncommitted="true")
    parts, _scan = _read(options)
    rows = _in_order(parts)
    want = _decoded(wal, run.catalog_path, start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=parse_lsn(run.end_lsn),
                    include_uncommitted=True)
    assert _lines(rows) == want and b"still prepared at the end" in want
    _positions(rows)
    commits = sorted({row[2] for row in rows if row[2] is not None})
    bounds = (None, commits[len(commits) // 2])
    part, _scan = _read(options, bounds)
    assert [row for row in _in_order(part) if datasource._within(row[2], *bounds)] == \
        [row for row in rows if datasource._within(row[2], *bounds)]


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.parametrize("pruned", [False, True])
def test_a_damaged_record_fails_the_query(workloads, tmp_path, pruned, no_event_path):  # noqa: F811
    """A wrong CRC in a range before the last (phase 1 frames without checking CRCs): decode stops there; the
    source fails the query with the reason, also when the bounds leave that range out, rather than give
    rows decode does not print."""
    from damaged_wal import with_bad_crc

    run, wal, _expected = workloads[False]
    options = _live_options(run, wal, 7)
    shared, parts = datasource.plan_partitions(options)
    ranges = [tasks.unpack(p)[0] for p in parts]
    bad, _bad_lsn = with_bad_crc(wal, tmp_path, ranges[1].start, ranges[2].start)
    bounds = (None, None)
    if pruned:
        # the first range the bounds keep reads from after the damage: the WAL before it is read for nothing else
        first = next(r for r in ranges[3:-1] if r.restart >= ranges[2].start)
        bounds = (first.start, None)
    shared, parts = datasource.plan_partitions(dict(options, path=str(bad)), bounds)
    if pruned:
        assert tasks.unpack(parts[0])[0].rng == first.rng
    with pytest.raises(datasource.SurfacedError) as e:
        for p in parts:
            list(datasource._surfacing(datasource.read_partition(shared, p)))
    error, _warnings = datasource.error_in(e.value)
    assert isinstance(error, datasource.RangeRefusedError)
    assert ("reading stops at" if pruned else "stopped reading before its end") in str(error)


# -- through Spark ---------------------------------------------------------------------------------


def _df(spark, options: dict):
    reader = spark.read.format("pgwal")
    for k, v in options.items():
        if k != "path":
            reader = reader.option(k, v)
    return reader.load(options["path"])


@pytest.mark.slow
@pytest.mark.parametrize("name,out_file", [("pg15-off/ddl", "test_decoding.jsonl"),
                                           ("pg15-off/prepared", "test_decoding-2pc.jsonl")])
def test_fixture_rows_through_spark_equal_decode(spark, name, out_file):
    fx = next(f for f in all_fixtures() if f.name == name)
    meta = fx.meta["decoding_options"][out_file]
    slot = _slot(fx, meta)
    options = {"catalog": str(fx.path / "snapshot.json.gz"), "startLsn": slot["confirmed_flush_lsn"],
               "endLsn": fx.meta["end_lsn"], "twoPhase": str(slot["two_phase"]).lower(), "ranges": "3",
               "path": str(fx.wal_dir), **meta["options"]}
    got = _df(spark, options).orderBy("position", "seq").select("line").collect()
    assert b"".join(r["line"] + b"\n" for r in got) == _decoded(
        fx.wal_dir, fx.path / "snapshot.json.gz", plugin_options=meta["options"],
        start_lsn=parse_lsn(slot["confirmed_flush_lsn"]), end_lsn=fx.end_lsn, two_phase=slot["two_phase"])


@pytest.mark.server
@pytest.mark.slow
@pytest.mark.spark
def test_live_rows_through_spark_equal_server(spark, prepared):  # noqa: F811
    from pyspark.sql import functions as F

    run, wal, expected = prepared
    df = _df(spark, _live_options(run, wal, 7))
    assert df.rdd.getNumPartitions() > 1
    full = df.orderBy("position", "seq").collect()
    assert b"".join(r["line"] + b"\n" for r in full) == _text(expected)
    commits = sorted({r["commit_lsn"] for r in full if r["commit_lsn"] is not None})
    lo = commits[len(commits) // 2]
    got = df.filter(F.col("commit_lsn") >= lo).orderBy("position", "seq").collect()
    assert got == [r for r in full if r["commit_lsn"] is not None and r["commit_lsn"] >= lo] and got
