"""What the old primary committed after a fork: ``decode --timeline 1 --start-lsn <switch point>``.

A real fork on PostgreSQL 15: a base backup of the primary is started alone with
recovery.signal, replays the WAL it has and ends recovery on timeline 2 (the promoted
node); the primary goes on writing on timeline 1 — transactions the new timeline never got,
one of them begun before the fork.  The archive holds both timelines and the history file.
The truth is the primary's own slot, created before the fork and advanced to the switch
point: decoding timeline 1 from the switch point must print exactly its rows, and the
default (the newest timeline) must not print the lost transactions.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.wal.segments import parse_history

pytestmark = [pytest.mark.server, pytest.mark.slow]


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *map(str, args)], capture_output=True,
                          timeout=300)


def test_old_primary_after_the_fork(tmp_path):
    import psycopg

    from waldecode.testing.cluster import Cluster, ClusterError, _free_port

    try:
        c = Cluster(15)
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    backup = c.base / "promoted"
    port = _free_port()
    started = False
    try:
        c.sql("CREATE DATABASE app")
        with c.connect("app") as conn, c.connect("app") as other:
            conn.execute("CREATE TABLE acct (id int PRIMARY KEY, v text)")
            conn.execute("INSERT INTO acct SELECT g, 'seed' FROM generate_series(1, 10) g")
            catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('old', 'test_decoding')")
            first = conn.execute("SELECT pg_walfile_name(restart_lsn) FROM pg_replication_slots").fetchone()[0]
            conn.execute("UPDATE acct SET v = 'before fork' WHERE id = 1")
            other.execute("BEGIN")
            other.execute("UPDATE acct SET v = 'begun before, committed after the fork' WHERE id = 2")
            c.run_bin("pg_basebackup", "-D", backup, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                      "-X", "stream", "-c", "fast")
            # Lost on the old primary: committed after the backup's end, never seen by the new timeline
            for i in range(3, 8):
                conn.execute("UPDATE acct SET v = %s WHERE id = %s", (f"lost {i}", i))
            other.execute("INSERT INTO acct VALUES (100, 'lost, in the long transaction')")
            other.execute("COMMIT")
            conn.execute("INSERT INTO acct VALUES (101, 'lost last')")
            end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        # The backup alone, with recovery.signal: replays what it has, then ends recovery on timeline 2
        (backup / "recovery.signal").touch()
        if c._server_ids:
            os.chown(backup / "recovery.signal", *c._server_ids)
        c.run_bin("pg_ctl", "-D", backup, "-w", "-t", "60", "-l", backup / "log",
                  "-o", f"-p {port} -c restore_command=false", "start")
        started = True
        new = psycopg.connect(host=str(c.socket_dir), port=port, user="postgres", dbname="app", autocommit=True)
        for _ in range(200):
            if not new.execute("SELECT pg_is_in_recovery()").fetchone()[0]:
                break
            time.sleep(0.1)
        new.execute("UPDATE acct SET v = 'new timeline' WHERE id = 3")
        new.execute("INSERT INTO acct VALUES (200, 'new timeline')")
        new.execute("CHECKPOINT")
        new.close()
        c.run_bin("pg_ctl", "-D", backup, "-m", "fast", "-w", "stop")
        started = False
        history_file = backup / "pg_wal" / "00000002.history"
        (_tli, switch), = [(t, lsn) for t, lsn in parse_history(history_file.read_text(), str(history_file))]
        switch_text = f"{switch >> 32:X}/{switch & 0xFFFFFFFF:X}"
        with c.connect("app") as conn:
            conn.execute("SELECT pg_replication_slot_advance('old', %s::pg_lsn)", (switch_text,))
            rows = conn.execute("SELECT data FROM pg_logical_slot_peek_changes('old', %s::pg_lsn, NULL)",
                                (end,)).fetchall()
        expected = "".join(r[0] + "\n" for r in rows)
        archive = tmp_path / "archive"
        c.archive_wal(archive, first)  # timeline 1, the old primary's
        for f in (backup / "pg_wal").iterdir():
            if f.name == "00000002.history" or f.name.startswith("00000002"):
                shutil.copy(f, archive / f.name)
    finally:
        if started:
            c.run_bin("pg_ctl", "-D", backup, "-m", "immediate", "-w", "stop", check=False)
        c.__exit__(None, None, None)
    assert "lost last" in expected and "begun before, committed after the fork" in expected
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(catalog.to_json())
    out = run_cli("decode", "--catalog", catalog_file, "--timeline", "1", "--start-lsn", switch_text,
                  "--end-lsn", end, archive)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode() == expected
    # The newest timeline (the default) holds none of the lost transactions
    out = run_cli("decode", "--catalog", catalog_file, "--start-lsn", switch_text, archive)
    assert "lost" not in out.stdout.decode()
    assert "new timeline" in out.stdout.decode(), out.stderr.decode()
