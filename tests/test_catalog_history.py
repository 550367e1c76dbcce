"""Catalog history against PostgreSQL: the catalog rows decoded from WAL, and decoding across DDL.

Two kinds of evidence.  The ``ddl`` fixtures of every cluster (15 with each
wal_compression, 16, 18) carry the raw catalog rows the generator read after each
DDL statement, in the session that ran it (``catalog.json``): the history's view at
that LSN, for that session's transaction, must hold the same relations, columns and
types.  Live tests run DDL between a catalog snapshot and the end of a test_decoding
slot's range on a throw-away PostgreSQL 15, and the offline decode of the copied WAL
must print exactly what the slot printed: CREATE TABLE, ADD/DROP COLUMN, ALTER COLUMN
TYPE, renames of tables, columns, schemas and types, TRUNCATE, VACUUM FULL, CLUSTER,
DROP TABLE, CREATE TYPE and ALTER TYPE ... ADD VALUE, replica identity changes,
partitions, DDL with DML in one transaction, DDL rolled back; a relation the history
cannot know is reported (relfilenode, LSN, transaction) and the rest still decoded.
"""

from __future__ import annotations

import json
import re

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixture_data import all_fixtures
from live import DB, SlotRun, live_cluster
from waldecode.catalog import Catalog
from waldecode.catalog_dsn import parse_single_element_array
from waldecode.catalog_history import CatalogHistory, HistoricCatalog
from waldecode.decode import LogicalDecoder
from waldecode.output.test_decoding import TestDecoding
from waldecode.xlogreader import XLogReader, parse_lsn

# -- the fixtures' catalog rows ------------------------------------------------------------------

DDL_FIXTURES = [pytest.param(fx, id=fx.name) for fx in all_fixtures()
                if fx.path.name == "ddl" and (fx.path / "catalog.json").is_file()
                and (fx.path / "snapshot.json.gz").is_file()]

REL_FIELDS = ("relname", "nspname", "relkind", "relpersistence", "relfilenode", "reltablespace", "reltoastrelid",
              "relrewrite", "relreplident")
ATT_FIELDS = ("attname", "atttypid", "atttypmod", "attlen", "attalign", "attbyval", "attstorage", "attisdropped",
              "attnotnull", "atthasmissing")
TYPE_FIELDS = ("typname", "nspname", "typlen", "typbyval", "typtype", "typcategory", "typdelim", "typelem",
               "typarray", "typrelid", "typbasetype", "typtypmod", "typalign", "typstorage", "typoutput",
               "format_type")


def _check_view(view, snap: dict, all_rel_oids: set, where: str) -> None:
    spc = view.database_tablespace
    rels = {r["oid"]: r for r in snap["relations"]}
    for oid, exp in rels.items():
        rel = view.relation(oid)
        assert rel is not None, f"{where}: relation {exp['relname']} ({oid}) missing"
        for f in REL_FIELDS:
            assert getattr(rel, f) == exp[f], f"{where}: {exp['relname']}.{f}: {getattr(rel, f)!r} != {exp[f]!r}"
        if exp["relfilenode"]:
            assert view.relation_by_filenode(exp["reltablespace"] or spc, exp["relfilenode"]) is rel, where
        atts = [a for a in snap["attributes"] if a["attrelid"] == oid]
        assert [a.attnum for a in rel.attributes] == [a["attnum"] for a in atts], f"{where}: {exp['relname']}"
        for att, a in zip(rel.attributes, atts):
            for f in ATT_FIELDS:
                assert getattr(att, f) == a[f], f"{where}: {exp['relname']}.{a['attname']}.{f}"
            missing = None
            if a["attmissingval"] is not None and not a["attisdropped"]:
                missing = parse_single_element_array(a["attmissingval"])
            assert att.attmissingval == missing, f"{where}: {exp['relname']}.{a['attname']} attmissingval"
            if not att.attisdropped:
                typ = next(t for t in snap["types"] if t["oid"] == a["atttypid"])
                assert att.type_name == typ["format_type"], f"{where}: {exp['relname']}.{a['attname']} type"
    for oid in all_rel_oids - set(rels):
        rel = view.relation(oid)
        assert rel is None, f"{where}: relation {oid} ({rel.relname}) should not exist"
    for exp in snap["types"]:
        typ = view.type(exp["oid"])
        assert typ is not None, f"{where}: type {exp['typname']} missing"
        for f in TYPE_FIELDS:
            assert getattr(typ, f) == exp[f], f"{where}: type {exp['typname']}.{f}"


@pytest.mark.parametrize("fx", DDL_FIXTURES)
def test_decoded_catalog_rows_equal_the_servers(fx):
    """At every 'after statement N' point the view for the session's transaction has the server's rows."""
    doc = json.loads((fx.path / "catalog.json").read_text())
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    history = CatalogHistory(catalog)
    assert history.active
    labels = [(parse_lsn(s["insert_lsn"]), s) for s in doc["snapshots"] if s["label"].startswith("after statement")]
    all_oids = {r["oid"] for s in doc["snapshots"] for r in s["relations"]}
    start = min(parse_lsn(s["restart_lsn"]) for s in fx.meta["slots"])
    reader = XLogReader([fx.wal_dir], start, fx.end_lsn)
    last_xid = 0
    checked = 0
    for rec in reader:
        while labels and rec.lsn >= labels[0][0]:
            lsn, snap = labels.pop(0)
            _check_view(history.view(lsn, last_xid), snap, all_oids, f"{fx.name} {snap['label']}")
            checked += 1
        history.process(rec)
        if rec.xl_rmid in (9, 10) and rec.xl_xid:
            last_xid = history.top_of.get(rec.xl_xid, rec.xl_xid)
    assert checked and not labels
    assert history.problems == []
    # The views inside the transaction saw its own uncommitted DDL: the history's transactions commit
    assert not history.txns


def test_without_history_unknown_relations_are_skipped_with_a_warning():
    """The static snapshot alone (history off): every change to a table created in the range is
    reported and skipped; the transactions and other rows still print."""
    fx = next(p.values[0] for p in DDL_FIXTURES if p.values[0].name == "pg15-off/ddl")
    meta = fx.meta["decoding_options"]["test_decoding.jsonl"]
    catalog = Catalog.load(fx.path / "snapshot.json.gz")
    slot = next(s for s in fx.meta["slots"] if s["name"] == meta["slot"])
    got: list[str] = []
    reader = XLogReader([fx.wal_dir], parse_lsn(slot["restart_lsn"]), fx.end_lsn)
    seen = []
    decoder = LogicalDecoder(catalog, TestDecoding(got.append), segment_size=reader.seg_size,
                             catalog_history=False, on_warning=seen.append)
    for rec in reader:
        decoder.process(rec)
    decoder.finish()
    expected = [json.loads(line)[2] for line in (fx.path / "test_decoding.jsonl").read_text().splitlines()]
    assert got == [r for r in expected if not r.startswith("table ")]
    # (more warnings than rows: the rewrites' inserts into their transient heaps are unknown too)
    assert seen == decoder.warnings and len(seen) >= sum(1 for r in expected if r.startswith("table "))
    assert all(re.fullmatch(r"could not map filenumber 1663/16384/\d+ to a relation for the (INSERT|UPDATE|DELETE) "
                            r"of transaction \d+ at [0-9A-F]+/[0-9A-F]+: not in the catalog snapshot taken at "
                            r"[0-9A-F]+/[0-9A-F]+; change skipped", w) for w in seen), seen[0]


def test_a_snapshot_without_catalogs_disables_the_history():
    catalog = Catalog("15.0", 150000, 15, 0, "db", 5, 1663, {"TimeZone": "UTC"}, {}, {})
    decoder = LogicalDecoder(catalog, TestDecoding(lambda row: None))
    assert decoder.history is None
    assert decoder.warnings == ["the catalog snapshot has no pg_class (OID 1259) with its columns and relfilenode: "
                                "catalog changes in the WAL are not tracked"]


# -- live ----------------------------------------------------------------------------------------

SCHEMA = """
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE SCHEMA other;
CREATE TABLE base_t (id int PRIMARY KEY, v text);
CREATE TABLE other.in_other (id int PRIMARY KEY, m mood);
CREATE TABLE ident_t (id int PRIMARY KEY, code text NOT NULL, v text);
CREATE UNIQUE INDEX ident_t_code ON ident_t (code);
CREATE TABLE clustered (id int PRIMARY KEY, v text);
CREATE TABLE trunc_me (id int, v text);
INSERT INTO base_t SELECT g, 'base ' || g FROM generate_series(1, 5) g;
INSERT INTO other.in_other VALUES (1, 'ok');
INSERT INTO ident_t SELECT g, 'c' || g, 'v' || g FROM generate_series(1, 5) g;
INSERT INTO clustered SELECT g, 'c ' || g FROM generate_series(1, 20) g;
"""


@pytest.fixture(scope="module")
def cluster():
    # lock_timeout: a workload waiting on a lock fails instead of hanging the suite
    with live_cluster(SCHEMA, max_replication_slots=40, lock_timeout="20s", max_prepared_transactions=5) as c:
        yield c


Run = SlotRun


def check(run: Run, tmp_path, must_contain=()) -> list[str]:
    got, expected = run.finish(tmp_path)
    assert got == expected
    assert run.decoder.warnings == []
    assert run.decoder.history.problems == []
    for text in must_contain:
        assert any(text in row for row in expected), f"workload did not produce {text!r}"
    return got


@pytest.mark.server
def test_create_table_after_the_snapshot(cluster, tmp_path):
    run = Run(cluster)
    run.sql("CREATE TABLE t_new (id int PRIMARY KEY, v text, big text)",
            "INSERT INTO t_new VALUES (1, 'one', NULL), (2, 'two', repeat(md5('x'), 400))",
            "UPDATE t_new SET v = 'uno' WHERE id = 1",
            "UPDATE t_new SET id = 20 WHERE id = 2",
            "DELETE FROM t_new WHERE id = 1",
            "CREATE TABLE \"Mixed Case\" (\"Id\" int, \"select\" text)",
            "INSERT INTO \"Mixed Case\" VALUES (1, 'quoted')",
            "CREATE UNLOGGED TABLE t_unlogged (id int)",
            "INSERT INTO t_unlogged VALUES (1)",
            "ALTER TABLE t_unlogged SET LOGGED",
            "INSERT INTO t_unlogged VALUES (2)",
            "ALTER TABLE t_unlogged SET UNLOGGED",
            "INSERT INTO t_unlogged VALUES (3)",
            "CREATE TEMP TABLE t_temp (id int PRIMARY KEY, v text)",
            "INSERT INTO t_temp VALUES (1, 'temporary')",
            "CREATE TEMP TABLE t_temp_drop (id int) ON COMMIT DROP",
            "CREATE TABLE t_ctas AS SELECT g AS id, g::text AS v FROM generate_series(1, 3) g")
    got = check(run, tmp_path, ["table public.t_new: INSERT: id[integer]:2", "table public.\"Mixed Case\"",
                                "table public.t_ctas: INSERT", "table public.t_unlogged: INSERT: id[integer]:2"])
    assert not any("id[integer]:3" in r for r in got if r.startswith("table public.t_unlogged"))
    history = run.decoder.history
    assert history._temp_oids, "the temporary tables' catalog rows were seen"
    assert not any(k in history._temp_oids for (cat, k) in history.committed.rows if cat == 1259)


@pytest.mark.server
def test_add_and_drop_columns(cluster, tmp_path):
    run = Run(cluster)
    run.sql("CREATE TABLE cols (id int PRIMARY KEY, a text)",
            "ALTER TABLE cols REPLICA IDENTITY FULL",
            "INSERT INTO cols VALUES (1, 'before')",
            "ALTER TABLE cols ADD COLUMN b int",
            "INSERT INTO cols VALUES (2, 'with b', 20)",
            "ALTER TABLE cols ADD COLUMN c text DEFAULT 'missing default'",
            "ALTER TABLE cols ADD COLUMN n numeric DEFAULT 1.50",
            "ALTER TABLE cols ADD COLUMN m mood DEFAULT 'ok'",
            "UPDATE cols SET a = 'after defaults' WHERE id = 1",
            "ALTER TABLE cols ADD COLUMN r timestamptz DEFAULT clock_timestamp()",  # volatile: rewrite
            "INSERT INTO cols (id, a) VALUES (3, 'after rewrite')",
            "ALTER TABLE cols DROP COLUMN b",
            "INSERT INTO cols (id, a) VALUES (4, 'after drop')",
            "DELETE FROM cols WHERE id = 2",
            "ALTER TABLE base_t ADD COLUMN extra int DEFAULT 7",
            "UPDATE base_t SET v = 'base changed' WHERE id = 1",
            "ALTER TABLE base_t DROP COLUMN extra",
            "INSERT INTO base_t VALUES (100, 'after drop on a snapshot table')")
    check(run, tmp_path, ["c[text]:'missing default'", "m[mood]:'ok'", "extra[integer]:7"])


@pytest.mark.server
def test_alter_column_type_and_renames(cluster, tmp_path):
    run = Run(cluster)
    run.sql("CREATE TABLE ren (id int PRIMARY KEY, a text, e mood)",
            "INSERT INTO ren VALUES (1, 'x', 'sad')",
            "ALTER TABLE ren ALTER COLUMN id TYPE bigint",
            "INSERT INTO ren VALUES (2, 'after type', 'ok')",
            "ALTER TABLE ren ALTER COLUMN a TYPE varchar(20)",
            "ALTER TABLE ren RENAME COLUMN a TO a_renamed",
            "ALTER TABLE ren RENAME TO ren2",
            "INSERT INTO ren2 VALUES (3, 'renamed', 'sad')",
            "ALTER TYPE mood RENAME TO feeling",
            "INSERT INTO ren2 VALUES (4, 'type renamed', 'ok')",
            "ALTER TYPE feeling RENAME TO mood",
            "ALTER SCHEMA other RENAME TO other2",
            "INSERT INTO other2.in_other VALUES (2, 'sad')",
            "ALTER TABLE other2.in_other SET SCHEMA public",
            "INSERT INTO in_other VALUES (3, 'ok')",
            "ALTER TABLE in_other SET SCHEMA other2",
            "ALTER SCHEMA other2 RENAME TO other",
            "ALTER TABLE base_t RENAME COLUMN v TO v2",
            "INSERT INTO base_t VALUES (101, 'column renamed')",
            "ALTER TABLE base_t RENAME COLUMN v2 TO v")
    check(run, tmp_path, ["table public.ren: INSERT: id[bigint]:2", "table public.ren2: INSERT: id[bigint]:3",
                          "e[feeling]:'ok'", "table other2.in_other", "table public.in_other",
                          "v2[text]:'column renamed'"])


@pytest.mark.server
def test_truncate_vacuum_full_cluster_drop(cluster, tmp_path):
    run = Run(cluster)
    run.sql("TRUNCATE clustered",
            "INSERT INTO clustered SELECT g, 'again ' || g FROM generate_series(1, 5) g",
            "VACUUM FULL clustered",
            "UPDATE clustered SET v = 'after vacuum full' WHERE id = 1",
            "CLUSTER clustered USING clustered_pkey",
            "DELETE FROM clustered WHERE id = 2",
            "VACUUM FULL pg_class",  # a mapped catalog rewritten: the relation mapper moves it
            "VACUUM FULL pg_namespace",
            "CREATE TABLE after_vf (id int)",
            "INSERT INTO after_vf VALUES (1)",
            "TRUNCATE after_vf",
            "INSERT INTO after_vf VALUES (2)",
            "DROP TABLE after_vf",
            "CREATE TABLE after_vf (id text)",
            "INSERT INTO after_vf VALUES ('recreated')",
            "CREATE MATERIALIZED VIEW mv AS SELECT id, v FROM clustered",
            "REFRESH MATERIALIZED VIEW mv",
            "INSERT INTO clustered VALUES (99, 'last')")
    check(run, tmp_path, ["table public.clustered: TRUNCATE", "after vacuum full",
                          "table public.after_vf: INSERT: id[text]:'recreated'"])


@pytest.mark.server
def test_create_type_and_add_value(cluster, tmp_path):
    run = Run(cluster)
    run.sql("CREATE TYPE color AS ENUM ('red', 'green')",
            "CREATE TYPE point2 AS (x int, y text)",
            "CREATE DOMAIN short_text AS varchar(5)",
            "CREATE TYPE floatrange AS RANGE (subtype = float8)",
            "CREATE DOMAIN color_dom AS color",
            "CREATE EXTENSION hstore",
            "CREATE TABLE typed (id int PRIMARY KEY, c color, p point2, cs color[], s short_text, r floatrange,"
            " m mood, cd color_dom, mr floatmultirange, h hstore)",
            "INSERT INTO typed VALUES (1, 'red', ROW(1, 'a'), '{red,green}', 'abc', '[1.5,2.5)', 'sad', 'green',"
            " '{[1,2),[3,4)}', 'a=>1, b=>NULL')",
            "ALTER TYPE color ADD VALUE 'blue'",
            "ALTER TYPE mood ADD VALUE 'happy'",
            "INSERT INTO typed VALUES (2, 'blue', ROW(2, 'b'), '{blue}', 'de', 'empty', 'happy')",
            "ALTER TYPE point2 ADD ATTRIBUTE z bool",
            "INSERT INTO typed VALUES (3, 'green', ROW(3, 'c', true), NULL, NULL, NULL, 'ok')",
            "INSERT INTO other.in_other VALUES (10, 'happy')")
    check(run, tmp_path, ["c[color]:'blue'", "m[mood]:'happy'", "p[point2]:'(3,c,t)'", "cs[color[]]:'{blue}'",
                          "cd[color_dom]:'green'", "mr[floatmultirange]:'{[1,2),[3,4)}'", "h[hstore]:"])


@pytest.mark.server
def test_replica_identity_changes(cluster, tmp_path):
    run = Run(cluster)
    run.sql("ALTER TABLE ident_t REPLICA IDENTITY FULL",
            "UPDATE ident_t SET v = 'full' WHERE id = 1",
            "DELETE FROM ident_t WHERE id = 2",
            "ALTER TABLE ident_t REPLICA IDENTITY USING INDEX ident_t_code",
            "UPDATE ident_t SET code = 'c3new' WHERE id = 3",
            "DELETE FROM ident_t WHERE id = 4",
            "ALTER TABLE ident_t REPLICA IDENTITY NOTHING",
            "DELETE FROM ident_t WHERE id = 5",
            "ALTER TABLE ident_t REPLICA IDENTITY DEFAULT",
            "INSERT INTO ident_t VALUES (6, 'c6', 'v6')",
            "UPDATE ident_t SET id = 60 WHERE id = 6",
            "DELETE FROM ident_t WHERE id = 60")
    check(run, tmp_path, ["DELETE: id[integer]:2 code[text]:'c2' v[text]:'v2'", "DELETE: code[text]:'c4'",
                          "DELETE: (no-tuple-data)", "DELETE: id[integer]:60"])
    view = run.decoder.history.view(2 ** 63, 0)
    assert isinstance(view, HistoricCatalog)
    rel = next(r for r in view.relations.values() if r.relname == "ident_t")
    assert rel.relreplident == "d" and rel.replica_identity_key == (1,)


@pytest.mark.server
def test_partitions(cluster, tmp_path):
    run = Run(cluster)
    run.sql("CREATE TABLE meas (id int, at date, v text) PARTITION BY RANGE (at)",
            "CREATE TABLE meas_2024 PARTITION OF meas FOR VALUES FROM ('2024-01-01') TO ('2025-01-01')",
            "INSERT INTO meas VALUES (1, '2024-05-01', 'routed')",
            "CREATE TABLE meas_2025 (id int, at date, v text)",
            "INSERT INTO meas_2025 VALUES (2, '2025-02-01', 'before attach')",
            "ALTER TABLE meas ATTACH PARTITION meas_2025 FOR VALUES FROM ('2025-01-01') TO ('2026-01-01')",
            "INSERT INTO meas VALUES (3, '2025-03-01', 'after attach')",
            "UPDATE meas SET at = '2024-03-01' WHERE id = 3",  # moves the row to the other partition
            "ALTER TABLE meas DETACH PARTITION meas_2024",
            "INSERT INTO meas_2024 VALUES (4, '2024-06-01', 'detached')",
            "TRUNCATE meas")
    check(run, tmp_path, ["table public.meas_2025: INSERT: id[integer]:3",
                          "table public.meas_2024: INSERT: id[integer]:3",
                          ": TRUNCATE:"])


@pytest.mark.server
def test_ddl_and_dml_in_one_transaction_with_savepoints_and_rollbacks(cluster, tmp_path):
    run = Run(cluster)
    with cluster.connect(DB, autocommit=False) as conn:
        run.sql("CREATE TABLE tx (id int PRIMARY KEY, v text)",
                "INSERT INTO tx VALUES (1, 'created here')",
                "ALTER TABLE tx ADD COLUMN w int DEFAULT 5",
                "INSERT INTO tx VALUES (2, 'after add column', 6)",
                "SAVEPOINT s1",
                "ALTER TABLE tx ADD COLUMN gone text",
                "INSERT INTO tx VALUES (3, 'in rolled back savepoint', 7, 'x')",
                "ROLLBACK TO SAVEPOINT s1",
                "INSERT INTO tx VALUES (4, 'after rollback to savepoint', 8)",
                "SAVEPOINT s2",
                "ALTER TABLE tx ALTER COLUMN v TYPE varchar(50)",
                "RELEASE SAVEPOINT s2",
                "UPDATE tx SET v = 'after type change' WHERE id = 1",
                "ALTER TABLE base_t ADD COLUMN tx_col int",
                "INSERT INTO base_t VALUES (200, 'new column in this transaction', 1)",
                conn=conn)
        conn.commit()
        # DDL in an aborted transaction never becomes visible
        run.sql("ALTER TABLE tx ADD COLUMN aborted_col int",
                "CREATE TABLE never (id int)",
                "INSERT INTO never VALUES (1)",
                "ALTER TABLE tx RENAME TO tx_aborted",
                conn=conn)
        conn.rollback()
        run.sql("INSERT INTO tx VALUES (5, 'after the aborted DDL', 9)",
                "ALTER TABLE base_t DROP COLUMN tx_col", conn=conn)
        conn.commit()
    check(run, tmp_path, ["w[integer]:8", "v[character varying]:'after type change'",
                          "table public.tx: INSERT: id[integer]:5 v[character varying]:'after the aborted DDL' "
                          "w[integer]:9"])


@pytest.mark.server
def test_ddl_committed_while_other_transactions_run(cluster, tmp_path):
    """A transaction sees another's DDL from the moment that one commits, as PostgreSQL's snapshots do.
    (The DDL touches nothing the open transaction has locked: it would wait for its commit.)"""
    run = Run(cluster)
    with cluster.connect(DB, autocommit=False) as a, cluster.connect(DB, autocommit=False) as b:
        run.sql("INSERT INTO base_t VALUES (300, 'a before')", conn=a)
        run.sql("CREATE TABLE conc (id int)", "INSERT INTO conc VALUES (1)", conn=b)
        b.commit()
        run.sql("INSERT INTO conc VALUES (2)", "INSERT INTO base_t VALUES (301, 'a after')", conn=a)
        run.sql("CREATE TABLE conc2 (id int, later text DEFAULT 'd')", "ALTER TYPE mood ADD VALUE 'meh'", conn=b)
        b.commit()
        run.sql("INSERT INTO conc2 VALUES (3, 'e')", "INSERT INTO other.in_other VALUES (30, 'meh')", conn=a)
        a.commit()
    check(run, tmp_path, ["table public.conc: INSERT: id[integer]:2", "table public.conc2: INSERT: id[integer]:3",
                          "m[mood]:'meh'"])


@pytest.mark.server
def test_unresolvable_relation_is_reported_and_the_rest_decoded(cluster, tmp_path):
    """A table created after the snapshot but before the decoded range: the history cannot know it."""
    run = Run(cluster, before_slot="CREATE TABLE unseen (id int, v text)")
    run.sql("INSERT INTO unseen VALUES (1, 'lost')",
            "INSERT INTO base_t VALUES (400, 'still decoded')")
    got, expected = run.finish(tmp_path)
    assert any(r.startswith("table public.unseen: INSERT") for r in expected)
    assert got == [r for r in expected if not r.startswith("table public.unseen:")]
    assert "table public.base_t: INSERT: id[integer]:400 v[text]:'still decoded'" in got
    with cluster.connect(DB) as conn:
        node = conn.execute("SELECT pg_relation_filenode('unseen')").fetchone()[0]
        conn.execute("DROP TABLE unseen")
    (warning,) = run.decoder.warnings
    at = next(i for i, r in enumerate(expected) if r.startswith("table public.unseen:"))
    xid = next(int(r.split()[1]) for r in reversed(expected[:at]) if r.startswith("BEGIN"))
    assert re.search(rf"could not map filenumber 1663/\d+/{node} to a relation for the INSERT of transaction "
                     rf"{xid} at [0-9A-F]+/[0-9A-F]+: ", warning), warning
    assert "change skipped" in warning and "snapshot" in warning


@pytest.mark.server
def test_catalog_page_never_seen_is_named(cluster, tmp_path):
    """pg_class's page was imaged after the checkpoint but before the range: TRUNCATE's pg_class update,
    stored as a difference to the old row, cannot be decoded; the report says which page and why."""
    run = Run(cluster, after_checkpoint="ALTER TABLE trunc_me SET (fillfactor = 90)")
    run.sql("TRUNCATE trunc_me",
            "INSERT INTO trunc_me VALUES (1, 'into the new relfilenode')",
            "INSERT INTO base_t VALUES (500, 'still decoded')")
    got, expected = run.finish(tmp_path)
    lost = [r for r in expected if r.startswith("table public.trunc_me: INSERT")]
    assert lost and got == [r for r in expected if r not in lost]
    assert "table public.trunc_me: TRUNCATE: (no-flags)" in got
    assert "table public.base_t: INSERT: id[integer]:500 v[text]:'still decoded'" in got
    *problems, skipped = run.decoder.warnings
    assert problems and all(p.startswith("catalog change not decoded: pg_class row at block ") for p in problems)
    assert "the page was never seen: its last full-page image precedes the start of the WAL read" in problems[0]
    with cluster.connect(DB) as conn:
        node = conn.execute("SELECT pg_relation_filenode('trunc_me')").fetchone()[0]
    assert re.search(rf"could not map filenumber 1663/\d+/{node} to a relation for the INSERT of transaction \d+ "
                     r"at [0-9A-F]+/[0-9A-F]+: \d+ catalog changes? before it could not be decoded.*pg_class row "
                     r"at block \d+ offset \d+ of 1663/\d+/\d+, changed by transaction \d+ at ", skipped), skipped


@pytest.mark.server
def test_rewrites_shown_with_include_rewrites(cluster, tmp_path):
    """include-rewrites: a rewriting ALTER TABLE's rows, named after the table being rewritten."""
    run = Run(cluster, options={"include-rewrites": "1", "skip-empty-xacts": "1"})
    run.sql("CREATE TABLE rw (id int PRIMARY KEY, v text)",
            "INSERT INTO rw VALUES (1, 'a'), (2, 'b')",
            "ALTER TABLE rw ALTER COLUMN id TYPE bigint",
            "ALTER TABLE rw ADD COLUMN t timestamptz DEFAULT clock_timestamp()",
            "INSERT INTO rw (id, v) VALUES (3, 'c')")
    got = check(run, tmp_path, ["table public.rw: INSERT: id[bigint]:1 v[text]:'a'"])
    assert sum(1 for r in got if r.startswith("table public.rw: INSERT: id[bigint]:1")) == 2


@pytest.mark.server
def test_ddl_in_a_prepared_transaction(cluster, tmp_path):
    """Two-phase decoding: a prepared transaction is decoded at PREPARE with its own uncommitted DDL."""
    run = Run(cluster, two_phase=True)
    with cluster.connect(DB, autocommit=False) as conn:
        run.sql("CREATE TABLE prep (id int PRIMARY KEY, v text)",
                "INSERT INTO prep VALUES (1, 'prepared')",
                "ALTER TABLE prep ADD COLUMN w int DEFAULT 3",
                "INSERT INTO prep VALUES (2, 'after add column', 4)",
                "PREPARE TRANSACTION 'ddl_2pc'", conn=conn)
        conn.commit()
        run.sql("INSERT INTO base_t VALUES (600, 'between prepare and commit')", conn=conn)
        conn.commit()
    run.sql("COMMIT PREPARED 'ddl_2pc'", "INSERT INTO prep VALUES (3, 'after commit prepared', 5)")
    check(run, tmp_path, ["PREPARE TRANSACTION 'ddl_2pc'", "table public.prep: INSERT: id[integer]:2",
                          "table public.prep: INSERT: id[integer]:3 v[text]:'after commit prepared' w[integer]:5"])


DDL_OPS = st.lists(
    st.tuples(st.integers(0, 1), st.sampled_from(
        ["recreate", "add", "add_default", "drop_col", "rename_col", "insert", "insert", "insert", "update",
         "delete", "truncate", "savepoint", "rollback_to", "commit", "commit", "rollback"]), st.integers(0, 2)),
    min_size=5, max_size=40)


@pytest.mark.server
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                HealthCheck.too_slow])
@given(ops=DDL_OPS)
def test_random_ddl_and_dml_from_two_sessions(cluster, tmp_path_factory, ops):
    """Random interleavings of DDL and DML in two sessions, with savepoints, rollbacks and lock waits
    (which time out and roll the waiting session back): decoded exactly as the server decodes them."""
    run = Run(cluster)
    conns = [cluster.connect(DB, autocommit=False) for _ in range(2)]
    for c in conns:
        c.execute("SET lock_timeout = '100ms'")
        c.commit()
    for k in range(3):
        conns[0].execute(f"CREATE TABLE hx{Run._n}_{k} (id int PRIMARY KEY, v text)")
    conns[0].commit()
    savepoints = [0, 0]
    n = 0
    try:
        for who, op, k in ops:
            conn = conns[who]
            n += 1
            t = f"hx{Run._n}_{k}"
            sql = {
                "recreate": f"DROP TABLE {t}; CREATE TABLE {t} (id int PRIMARY KEY, v text)",
                "add": f"ALTER TABLE {t} ADD COLUMN c{n} int",
                "add_default": f"ALTER TABLE {t} ADD COLUMN d{n} text DEFAULT 'default {n}'",
                "drop_col": f"ALTER TABLE {t} DROP COLUMN v",
                "rename_col": f"ALTER TABLE {t} RENAME COLUMN id TO id{n}",
                "insert": f"INSERT INTO {t} SELECT {n}",
                "update": f"UPDATE {t} SET v = 'updated {n}'",
                "delete": f"DELETE FROM {t} WHERE random() < 0.5",
                "truncate": f"TRUNCATE {t}",
            }.get(op)
            try:
                if sql is not None:
                    conn.execute(sql)
                elif op == "savepoint":
                    conn.execute("SAVEPOINT s")
                    savepoints[who] += 1
                elif op == "rollback_to" and savepoints[who]:
                    conn.execute("ROLLBACK TO SAVEPOINT s")
                elif op == "commit":
                    conn.commit()
                    savepoints[who] = 0
                elif op == "rollback":
                    conn.rollback()
                    savepoints[who] = 0
            except psycopg.Error:
                conn.rollback()  # missing table or column, lock timeout...: that transaction is lost
                savepoints[who] = 0
        for c in conns:
            c.commit()
    finally:
        for c in conns:
            c.close()
    check(run, tmp_path_factory.mktemp("ddl_random"))
