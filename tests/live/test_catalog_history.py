"""Catalog history on a live PostgreSQL 15: decoding across DDL equals the server's slot.

Live tests run DDL between a catalog snapshot and the end of a test_decoding slot's range on
a throw-away PostgreSQL 15, and the offline decode of the copied WAL must print exactly what
the slot printed: CREATE TABLE, ADD/DROP COLUMN, ALTER COLUMN TYPE, renames of tables,
columns, schemas and types, TRUNCATE, VACUUM FULL, CLUSTER, DROP TABLE, CREATE TYPE and
ALTER TYPE ... ADD VALUE, replica identity changes, partitions, DDL with DML in one
transaction, DDL rolled back; a relation the history cannot know is reported (relfilenode,
LSN, transaction) and the rest still decoded.
"""

from __future__ import annotations

import dataclasses
import json
import re

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fixture_data import all_fixtures
from live import DB, SlotRun, live_cluster
from waldecode.catalog import DEFAULT_SETTINGS, Catalog, CatalogError, CatalogPages
from waldecode.catalog.dsn import parse_single_element_array, snapshot_from_connection
from waldecode.errors import format_lsn
from waldecode.catalog.history import DECODED_COLUMNS, CatalogHistory, CatalogLayout, HistoricCatalog
from waldecode.logical.decode import LogicalDecoder
from waldecode.output.test_decoding import TestDecoding
from waldecode.logical.snapbuild import SNAPBUILD_CONSISTENT, SnapBuilder
from waldecode.wal.xlogreader import XLogReader, parse_lsn

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
    assert not any(k in history._temp_oids for (cat, k) in history.timeline.committed.rows if cat == 1259)


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


def decode_again(run: Run, tmp_path, catalog: Catalog) -> LogicalDecoder:
    """The WAL ``run.finish`` copied to ``tmp_path``, decoded once more with another catalog snapshot."""
    reader = XLogReader([tmp_path / "wal"], parse_lsn(run.restart_lsn))
    decoder = LogicalDecoder(catalog, TestDecoding(lambda row: None), segment_size=reader.seg_size)
    for rec in reader:
        decoder.process(rec)
    decoder.finish()
    return decoder


def without_pages(catalog: Catalog) -> Catalog:
    """The snapshot as it was before it carried the catalogs' pages."""
    return dataclasses.replace(catalog, catalog_pages={}, catalog_pages_note="")


@pytest.mark.server
def test_catalog_row_changed_between_snapshot_and_range_is_named(cluster, tmp_path):
    """trunc_me's pg_class row (and its TOAST table's) are updated after the snapshot and before the range,
    on a page then imaged: TRUNCATE's updates of those rows, stored as differences to rows the snapshot
    does not hold, cannot be decoded; the report says which catalog, where and why, and what the
    transaction's other catalog changes concern (trunc_me's TOAST index)."""
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
    with cluster.connect(DB) as conn:
        node, oid = conn.execute("SELECT pg_relation_filenode('trunc_me'), 'trunc_me'::regclass::oid").fetchone()
    snap = format_lsn(run.catalog.lsn)
    assert problems and all(re.fullmatch(
        r"catalog change not decoded: a pg_catalog\.pg_class row \(which one is unknown\) at block \d+ offset \d+ "
        r"of 1663/\d+/\d+, changed by transaction \d+ at [0-9A-F]+/[0-9A-F]+: the new row is stored as a difference "
        rf"to the old one, which is unknown: the catalog snapshot \(taken at {snap}\) has no live tuple at offset "
        r"\d+: the row was written by a transaction still running when the snapshot was taken, or after the "
        r"snapshot and before the start of the WAL read \(the transaction's decoded catalog changes concern "
        rf"relation pg_toast\.pg_toast_{oid}_index \(OID \d+\)\); changes after it may be decoded with outdated "
        r"definitions", p) for p in problems), problems
    assert re.search(rf"could not map filenumber 1663/\d+/{node} to a relation for the INSERT of transaction \d+ "
                     r"at [0-9A-F]+/[0-9A-F]+: \d+ catalog changes? before it could not be decoded.*"
                     r"pg_catalog\.pg_class row \(which one is unknown\) at block \d+ offset \d+ of 1663/\d+/\d+, "
                     r"changed by transaction \d+ at ", skipped), skipped
    # A snapshot without pages: the page itself is unknown, and the report says the snapshot has none
    old = decode_again(run, tmp_path, without_pages(run.catalog))
    assert old.history.problems and all(
        p.reason.endswith("the page was never seen: its last full-page image precedes the start of the WAL read, "
                          "and the catalog snapshot carries no pages of pg_class (taken without them: see waldecode "
                          "catalog)") for p in old.history.problems)


@pytest.fixture(params=["pg_read_binary_file", "get_raw_page"])
def page_source(request, cluster):
    """How the snapshot reads the catalogs' pages: the files (after a CHECKPOINT), or through shared
    buffers with pageinspect (installed for the test: ``auto`` prefers it)."""
    if request.param == "get_raw_page":
        cluster.sql("CREATE EXTENSION pageinspect", dbname=DB)
    try:
        yield request.param
    finally:
        if request.param == "get_raw_page":
            cluster.sql("DROP EXTENSION pageinspect", dbname=DB)


@pytest.mark.server
def test_ddl_and_dml_right_after_the_snapshot(cluster, tmp_path, page_source):
    """Catalog pages changed after the last checkpoint before the range starts (ANALYZE's in-place
    updates, a temporary table created and dropped) are not imaged again in it: the DDL's updates and
    deletions of the snapshot's rows on them are redone from the snapshot's tuples.  Without them
    (the snapshot as it was) the same WAL gives "page never seen" problems."""
    x = page_source[:4]  # names of this run's objects
    with cluster.connect(DB) as conn:
        conn.execute(f"CREATE TABLE {x}_soon (id int PRIMARY KEY, a text, b int)")
        conn.execute(f"CREATE TABLE {x}_gone (id int, t text)")
        conn.execute(f"CREATE TYPE {x}_kind AS ENUM ('x', 'y')")
        conn.execute(f"INSERT INTO {x}_soon VALUES (1, 'one', 1)")
    run = Run(cluster, after_checkpoint=f"ANALYZE {x}_soon, {x}_gone, base_t; "
                                        f"CREATE TEMP TABLE tmp_touch (id int, k {x}_kind); DROP TABLE tmp_touch")
    assert {p.source for p in run.catalog.catalog_pages.values()} == {page_source}
    assert run.catalog.catalog_pages_note == ""
    run.sql(f"ALTER TABLE {x}_soon ADD COLUMN c text DEFAULT 'c default'",
            f"INSERT INTO {x}_soon VALUES (2, 'two', 2)",
            f"ALTER TABLE {x}_soon RENAME COLUMN a TO a2",
            f"ALTER TABLE {x}_soon ALTER COLUMN b SET NOT NULL",
            f"UPDATE {x}_soon SET a2 = 'uno' WHERE id = 1",
            f"ALTER TABLE {x}_soon RENAME TO {x}_renamed",
            f"ALTER TYPE {x}_kind RENAME TO {x}_kind2",
            f"CREATE TABLE {x}_new (id int, k {x}_kind2)",
            f"INSERT INTO {x}_new VALUES (1, 'y')",
            f"ALTER TABLE {x}_gone DROP COLUMN t",
            f"INSERT INTO {x}_gone VALUES (3)",
            f"DROP TABLE {x}_gone",
            "ALTER TABLE base_t ADD COLUMN soon_col int DEFAULT 7",
            "INSERT INTO base_t VALUES (700, 'after add column', 8)",
            "ALTER TABLE base_t DROP COLUMN soon_col",
            "DELETE FROM base_t WHERE id = 700",
            f"DELETE FROM {x}_renamed WHERE id = 2")
    check(run, tmp_path, [f"table public.{x}_soon: INSERT: id[integer]:2 a[text]:'two' b[integer]:2 "
                          "c[text]:'c default'", f"table public.{x}_renamed: DELETE: id[integer]:2",
                          f"k[{x}_kind2]:'y'", f"table public.{x}_gone: INSERT: id[integer]:3", "soon_col[integer]:8"])
    history = run.decoder.history
    assert any(page.source == "the catalog snapshot" for page in history.redo.pages.values())
    old = decode_again(run, tmp_path, without_pages(run.catalog))
    reasons = {p.catalog: p.reason for p in old.history.problems}
    assert reasons.keys() >= {"pg_catalog.pg_class", "pg_catalog.pg_attribute"}, old.history.problems
    assert all("the page was never seen" in r for r in reasons.values())
    # The history's state at the end is what the server's catalog then is
    with cluster.connect(DB) as conn:
        now = snapshot_from_connection(conn, pages=page_source)
    mismatches = catalog_mismatches(history.materialize(), now, history.redo.first_xid)
    assert mismatches == [], "\n".join(mismatches)


def catalog_mismatches(history: Catalog, server: Catalog, first_xid: int) -> list[str]:
    """Where a catalog a history materialized and the server's own snapshot disagree: user relations,
    their columns and types, schemas, and the rows on the catalog pages the history knows, by ctid
    (t_xmin and the columns the history reads; the server's pages hold the tuples its snapshot sees,
    the history's may hold dead ones a full-page image showed, but none a transaction from
    ``first_xid`` on wrote).  Temporary schemas are left out: a temporary table made before the
    range made one, which the history cannot know."""
    out = []
    user = [oid for oid, r in server.relations.items() if r.nspname in ("public", "other")]
    for oid in sorted(set(user) | {oid for oid, r in history.relations.items() if r.nspname in ("public", "other")}):
        a, b = history.relation(oid), server.relation(oid)
        if a is not None and b is not None and len(a.attributes) == len(b.attributes):
            # a default's text the history left unknown (it does not follow pg_attrdef) is no mismatch,
            # a different one is
            b = dataclasses.replace(b, attributes=tuple(dataclasses.replace(y, attdefault=()) if not x.attdefault else y
                                            for x, y in zip(a.attributes, b.attributes)))
        if a != b:
            out.append(f"relation {oid}: history {a} != server {b}")
    for oid, t in server.types.items():
        if t.nspname in ("public", "other") and history.type(oid) != t:
            out.append(f"type {oid}: history {history.type(oid)} != server {t}")

    def temporary(name: str) -> bool:
        return name.startswith(("pg_temp_", "pg_toast_temp_"))

    mine, theirs = ({oid: n for oid, n in c.namespaces.items() if not temporary(n)} for c in (history, server))
    if mine != theirs:
        out.append(f"namespaces: history {mine} != server {theirs}")
    for cat, pages in history.catalog_pages.items():
        srv_pages = server.catalog_pages.get(cat)
        if srv_pages is None or srv_pages.relfilenode != pages.relfilenode:
            out.append(f"catalog {cat}: in {pages.relfilenode} in the history, {srv_pages!r} on the server")
            continue
        layout = CatalogLayout(server.relation(cat), DECODED_COLUMNS[cat], server.settings.get("server_encoding"))
        for blkno in pages.blocks:
            mine = {o: (t[:4], layout.decode(t)) for o, t in pages.tuples(blkno).items()}
            srv = {o: (t[:4], layout.decode(t)) for o, t in (srv_pages.tuples(blkno) or {}).items()}
            if cat == 2615:
                mine, srv = ({o: v for o, v in rows.items() if not temporary(v[1]["nspname"])} for rows in (mine, srv))
            for o in sorted(srv.keys() | (mine.keys() if blkno not in pages.partial else srv.keys())):
                if o in mine and o not in srv and int.from_bytes(mine[o][0], "little") < first_xid:
                    continue  # a dead version a full-page image showed: the history has no pg_xact to tell
                if mine.get(o) != srv.get(o):
                    out.append(f"catalog {cat} ({blkno},{o}): history {mine.get(o)} != server {srv.get(o)}")
    return out


@pytest.mark.server
def test_catalog_rewritten_in_the_range_then_its_rows_dropped(cluster, tmp_path):
    """VACUUM FULL and CLUSTER of catalogs write the new relfilenode's pages as full-page images before
    the commit that makes it the catalog's (for mapped catalogs, the relation mapper's update): those
    images are kept, so rows dropped afterwards are known.  A CLUSTER rolled back leaves the catalog
    where it was."""
    with cluster.connect(DB) as conn:
        conn.execute("CREATE FUNCTION rw_f(int) RETURNS int LANGUAGE sql AS 'SELECT $1 + 1'")
        conn.execute("CREATE SCHEMA rw_schema")
        conn.execute("CREATE TYPE rw_pair AS (a int, b text)")
        conn.execute("CREATE TYPE rw_enum AS ENUM ('p', 'q')")
        conn.execute("CREATE TABLE rw_t (id int, e rw_enum)")
        conn.execute("INSERT INTO rw_t VALUES (1, 'p')")
    run = Run(cluster)
    with cluster.connect(DB, autocommit=False) as conn:
        run.sql("CLUSTER pg_enum USING pg_enum_oid_index", conn=conn)
        conn.rollback()
    run.sql("VACUUM FULL pg_proc",
            "DROP FUNCTION rw_f(int)",
            "CLUSTER pg_namespace USING pg_namespace_oid_index",
            "DROP SCHEMA rw_schema",
            "VACUUM FULL pg_type",
            "VACUUM FULL pg_attribute",
            "DROP TYPE rw_pair",
            "ALTER TYPE rw_enum RENAME VALUE 'q' TO 'q2'",
            "INSERT INTO rw_t VALUES (2, 'q2')",
            "CLUSTER pg_class USING pg_class_oid_index",
            "ALTER TABLE rw_t RENAME TO rw_t2",
            "INSERT INTO rw_t2 VALUES (3, 'p')",
            "DROP TABLE rw_t2",
            "CREATE TABLE rw_after (id int)",
            "INSERT INTO rw_after VALUES (1)")
    check(run, tmp_path, ["table public.rw_t: INSERT: id[integer]:2 e[rw_enum]:'q2'",
                          "table public.rw_t2: INSERT: id[integer]:3", "table public.rw_after: INSERT: id[integer]:1"])
    history = run.decoder.history
    view = history.view(2 ** 63)
    with cluster.connect(DB) as conn:
        nodes = dict(conn.execute("SELECT oid::int, pg_relation_filenode(oid)::int FROM pg_class WHERE oid IN "
                                  "(1255, 2615, 1247, 1249, 1259, 3501)").fetchall())
    for cat, node in nodes.items():
        assert view.relation(cat).relfilenode == node
        if cat != 3501:  # rewritten: the new relfilenode's pages came from the rewrite's images
            assert node != run.catalog.relation(cat).relfilenode
            assert any(k[0] == node and p.source == "a full-page image" for k, p in history.redo.pages.items()), cat
    # the rolled back CLUSTER's new heap is forgotten with its pages
    assert all(history.redo.nodes[n] != 3501 or n == nodes[3501] for n in history.redo.nodes)


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
