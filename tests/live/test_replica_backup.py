"""``waldecode decode --backup DIR`` on WAL written at wal_level=replica with full_page_writes off.

One initdb, one schema, a copy of the stopped data directory; the same workload (updates and deletes of
rows stored before it, a HOT update, an insert, a FULL-identity update) runs twice from that copy: at
wal_level=logical under a test_decoding slot (the truth), and at wal_level=replica with full_page_writes
off after a base backup (pg_basebackup), so that the pages the workload changes carry no image.  Decoded
with the backup's pages, the replica WAL gives the slot's lines; without them the first change of an
unimaged page is named, not guessed; a start before the backup is refused.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from replica_runs import pristine_cluster, start_at


pytestmark = [pytest.mark.server, pytest.mark.slow]

DB = "live"

SCHEMA = """
CREATE TABLE t (id int PRIMARY KEY, v text) WITH (fillfactor = 70);
CREATE TABLE f (id int PRIMARY KEY, v text, n int);
ALTER TABLE f REPLICA IDENTITY FULL;
INSERT INTO t SELECT g, 'v' || g FROM generate_series(1, 500) g;
INSERT INTO f SELECT g, 'f' || g, g FROM generate_series(1, 200) g;
"""

WORKLOAD = [
    "UPDATE t SET v = 'hot' WHERE id = 7",
    "UPDATE t SET id = 1007 WHERE id = 8",
    "DELETE FROM t WHERE id BETWEEN 100 AND 103",
    "UPDATE f SET n = n + 1 WHERE id % 40 = 0",
    "DELETE FROM f WHERE id = 150",
    "INSERT INTO t VALUES (2000, 'new')",
    "UPDATE t SET v = v || '!' WHERE id % 50 = 1",
]


def _workload(c) -> str:
    """The workload; the insert LSN before it."""
    with c.connect(DB) as conn:
        start, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        for stmt in WORKLOAD:
            conn.execute(stmt)
    return start


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("replica_backup")
    with pristine_cluster(DB, SCHEMA) as (c, catalog, pristine):
        catalog_file = tmp / "catalog.json"
        catalog_file.write_text(catalog.to_json())

        # the truth: wal_level=logical and a test_decoding slot
        c.start()
        with c.connect(DB) as conn:
            conn.execute("SELECT pg_create_logical_replication_slot('truth', 'test_decoding')")
        _workload(c)
        with c.connect(DB) as conn:
            expected = [r[0] for r in conn.execute(
                "SELECT data FROM pg_logical_slot_peek_changes('truth', NULL, NULL)").fetchall()]

        # wal_level=replica, full_page_writes off: a base backup, then the workload
        start_at(c, pristine, wal_level="replica", full_page_writes="off")
        with c.connect(DB) as conn:
            before, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
        backup = c.base / "backup"
        c.run_bin("pg_basebackup", "-D", backup, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                  "-X", "none", "-c", "fast")
        with c.connect(DB) as conn:
            # the backup ended: its checkpoint is the last one the WAL holds before the workload
            checkpoint, = conn.execute("SELECT redo_lsn::text FROM pg_control_checkpoint()").fetchone()
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (before,)).fetchone()[0]
        start = _workload(c)
        with c.connect(DB) as conn:
            end, = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()
            conn.execute("SELECT pg_switch_wal()")
        wal = c.archive_wal(tmp / "wal", first)
        yield dict(catalog=catalog_file, expected=expected, backup=backup, wal=wal, start=start, end=end,
                   checkpoint=checkpoint, before=before)


def _decode(r, *extra):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(r["catalog"]),
                           "--start-lsn", r["start"], "--end-lsn", r["end"], *map(str, extra), str(r["wal"])],
                          capture_output=True, timeout=600)


def test_backup_pages_decode_full_page_writes_off(runs):
    r = runs
    assert len([ln for ln in r["expected"] if ln.startswith("BEGIN")]) == len(WORKLOAD)
    out = _decode(r, "--backup", r["backup"])
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode().splitlines() == r["expected"]


def test_without_the_backup_the_page_is_named(runs):
    out = _decode(runs)
    err = out.stderr.decode()
    assert out.returncode == 1 and "page unknown: relation public.t" in err and "full_page_writes was off" in err, err


def test_a_start_before_the_backup_is_refused(runs):
    r = runs
    out = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--catalog", str(r["catalog"]),
                          "--backup", str(r["backup"]), "--start-lsn", r["before"], "--end-lsn", r["end"],
                          str(r["wal"])], capture_output=True, timeout=600)
    err = out.stderr.decode()
    assert out.returncode == 1, err
    assert f"decoding from {r['before']} needs the pages of then, but the base backup" in err, err


def test_backup_with_a_slot_is_a_usage_error(runs, tmp_path):
    r = runs
    out = _decode(r, "--backup", r["backup"], "--slot", tmp_path / "slot", "--output", tmp_path / "out")
    assert out.returncode == 2 and "--backup does not go with --slot" in out.stderr.decode(), out.stderr.decode()
