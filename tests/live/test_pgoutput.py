"""Live differential tests of pgoutput: the server's own pgoutput slot against waldecode.

A throw-away PostgreSQL 15 runs a workload under several publications; each case peeks its
pgoutput slot with ``pg_logical_slot_peek_binary_changes`` (every protocol version 15 accepts,
text and binary, messages, two-phase) and decodes a copy of the WAL offline with the same
options, from a catalog snapshot taken before the workload: the messages must be the same bytes.
Publication changes and DDL happen inside the decoded range too.
"""

from __future__ import annotations

import pytest

from live import DB, live_cluster
from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.errors import OutputPluginError
from waldecode.logical.session import decode_wal
from waldecode.output.base import OutputWriter
from waldecode.output.pgoutput import PgOutput
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server]

SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE SCHEMA other;
CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric(12,2), note text);
CREATE TABLE full_ident (id int, a text, b int);
ALTER TABLE full_ident REPLICA IDENTITY FULL;
CREATE TABLE no_key (a int, b text);
CREATE TABLE idx_ident (id int NOT NULL, code text NOT NULL, v text);
CREATE UNIQUE INDEX idx_ident_code ON idx_ident (code);
ALTER TABLE idx_ident REPLICA IDENTITY USING INDEX idx_ident_code;
CREATE TABLE big (id int PRIMARY KEY, v text, b bytea);
CREATE TABLE typed (id int PRIMARY KEY, i2 smallint, i8 bigint, f4 real, f8 double precision, n numeric,
  b boolean, t text, vc varchar(10), c char(5), by bytea, d date, tm time, ttz timetz, ts timestamp,
  tstz timestamptz, iv interval, u uuid, j json, jb jsonb, o oid, ch "char", e mood, dom posint, nm name,
  m money, ln pg_lsn);
CREATE TABLE other.o1 (id int PRIMARY KEY, v text);
CREATE TABLE other.o2 (id int PRIMARY KEY, w int);
CREATE TABLE cols (id int PRIMARY KEY, a text, b text, c int);
CREATE TABLE parted (id int, k int, v text, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (100);
CREATE TABLE parted_2 (v text, k int, id int, PRIMARY KEY (id, k));
ALTER TABLE parted ATTACH PARTITION parted_2 FOR VALUES FROM (100) TO (200);
CREATE TABLE trunc_a (id serial PRIMARY KEY, v text);
CREATE TABLE trunc_b (id int REFERENCES trunc_a, v text);
CREATE PUBLICATION p_all FOR ALL TABLES;
CREATE PUBLICATION p_acct FOR TABLE acct, full_ident, idx_ident, no_key WITH (publish = 'insert, update');
CREATE PUBLICATION p_del FOR TABLE acct, typed WITH (publish = 'delete, truncate');
CREATE PUBLICATION p_schema FOR TABLES IN SCHEMA other;
CREATE PUBLICATION p_cols FOR TABLE cols (id, b);
CREATE PUBLICATION p_root FOR TABLE parted WITH (publish_via_partition_root = true);
CREATE PUBLICATION p_leaf FOR TABLE parted;
CREATE PUBLICATION p_trunc FOR TABLE trunc_a, trunc_b;
CREATE PUBLICATION p_grow FOR TABLE no_key;
CREATE PUBLICATION p_where FOR TABLE acct WHERE (id > 100), other.o1;
SELECT pg_replication_origin_create('orig_a');
INSERT INTO acct SELECT g, 'owner ' || g, g * 10, NULL FROM generate_series(1, 20) g;
INSERT INTO full_ident SELECT g, 'a' || g, g FROM generate_series(1, 10) g;
INSERT INTO no_key SELECT g, 'b' || g FROM generate_series(1, 10) g;
INSERT INTO idx_ident SELECT g, 'code' || g, 'v' || g FROM generate_series(1, 10) g;
INSERT INTO trunc_a (v) VALUES ('x'), ('y');
INSERT INTO trunc_b VALUES (1, 'ref');
"""

TYPED_ROW = ("INSERT INTO typed VALUES (%s, -7, 9000000000, 1.5, -2.25e100, -1234.5678, true, 'tëxt', 'vc', 'ch', "
             "'\\x00ff10', '2024-02-29', '13:14:15.5', '01:02:03+05:30', '2001-02-03 04:05:06.789', "
             "'1999-12-31 23:59:59.999999+00', '1 year 2 mons 3 days 04:05:06.7', "
             "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{\"a\": [1, 2]}', '{\"b\": {\"c\": null}, \"a\": 1}', "
             "4000000000, 'x', 'happy', 42, 'a name', 12.34, '16/B374D848')")


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_prepared_transactions=10, max_replication_slots=20, autovacuum="off") as c:
        yield c


class PgoutputRun:
    """A pgoutput slot created after a catalog snapshot; ``finish`` peeks it with each option set and
    decodes a copy of the WAL offline with the same options."""

    _n = 0

    def __init__(self, cluster, two_phase: bool = False):
        PgoutputRun._n += 1
        self.c = cluster
        self.slot = f"pgo_{PgoutputRun._n}"
        self.two_phase = two_phase
        with cluster.connect(DB) as conn:
            self.catalog = snapshot_from_connection(conn)
            conn.execute("CHECKPOINT")
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput', false, %s)",
                         (self.slot, two_phase))
            self.restart_lsn, self.confirmed_lsn = conn.execute(
                "SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots "
                "WHERE slot_name = %s", (self.slot,)).fetchone()

    def finish(self, tmp_path, option_sets: list[dict], decode: bool = True) -> list[tuple]:
        """[(options, got, expected)] per option set: messages as bytes (got None without ``decode``)."""
        with self.c.connect(DB) as conn:
            conn.execute("CHECKPOINT")
            self.end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
            expected = []
            for options in option_sets:
                args = [x for kv in options.items() for x in kv]
                rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL"
                                    + ", %s" * len(args) + ")", (self.slot, self.end_lsn, *args)).fetchall()
                expected.append([bytes(r[0]) for r in rows])
            first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (self.restart_lsn,)).fetchone()[0]
            conn.execute("SELECT pg_drop_replication_slot(%s)", (self.slot,))
        self.wal = self.c.archive_wal(tmp_path / "wal", first)
        out = []
        for options, exp in zip(option_sets, expected):
            out.append((options, self.decode(options) if decode else None, exp))
        return out

    def decode(self, options: dict) -> list[bytes]:
        got: list[bytes] = []
        plugin = PgOutput(lambda m: got.append(m.encode("utf-8", "surrogateescape")))
        result = decode_wal([self.wal], self.catalog, plugin, plugin_options=options,
                            start_lsn=parse_lsn(self.confirmed_lsn), end_lsn=parse_lsn(self.end_lsn),
                            two_phase=self.two_phase)
        assert result.not_decoded == [], result.not_decoded
        assert result.warnings == [], result.warnings
        return got


def _check(results) -> None:
    for options, got, expected in results:
        assert expected, f"the server sent nothing for {options}: the case tests nothing"
        assert got == expected, options


def _opts(proto: int, pubs: str, **more) -> dict:
    d = {"proto_version": str(proto), "publication_names": pubs}
    d.update({k: str(v) for k, v in more.items()})
    return d


def test_publication_sets_protocols_binary_messages(cluster, tmp_path):
    run = PgoutputRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("INSERT INTO acct VALUES (101, 'new', 1.5, 'n'), (102, 'two', 2, NULL)")
        conn.execute("UPDATE acct SET note = 'upd' WHERE id = 1")
        conn.execute("UPDATE acct SET id = 103 WHERE id = 2")
        conn.execute("DELETE FROM acct WHERE id = 3")
        conn.execute("UPDATE full_ident SET a = 'full' WHERE id = 1")
        conn.execute("DELETE FROM full_ident WHERE id = 2")
        conn.execute("UPDATE idx_ident SET v = 'iv' WHERE id = 1")
        conn.execute("UPDATE idx_ident SET code = 'new code' WHERE id = 2")
        conn.execute("DELETE FROM idx_ident WHERE id = 3")
        conn.execute("INSERT INTO no_key VALUES (100, 'nk')")
        conn.execute(TYPED_ROW, (1,))
        conn.execute("INSERT INTO typed (id) VALUES (2)")
        conn.execute("UPDATE typed SET t = 'changed' WHERE id = 1")
        conn.execute("DELETE FROM typed WHERE id = 2")
        conn.execute("INSERT INTO big VALUES (1, %s, %s)", ("v" * 5000, bytes(range(256)) * 40))
        conn.execute("UPDATE big SET id = 2 WHERE id = 1")
        conn.execute("INSERT INTO other.o1 VALUES (1, 'o'); INSERT INTO other.o2 VALUES (1, 2)")
        conn.execute("UPDATE other.o1 SET v = 'p'; DELETE FROM other.o2")
        conn.execute("INSERT INTO cols VALUES (1, 'a', 'b', 3); UPDATE cols SET a = 'x'; UPDATE cols SET b = 'y'")
        conn.execute("DELETE FROM cols")
        conn.execute("INSERT INTO parted VALUES (1, 5, 'p1'), (2, 150, 'p2')")
        conn.execute("UPDATE parted SET v = 'u' WHERE id = 2")
        conn.execute("DELETE FROM parted WHERE id = 1")
        conn.execute("TRUNCATE parted")
        conn.execute("INSERT INTO parted VALUES (3, 7, 'after truncate'), (4, 170, 'p2 again')")
        conn.execute("TRUNCATE parted_2")
        conn.execute("BEGIN; SELECT pg_logical_emit_message(true, 'pfx', 'in txn'); "
                     "INSERT INTO acct VALUES (104, 'm', 0, NULL); COMMIT")
        conn.execute("SELECT pg_logical_emit_message(false, 'nt', 'outside')")
        conn.execute("BEGIN; SELECT pg_logical_emit_message(true, 'only', '\\x0001'::bytea); COMMIT")
        conn.execute("TRUNCATE trunc_a, trunc_b RESTART IDENTITY")
        conn.execute("TRUNCATE acct")
        conn.execute("INSERT INTO acct VALUES (1, 'after', 1, NULL)")
    sets = []
    for proto in (1, 2, 3):
        sets.append(_opts(proto, "p_all"))
        sets.append(_opts(proto, "p_all", binary="true", messages="true"))
    sets += [
        _opts(1, "p_acct"), _opts(1, "p_acct,p_del", messages="on"), _opts(2, "p_del", binary="on"),
        _opts(1, "p_schema"), _opts(1, "p_cols"), _opts(1, "p_root"), _opts(1, "p_leaf"), _opts(1, "p_root,p_leaf"),
        _opts(1, "p_trunc"), _opts(1, "p_acct, p_schema,p_trunc", messages="true"),
    ]
    _check(run.finish(tmp_path, sets))


def test_two_phase(cluster, tmp_path):
    for k, (slot_two_phase, extra) in enumerate(((True, {}), (False, {"two_phase": "on"}), (False, {}))):
        run = PgoutputRun(cluster, two_phase=slot_two_phase)
        with cluster.connect(DB) as conn:
            conn.execute("BEGIN; INSERT INTO acct VALUES (5001, 'prep', 1.5, NULL); PREPARE TRANSACTION 'g1'")
            conn.execute("COMMIT PREPARED 'g1'")
            conn.execute("BEGIN; UPDATE acct SET note = 'rolled back' WHERE id = 5001; PREPARE TRANSACTION 'g2'")
            conn.execute("ROLLBACK PREPARED 'g2'")
            conn.execute(f"BEGIN; INSERT INTO other.o1 VALUES ({77 + k}, 'not published by p_acct'); "
                         "PREPARE TRANSACTION 'g3'")
            conn.execute("COMMIT PREPARED 'g3'")
            conn.execute("DELETE FROM acct WHERE id = 5001")
        results = run.finish(tmp_path / str(k),
                             [_opts(3, "p_acct", **extra), _opts(3, "p_all", messages="true", **extra)])
        _check(results)
        kinds = {m[:1] for m in results[0][2]}
        # decoded at PREPARE on a two_phase slot or with the option: Begin Prepare, Prepare, Commit and
        # Rollback Prepared; else at COMMIT PREPARED as an ordinary transaction
        assert ({b"b", b"P", b"K", b"r"} <= kinds) == bool(slot_two_phase or extra), kinds


def test_ddl_and_publication_changes_in_range(cluster, tmp_path):
    run = PgoutputRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("CREATE TABLE later (id int PRIMARY KEY, v text)")
        conn.execute("INSERT INTO later VALUES (1, 'before')")
        conn.execute("CREATE PUBLICATION p_later FOR TABLE later")
        conn.execute("ALTER PUBLICATION p_grow ADD TABLE later")
        conn.execute("INSERT INTO later VALUES (2, 'published')")
        conn.execute("INSERT INTO acct VALUES (201, 'x', 1, NULL)")
        conn.execute("ALTER TABLE acct ADD COLUMN extra int DEFAULT 7")
        conn.execute("INSERT INTO acct VALUES (202, 'y', 2, NULL, 8)")
        conn.execute("UPDATE acct SET note = 'z' WHERE id = 201")
        conn.execute("BEGIN; INSERT INTO later VALUES (3, 'a'); ALTER TABLE later ADD COLUMN w text; "
                     "INSERT INTO later VALUES (4, 'b', 'w'); COMMIT")
        conn.execute("ALTER PUBLICATION p_grow ADD TABLE acct")
        conn.execute("INSERT INTO acct VALUES (203, 'w', 3, NULL, 9)")
        conn.execute("ALTER PUBLICATION p_grow SET (publish = 'insert')")
        conn.execute("DELETE FROM later WHERE id = 1")
        conn.execute("INSERT INTO later VALUES (5, 'c', NULL)")
        conn.execute("ALTER PUBLICATION p_grow DROP TABLE later")
        conn.execute("INSERT INTO later VALUES (6, 'gone', NULL)")
        conn.execute("ALTER PUBLICATION p_grow ADD TABLES IN SCHEMA other")
        conn.execute("ALTER PUBLICATION p_grow SET (publish = 'insert, update, delete')")
        conn.execute("INSERT INTO other.o2 VALUES (500, 5); UPDATE other.o2 SET w = 6 WHERE id = 500")
        conn.execute("ALTER PUBLICATION p_grow SET TABLE cols (id, c)")
        conn.execute("INSERT INTO cols VALUES (50, 'a', 'b', 5); INSERT INTO acct VALUES (205, 'u', 5, NULL, 1)")
        conn.execute("CREATE INDEX ON acct (owner)")
        conn.execute("INSERT INTO acct VALUES (206, 'idx', 6, NULL, 1)")
        conn.execute("ALTER TABLE acct DROP COLUMN extra")
        conn.execute("INSERT INTO acct VALUES (204, 'v', 4, NULL)")
        conn.execute("DROP PUBLICATION p_later")
    results = run.finish(tmp_path, [_opts(1, "p_all"), _opts(2, "p_all", binary="true"), _opts(1, "p_grow"),
                                    _opts(1, "p_acct")])
    _check(results)
    # the schema of acct is sent again after each change of it (and of the publications)
    assert sum(m.startswith(b"R") and b"acct\x00" in m for m in results[0][2]) >= 4


def test_row_filters(cluster, tmp_path):
    """Row filters (pg_publication_rel.prqual, evaluated by output.pgoutput_rowfilter) decide which rows
    are sent, UPDATEs whose old and new rows disagree become INSERT or DELETE; FOR ALL TABLES beside
    the filtering publication means no filter, as on the server."""
    run = PgoutputRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("INSERT INTO other.o1 VALUES (900, 'no filter')")
        conn.execute("INSERT INTO acct VALUES (901, 'passes', 1, NULL), (55, 'filtered out', 1, NULL)")
        conn.execute("UPDATE acct SET id = 56 WHERE id = 901")  # leaves the filter: a DELETE
        conn.execute("UPDATE acct SET id = 902 WHERE id = 55")  # enters it: an INSERT
        conn.execute("UPDATE acct SET note = 'both in' WHERE id = 902")
        conn.execute("DELETE FROM acct WHERE id IN (56, 902)")
    results = run.finish(tmp_path, [_opts(1, "p_where"), _opts(1, "p_where,p_all"), _opts(2, "p_where", binary="on")])
    _check(results)
    kinds = [m[:1] for m in results[0][2] if m[:1] in b"IUD"]
    assert kinds == [b"I", b"I", b"D", b"I", b"U", b"D"], kinds


def test_replication_origin(cluster, tmp_path):
    """A transaction replayed from a replication origin: Begin, then Origin (its LSN and name)."""
    run = PgoutputRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_replication_origin_session_setup('orig_a')")
        conn.execute("BEGIN")
        conn.execute("SELECT pg_replication_origin_xact_setup('1/ABCDEF0', '2020-01-02 03:04:05+00')")
        conn.execute("INSERT INTO acct VALUES (7001, 'from origin', 1, NULL)")
        conn.execute("COMMIT")
        conn.execute("SELECT pg_replication_origin_session_reset()")
        conn.execute("INSERT INTO acct VALUES (7002, 'local', 1, NULL)")
        conn.execute("DELETE FROM acct WHERE id IN (7001, 7002)")
    results = run.finish(tmp_path, [_opts(1, "p_all"), _opts(3, "p_acct", binary="on")])
    _check(results)
    assert any(m.startswith(b"O") and m.endswith(b"orig_a\x00") for m in results[0][2])


def test_publication_missing_at_the_start(cluster, tmp_path):
    """A publication created inside the range does not exist for the changes before: the server fails when
    it first looks it up, and so does waldecode."""
    import psycopg

    run = PgoutputRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("INSERT INTO acct VALUES (301, 'x', 1, NULL)")
        conn.execute("CREATE PUBLICATION p_new FOR TABLE acct")
        conn.execute("INSERT INTO acct VALUES (302, 'y', 1, NULL)")
    with pytest.raises(psycopg.Error) as server:
        run.finish(tmp_path, [_opts(1, "p_new")])
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (run.slot,))
        conn.execute("DROP PUBLICATION p_new")
    run.wal = cluster.archive_wal(tmp_path / "wal")
    with pytest.raises(OutputPluginError) as ours:
        run.decode(_opts(1, "p_new"))
    assert ours.value.args[0] == server.value.diag.message_primary


@pytest.mark.parametrize("options", [
    {"proto_version": "1"},
    {"publication_names": "p_all"},
    {"proto_version": "", "publication_names": "p_all"},
    {"proto_version": "4", "publication_names": "p_all"},
    {"proto_version": "5", "publication_names": "p_all"},
    {"proto_version": "4294967296", "publication_names": "p_all"},
    {"proto_version": "-1", "publication_names": "p_all"},
    {"proto_version": "x", "publication_names": "p_all"},
    {"proto_version": " 1", "publication_names": "p_all", "binary": "maybe"},
    {"proto_version": "1", "publication_names": "p_all", "origin": "any"},
    {"proto_version": "1", "publication_names": "p_all", "streaming": "on"},
    {"proto_version": "2", "publication_names": "p_all", "two_phase": "on"},
    {"proto_version": "1", "publication_names": '"unterminated'},
    {"proto_version": "1", "publication_names": "p_all", "nonsense": "1"},
])
def test_option_errors_as_the_server_words_them(cluster, options):
    """Each error the server gives for these options is waldecode's too (the server's text is read, not typed)."""
    import psycopg

    from waldecode.output.base import CatalogView

    PgoutputRun._n += 1
    slot = f"opt_{PgoutputRun._n}"
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_create_logical_replication_slot(%s, 'pgoutput')", (slot,))
        try:
            args = [x for kv in options.items() for x in kv]
            with pytest.raises(psycopg.Error) as server:
                conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, NULL, NULL"
                             + ", %s" * len(args) + ")", (slot, *args)).fetchall()
        finally:
            conn.execute("SELECT pg_drop_replication_slot(%s)", (slot,))
        catalog = snapshot_from_connection(conn)
    plugin = PgOutput(output=OutputWriter(lambda b: None))
    with pytest.raises(OutputPluginError) as ours:
        plugin.startup(options, CatalogView(catalog))
    assert ours.value.args[0] == server.value.diag.message_primary


def test_cli_writes_what_pg_recvlogical_writes(cluster, tmp_path):
    """``waldecode decode --format pgoutput`` prints the bytes ``pg_recvlogical -f`` writes for a pgoutput
    slot with the same options (each message, then a newline), binary values included."""
    import subprocess
    import sys

    run = PgoutputRun(cluster)
    catalog_file = tmp_path / "catalog.json"
    catalog_file.write_text(run.catalog.to_json())
    with cluster.connect(DB) as conn:
        conn.execute(TYPED_ROW, (10,))
        conn.execute("UPDATE typed SET by = '\\x0a0d0a'::bytea, t = E'line\\nbreak' WHERE id = 10")
        conn.execute("BEGIN; SELECT pg_logical_emit_message(true, 'p', E'\\n'); DELETE FROM typed WHERE id = 10; "
                     "COMMIT")
        conn.execute("CHECKPOINT")
        end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (run.restart_lsn,)).fetchone()[0]
    wal = cluster.archive_wal(tmp_path / "wal", first)
    options = ["-o", "proto_version=2", "-o", "publication_names=p_all", "-o", "binary=true", "-o", "messages"]
    out = cluster.base / "recv.out"
    cluster.run_bin("pg_recvlogical", "-h", str(cluster.socket_dir), "-p", str(cluster.port), "-U", "postgres",
                    "-d", DB, "-S", run.slot, "--start", "--no-loop", "-E", end_lsn, "-f", str(out), *options)
    expected = out.read_bytes()
    with cluster.connect(DB) as conn:
        conn.execute("SELECT pg_drop_replication_slot(%s)", (run.slot,))
    mine = tmp_path / "mine.out"
    proc = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--quiet", "--format", "pgoutput",
                           "--catalog", str(catalog_file), "--start-lsn", run.confirmed_lsn, "--end-lsn", end_lsn,
                           "--output", str(mine), str(wal), *options], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert expected.count(b"\n") >= 8
    assert mine.read_bytes() == expected
