"""Decoding with a catalog read from the data directory gives the same output as with --dsn.

On one PostgreSQL 15 cluster: a schema, a CHECKPOINT and a clean stop, the snapshot
read from the stopped data directory; a restart, the snapshot from the live server;
then a workload under a test_decoding slot.  Decoding the WAL with either snapshot
must print exactly the slot's own output.
"""

from __future__ import annotations


import pytest

from waldecode.catalog.datadir import snapshot_from_datadir
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.session import decode_wal
from waldecode.wal.xlogreader import parse_lsn

pytestmark = pytest.mark.server


def decode(catalog, wal, start, end) -> list[str]:
    """As the slot created at ``start`` decodes (reading from there)."""
    rows: list[str] = []
    decode_wal([wal], catalog, TestDecoding(rows.append), restart_lsn=parse_lsn(start),
               end_lsn=parse_lsn(end))
    return rows


def test_datadir_and_dsn_snapshots_decode_identically(tmp_path):
    from waldecode.testing.cluster import Cluster, ClusterError

    try:
        c = Cluster(15)
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    try:
        c.sql("CREATE DATABASE app")
        with c.connect("app") as conn:
            conn.execute("CREATE TYPE mood AS ENUM ('sad', 'ok'); "
                         "CREATE TABLE t (id int PRIMARY KEY, m mood, v text, n numeric); "
                         "ALTER TABLE t ADD COLUMN d int DEFAULT 42; "
                         "CREATE TABLE f (a int, b text); ALTER TABLE f REPLICA IDENTITY FULL; "
                         "INSERT INTO f VALUES (1, 'x'); CHECKPOINT")
        c.stop()
        from_files = snapshot_from_datadir(c.pgdata, "app")
        c.start()
        with c.connect("app") as conn:
            from_server = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('s', 'test_decoding')")
            start = conn.execute("SELECT restart_lsn::text FROM pg_replication_slots").fetchone()[0]
            conn.execute("INSERT INTO t (id, m, v, n) VALUES (1, 'ok', 'it''s', 1.50), (2, 'sad', NULL, 'NaN')")
            conn.execute("UPDATE t SET id = 3, d = 7 WHERE id = 1")
            conn.execute("UPDATE f SET b = 'y'; DELETE FROM t WHERE id = 2")
            conn.execute("CHECKPOINT")
            end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            expected = [bytes(r[0]).decode() for r in conn.execute(
                "SELECT data FROM pg_logical_slot_peek_binary_changes('s', NULL, NULL)").fetchall()]
        wal = c.archive_wal(tmp_path / "wal")
    finally:
        c.__exit__(None, None, None)
    assert any("d[integer]:42" in row for row in expected)  # the missing value, printed for the old row
    assert decode(from_files, wal, start, end) == expected
    assert decode(from_server, wal, start, end) == expected
