"""``--start-lsn`` is a slot's confirmed position, against a real PostgreSQL 15.

The server's truth for "what a slot confirmed up to L prints" is a slot moved to L:
slots created before the workload, advanced with ``pg_logical_slot_get_changes``
(as a client confirms) or ``pg_replication_slot_advance(slot, L)`` (to any LSN, also
one inside a window without running-xacts record), then peeked.  Offline decoding
from L must print the same rows, whole transactions included that began before L;
when the WAL handed over does not reach back far enough, the run names the
transactions and the missing segment and fails.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from live import DB, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.session import decode_wal
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server]

SCHEMA = """
CREATE TABLE t (id int PRIMARY KEY, v text);
CREATE TABLE log (id serial PRIMARY KEY, who text, n int);
INSERT INTO t SELECT g, 'seed ' || g FROM generate_series(1, 20) g;
"""


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_prepared_transactions=10, max_replication_slots=20) as c:
        yield c


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "waldecode.cli", *map(str, args)], capture_output=True,
                          timeout=300)


def peek(conn, slot: str, end: str) -> list[str]:
    rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL)",
                        (slot, end)).fetchall()
    return [bytes(r[0]).decode("utf-8", "surrogateescape") for r in rows]


def slot_position(conn, slot: str) -> tuple[str, str]:
    return conn.execute("SELECT confirmed_flush_lsn::text, restart_lsn::text FROM pg_replication_slots "
                        "WHERE slot_name = %s", (slot,)).fetchone()


def lsn_now(conn) -> str:
    return conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]


def decode(catalog, wal, start: str, end: str, restart: str | None = None):
    rows: list[str] = []
    result = decode_wal([wal], catalog, TestDecoding(rows.append), start_lsn=parse_lsn(start),
                        restart_lsn=parse_lsn(restart) if restart else None, end_lsn=parse_lsn(end))
    return rows, result


class Workload:
    """Interleaved sessions around chosen points: long transactions running across each point."""

    def __init__(self, cluster, nslots: int):
        self.c = cluster
        self.conn = cluster.connect(DB)
        self.catalog = snapshot_from_connection(self.conn)
        self.conn.execute("CHECKPOINT")
        self.slots = [f"sp_{id(self) % 100000}_{i}" for i in range(nslots)]
        for s in self.slots:
            self.conn.execute("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (s,))
        self.first_segment = self.conn.execute("SELECT pg_walfile_name(pg_current_wal_insert_lsn())").fetchone()[0]
        self.sessions = [cluster.connect(DB) for _ in range(3)]
        self.n = 0

    def commit_some(self, k: int = 3) -> None:
        for _ in range(k):
            self.n += 1
            self.conn.execute("INSERT INTO log (who, n) VALUES ('main', %s)", (self.n,))
        self.conn.execute("UPDATE t SET v = v || '+' WHERE id = %s", (self.n % 20 + 1,))

    def begin_long(self, i: int) -> None:
        s = self.sessions[i]
        s.execute("BEGIN")
        s.execute("INSERT INTO log (who, n) VALUES (%s, 1)", (f"long{i}",))
        s.execute("SAVEPOINT a")
        s.execute("UPDATE t SET v = %s WHERE id = %s", (f"long{i}", i + 1))

    def end_long(self, i: int, commit: bool = True) -> None:
        s = self.sessions[i]
        s.execute("INSERT INTO log (who, n) VALUES (%s, 2)", (f"long{i}",))
        s.execute("COMMIT" if commit else "ROLLBACK")

    def close(self) -> None:
        for s in self.sessions:
            s.close()
        for s in self.slots:
            self.conn.execute("SELECT pg_drop_replication_slot(%s)", (s,))
        self.conn.close()


def test_decoding_from_a_confirmed_position_equals_the_slot(cluster, tmp_path):
    """A slot confirmed mid-workload by a client (get_changes), with transactions running across the
    confirmed position and across the running-xacts records: the same rows from its confirmed LSN, alone
    or with its restart LSN, through the library and through the CLI."""
    w = Workload(cluster, 1)
    (slot,) = w.slots
    try:
        w.begin_long(0)
        w.commit_some()
        w.conn.execute("CHECKPOINT")  # a running-xacts record that lists long0
        w.begin_long(1)
        w.commit_some()
        w.conn.execute("SELECT pg_switch_wal()")
        w.commit_some()
        consumed = w.conn.execute("SELECT count(*) FROM pg_logical_slot_get_changes(%s, NULL, NULL)",
                                  (slot,)).fetchone()[0]
        assert consumed > 0
        w.commit_some()
        w.end_long(0)
        w.conn.execute("CHECKPOINT")
        w.commit_some()
        w.end_long(1)
        w.commit_some()
        end = lsn_now(w.conn)
        expected = peek(w.conn, slot, end)
        confirmed, restart = slot_position(w.conn, slot)
        wal = cluster.archive_wal(tmp_path / "wal", w.first_segment)
    finally:
        w.close()
    assert parse_lsn(confirmed) > parse_lsn(restart)
    assert "table public.log: INSERT: id[integer]:1 who[text]:'long0' n[integer]:1" in expected, \
        "the long transaction begun before the confirmed position is part of the slot's output"
    got, result = decode(w.catalog, wal, confirmed, end)
    assert got == expected
    assert result.complete and result.plan.reaches
    assert result.read_from < parse_lsn(confirmed)
    got, result = decode(w.catalog, wal, confirmed, end, restart)
    assert got == expected and result.complete
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(w.catalog.to_json())
    out = run_cli("decode", "--catalog", catalog_file, "--start-lsn", confirmed, "--end-lsn", end, wal)
    assert out.returncode == 0, out.stderr.decode()
    assert out.stdout.decode() == "".join(r + "\n" for r in expected)


def test_every_start_position_equals_a_slot_advanced_there(cluster, tmp_path):
    """Slots advanced to chosen LSNs (inside long transactions, right after a commit, in a window
    without any running-xacts record before the end): decoding from each prints what each slot prints."""
    w = Workload(cluster, 5)
    points = []
    try:
        w.begin_long(0)
        w.commit_some()
        points.append(lsn_now(w.conn))  # long0 running, no checkpoint yet since the slots
        w.conn.execute("CHECKPOINT")
        w.begin_long(1)
        w.commit_some()
        points.append(lsn_now(w.conn))  # long0 and long1 running
        w.end_long(0)
        points.append(lsn_now(w.conn))  # right after a commit
        w.begin_long(2)
        w.conn.execute("SELECT pg_switch_wal()")
        w.commit_some()
        w.end_long(2, commit=False)
        w.conn.execute("CHECKPOINT")
        w.begin_long(0)
        w.commit_some()
        points.append(lsn_now(w.conn))  # from here to the end: no running-xacts record
        w.commit_some()
        w.end_long(1)
        points.append(lsn_now(w.conn))
        w.end_long(0)
        w.commit_some()
        end = lsn_now(w.conn)
        expected = {}
        for slot, point in zip(w.slots, points):
            w.conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (slot, point))
            assert slot_position(w.conn, slot)[0] == point
            expected[point] = peek(w.conn, slot, end)
        wal = cluster.archive_wal(tmp_path / "wal", w.first_segment)
    finally:
        w.close()
    assert len(set(map(len, expected.values()))) == len(points), "every point prints something else"
    for point in points:
        got, result = decode(w.catalog, wal, point, end)
        assert got == expected[point], point
        assert result.complete, (point, result.not_decoded, result.warnings)


def test_a_start_the_input_cannot_serve_names_the_transactions_and_the_segment(cluster, tmp_path):
    """The segments before the confirmed position are missing while a transaction begun there commits
    after it: the run prints what it can, names that transaction and the segment needed, and fails."""
    w = Workload(cluster, 1)
    (slot,) = w.slots
    try:
        w.commit_some()
        w.begin_long(0)
        xid = w.sessions[0].execute("SELECT txid_current()").fetchone()[0]
        w.conn.execute("SELECT pg_switch_wal()")
        w.conn.execute("CHECKPOINT")
        w.commit_some()
        w.conn.execute("SELECT pg_switch_wal()")
        w.commit_some()
        confirmed = lsn_now(w.conn)
        w.conn.execute("SELECT pg_replication_slot_advance(%s, %s::pg_lsn)", (slot, confirmed))
        w.commit_some()
        w.end_long(0)
        w.commit_some()
        w.conn.execute("CHECKPOINT")
        w.commit_some()
        end = lsn_now(w.conn)
        expected = peek(w.conn, slot, end)
        confirmed_segment = w.conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (confirmed,)).fetchone()[0]
        wal = cluster.archive_wal(tmp_path / "wal", w.first_segment)
    finally:
        w.close()
    # Whole, the archive serves the start
    got, result = decode(w.catalog, wal, confirmed, end)
    assert got == expected and result.complete
    # Without the segments before the confirmed position's, it cannot
    removed = sorted(p.name for p in wal.iterdir() if p.name[:24] < confirmed_segment)
    assert removed
    for name in removed:
        (wal / name).unlink()
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(w.catalog.to_json())
    out = run_cli("decode", "--catalog", catalog_file, "--start-lsn", confirmed, "--end-lsn", end, wal)
    err = out.stderr.decode()
    assert out.returncode == 1, err
    assert f"transaction {xid} committed at " in err and "not decoded: before the consistent point" in err
    assert f"the segments before {confirmed_segment} (from {removed[-1]} back) are needed" in err
    assert "the earliest position this input can serve is " in err
    printed = out.stdout.decode().splitlines()
    assert printed and all(r in expected for r in printed)
    assert not any(f"long0" in r for r in printed)


def test_without_a_consistent_point_each_transaction_is_reported_as_it_ended(cluster, tmp_path):
    """A range with no running-xacts record: committed, aborted and prepared transactions are named as
    such (not as "still open"), the prepared one with its GID, and the run fails."""
    with cluster.connect(DB) as conn:
        catalog = snapshot_from_connection(conn)
        conn.execute("SELECT pg_switch_wal()")  # the archive begins after every running-xacts record so far
        start = lsn_now(conn)
        conn.execute("INSERT INTO log (who, n) VALUES ('committed', 1)")
        committed = conn.execute("SELECT max(xmin::text::bigint) FROM log").fetchone()[0]
        conn.execute("BEGIN")
        aborted = conn.execute("SELECT txid_current()").fetchone()[0]
        conn.execute("INSERT INTO log (who, n) VALUES ('aborted', 1)")
        conn.execute("ROLLBACK")
        conn.execute("BEGIN")
        prepared = conn.execute("SELECT txid_current()").fetchone()[0]
        conn.execute("INSERT INTO log (who, n) VALUES ('prepared', 1)")
        conn.execute("PREPARE TRANSACTION 'wd_gid_1'")
        end = lsn_now(conn)
        conn.execute("COMMIT PREPARED 'wd_gid_1'")
        conn.execute("CHECKPOINT")
        segment = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (start,)).fetchone()[0]
    wal = cluster.archive_wal(tmp_path / "wal", segment)
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(catalog.to_json())
    from waldecode.wal.segments import discover
    from waldecode.logical.startpoint import running_xacts_of
    from waldecode.wal.xlogreader import XLogReader

    assert not running_xacts_of(XLogReader([wal], parse_lsn(start), parse_lsn(end)))
    out = run_cli("decode", "--catalog", catalog_file, "--end-lsn", end, wal)
    err = out.stderr.decode()
    assert out.returncode == 1
    assert out.stdout == b""
    assert f"transaction {committed} committed at " in err
    assert f"transaction {aborted} aborted at " in err
    assert f"transaction {prepared} is still open at the end of the WAL read" in err
    assert "prepared as 'wd_gid_1'" in err
    assert f"transaction {committed} is still open" not in err
    assert discover([wal]).major == 15


def test_a_start_outside_the_input_is_the_only_error(cluster, tmp_path):
    with cluster.connect(DB) as conn:
        catalog = snapshot_from_connection(conn)
        conn.execute("SELECT pg_switch_wal()")
        conn.execute("INSERT INTO log (who, n) VALUES ('x', 1)")
        conn.execute("CHECKPOINT")
        segment = conn.execute("SELECT pg_walfile_name(pg_current_wal_insert_lsn())").fetchone()[0]
    wal = cluster.archive_wal(tmp_path / "wal", segment)
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(catalog.to_json())
    out = run_cli("decode", "--catalog", catalog_file, "--start-lsn", "0/10", wal, "--output", tmp_path / "out")
    err = out.stderr.decode().splitlines()
    assert out.returncode == 1
    assert len(err) == 1, err
    assert err[0].startswith("waldecode: error: the start LSN 0/10 lies in segment 000000010000000000000000")
    assert not (tmp_path / "out").exists()
    assert json.loads(catalog_file.read_text())["major"] == 15


def test_a_catalog_snapshot_taken_after_the_start_and_a_ddl_is_reported(cluster, tmp_path):
    """Reading must begin before the snapshot, and a DDL committed in between: the output before the
    snapshot would be decoded with a catalog of later, so the run refuses before decoding anything
    (tests/live/test_catalog_choice.py holds the command line to it)."""
    with cluster.connect(DB) as conn:
        conn.execute("CREATE TABLE late (id int PRIMARY KEY)")
        conn.execute("CHECKPOINT")
        segment = conn.execute("SELECT pg_walfile_name(pg_current_wal_insert_lsn())").fetchone()[0]
        start = lsn_now(conn)
        conn.execute("INSERT INTO late VALUES (1)")
        conn.execute("ALTER TABLE late ADD COLUMN v text DEFAULT 'x'")
        conn.execute("INSERT INTO late VALUES (2, 'y')")
        catalog = snapshot_from_connection(conn)
        conn.execute("CHECKPOINT")
        end = lsn_now(conn)
    wal = cluster.archive_wal(tmp_path / "wal", segment)
    from waldecode.catalog.choose import SnapshotMismatchError

    with pytest.raises(SnapshotMismatchError, match=r"^the catalog snapshot was taken at .*, after the reading "
                                                    r"start .* changed the catalog in between"):
        decode(catalog, wal, start, end)


@pytest.mark.slow
def test_pgbench_from_a_client_confirmed_position_equals_the_slot(tmp_path):
    """Continuous overlapping transactions (pgbench, 4 clients): running-xacts records never show an
    idle moment after the slot's creation, so the look-back must find the slot's own start."""
    from waldecode.testing.cluster import Cluster, ClusterError

    try:
        c = Cluster(15, wal_segsize_mb=16, settings={"bgwriter_delay": "200ms"})
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    try:
        c.sql("CREATE DATABASE bench")
        pg = ("-h", str(c.socket_dir), "-p", str(c.port))
        c.run_bin("pgbench", *pg, "-i", "-s", "1", "-q", "bench")
        with c.connect("bench") as conn:
            catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot('pgb', 'test_decoding')")
            first = conn.execute("SELECT pg_walfile_name(restart_lsn) FROM pg_replication_slots").fetchone()[0]
        c.run_bin("pgbench", *pg, "-c", "4", "-j", "2", "-T", "6", "-n", "bench")
        with c.connect("bench") as conn:
            assert conn.execute("SELECT count(*) FROM pg_logical_slot_get_changes('pgb', NULL, NULL)").fetchone()[0]
            conn.execute("CHECKPOINT")
        c.run_bin("pgbench", *pg, "-c", "4", "-j", "2", "-T", "6", "-n", "bench")
        with c.connect("bench") as conn:
            end = lsn_now(conn)
            confirmed, restart = slot_position(conn, "pgb")
            expected = peek(conn, "pgb", end)
        wal = c.archive_wal(tmp_path / "wal", first)
    finally:
        c.__exit__(None, None, None)
    assert len(expected) > 1000
    got, result = decode(catalog, wal, confirmed, end)
    assert got == expected and result.complete
    got, result = decode(catalog, wal, confirmed, end, restart)
    assert got == expected and result.complete


def test_transactions_running_while_the_slot_is_created(cluster, tmp_path):
    """The server's slot creation waits for the transactions running at its start: its confirmed
    position is the consistent point it reached.  Decoding from there equals the slot, those
    transactions left out as the slot leaves them out, later ones whole."""
    import threading

    w = Workload(cluster, 0)
    created = {}
    try:
        w.begin_long(0)
        w.begin_long(1)

        def create():
            with cluster.connect(DB) as conn:
                conn.execute("SELECT pg_create_logical_replication_slot('sp_busy', 'test_decoding')")
                created["pos"] = slot_position(conn, "sp_busy")

        t = threading.Thread(target=create)
        t.start()
        time.sleep(0.5)
        w.commit_some()
        w.begin_long(2)  # begins while the slot is being created
        w.conn.execute("CHECKPOINT")  # running-xacts: long0, long1 (and long2) still running
        w.end_long(0)
        w.end_long(1)
        w.commit_some()
        w.conn.execute("CHECKPOINT")
        w.end_long(2)
        w.conn.execute("CHECKPOINT")
        t.join(60)
        assert "pos" in created, "the slot was not created"
        w.commit_some()
        end = lsn_now(w.conn)
        expected = peek(w.conn, "sp_busy", end)
        first = w.conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (created["pos"][1],)).fetchone()[0]
        w.conn.execute("SELECT pg_drop_replication_slot('sp_busy')")
        wal = cluster.archive_wal(tmp_path / "wal", min(first, w.first_segment))
    finally:
        w.close()
    confirmed, restart = created["pos"]
    assert parse_lsn(confirmed) > parse_lsn(restart), "the slot had to wait for running transactions"
    got, result = decode(w.catalog, wal, confirmed, end)
    assert got == expected and result.complete
    got, result = decode(w.catalog, wal, confirmed, end, restart)
    assert got == expected and result.complete
