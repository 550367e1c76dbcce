"""``waldecode diverge`` after a real failover, checked against the old primary's own slot.

PostgreSQL 15: a primary and a streaming standby made from its base backup; a transaction
prepared before the cut; the standby stopped (the cut); on the old primary inserts, updates,
deletes, REPLICA IDENTITY FULL, savepoints, TOAST, the COMMIT PREPARED of the transaction
prepared before, an 8,000-row transaction, ADD COLUMN, CREATE TABLE, a DELETE from a table
without a key, TRUNCATE, a transaction prepared after the cut, one left open; an immediate stop
(the crash); the standby started alone and promoted to timeline 2; writes there that reuse the
xids and touch the same keys.

The truth is the server: a test_decoding slot created on the old primary before the fork,
advanced to the switch point and peeked after the old primary is started again (the transactions
it prints are the ones the new timeline lacks, their changes byte for byte, their first and end
LSNs and commit times).  The prepared-transaction, conflict and DDL findings are checked against
what the workload did and what the new primary holds (its pg_prepared_xacts).  The README's two
``diverge`` examples run as written on this failover (its WAL, snapshot and new primary for their
placeholders).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime

import pytest

from live import DB, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.wal.segments import parse_history

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, v text);
CREATE TABLE audit (id int PRIMARY KEY, note text);
ALTER TABLE audit REPLICA IDENTITY FULL;
CREATE TABLE docs (id int PRIMARY KEY, body text);
CREATE TABLE bulk (id int PRIMARY KEY, v int);
CREATE TABLE scratch (id int, v text);
INSERT INTO acct SELECT g, 'seed ' || g FROM generate_series(1, 20) g;
INSERT INTO audit SELECT g, 'seed ' || g FROM generate_series(1, 5) g;
INSERT INTO scratch SELECT g, 'seed' FROM generate_series(1, 5) g;
"""

# On the old primary after the cut: each string one transaction (lists: statements of one session)
OLD_WRITES = [
    "UPDATE acct SET v = 'old 1' WHERE id = 1",
    "INSERT INTO acct VALUES (100, 'old 100')",
    "DELETE FROM acct WHERE id = 2",
    ["BEGIN", "UPDATE audit SET note = 'old' WHERE id = 1", "DELETE FROM audit WHERE id = 2", "COMMIT"],
    ["BEGIN", "INSERT INTO acct VALUES (101, 'kept')", "SAVEPOINT s", "INSERT INTO acct VALUES (102, 'rolled back')",
     "ROLLBACK TO s", "INSERT INTO acct VALUES (103, 'after savepoint')", "COMMIT"],
    "INSERT INTO docs SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 400) g",  # TOASTed, incompressible
    "COMMIT PREPARED 'before_fork'",
    "ROLLBACK PREPARED 'before_fork_rb'",
    "INSERT INTO bulk SELECT g, g FROM generate_series(1, 8000) g",
    ["BEGIN", "ALTER TABLE acct ADD COLUMN extra int", "UPDATE acct SET extra = 7 WHERE id = 3", "COMMIT"],
    ["BEGIN", "CREATE TABLE newtab (id int PRIMARY KEY, t text)", "INSERT INTO newtab VALUES (1, 'x')", "COMMIT"],
    "DELETE FROM scratch WHERE id = 1",  # no key in the WAL (no primary key): SQL cannot redo it
    "TRUNCATE scratch",
    ["BEGIN", "INSERT INTO acct VALUES (104, 'prepared after the fork')", "PREPARE TRANSACTION 'after_fork'"],
]

# On the new primary (timeline 2): the same keys, and xids the old timeline used
NEW_WRITES = [
    "UPDATE acct SET v = 'new 1' WHERE id = 1",
    "INSERT INTO acct VALUES (100, 'new 100')",
    "UPDATE audit SET note = 'new' WHERE id = 1",
    "INSERT INTO scratch VALUES (50, 'new')",
    "UPDATE acct SET v = 'new 5' WHERE id = 5",
]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *map(str, args)], capture_output=True,
                          timeout=600)


def _run(conn, work):
    for stmt in [work] if isinstance(work, str) else work:
        conn.execute(stmt)


def _wait(check, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def failover(tmp_path_factory):
    """Build the failover; yield what the tests need while the new primary still runs."""
    import psycopg

    from waldecode.testing.cluster import _free_port

    tmp = tmp_path_factory.mktemp("diverge")
    with live_cluster(SCHEMA) as c:
        yield from _build_failover(c, tmp, psycopg, _free_port())


def _build_failover(c, tmp, psycopg, port):
    standby = c.base / "standby"
    standby_up = False
    try:
        with c.connect(DB) as conn:
            catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('truth', 'test_decoding')")
            first = conn.execute("SELECT pg_walfile_name(restart_lsn) FROM pg_replication_slots").fetchone()[0]
            _run(conn, ["BEGIN", "UPDATE acct SET v = 'prepared before the fork' WHERE id = 9",
                        "PREPARE TRANSACTION 'before_fork'"])
            _run(conn, ["BEGIN", "DELETE FROM acct WHERE id = 10", "PREPARE TRANSACTION 'before_fork_rb'"])
        # Begun before the fork, still open at the crash
        early = c.connect(DB)
        early.execute("BEGIN")
        early.execute("INSERT INTO audit VALUES (106, 'open since before the fork')")  # no lock ALTER TABLE waits for
        early_xid = early.execute("SELECT txid_current()").fetchone()[0]
        # A streaming standby from a base backup
        c.run_bin("pg_basebackup", "-D", standby, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                  "-X", "stream", "-c", "fast", "-R")
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "-l", standby / "log", "-o", f"-p {port}", "start")
        standby_up = True
        with c.connect(DB) as conn:
            target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            _wait(lambda: conn.execute("SELECT coalesce(bool_or(replay_lsn >= %s), false) FROM pg_stat_replication",
                                       (target,)).fetchone()[0], "the standby to catch up")
        # The cut: the standby stops receiving
        c.run_bin("pg_ctl", "-D", standby, "-m", "fast", "-w", "stop")
        standby_up = False
        conn = c.connect(DB)
        for work in OLD_WRITES:
            # a lock the workload waits for is a mistake in it: fail, never hang
            with c.connect(DB, options="-c lock_timeout=30s") as one:
                _run(one, work)
        conn.execute("BEGIN")
        conn.execute("INSERT INTO acct VALUES (105, 'open at the crash')")
        open_xid = conn.execute("SELECT txid_current()").fetchone()[0]
        with c.connect(DB) as other:
            other.execute("CHECKPOINT")  # the open transaction's insert reaches the WAL on disk
            end = other.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        # The crash, with the transaction still open
        c.run_bin("pg_ctl", "-D", c.pgdata, "-m", "immediate", "-w", "stop")
        c._running = False
        for gone in (conn, early):
            try:
                gone.close()
            except psycopg.Error:
                pass
        old_wal = c.archive_wal(tmp / "old", first)
        # The standby alone, promoted: timeline 2
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "-l", standby / "log", "-o", f"-p {port}", "start")
        standby_up = True
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "promote")
        new_dsn = f"host={c.socket_dir} port={port} user=postgres dbname={DB}"
        with psycopg.connect(new_dsn, autocommit=True) as new:
            _wait(lambda: not new.execute("SELECT pg_is_in_recovery()").fetchone()[0], "the promotion")
            new_xids = []
            for work in NEW_WRITES:
                new.execute("BEGIN")
                _run(new, work)
                new_xids.append(new.execute("SELECT txid_current()").fetchone()[0])
                new.execute("COMMIT")
            new_prepared = {r[0] for r in new.execute("SELECT gid FROM pg_prepared_xacts").fetchall()}
            new.execute("CHECKPOINT")
        new_wal = tmp / "new"
        new_wal.mkdir()
        for f in (standby / "pg_wal").iterdir():
            if f.name == "00000002.history" or (f.name.startswith("00000002") and len(f.name) == 24):
                shutil.copy(f, new_wal / f.name)
        history_file = new_wal / "00000002.history"
        (_tli, switch), = parse_history(history_file.read_text(), str(history_file))
        switch_text = f"{switch >> 32:X}/{switch & 0xFFFFFFFF:X}"
        # The truth: the old primary, started again, decodes with the slot it had before the fork
        c.start()
        with c.connect(DB) as conn:
            conn.execute("SELECT pg_replication_slot_advance('truth', %s::pg_lsn)", (switch_text,))
            rows = conn.execute("SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_changes('truth', "
                                "%s::pg_lsn, NULL, 'include-timestamp', 'on')", (end,)).fetchall()
            old_prepared = {r[0] for r in conn.execute("SELECT gid FROM pg_prepared_xacts").fetchall()}
        catalog_file = tmp / "catalog.json"
        catalog_file.write_text(catalog.to_json())
        if os.environ.get("WALDECODE_KEEP_DIVERGE"):  # for post-mortems: the WAL and the catalog
            shutil.copytree(tmp, os.environ["WALDECODE_KEEP_DIVERGE"], dirs_exist_ok=True)
        old_dsn = f"host={c.socket_dir} port={c.port} user=postgres dbname={DB}"
        yield dict(old=old_wal, new=new_wal, catalog=catalog_file, switch=switch_text, rows=rows, dsn=new_dsn,
                   old_dsn=old_dsn,
                   open_xid=open_xid, early_xid=early_xid, new_xids=new_xids, new_prepared=new_prepared,
                   old_prepared=old_prepared)
    finally:
        if standby_up:
            c.run_bin("pg_ctl", "-D", standby, "-m", "immediate", "-w", "stop", check=False)


def _server_transactions(rows):
    """The slot's transactions: [(xid, begin LSN, end LSN, commit line, [lines])]."""
    out, cur = [], None
    for lsn, xid, data in rows:
        if data.startswith("BEGIN "):
            cur = [int(xid), lsn, None, None, [data]]
        else:
            cur[4].append(data)
            if data.startswith("COMMIT "):
                cur[2], cur[3] = lsn, data
                out.append(tuple(cur))
                cur = None
    return out


def test_lost_transactions_are_the_servers(failover):
    f = failover
    out = run_cli("diverge", "--old", f["old"], "--new", f["new"], "--catalog", f["catalog"], "--format", "json",
                  "--changes", "-o", "include-timestamp=on")
    assert out.returncode == 0, out.stderr.decode()
    doc = json.loads(out.stdout)
    assert doc["format"] == "waldecode-diverge" and doc["version"] == 1
    assert doc["switch_lsn"] == f["switch"] and doc["old_timeline"] == 1 and doc["new_timeline"] == 2
    truth = _server_transactions(f["rows"])
    # the committed transactions of OLD_WRITES (not the ROLLBACK PREPARED, nor the last one, only prepared)
    assert len(truth) == len(OLD_WRITES) - 2
    lost = doc["lost_transactions"]
    assert [t["xid"] for t in lost] == [t[0] for t in truth]
    assert [(t["first_lsn"], t["end_lsn"]) for t in lost] == [(t[1], t[2]) for t in truth]
    assert [line for t in lost for line in t["changes"]] == [line for t in truth for line in t[4]]
    # commit times: the server prints them in its TimeZone (UTC) with microseconds
    for t, (_xid, _b, _e, commit_line, _lines) in zip(lost, truth):
        server_time = commit_line.split("(at ")[1].rstrip(")")
        assert server_time.endswith("+00")
        secs, _, frac = server_time[:-3].partition(".")
        assert datetime.fromisoformat(t["commit_time"]) == datetime.fromisoformat(
            f"{secs}.{frac.ljust(6, '0')}+00:00")
    by_gid = {t["gid"]: t for t in lost if t["gid"]}
    assert list(by_gid) == ["before_fork"]
    assert by_gid["before_fork"]["tables"] == {"public.acct": {"UPDATE": 1}}
    bulk = [t for t in lost if "public.bulk" in t["tables"]]
    assert bulk and bulk[0]["tables"]["public.bulk"] == {"INSERT": 8000}
    savepoint = [t for t in lost if t["tables"].get("public.acct") == {"INSERT": 2}]
    assert len(savepoint) == 1

    prepared = {p["gid"]: p for p in doc["prepared"]}
    assert set(prepared) == {"before_fork", "before_fork_rb", "after_fork"}
    # the new primary still holds them prepared: the truth of the finding
    assert {"before_fork", "before_fork_rb"} <= f["new_prepared"]
    assert prepared["before_fork"]["action"] == "COMMIT PREPARED 'before_fork'"
    assert prepared["before_fork_rb"]["action"] == "ROLLBACK PREPARED 'before_fork_rb'"
    assert prepared["before_fork_rb"]["old_fate"] == "rolled back"
    assert prepared["before_fork"]["new_fate"] == "prepared" and prepared["before_fork"]["old_fate"] == "committed"
    assert "after_fork" in f["old_prepared"] and "after_fork" not in f["new_prepared"]
    assert prepared["after_fork"]["new_fate"] == "absent" and prepared["after_fork"]["action"] is None

    assert [(t["xid"], t["began_before_fork"]) for t in doc["open_at_crash"]] == [(f["early_xid"], True),
                                                                                     (f["open_xid"], False)]
    assert [t["tables"] for t in doc["open_at_crash"]] == [{"public.audit": {"INSERT": 1}},
                                                           {"public.acct": {"INSERT": 1}}]
    for t in doc["open_at_crash"]:
        assert t["changes"][-1] == f"UNCOMMITTED {t['xid']}"

    ddl = [m["statement"] for m in doc["missing_ddl"]]
    assert ddl == ["ALTER TABLE public.acct ADD COLUMN extra integer",
                   "CREATE TABLE public.newtab (id integer, t text)"]

    conflicts = {(c["table"], json.dumps(c["key"], sort_keys=True)) for c in doc["conflicts"]}
    assert conflicts == {
        ("public.acct", json.dumps({"id": "1"})),
        ("public.acct", json.dumps({"id": "100"})),
        ("public.audit", json.dumps({"id": "1", "note": "seed 1"}, sort_keys=True)),  # FULL: the whole old row
        ("public.scratch", json.dumps("all rows")),
    }
    assert doc["conflicts_checked"] == "timeline 2 WAL"
    assert set(doc["xids_reused"]) == set(f["new_xids"]) & {t["xid"] for t in lost}
    assert doc["xids_reused"]


def test_report_with_the_new_primary(failover):
    f = failover
    out = run_cli("diverge", "--old", f["old"], "--catalog", f["catalog"], "--dsn", f["dsn"])
    assert out.returncode == 0, out.stderr.decode()
    text = out.stdout.decode()
    # no history file among the input: the new primary's is read
    assert f"switch point {f['switch']} (the new primary's 00000002.history)" in text
    assert "run on the new primary: COMMIT PREPARED 'before_fork';" in text
    assert "ALTER TABLE public.acct ADD COLUMN extra integer;" in text
    conflicts = [line for line in text.splitlines() if line.startswith("  public.")]
    assert sorted(line.split(":")[0] for line in conflicts) == [
        "  public.acct id = '1'", "  public.acct id = '100'", "  public.audit id = '1'",
        "  public.scratch all rows (TRUNCATE)"]
    assert "updated after the fork" in text and "inserted after the fork" in text
    assert f"lost transactions: {len(OLD_WRITES) - 2} committed on timeline 1" in text
    assert "run on the new primary: ROLLBACK PREPARED 'before_fork_rb';" in text


def test_documented_diverge_report(failover):
    """``diverge --old OLD --new NEW --catalog app-catalog.json`` as the README shows it, the failover's WAL
    of each timeline and its snapshot for the documents' paths: the report test_report_with_the_new_primary
    reads, its lost transactions the server's slot's, its conflicts found in the new timeline's WAL."""
    from doc_commands import argv, lane_command

    f = failover
    cmd = lane_command("tests/live/test_diverge.py::test_documented_diverge_report")
    args, _ = argv(cmd, {"/old-primary/pg_wal": str(f["old"]), "/new-primary/pg_wal": str(f["new"]),
                         "app-catalog.json": str(f["catalog"])})
    out = run_cli(*args)
    assert out.returncode == 0 and out.stderr == b"", out.stderr.decode()
    text = out.stdout.decode()
    assert f"switch point {f['switch']} (history file 00000002.history)" in text
    assert f"lost transactions: {len(OLD_WRITES) - 2} committed on timeline 1" in text
    lost = [int(m[1]) for m in re.finditer(r"^  timeline 1 xid (\d+) ", text, re.M)]
    assert lost == [t[0] for t in _server_transactions(f["rows"])]
    assert "run on the new primary: COMMIT PREPARED 'before_fork';" in text
    assert "run on the new primary: ROLLBACK PREPARED 'before_fork_rb';" in text
    assert "ALTER TABLE public.acct ADD COLUMN extra integer;" in text
    assert "rows changed on both sides (from the timeline 2 WAL): 4" in text
    conflicts = [line for line in text.splitlines() if line.startswith("  public.")]
    assert sorted(line.split(":")[0] for line in conflicts) == [
        "  public.acct id = '1'", "  public.acct id = '100'", "  public.audit id = '1', note = 'seed 1'",
        "  public.scratch all rows (TRUNCATE)"]


def test_documented_diverge_json_with_the_new_primary(failover):
    """``diverge --old ARCHIVE --catalog app-catalog.json --dsn DSN --format json --changes -o include-timestamp``
    as the README shows it, the old timeline's WAL, the snapshot and the new primary's DSN for the documents':
    the lost transactions with their changes and commit times as the server's slot printed them (as
    test_lost_transactions_are_the_servers), the conflicts asked of the new primary."""
    from doc_commands import argv, lane_command

    f = failover
    cmd = lane_command("tests/live/test_diverge.py::test_documented_diverge_json_with_the_new_primary")
    args, _ = argv(cmd, {"/archive/wal/": str(f["old"]), "app-catalog.json": str(f["catalog"]),
                         "host=new-primary dbname=app": f["dsn"]})
    assert f["dsn"] in args, args
    out = run_cli(*args)
    assert out.returncode == 0 and out.stderr == b"", out.stderr.decode()
    doc = json.loads(out.stdout)
    assert doc["complete"] and doc["switch_source"] == "the new primary's 00000002.history"
    truth = _server_transactions(f["rows"])
    lost = doc["lost_transactions"]
    assert [(t["xid"], t["first_lsn"], t["end_lsn"]) for t in lost] == [t[:3] for t in truth]
    # the slot was peeked with include-timestamp: its COMMIT lines carry the commit times
    assert [line for t in lost for line in t["changes"]] == [line for t in truth for line in t[4]]
    assert doc["conflicts_checked"].startswith("new primary ")
    assert {(c["table"], json.dumps(c["key"], sort_keys=True)) for c in doc["conflicts"]} == {
        ("public.acct", json.dumps({"id": "1"})), ("public.acct", json.dumps({"id": "100"})),
        ("public.audit", json.dumps({"id": "1"})), ("public.scratch", json.dumps("all rows"))}
    assert [p["action"] for p in doc["prepared"]] == ["COMMIT PREPARED 'before_fork'",
                                                      "ROLLBACK PREPARED 'before_fork_rb'", None]


def test_a_missing_earlier_segment_is_named(failover, tmp_path):
    """The reading start lies before the switch point (the transactions prepared and begun before the
    fork): without the segment holding it, diverge says which one it needs and exits 1."""
    f = failover
    out = run_cli("diverge", "--old", f["old"], "--catalog", f["catalog"], "--switch-lsn", f["switch"],
                  "--format", "json")
    assert out.returncode == 0, out.stderr.decode()
    doc = json.loads(out.stdout)
    assert doc["switch_source"] == "--switch-lsn" and doc["conflicts_checked"] is None
    read_from = int(doc["read_from"].split("/")[0], 16) << 32 | int(doc["read_from"].split("/")[1], 16)
    needed = f"00000001{0:08X}{read_from // (1 << 20):08X}"  # 1 MB segments (the test cluster's)
    partial = tmp_path / "old"
    shutil.copytree(f["old"], partial)
    (partial / needed).unlink()
    for p in sorted(partial.iterdir()):
        if p.name < needed:
            p.unlink()
    out = run_cli("diverge", "--old", partial, "--new", f["new"], "--catalog", f["catalog"])
    assert out.returncode == 1
    assert needed in out.stderr.decode(), out.stderr.decode()


def test_timelines_and_decode_warning(failover, tmp_path):
    f = failover
    archive = tmp_path / "archive"
    shutil.copytree(f["old"], archive)
    for p in f["new"].iterdir():
        shutil.copy(p, archive / p.name)
    out = run_cli("timelines", archive, "--start-lsn", f["switch"])
    assert out.returncode == 0, out.stderr.decode()
    text = out.stdout.decode()
    assert f"timeline 2: forked from timeline 1 at {f['switch']}" in text
    assert f"switch point {f['switch']}: timeline 2 forked here; this timeline goes on to" in text
    assert "warning: the start LSN" in text
    out = run_cli("decode", "--catalog", f["catalog"], "--start-lsn", f["switch"], archive)
    assert f"timeline 1's WAL from {f['switch']}" in out.stderr.decode()
    # the archive holds both timelines: the new one's WAL is used for the conflicts without --new
    out = run_cli("diverge", "--old", archive, "--catalog", f["catalog"], "--format", "json")
    assert out.returncode == 0, out.stderr.decode()
    doc = json.loads(out.stdout)
    assert doc["conflicts_checked"] == "timeline 2 WAL" and len(doc["conflicts"]) == 4
    assert len(doc["lost_transactions"]) == len(OLD_WRITES) - 2


TABLES = {"acct": "id", "audit": "id", "docs": "id", "bulk": "id", "scratch": None, "newtab": "id"}


def _rows(dsn: str, conflicts: set) -> dict:
    """Each table's rows as text, but the rows reported as conflicts (and a table truncated on one side)."""
    import psycopg

    out = {}
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table, key in TABLES.items():
            if (table, "all rows") in conflicts:
                continue
            rows = conn.execute(f"SELECT {key or 'NULL'}::text, x::text FROM {table} x").fetchall()
            out[table] = sorted(text for k, text in rows if (table, k) not in conflicts)
    return out


def test_sql_says_what_it_cannot_redo_and_exits_1(failover):
    """The DELETE from scratch (no primary key: the WAL holds no key of the row) cannot be redone:
    diverge --format sql puts a comment at its place, lists it on stderr and exits 1, as decode
    --format sql does (README, Exit status); the report itself is complete."""
    f = failover
    out = run_cli("diverge", "--old", f["old"], "--new", f["new"], "--catalog", f["catalog"], "--format", "sql")
    err = out.stderr.decode().splitlines()
    # where the server's slot has it
    lsn, = [lsn for lsn, _xid, data in f["rows"] if data.startswith("table public.scratch: DELETE:")]
    note = (f"cannot redo DELETE of public.scratch at {lsn}: the WAL holds no key of the row (REPLICA IDENTITY "
            "NOTHING, or DEFAULT without a primary key)")
    assert [line for line in err if "cannot redo" in line] == [f"waldecode: {note}"], err
    assert err[-1] == ("waldecode: error: 1 change(s) listed above could not be redone: the output leaves them out "
                       "(a comment stands at each one's place)")
    assert out.returncode == 1
    script = out.stdout.decode().splitlines()
    at = script.index(f"-- {note}")
    assert script[at - 1] == "BEGIN;" and script[at + 1] == "COMMIT;"
    # the report lacks nothing: it lists the transaction and its DELETE
    report = run_cli("diverge", "--old", f["old"], "--new", f["new"], "--catalog", f["catalog"])
    assert report.returncode == 0, report.stderr.decode()
    assert "public.scratch (1 delete)" in report.stdout.decode()
    # undo statements are not what the new primary needs: refused, as a usage error
    undo = run_cli("diverge", "--old", f["old"], "--new", f["new"], "--catalog", f["catalog"], "--format", "sql",
                   "-o", "undo")
    assert (undo.returncode, undo.stdout) == (2, b"")
    assert undo.stderr.decode() == ("waldecode: error: -o undo does not go with diverge: its SQL re-applies the lost "
                                    "transactions on the new primary\n")


def test_sql_brings_the_new_primary_to_the_old_contents(failover):
    """Last (it changes the new primary): the stated COMMIT/ROLLBACK PREPARED, then diverge --format sql
    on the new primary give every table the old primary's contents, but for the reported conflicts."""
    import psycopg

    f = failover
    out = run_cli("diverge", "--old", f["old"], "--new", f["new"], "--catalog", f["catalog"], "--format", "sql")
    # 1: the DELETE from scratch, which it cannot redo (test_sql_says_what_it_cannot_redo_and_exits_1)
    assert out.returncode == 1, out.stderr.decode()
    script = out.stdout.decode()
    actions = [line.split("--   ", 1)[1].split(";")[0] for line in script.splitlines() if line.startswith("--   ")]
    assert actions == ["COMMIT PREPARED 'before_fork'", "ROLLBACK PREPARED 'before_fork_rb'"]
    assert "ALTER TABLE public.acct ADD COLUMN extra integer;" in script
    assert "CREATE TABLE public.newtab (id integer NOT NULL, t text, PRIMARY KEY (id));" in script
    conflicts = {("acct", "1"), ("acct", "100"), ("audit", "1"), ("scratch", "all rows")}
    warnings = []
    with psycopg.connect(f["dsn"], autocommit=True) as new:
        for action in actions:
            new.execute(action)
        new.add_notice_handler(lambda d: warnings.append(d.message_primary))
        new.execute(script.encode(), prepare=False)
    # the guarded statements met the rows the new timeline changed: warned about, left as they are
    assert len(warnings) == 2 and all("waldecode: conflict: " in w for w in warnings), warnings
    assert any("INSERT of public.acct" in w for w in warnings) and any("UPDATE of public.audit" in w
                                                                       for w in warnings)
    # every row as the old primary left it, but the conflicts and what only the new timeline changed
    # (NEW_WRITES' id 5: the new primary's own, kept)
    assert _rows(f["dsn"], conflicts | {("acct", "5")}) == _rows(f["old_dsn"], conflicts | {("acct", "5")})
    with psycopg.connect(f["dsn"], autocommit=True) as new:
        assert new.execute("SELECT v FROM acct WHERE id = 5").fetchone()[0] == "new 5"
