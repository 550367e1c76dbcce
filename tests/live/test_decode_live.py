"""Live differential tests: fresh workloads on a real PostgreSQL 15, decoded both ways.

A throw-away server runs a workload (random interleavings from hypothesis, and fixed
ones: two-phase commit, TOAST, every common type, replica identities, TRUNCATE,
logical messages); its own test_decoding slot's output is the expectation, and
``waldecode`` decoding the same WAL offline, with a catalog snapshot taken before
the workload, must print exactly the same rows.
"""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from live import DB, SlotRun, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.session import decode_wal
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server]

SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (x int, y text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric(12,2), note text);
CREATE TABLE full_ident (id int, a text, b int);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
CREATE TABLE no_key (a int, b text);
CREATE TABLE nothing_ident (id int PRIMARY KEY, v text);
ALTER TABLE nothing_ident REPLICA IDENTITY NOTHING;
CREATE TABLE idx_ident (id int NOT NULL, code text NOT NULL, v text);
CREATE UNIQUE INDEX idx_ident_code ON idx_ident (code);
ALTER TABLE idx_ident REPLICA IDENTITY USING INDEX idx_ident_code;
CREATE TABLE big (id int PRIMARY KEY, v text, w text, b bytea);
ALTER TABLE big ALTER COLUMN w SET COMPRESSION lz4;
CREATE TABLE "Typed Tbl" (
  id int PRIMARY KEY, i2 smallint, i8 bigint, f4 real, f8 double precision, n numeric, b boolean,
  t text, vc varchar(10), c char(5), by bytea, d date, tm time, ttz timetz, ts timestamp, tstz timestamptz,
  iv interval, u uuid, j json, jb jsonb, ip inet, cd cidr, mac macaddr, m money, o oid, ch "char",
  arr int[], tarr text[], e mood, cp pair, bt bit(4), vb varbit, dom posint, r int4range, lsn pg_lsn);
CREATE TABLE trunc_a (id serial PRIMARY KEY, v text);
CREATE TABLE trunc_b (id int REFERENCES trunc_a, v text);
INSERT INTO acct SELECT g, 'owner ' || g, g * 10, NULL FROM generate_series(1, 20) g;
INSERT INTO full_ident SELECT g, 'a' || g, g FROM generate_series(1, 10) g;
INSERT INTO no_key SELECT g, 'b' || g FROM generate_series(1, 10) g;
INSERT INTO nothing_ident SELECT g, 'n' || g FROM generate_series(1, 10) g;
INSERT INTO idx_ident SELECT g, 'code' || g, 'v' || g FROM generate_series(1, 10) g;
INSERT INTO big VALUES (1, 'small', (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 400) g), NULL);
INSERT INTO trunc_a (v) VALUES ('x'), ('y');
INSERT INTO trunc_b VALUES (1, 'ref');
"""


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_prepared_transactions=10, max_replication_slots=20) as c:
        yield c


def Run(cluster, **kw) -> SlotRun:
    """Decoded with a small spill threshold, so the live workloads go through .spill files too."""
    return SlotRun(cluster, spill_threshold=64, **kw)


SESSION_OPS = st.lists(
    st.tuples(st.integers(0, 2), st.sampled_from(
        ["insert", "update", "delete", "savepoint", "rollback_to", "release", "commit", "rollback", "message"])),
    min_size=5, max_size=60)


@pytest.mark.slow
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(ops=SESSION_OPS)
def test_random_interleaved_sessions(cluster, tmp_path_factory, ops):
    run = Run(cluster)
    conns = [cluster.connect(DB, autocommit=False) for _ in range(3)]
    depth = [0, 0, 0]
    next_id = [1000 * (k + 1) + SlotRun._n * 100000 for k in range(3)]
    try:
        for s, op in ops:
            cur = conns[s]
            if op == "insert":
                next_id[s] += 1
                cur.execute("INSERT INTO acct VALUES (%s, %s, %s, 'live')", (next_id[s], f"s{s}", next_id[s] / 7))
            elif op == "update":
                cur.execute("UPDATE acct SET balance = balance + 1, note = %s WHERE id = %s", (f"by {s}", s + 1))
            elif op == "delete":
                cur.execute("DELETE FROM acct WHERE id = %s", (next_id[s],))
            elif op == "savepoint":
                depth[s] += 1
                cur.execute(f"SAVEPOINT sp{depth[s]}")
            elif op == "rollback_to" and depth[s]:
                cur.execute(f"ROLLBACK TO SAVEPOINT sp{depth[s]}")
                depth[s] -= 1
            elif op == "release" and depth[s]:
                cur.execute(f"RELEASE SAVEPOINT sp{depth[s]}")
                depth[s] -= 1
            elif op == "commit":
                cur.commit()
                depth[s] = 0
            elif op == "rollback":
                cur.rollback()
                depth[s] = 0
            elif op == "message":
                cur.execute("SELECT pg_logical_emit_message(true, 'live', %s)", (f"from {s}",))
        for cur in conns:
            cur.commit()
    finally:
        for cur in conns:
            cur.close()
    got, expected = run.finish(tmp_path_factory.mktemp("run"))
    assert got == expected


def test_two_phase_toast_types_identities_truncate_messages(cluster, tmp_path):
    """One of each: every row printed must be the server's own."""
    for two_phase in (False, True):
        run = Run(cluster, two_phase=two_phase, options={"include-timestamp": "1"})
        with cluster.connect(DB) as conn:
            conn.execute("BEGIN; INSERT INTO acct VALUES (5001, 'prep', 1.5, 'g''1'); "
                         f"PREPARE TRANSACTION 'g''1 {two_phase}'")
            conn.execute(f"COMMIT PREPARED 'g''1 {two_phase}'")
            conn.execute("BEGIN; UPDATE acct SET note = 'rolled back' WHERE id = 1; "
                         f"PREPARE TRANSACTION 'g2 {two_phase}'")
            conn.execute(f"ROLLBACK PREPARED 'g2 {two_phase}'")
            conn.execute("BEGIN; DELETE FROM acct WHERE id = 5001; "
                         f"PREPARE TRANSACTION 'g3_nodecode {two_phase}'")
            conn.execute(f"COMMIT PREPARED 'g3_nodecode {two_phase}'")
            # TOAST: new out-of-line values (pglz and lz4), an update leaving them unchanged, a key change
            conn.execute("INSERT INTO big VALUES (%s, %s, %s, %s)",
                         (10 + two_phase, "v" * 3000, "lz4 " * 4000, bytes(range(256)) * 40))
            conn.execute("UPDATE big SET v = 'changed' WHERE id = 1")
            conn.execute("UPDATE big SET id = 100 + id WHERE id = %s", (10 + two_phase,))
            conn.execute("DELETE FROM big WHERE id = %s", (110 + two_phase,))
            # Types
            conn.execute(
                "INSERT INTO \"Typed Tbl\" VALUES (%s, -2, 9000000000, 1.5, 0.1, 123.450, true, 'it''s', 'ab', 'x', "
                "'\\x00ff', '2024-02-29', '12:34:56.789', '12:00:00+05:30', '2000-01-01 00:00:00.5', "
                "'1999-12-31 21:59:59+00', '1 year 2 mons -3 days 04:05:06.5', "
                "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"b\":1, \"a\": [1,2.50,\"x\"]}', "
                "'{\"a\": null, \"b\": 1, \"aa\": [1, 2.50]}', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', "
                "1234.5, 4294967295, 'q', '{{1,2},{3,NULL}}', '{\"a b\",\"\",\"NULL\",NULL}', 'ok', '(1,\"x y\")', "
                "B'1010', B'101', 7, '[1,10)', '16/B374D848')", (two_phase + 1,))
            conn.execute(
                "INSERT INTO \"Typed Tbl\" (id, f4, f8, n, d, ts, tstz, iv, arr) VALUES (%s, 'NaN', '-Infinity', "
                "'NaN', 'infinity', '-infinity', 'infinity', '-1 days +02:03:00', '[0:1]={5,6}')", (two_phase + 3,))
            # Replica identities
            conn.execute("UPDATE full_ident SET b = b + 100 WHERE id = 1; DELETE FROM full_ident WHERE id = 2")
            conn.execute("UPDATE no_key SET b = 'y' WHERE a = 1; DELETE FROM no_key WHERE a = 2")
            conn.execute("UPDATE nothing_ident SET v = 'z' WHERE id = 1; DELETE FROM nothing_ident WHERE id = 2")
            conn.execute("UPDATE idx_ident SET code = 'renamed' || id WHERE id = 3; DELETE FROM idx_ident "
                         "WHERE id = 4")
            conn.execute("UPDATE acct SET id = id + 10000 WHERE id = 3")
            # Messages, transactional and not, with bytes that are not UTF-8
            conn.execute("SELECT pg_logical_emit_message(false, 'nontx', 'now')")
            conn.execute("BEGIN; SELECT pg_logical_emit_message(true, 'tx', '\\x00ff01'::bytea); COMMIT")
            # TRUNCATE last: the new relfilenode is not in the catalog snapshot
            conn.execute("TRUNCATE trunc_a, trunc_b RESTART IDENTITY")
            conn.execute("TRUNCATE no_key")
        got, expected = run.finish(tmp_path / f"tp{two_phase}")
        assert got == expected
        text = "\n".join(expected)
        for needle in ("unchanged-toast-datum", ": TRUNCATE: restart_seqs", "old-key:", "(no-tuple-data)",
                       "message: transactional: 0 prefix: nontx", "COMMIT PREPARED" if two_phase else "(at "):
            assert needle in text
        with cluster.connect(DB) as conn:  # undo what the next round needs
            conn.execute("INSERT INTO full_ident VALUES (2, 'a2', 2); INSERT INTO nothing_ident VALUES (2, 'n2')")


def test_wal_written_below_logical_level_with_ddl(tmp_path):
    """wal_level=replica WAL is decoded from redone pages (test_replica_decode.py), its DDL followed through
    the catalog history (test_replica_ddl.py compares it with a slot); without the history (the snapshot's
    catalog only) DDL after the snapshot is a clear error, never rows decoded with the wrong catalog."""
    from waldecode.logical.decode import DecodeError
    from waldecode.testing.cluster import Cluster, ClusterError

    try:
        c = Cluster(15, settings={"wal_level": "replica"})
        c.__enter__()
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    try:
        with c.connect() as conn:
            catalog = snapshot_from_connection(conn)
            start = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            conn.execute("CHECKPOINT")  # logs XLOG_RUNNING_XACTS: the consistent point
            conn.execute("CREATE TABLE r (id int)")
            conn.execute("INSERT INTO r VALUES (1)")  # a commit without invalidations
            conn.execute("CHECKPOINT")
            end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        wal = c.archive_wal(tmp_path / "wal")
    finally:
        c.__exit__(None, None, None)
    assert catalog.settings["wal_level"] == "replica"
    got: list[str] = []
    result = decode_wal([wal], catalog, TestDecoding(got.append), restart_lsn=parse_lsn(start), end_lsn=parse_lsn(end))
    assert result.warnings == [] and [line for line in got if "public.r" in line] == [
        "table public.r: INSERT: id[integer]:1"], got
    with pytest.raises(DecodeError,
                       match=r"changed the catalog pg_catalog\.pg_\w+ at .*DDL inside a wal_level=replica"):
        decode_wal([wal], catalog, TestDecoding(lambda row: None), restart_lsn=parse_lsn(start),
                   end_lsn=parse_lsn(end), catalog_history=False)


def test_range_without_a_consistent_point_is_reported(cluster, tmp_path):
    """No XLOG_RUNNING_XACTS in the range: nothing can be decoded, and the decoder says so."""
    with cluster.connect(DB) as conn:
        catalog = snapshot_from_connection(conn)
        start = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        conn.execute("INSERT INTO acct VALUES (7777, 'x', 1, 'y')")
        end = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        conn.execute("CHECKPOINT")
    wal = cluster.archive_wal(tmp_path / "wal")
    rows: list[str] = []
    result = decode_wal([wal], catalog, TestDecoding(rows.append), restart_lsn=parse_lsn(start),
                        end_lsn=parse_lsn(end))
    assert rows == []
    assert any("no consistent point" in w for w in result.warnings), result.warnings
    assert result.consistent_lsn is None and not result.complete


def test_catalog_only_transactions_print_as_the_server_prints_them(cluster, tmp_path):
    """With default options (skip-empty-xacts off) a transaction that changed the catalog is printed
    even with no change of its own to print: REINDEX of a mapped catalog index (relation-map update
    and invalidations only), VACUUM FULL of a mapped catalog, CREATE INDEX CONCURRENTLY's in-place
    updates, shared-catalog rows; a transaction with an xid and nothing else is not."""
    statements = [
        "REINDEX INDEX pg_class_oid_index",
        # again: the index statistics do not change, so no in-place update of pg_class either
        "REINDEX INDEX pg_class_oid_index",
        "VACUUM FULL pg_class",
        "VACUUM FULL pg_class",
        "REINDEX TABLE pg_type",
        "CREATE INDEX CONCURRENTLY acct_owner_cic ON acct (owner)",
        "DROP INDEX acct_owner_cic",
        "CREATE ROLE wd_catalog_only",
        "ALTER DATABASE live SET work_mem = '8MB'",
        "ALTER DATABASE live RESET work_mem",
        "DROP ROLE wd_catalog_only",
        "ANALYZE acct",
        "SELECT txid_current()",
        "INSERT INTO acct VALUES (4242, 'after the catalog-only ones', 1, NULL)",
        "DELETE FROM acct WHERE id = 4242",
    ]
    for options in ({}, {"skip-empty-xacts": "1"}):
        run = Run(cluster, options=options)
        run.sql(*statements)
        got, expected = run.finish(tmp_path / str(len(options)))
        assert got == expected
        assert run.decoder.warnings == []
        if not options:
            assert sum(1 for r in expected if r.startswith("BEGIN")) >= 10
