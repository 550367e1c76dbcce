"""``waldecode diverge`` and ``waldecode apply`` on WAL written at wal_level=replica.

diverge: one initdb, one schema, a copy of the stopped data directory; the same failover runs twice
from that copy, once at wal_level=logical and once at wal_level=replica: a transaction prepared
before the fork, one left open since before it, a streaming standby from a base backup, the standby
stopped (the cut), writes on the old primary (updates, inserts, deletes, REPLICA IDENTITY FULL, a
savepoint rolled back, TOAST, the COMMIT PREPARED, a bulk insert, ADD COLUMN, CREATE TABLE with an
insert, a DELETE from a table without a key, a TRUNCATE), one left open, an immediate stop (the
crash), the standby promoted to timeline 2 and written to.  The logical run's report is the truth
(``test_diverge.py`` checks it against the old primary's own slot); the replica run's report must
name the same lost transactions (xids, tables, keys and test_decoding lines), the same transactions
open at the crash, prepared transactions, missing DDL and conflicts.  LSNs differ between the runs
(a logical-level WAL record is longer), so they are compared through the commit order.

apply: at wal_level=replica, a copy of the database made before a workload; the workload's WAL
applied to the copy by ``waldecode apply``: the copy must end with the source's rows.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest
from replica_runs import pristine_cluster, start_at

from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.forensics.diverge import diverge

pytestmark = [pytest.mark.server, pytest.mark.slow]

DB = "live"

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
    "INSERT INTO docs SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 400) g",  # TOASTed
    "COMMIT PREPARED 'before_fork'",
    "ROLLBACK PREPARED 'before_fork_rb'",
    "INSERT INTO bulk SELECT g, g FROM generate_series(1, 3000) g",
    ["BEGIN", "ALTER TABLE acct ADD COLUMN extra int", "UPDATE acct SET extra = 7 WHERE id = 3", "COMMIT"],
    ["BEGIN", "CREATE TABLE newtab (id int PRIMARY KEY, t text)", "INSERT INTO newtab VALUES (1, 'x')", "COMMIT"],
    "DELETE FROM scratch WHERE id = 1",
    "TRUNCATE scratch",
    ["BEGIN", "INSERT INTO acct VALUES (104, 'prepared after the fork')", "PREPARE TRANSACTION 'after_fork'"],
]

NEW_WRITES = [
    "UPDATE acct SET v = 'new 1' WHERE id = 1",
    "INSERT INTO acct VALUES (100, 'new 100')",
    "UPDATE audit SET note = 'new' WHERE id = 1",
    "INSERT INTO scratch VALUES (50, 'new')",
]


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


def _failover(c, pristine, tmp, port: int, wal_level: str) -> dict:
    """The failover from the pristine data directory at ``wal_level``: the old and new timelines' WAL."""
    import psycopg

    start_at(c, pristine, wal_level=wal_level)
    standby = c.base / f"standby_{wal_level}"
    standby_up = False
    try:
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            redo, = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (redo,)).fetchone()[0]
            _run(conn, ["BEGIN", "UPDATE acct SET v = 'prepared before the fork' WHERE id = 9",
                        "PREPARE TRANSACTION 'before_fork'"])
            _run(conn, ["BEGIN", "DELETE FROM acct WHERE id = 10", "PREPARE TRANSACTION 'before_fork_rb'"])
        early = c.connect(DB)
        early.execute("BEGIN")
        early.execute("INSERT INTO audit VALUES (106, 'open since before the fork')")
        early_xid = early.execute("SELECT txid_current()").fetchone()[0]
        c.run_bin("pg_basebackup", "-D", standby, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                  "-X", "stream", "-c", "fast", "-R")
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "-l", standby / "log", "-o", f"-p {port}", "start")
        standby_up = True
        with c.connect(DB) as conn:
            target = conn.execute("SELECT pg_current_wal_lsn()").fetchone()[0]
            _wait(lambda: conn.execute("SELECT coalesce(bool_or(replay_lsn >= %s), false) FROM pg_stat_replication",
                                       (target,)).fetchone()[0], "the standby to catch up")
        c.run_bin("pg_ctl", "-D", standby, "-m", "fast", "-w", "stop")
        standby_up = False
        for work in OLD_WRITES:
            with c.connect(DB, options="-c lock_timeout=30s") as one:
                _run(one, work)
        conn = c.connect(DB)
        conn.execute("BEGIN")
        conn.execute("INSERT INTO acct VALUES (105, 'open at the crash')")
        open_xid = conn.execute("SELECT txid_current()").fetchone()[0]
        with c.connect(DB) as other:
            other.execute("CHECKPOINT")
        c.run_bin("pg_ctl", "-D", c.pgdata, "-m", "immediate", "-w", "stop")
        c._running = False
        for gone in (conn, early):
            try:
                gone.close()
            except psycopg.Error:
                pass
        old_wal = c.archive_wal(tmp / f"old_{wal_level}", first)
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "-l", standby / "log", "-o", f"-p {port}", "start")
        standby_up = True
        c.run_bin("pg_ctl", "-D", standby, "-w", "-t", "60", "promote")
        new_dsn = f"host={c.socket_dir} port={port} user=postgres dbname={DB}"
        with psycopg.connect(new_dsn, autocommit=True) as new:
            _wait(lambda: not new.execute("SELECT pg_is_in_recovery()").fetchone()[0], "the promotion")
            for work in NEW_WRITES:
                _run(new, work)
            new.execute("CHECKPOINT")
        new_wal = tmp / f"new_{wal_level}"
        new_wal.mkdir()
        for f in (standby / "pg_wal").iterdir():
            if f.name == "00000002.history" or (f.name.startswith("00000002") and len(f.name) == 24):
                shutil.copy(f, new_wal / f.name)
        return dict(old=old_wal, new=new_wal, open_xid=open_xid, early_xid=early_xid)
    finally:
        if standby_up:
            c.run_bin("pg_ctl", "-D", standby, "-m", "immediate", "-w", "stop", check=False)


@pytest.fixture(scope="module")
def failovers(tmp_path_factory):
    from waldecode.testing.cluster import _free_port

    tmp = tmp_path_factory.mktemp("replica_diverge")
    with pristine_cluster(DB, SCHEMA) as (c, catalog, pristine):
        port = _free_port()
        runs = {level: _failover(c, pristine, tmp, port, level) for level in ("logical", "replica")}
        catalog_file = tmp / "catalog.json"
        catalog_file.write_text(catalog.to_json())
        yield dict(catalog=catalog, catalog_file=catalog_file, **runs)


def _report(d) -> dict:
    """What a Divergence says, without its LSNs: LSNs differ between the levels, the commit order does not."""
    def txn(t):
        return dict(xid=t.xid, gid=t.gid, tables=t.tables, keys=sorted(map(repr, t.keys.items())),
                    changes=t.changes, complete=t.changes_complete)

    return dict(
        lost=[txn(t) for t in d.lost],
        open_at_crash=[txn(t) for t in d.open_at_crash],
        prepared=sorted((p.gid, p.xid, p.old_fate, p.new_fate, p.action, p.prepare_lsn is None) for p in d.prepared),
        missing_ddl=[(m.xid, m.kind, m.relation, m.statement) for m in d.missing_ddl],
        conflicts=sorted(repr((c.table, c.key, [(x, ops) for x, _lsn, ops in c.old],
                               [(x, ops) for x, _lsn, ops in c.new])) for c in d.conflicts),
        xids_reused=d.xids_reused, errors=d.errors)


def test_diverge_on_replica_wal_reports_what_logical_wal_does(failovers):
    f = failovers
    reports, next_xid = {}, {}
    for level in ("logical", "replica"):
        d = diverge([f[level]["old"]], f["catalog"], new_paths=[f[level]["new"]], with_changes=True)
        assert d.complete, (level, d.errors)
        reports[level] = _report(d)
        next_xid[level] = d.next_xid_at_switch
        # the commit order is the LSNs' order
        assert [t.commit_lsn for t in d.lost] == sorted(t.commit_lsn for t in d.lost)
    truth, got = reports["logical"], reports["replica"]
    # the workload is all there: its committed transactions (not the ROLLBACK PREPARED, nor the last, prepared)
    assert len(truth["lost"]) == len(OLD_WRITES) - 2
    assert [t["xid"] for t in truth["open_at_crash"]] == [f["logical"]["early_xid"], f["logical"]["open_xid"]]
    assert truth["missing_ddl"] and truth["conflicts"] and truth["prepared"]
    for key in truth:
        assert got[key] == truth[key], key
    # The first xid the new timeline can have assigned: after the last one assigned before the cut (the open
    # transaction's, whose records before it are row changes only: under Cython the native loop takes them, so
    # diverge reads every record's xid from the framed records, not from the records the decoder hands on)
    assert next_xid["replica"] == f["replica"]["early_xid"] + 1
    assert next_xid["logical"] == f["logical"]["early_xid"] + 1


def test_diverge_command_on_replica_wal(failovers):
    f = failovers
    outs = {}
    # the replica run's snapshot chosen from a directory of snapshots, for the replica reading's start
    catalogs = f["catalog_file"].parent / "catalogs"
    catalogs.mkdir(exist_ok=True)
    shutil.copy(f["catalog_file"], catalogs / "before.json")
    for level, catalog in (("logical", f["catalog_file"]), ("replica", catalogs)):
        out = subprocess.run([sys.executable, "-m", "waldecode.cli", "diverge", "--old", str(f[level]["old"]),
                              "--new", str(f[level]["new"]), "--catalog", str(catalog), "--format", "json",
                              "--changes"], capture_output=True, timeout=600)
        assert out.returncode == 0, out.stderr.decode()
        doc = json.loads(out.stdout)
        outs[level] = [(t["xid"], t["tables"], t["changes"]) for t in doc["lost_transactions"]]
    assert outs["replica"] == outs["logical"] and len(outs["logical"]) == len(OLD_WRITES) - 2


# apply: a source database and a copy of it made before the workload, at wal_level=replica
APPLY_SCHEMA = """
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric(12,2));
CREATE TABLE journal (at_step int, note text);
CREATE TABLE doc (id int PRIMARY KEY, body text);
INSERT INTO acct SELECT g, 'owner ' || g, g * 10 FROM generate_series(1, 10) g;
"""
APPLY_TABLES = ("acct", "journal", "doc")


def _contents(c, db: str) -> dict:
    with c.connect(db) as conn:
        return {t: sorted(r[0] for r in conn.execute(f"SELECT x::text FROM {t} x").fetchall()) for t in APPLY_TABLES}


def test_apply_replica_wal(tmp_path):
    from waldecode.testing.cluster import Cluster, ClusterError

    try:
        c = Cluster(15, settings={"wal_level": "replica", "wal_keep_size": "1GB"})
        c.__enter__()
    except ClusterError as e:
        pytest.fail(f"PostgreSQL 15 is needed (./dev test installs it): {e}")
    try:
        c.sql(f"CREATE DATABASE {DB}")
        with c.connect(DB) as conn:
            conn.execute(APPLY_SCHEMA)
            catalog = snapshot_from_connection(conn)
        c.sql(f"CREATE DATABASE target TEMPLATE {DB}")
        with c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            start, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            redo, = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (redo,)).fetchone()[0]
            for i in range(8):
                conn.execute("BEGIN")
                conn.execute("INSERT INTO journal VALUES (%s, %s)", (i, f"step {i}"))
                conn.execute("UPDATE acct SET balance = balance + %s WHERE id = %s", (i, i % 5 + 1))
                conn.execute("INSERT INTO acct VALUES (%s, %s, %s)", (100 + i, f"new {i}", i))
                conn.execute("COMMIT")
            conn.execute("INSERT INTO doc SELECT 1, string_agg(md5(g::text), '') FROM generate_series(1, 400) g")
            conn.execute("UPDATE doc SET id = 2")  # the TOAST value unchanged: the sql plugin needs the old row
            conn.execute("UPDATE acct SET owner = 'changed' WHERE id = 7")
            conn.execute("DELETE FROM acct WHERE id = 8")
            end, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            conn.execute("SELECT pg_switch_wal()")
        wal = c.archive_wal(tmp_path / "wal", first)
        catalog_file = tmp_path / "catalog.json"
        catalog_file.write_text(catalog.to_json())
        before = _contents(c, "target")
        assert before != _contents(c, DB)
        dsn = f"host={c.socket_dir} port={c.port} user=postgres dbname=target"
        out = subprocess.run([sys.executable, "-m", "waldecode.cli", "apply", "--dsn", dsn, "--catalog",
                              str(catalog_file), "--start-lsn", start, "--end-lsn", end, str(wal)],
                             capture_output=True, timeout=600)
        assert out.returncode == 0, out.stderr.decode()
        assert _contents(c, "target") == _contents(c, DB)
        assert "12 transaction(s) applied" in out.stderr.decode(), out.stderr.decode()
    finally:
        c.__exit__(None, None, None)
