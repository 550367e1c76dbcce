"""Warnings summarised, and an exit status that says whether the output lacks something (PostgreSQL 15).

A catalog snapshot "a little off": taken without catalog pages (``--pages none``) after the page of
pg_class holding table ``t`` was last imaged, so that the history cannot follow the pg_class rows
``ALTER TABLE t ALTER COLUMN v TYPE`` changes in the WAL read.  The server's test_decoding slot,
created right after the snapshot, is the truth:

* up to ``end1`` (the ALTER, a VACUUM, an insert into another table ``u``): waldecode's output equals the
  slot's, the catalog changes it could not follow are notes (grouped: one line per cause), exit 0;
* up to ``end2`` (then ``UPDATE t`` of its 62 rows, in the rewritten file waldecode cannot map): the
  output lacks those rows, exit 1, and the 62 warnings of one cause are printed once, then summarised
  after the line that says what to do; ``-v`` prints all 62, ``--report FILE`` writes them as JSON.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys

import pytest

from live import DB, live_cluster
from waldecode.catalog import Catalog
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.logical.session import decode_wal
from waldecode.output.test_decoding import TestDecoding
from waldecode.pg.lsn import parse_lsn
from waldecode.spark.executors import LocalExecutor
from waldecode.spark.job import decode_spark

pytestmark = [pytest.mark.server]

SCHEMA = "CREATE TABLE t (id int PRIMARY KEY, v text); CREATE TABLE u (id int)"
ROWS = 62


class World:
    pass


def _peek(conn, end: str) -> str:
    rows = conn.execute("SELECT data FROM pg_logical_slot_peek_changes('s', %s::pg_lsn, NULL)", (end,)).fetchall()
    return "".join(r[0] + "\n" for r in rows)


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    w = World()
    d = w.dir = tmp_path_factory.mktemp("diagnostics")
    with live_cluster(SCHEMA) as c, c.connect(DB) as conn:
        conn.execute(f"INSERT INTO t SELECT g, 'row ' || g FROM generate_series(1, {ROWS}) g")
        conn.execute("CHECKPOINT")
        conn.execute("ANALYZE t")  # pg_class's page imaged here, before the WAL read: not in it
        w.snapshot = d / "snapshot.json"
        w.snapshot.write_text(snapshot_from_connection(conn, pages="none").to_json())
        conn.execute("SELECT pg_create_logical_replication_slot('s', 'test_decoding')")
        w.start, restart = conn.execute("SELECT confirmed_flush_lsn::text, restart_lsn::text "
                                        "FROM pg_replication_slots").fetchone()
        conn.execute("ALTER TABLE t ALTER COLUMN v TYPE varchar(20)")
        conn.execute("VACUUM ANALYZE t")
        conn.execute("INSERT INTO u VALUES (1), (2)")
        w.end1 = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        conn.execute("UPDATE t SET v = v || ' updated'")
        conn.execute("INSERT INTO u VALUES (3)")
        w.end2 = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        conn.execute("ALTER TABLE u ADD COLUMN w int")  # u's pg_class row: on the page never seen
        conn.execute("INSERT INTO u VALUES (4, 4)")
        w.end3 = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        conn.execute("CHECKPOINT")
        w.expected = {e: _peek(conn, e) for e in (w.end1, w.end2, w.end3)}
        w.update_xid = conn.execute("SELECT xmin::text::int FROM t LIMIT 1").fetchone()[0]
        first, last = conn.execute("SELECT pg_walfile_name(%s::pg_lsn), pg_walfile_name(%s::pg_lsn)",
                                   (restart, w.end3)).fetchone()
        w.wal = c.archive_wal(d / "wal", first, last)
    return w


def decode(world, end, *args):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", world.snapshot,
                           "--start-lsn", world.start, "--end-lsn", end, *map(str, args), world.wal],
                          capture_output=True, timeout=300)


def lines(r) -> list[str]:
    return [x for x in r.stderr.decode().splitlines() if not x.startswith("waldecode: end of WAL at ")]


def test_catalog_changes_not_followed_are_notes_when_the_output_equals_the_server(world):
    r = decode(world, world.end1)
    err = lines(r)
    assert r.stdout.decode() == world.expected[world.end1]
    assert r.returncode == 0, err
    assert err and all(x.startswith("waldecode: note: ") or x.startswith("waldecode:   note: ") for x in err), err
    summary = [x for x in err if x.startswith("waldecode: note: ") and "the output is complete" in x]
    assert len(summary) == 1, err
    # one line per cause at the end, each with its count, after the line that says what it means
    causes = err[err.index(summary[0]) + 1:]
    assert causes and all(" x catalog change not decoded: pg_catalog.pg_class rows: " in x for x in causes), err
    assert sum(int(x.split()[2]) for x in causes) >= 2, err


def test_quiet_leaves_the_notes_out(world):
    r = decode(world, world.end1, "-q")
    assert r.returncode == 0 and r.stderr == b"", r.stderr.decode()
    assert r.stdout.decode() == world.expected[world.end1]


def test_a_flood_of_skipped_rows_is_one_line_per_cause_after_what_to_do(world):
    r = decode(world, world.end2)
    err = lines(r)
    assert r.stdout.decode() != world.expected[world.end2]  # the 62 updated rows are missing
    assert f"table public.t: UPDATE: id[integer]:1 " in world.expected[world.end2]
    assert r.returncode == 1, err
    warnings = [x for x in err if x.startswith("waldecode: warning: could not map filenumber")]
    assert len(warnings) == 1, err  # the first occurrence only
    assert f"of transaction {world.update_xid} " in warnings[0]
    assert len(err) < 12, err  # not one line per row
    what = next(i for i, x in enumerate(err) if x.startswith("waldecode: error: "))
    assert ("the output lacks what 62 warning(s) of 1 cause(s) name: decode with a catalog snapshot that knows "
            "these relations" in err[what]), err
    listed = err[what + 1:]
    assert listed[0].startswith("waldecode:   62 x could not map filenumber 1663/"), err
    assert f"transaction {world.update_xid}" in listed[0] and "first at LSN " in listed[0], err
    assert all("note: " in x for x in listed[1:]), err  # the catalog notes after the failure


def test_verbose_prints_every_occurrence(world):
    r = decode(world, world.end2, "-v")
    assert r.returncode == 1
    err = lines(r)
    assert len([x for x in err if x.startswith("waldecode: warning: could not map filenumber")]) == ROWS, err


def test_report_writes_every_diagnostic_as_json(world, tmp_path):
    report = tmp_path / "report.json"
    r = decode(world, world.end2, "--report", report)
    assert r.returncode == 1
    doc = json.loads(report.read_text())
    assert doc["format"] == "waldecode-diagnostics" and doc["complete"] is False
    unmapped = [c for c in doc["causes"] if c["cause"].startswith("could not map filenumber")]
    assert len(unmapped) == 1 and unmapped[0]["count"] == ROWS and unmapped[0]["lacks"] is True
    ex = unmapped[0]["examples"]
    assert len(ex) == ROWS and len({e["lsn"] for e in ex}) == ROWS
    assert {e["xid"] for e in ex} == {world.update_xid}
    assert all(e["relation"].startswith("file 1663/") for e in ex)
    notes = [c for c in doc["causes"] if not c["lacks"]]
    assert notes and all(c["cause"].startswith("catalog change not decoded") for c in notes)
    # a run whose output is complete: the notes only, complete
    r = decode(world, world.end1, "--report", report)
    assert r.returncode == 0
    doc = json.loads(report.read_text())
    assert doc["complete"] is True and doc["causes"] and not any(c["lacks"] for c in doc["causes"])


def test_a_note_fails_the_run_once_a_change_it_concerns_is_decoded_after_it(world, tmp_path):
    report = tmp_path / "report.json"
    r = decode(world, world.end3, "--report", report)
    err = lines(r)
    assert r.returncode == 1, err
    doc = json.loads(report.read_text())
    escalated = [c for c in doc["causes"] if c["escalated"]]
    assert escalated and all(c["lacks"] and c["cause"].startswith("catalog change not decoded") for c in escalated)
    assert any("a change of public.u was decoded after it" in c["escalated"] for c in escalated), escalated
    assert any("; a change of public.u was decoded after it" in x and " note: " not in x for x in err), err


def _causes(result) -> dict:
    doc = json.loads(result.decoder.diagnostics.to_json())
    return {c["cause"]: (c["count"], c["lacks"], c["escalated"]) for c in doc["causes"]}


@pytest.mark.parametrize("ranges", [1, 2])
@pytest.mark.parametrize("end", ["end1", "end2", "end3"])
def test_the_spark_driver_watches_the_notes_as_decode_does(world, end, ranges):
    """Spark's event path (``spark.plan.RecordingReplayer``): the driver's pass records the notes where
    decode's replayer watches them, phase 2's replayers watch them from there and hand back what they
    hit; the output, each cause's count, failure and escalation are decode's, whichever range decodes
    the change that escalates a note."""
    end_lsn = parse_lsn(getattr(world, end))
    kw = dict(start_lsn=parse_lsn(world.start), end_lsn=end_lsn)
    rows: list[str] = []
    single = decode_wal([str(world.wal)], Catalog.load(world.snapshot), TestDecoding(rows.append), **kw)
    executor = LocalExecutor()
    executor.ranges = ranges
    out = io.BytesIO()
    spark = decode_spark(executor, [str(world.wal)], Catalog.load(world.snapshot), TestDecoding, out,
                         method="events", **kw)
    assert executor.method == "events"
    assert out.getvalue().decode() == "".join(r + "\n" for r in rows)
    assert _causes(spark) == _causes(single)
    assert spark.complete == single.complete == (end == "end1")
    escalated = [c for c in _causes(single).values() if c[2]]
    if end == "end3":
        assert any("a change of public.u was decoded after it" in c[2] for c in escalated), escalated
    else:
        assert not escalated and any(not c[1] for c in _causes(single).values())
