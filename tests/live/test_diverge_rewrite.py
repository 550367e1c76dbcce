"""``waldecode diverge`` with a catalog snapshot from before a table rewrite: never a wrong report.

PostgreSQL 15, a real failover: a catalog snapshot (``old``), then three rewrites that give their
tables a new relfilenode (VACUUM FULL, ALTER COLUMN TYPE, TRUNCATE), a CHECKPOINT and a second
snapshot (``new``), a segment switch (so the rewrites lie before every WAL segment diverge
reads), a test_decoding slot (the truth), a transaction begun before the fork, a VACUUM FULL
that diverge does read (after its reading start, before the switch point), a streaming standby
stopped (the cut); on the old primary transactions on each table, one mixing a rewritten table
with a plain one; an immediate stop; the standby promoted to timeline 2.

With ``old``, the changes to the tables rewritten before the reading start cannot be mapped to
a relation: the report must say which transactions' changes are incomplete and why, never "no
row changes", and exit 1.  The rewrite inside the WAL read is followed by the catalog history:
its table's changes are the server's.  With ``new``, or a directory holding both (the latest
at or before the reading start is chosen), the report is complete and its changes are the
server's, byte for byte.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from live import DB, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.wal.segments import parse_history

pytestmark = [pytest.mark.server, pytest.mark.slow]

SCHEMA = """
CREATE TABLE vac (id int PRIMARY KEY, v text);
CREATE TABLE typ (id int PRIMARY KEY, v int);
CREATE TABLE trunc (id int PRIMARY KEY, v text);
CREATE TABLE mid (id int PRIMARY KEY, v text);
CREATE TABLE plain (id int PRIMARY KEY, v text);
INSERT INTO vac SELECT g, 'seed ' || g FROM generate_series(1, 10) g;
INSERT INTO typ SELECT g, g FROM generate_series(1, 10) g;
INSERT INTO trunc SELECT g, 'seed ' || g FROM generate_series(1, 10) g;
INSERT INTO mid SELECT g, 'seed ' || g FROM generate_series(1, 10) g;
INSERT INTO plain SELECT g, 'seed ' || g FROM generate_series(1, 10) g;
"""

# Before the reading start: each gives its table a new relfilenode
REWRITES = ["VACUUM FULL vac", "ALTER TABLE typ ALTER COLUMN v TYPE bigint", "TRUNCATE trunc"]

# On the old primary after the cut: each one transaction
OLD_WRITES = [
    "UPDATE vac SET v = 'old 1' WHERE id = 1",
    "INSERT INTO typ VALUES (100, 5000000000)",
    "INSERT INTO trunc VALUES (100, 'old 100')",
    ["BEGIN", "INSERT INTO plain VALUES (100, 'mixed')", "DELETE FROM vac WHERE id = 2", "COMMIT"],
    "INSERT INTO mid VALUES (100, 'old 100')",
    "INSERT INTO plain VALUES (101, 'plain')",
]
#: the lost transactions (in commit order) whose changes touch a table rewritten before the reading start
UNDECODABLE = [0, 1, 2, 3]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *map(str, args)], capture_output=True,
                          timeout=300)


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
    from waldecode.testing.cluster import _free_port

    tmp = tmp_path_factory.mktemp("diverge_rewrite")
    with live_cluster(SCHEMA) as c:
        yield from _build(c, tmp, _free_port())


def _build(c, tmp, port):
    import psycopg

    standby = c.base / "standby"
    standby_up = False
    try:
        with c.connect(DB) as conn:
            old_catalog = snapshot_from_connection(conn)
            for stmt in REWRITES:
                conn.execute(stmt)
            conn.execute("CHECKPOINT")
            new_catalog = snapshot_from_connection(conn)
            conn.execute("SELECT pg_switch_wal()")
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('truth', 'test_decoding')")
            first = conn.execute("SELECT pg_walfile_name(restart_lsn) FROM pg_replication_slots").fetchone()[0]
        # Begun before the fork and committed after it: the reading start lies before its first change,
        # so before the rewrite of mid, which the catalog history then follows
        early = c.connect(DB)
        early.execute("BEGIN")
        early.execute("INSERT INTO plain VALUES (50, 'begun before the fork')")
        with c.connect(DB) as conn:
            conn.execute("VACUUM FULL mid")
        c.run_bin("pg_basebackup", "-D", standby, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                  "-X", "stream", "-c", "fast", "-R")
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "-l", standby / "log", "-o", f"-p {port}", "start")
        standby_up = True
        with c.connect(DB) as conn:
            target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            _wait(lambda: conn.execute("SELECT coalesce(bool_or(replay_lsn >= %s), false) FROM pg_stat_replication",
                                       (target,)).fetchone()[0], "the standby to catch up")
        c.run_bin("pg_ctl", "-D", standby, "-m", "fast", "-w", "stop")  # the cut
        standby_up = False
        for work in OLD_WRITES:
            with c.connect(DB, options="-c lock_timeout=30s") as one:
                _run(one, work)
        early.execute("COMMIT")
        early.close()
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        c.run_bin("pg_ctl", "-D", c.pgdata, "-m", "immediate", "-w", "stop")  # the crash
        c._running = False
        old_wal = c.archive_wal(tmp / "old", first)
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "-l", standby / "log", "-o", f"-p {port}", "start")
        standby_up = True
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "promote")
        new_dsn = f"host={c.socket_dir} port={port} user=postgres dbname={DB}"
        with psycopg.connect(new_dsn, autocommit=True) as new:
            _wait(lambda: not new.execute("SELECT pg_is_in_recovery()").fetchone()[0], "the promotion")
            new.execute("CHECKPOINT")
        new_wal = tmp / "new"
        new_wal.mkdir()
        for f in (standby / "pg_wal").iterdir():
            if f.name == "00000002.history" or (f.name.startswith("00000002") and len(f.name) == 24):
                shutil.copy(f, new_wal / f.name)
        (_tli, switch), = parse_history((new_wal / "00000002.history").read_text(), "00000002.history")
        switch_text = f"{switch >> 32:X}/{switch & 0xFFFFFFFF:X}"
        # The truth: the old primary, started again, decodes with the slot it had before the fork
        c.start()
        with c.connect(DB) as conn:
            conn.execute("SELECT pg_replication_slot_advance('truth', %s::pg_lsn)", (switch_text,))
            rows = conn.execute("SELECT lsn::text, xid::text, data FROM pg_logical_slot_peek_changes('truth', "
                                "%s::pg_lsn, NULL)", (end,)).fetchall()
        catalogs = tmp / "catalogs"
        catalogs.mkdir()
        (catalogs / "1-old.json").write_text(old_catalog.to_json())
        (catalogs / "2-new.json").write_text(new_catalog.to_json())
        if os.environ.get("WALDECODE_KEEP_DIVERGE"):  # for post-mortems: the WAL and the catalogs
            shutil.copytree(tmp, os.environ["WALDECODE_KEEP_DIVERGE"], dirs_exist_ok=True)
        yield dict(old=old_wal, new=new_wal, old_catalog=catalogs / "1-old.json",
                   new_catalog=catalogs / "2-new.json", catalogs=catalogs, switch=switch_text, rows=rows,
                   old_filenodes=old_catalog, new_filenodes=new_catalog)
    finally:
        if standby_up:
            c.run_bin("pg_ctl", "-D", standby, "-m", "immediate", "-w", "stop", check=False)


def _server_transactions(rows):
    """The slot's transactions: [(xid, [lines])]."""
    out, cur = [], None
    for _lsn, xid, data in rows:
        if data.startswith("BEGIN "):
            cur = (int(xid), [data])
        else:
            cur[1].append(data)
            if data.startswith("COMMIT "):
                out.append(cur)
                cur = None
    return out


def _diverge(f, catalog, *extra):
    return run_cli("diverge", "--old", f["old"], "--new", f["new"], "--catalog", catalog, *extra)


def test_the_truth_holds_every_write(failover):
    truth = _server_transactions(failover["rows"])
    assert len(truth) == len(OLD_WRITES) + 1  # and the transaction begun before the fork


def test_a_snapshot_after_the_rewrites_gives_the_servers_changes(failover):
    f = failover
    out = _diverge(f, f["new_catalog"], "--format", "json", "--changes")
    assert out.returncode == 0, out.stderr.decode()
    doc = json.loads(out.stdout)
    assert doc["complete"] is True and doc["errors"] == []
    truth = _server_transactions(f["rows"])
    assert [t["xid"] for t in doc["lost_transactions"]] == [x for x, _ in truth]
    assert [t["changes"] for t in doc["lost_transactions"]] == [lines for _, lines in truth]
    assert all(t["changes_complete"] for t in doc["lost_transactions"])


def test_a_snapshot_before_the_rewrites_says_what_it_could_not_decode(failover):
    f = failover
    out = _diverge(f, f["old_catalog"], "--format", "json", "--changes")
    assert out.returncode == 1, out.stderr.decode()
    doc = json.loads(out.stdout)
    assert doc["complete"] is False
    truth = _server_transactions(f["rows"])
    lost = doc["lost_transactions"]
    assert [t["xid"] for t in lost] == [x for x, _ in truth]
    # the transactions of OLD_WRITES are lost[0..5] (the early one commits last)
    for i, t in enumerate(lost):
        if i in UNDECODABLE:
            assert t["changes_complete"] is False, t
            assert t["undecoded"], t
            for u in t["undecoded"]:
                assert u["lsn"] and u["filenumber"] and u["reason"]
        else:
            assert t["changes_complete"] is True, t
            assert t["undecoded"] == []
            assert t["changes"] == truth[i][1]  # decoded right, the rewrite of mid among them
    # the filenumbers named are those the rewrites gave (the new snapshot's), never the old ones
    new_nodes = {r.relfilenode for r in f["new_filenodes"].relations.values()
                 if r.nspname == "public" and r.relname in ("vac", "typ", "trunc")}
    named = {int(u["filenumber"].split("/")[-1]) for t in lost for u in t["undecoded"]}
    assert named == new_nodes
    # the mixed transaction: what could be decoded is there, and it is marked incomplete
    assert lost[3]["tables"] == {"public.plain": {"INSERT": 1}}
    assert any("snapshot" in e and "reading start" in e for e in doc["errors"]), doc["errors"]


def test_the_text_report_never_says_no_row_changes_for_what_it_could_not_decode(failover):
    f = failover
    out = _diverge(f, f["old_catalog"])
    assert out.returncode == 1
    text = out.stdout.decode()
    lost_lines = [line for line in text.splitlines() if line.startswith("  timeline 1 xid ")]
    assert len(lost_lines) == len(OLD_WRITES) + 1
    for i in UNDECODABLE:
        assert "no row changes" not in lost_lines[i], lost_lines[i]
        assert "could not be decoded" in lost_lines[i], lost_lines[i]
    assert "report is incomplete" in text


def test_a_catalog_directory_chooses_the_snapshot_for_the_reading_start(failover):
    f = failover
    out = _diverge(f, f["catalogs"], "--format", "json", "--changes")
    assert out.returncode == 0, out.stderr.decode()
    assert "2-new.json" in out.stderr.decode()
    doc = json.loads(out.stdout)
    truth = _server_transactions(f["rows"])
    assert doc["complete"] is True
    assert [t["changes"] for t in doc["lost_transactions"]] == [lines for _, lines in truth]


def test_sql_leaves_out_what_it_could_not_decode_whole(failover):
    """--format sql never applies a part of a transaction: an incomplete one is left out, its
    statements that could be decoded shown as comments."""
    f = failover
    out = _diverge(f, f["old_catalog"], "--format", "sql")
    assert out.returncode == 1
    script = out.stdout.decode()
    truth = _server_transactions(f["rows"])
    for i in UNDECODABLE:
        assert f"-- INCOMPLETE: transaction {truth[i][0]}: " in script
    mixed = [line for line in script.splitlines() if "'mixed'" in line]
    assert mixed and all(line.startswith("-- ") for line in mixed), mixed
    assert any(line.startswith("DO ") and "'old 100'" in line and "public.mid" in line
               for line in script.splitlines())
