"""``decode --format sql``: the statements redo the transactions, and ``undo`` undoes them.

A throw-away PostgreSQL 15 holds a database; a copy of it is made (CREATE DATABASE …
TEMPLATE) before a workload of every common type, TOAST, every replica identity, key
changes, savepoints, two-phase commit and TRUNCATE.  The workload's WAL decoded to SQL
and applied to the copy must give every table the contents the original has after the
workload (the server compares rows through their own output functions); the undo SQL
applied to the original must give back the contents from before, for the tables whose
old values the WAL holds (REPLICA IDENTITY FULL), and name everything else it could not
undo.  A conflict under ``conflict=guard`` is a warning from the server, never an
overwrite.
"""

from __future__ import annotations

import pytest

from live import DB, SlotRun, live_cluster
from waldecode.logical.session import decode_wal
from waldecode.output.sql import SqlOutput
from waldecode.wal.xlogreader import parse_lsn

pytestmark = [pytest.mark.server]

TYPED = """(
  id int PRIMARY KEY, i2 smallint, i8 bigint, f4 real, f8 double precision, n numeric, b boolean,
  t text, vc varchar(10), c char(5), by bytea, d date, tm time, ttz timetz, ts timestamp, tstz timestamptz,
  iv interval, u uuid, j json, jb jsonb, ip inet, cd cidr, mac macaddr, m money, o oid, ch "char",
  arr int[], tarr text[], e mood, cp pair, bt bit(4), vb varbit, dom posint, r int4range, lsn pg_lsn,
  big text)"""

SCHEMA = f"""
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE pair AS (x int, y text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE typed {TYPED};
CREATE TABLE typed_full {TYPED};
ALTER TABLE typed_full REPLICA IDENTITY FULL;
CREATE TABLE full_nokey (a int, b text, j json);
ALTER TABLE full_nokey REPLICA IDENTITY FULL;
CREATE TABLE "Mixed Case" ("Id" int PRIMARY KEY, "Val" text, gen int GENERATED ALWAYS AS ("Id" * 2) STORED,
                           ident int GENERATED ALWAYS AS IDENTITY);
CREATE TABLE nothing_ident (id int PRIMARY KEY, v text);
ALTER TABLE nothing_ident REPLICA IDENTITY NOTHING;
CREATE TABLE trunc_me (id int PRIMARY KEY, v text);
INSERT INTO trunc_me SELECT g, 'x' || g FROM generate_series(1, 5) g;
INSERT INTO full_nokey SELECT g % 3, 'dup', '{{"k": 1}}' FROM generate_series(1, 6) g;
INSERT INTO "Mixed Case" ("Id", "Val") SELECT g, 'v' || g FROM generate_series(1, 5) g;
INSERT INTO nothing_ident SELECT g, 'n' || g FROM generate_series(1, 5) g;
"""

ROW = ("INSERT INTO {t} VALUES (%s, -2, 9000000000, 1.5, 0.1, 123.450, true, 'it''s \\ back', 'ab', 'x', "
       "'\\x00ff', '2024-02-29', '12:34:56.789', '12:00:00+05:30', '2000-01-01 00:00:00.5', "
       "'1999-12-31 21:59:59+00', '1 year 2 mons -3 days 04:05:06.5', "
       "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{{\"b\":1, \"a\": [1,2.50,\"x\"]}}', "
       "'{{\"a\": null, \"b\": 1}}', '192.168.0.1/24', '10.0.0.0/8', '08:00:2b:01:02:03', "
       "1234.5, 4294967295, 'q', '{{{{1,2}},{{3,NULL}}}}', '{{\"a b\",\"\",\"NULL\",NULL}}', 'ok', '(1,\"x y\")', "
       "B'1010', B'101', 7, '[1,10)', '16/B374D848', %s)")
SPECIAL = ("INSERT INTO {t} (id, f4, f8, n, d, ts, tstz, iv, arr, t) VALUES (%s, 'NaN', '-Infinity', 'NaN', "
           "'infinity', '-infinity', 'infinity', '-1 days +02:03:00', '[0:1]={{5,6}}', E'tab\\there $waldecode$')")
TABLES = ("typed", "typed_full", "full_nokey", '"Mixed Case"', "nothing_ident", "trunc_me")
DDL = [  # inside the range: the redo statements must create and alter as the history says
    "ALTER TABLE \"Mixed Case\" ADD COLUMN extra numeric(6,2)",
    "INSERT INTO \"Mixed Case\" (\"Id\", \"Val\", extra) VALUES (11, 'with extra', 1234.5)",
    "CREATE TABLE fresh (id int PRIMARY KEY, v varchar(20) NOT NULL, iv interval day to second(2), "
    "ts timestamptz(3), arr numeric(5,1)[], b bit(3))",
    "INSERT INTO fresh VALUES (1, 'new table', '1 day 02:03:04.567', '2024-01-01 10:00:00.1234+02', "
    "'{1.25,NULL}', B'101')",
    "ALTER TABLE nothing_ident RENAME COLUMN v TO w",
    "INSERT INTO nothing_ident VALUES (11, 'renamed column')",
    "ALTER TABLE trunc_me ALTER COLUMN v TYPE varchar(50)",
    "ALTER TABLE trunc_me RENAME TO trunc_renamed",
    "INSERT INTO trunc_renamed VALUES (101, 'renamed table')",
]


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_prepared_transactions=5, max_replication_slots=5) as c:
        yield c


def contents(cluster, db: str, tables=TABLES) -> dict:
    """Each table's rows as the server prints them, sorted."""
    with cluster.connect(db) as conn:
        conn.execute("SET extra_float_digits = 3")
        return {t: sorted(r[0] for r in conn.execute(f"SELECT x::text FROM {t} x").fetchall()) for t in tables}


def apply(cluster, db: str, script: str) -> list[str]:
    """Run a script on ``db`` as psql would (one simple-query batch); the server's warnings."""
    warnings: list[str] = []
    with cluster.connect(db) as conn:
        conn.add_notice_handler(lambda d: warnings.append(d.message_primary))
        conn.execute(script.encode("utf-8", "surrogateescape"), prepare=False)
    return warnings


def decode_sql(run: SlotRun, tmp_path, **options) -> tuple[str, SqlOutput]:
    lines: list[str] = []
    plugin = SqlOutput(lines.append)
    decode_wal([tmp_path / "wal"], run.catalog, plugin, plugin_options=options,
               start_lsn=parse_lsn(run.confirmed_lsn), end_lsn=run.result.end_lsn, two_phase=run.two_phase)
    return "\n".join(lines) + "\n", plugin


def test_redo_and_undo_round_trip(cluster, tmp_path):
    cluster.sql(f"CREATE DATABASE before TEMPLATE {DB}")
    before = contents(cluster, "before")
    run = SlotRun(cluster)
    with cluster.connect(DB) as conn:
        big = "toast " * 3000
        for t in ("typed", "typed_full"):
            conn.execute(ROW.format(t=t), (1, big))
            conn.execute(ROW.format(t=t), (2, None))
            conn.execute(SPECIAL.format(t=t), (3,))
            conn.execute(f"UPDATE {t} SET n = n * 2, t = 'upd' WHERE id = 1")  # TOAST value unchanged
            conn.execute(f"UPDATE {t} SET id = 20 WHERE id = 2")  # key change
            conn.execute(f"DELETE FROM {t} WHERE id = 3")
        conn.execute("BEGIN; UPDATE full_nokey SET b = 'one' WHERE a = 1 AND ctid = (SELECT min(ctid) FROM "
                     "full_nokey WHERE a = 1); SAVEPOINT s; DELETE FROM full_nokey WHERE a = 2; ROLLBACK TO s; "
                     "DELETE FROM full_nokey WHERE a = 0; COMMIT")
        conn.execute("INSERT INTO \"Mixed Case\" (\"Id\", \"Val\") VALUES (10, 'ten')")
        conn.execute("UPDATE \"Mixed Case\" SET \"Val\" = 'changed' WHERE \"Id\" = 1")
        conn.execute("BEGIN; DELETE FROM \"Mixed Case\" WHERE \"Id\" = 2; PREPARE TRANSACTION 'g1'")
        conn.execute("COMMIT PREPARED 'g1'")
        conn.execute("INSERT INTO nothing_ident VALUES (10, 'new')")
        conn.execute("TRUNCATE trunc_me")
        conn.execute("INSERT INTO trunc_me VALUES (100, 'after truncate')")
        for stmt in DDL:
            conn.execute(stmt)
    got, expected = run.finish(tmp_path)
    assert got == expected  # the engine decoded what the server did
    tables_after = tuple(t.replace("trunc_me", "trunc_renamed") for t in TABLES) + ("fresh",)
    after = contents(cluster, DB, tables_after)

    redo, plugin = decode_sql(run, tmp_path)
    assert plugin.problems == []
    assert "CREATE TABLE public.fresh" in redo and "ALTER TABLE public.trunc_me RENAME TO trunc_renamed" in redo
    assert apply(cluster, "before", redo) == []
    assert contents(cluster, "before", tables_after) == after  # every table as the original after the workload
    with cluster.connect(DB) as conn, cluster.connect("before") as copy:  # the columns' types too
        q = ("SELECT c.relname, a.attname, format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_class c "
             "ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND "
             "c.relkind = 'r' AND a.attnum > 0 AND NOT a.attisdropped AND c.relname IN ('fresh', 'Mixed Case', "
             "'nothing_ident', 'trunc_renamed') ORDER BY 1, 2")
        assert copy.execute(q).fetchall() == conn.execute(q).fetchall()

    undo, plugin = decode_sql(run, tmp_path, undo=None)
    # the TRUNCATE, and the changes of tables whose old rows the WAL lacks, are named, never guessed
    assert any("TRUNCATE of public.trunc_me" in p for p in plugin.problems)
    assert any("UPDATE of \"public\".\"Mixed Case\"" in p or 'UPDATE of public."Mixed Case"' in p
               for p in plugin.problems)
    assert all(not p.startswith(("cannot undo UPDATE of public.typed_full", "cannot undo DELETE of public.typed_full"))
               for p in plugin.problems)
    apply(cluster, DB, undo)
    now = contents(cluster, DB, ("typed_full", "full_nokey"))
    for t in ("typed_full", "full_nokey"):
        assert now[t] == before[t], t
    cluster.sql("DROP DATABASE before")


def test_guard_warns_instead_of_overwriting(cluster, tmp_path):
    with cluster.connect(DB) as conn:
        conn.execute("INSERT INTO typed_full (id, t, j) VALUES (50, 'original', '[1]')")
    cluster.sql(f"CREATE DATABASE target TEMPLATE {DB}")
    run = SlotRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("UPDATE typed_full SET t = 'from the WAL' WHERE id = 50")
        conn.execute("INSERT INTO \"Mixed Case\" (\"Id\", \"Val\") VALUES (500, 'new')")
    run.finish(tmp_path)
    with cluster.connect("target") as conn:  # newer data on the target: both changes conflict there
        conn.execute("UPDATE typed_full SET t = 'newer on the target' WHERE id = 50")
        conn.execute("INSERT INTO \"Mixed Case\" (\"Id\", \"Val\") VALUES (500, 'also newer')")
    redo, _ = decode_sql(run, tmp_path, conflict="guard")
    warnings = apply(cluster, "target", redo)
    assert len(warnings) == 2 and all(w.startswith("waldecode: conflict: ") for w in warnings), warnings
    with cluster.connect("target") as conn:
        assert conn.execute("SELECT t FROM typed_full WHERE id = 50").fetchone()[0] == "newer on the target"
        assert conn.execute("SELECT \"Val\" FROM \"Mixed Case\" WHERE \"Id\" = 500").fetchone()[0] == "also newer"
    # without a guard, the same script stops at the duplicate key
    plain, _ = decode_sql(run, tmp_path)
    import psycopg

    with pytest.raises(psycopg.errors.UniqueViolation):
        apply(cluster, "target", plain)
    cluster.sql("DROP DATABASE target")


def test_format_type_with_typmod_is_the_servers(cluster):
    """relcache.format_type_typmod against format_type(oid, typmod) for the built-in typmods."""
    from waldecode.catalog.relcache import format_type_typmod

    with cluster.connect(DB) as conn:
        conn.execute("CREATE TABLE typmods (a varchar(10), b char(5), c numeric(12,2), d numeric(5), e numeric(4,-2), "
                     "f time(3), g timetz(2), h timestamp(0), i timestamptz(6), j interval year to month, "
                     "k interval day to second(3), l interval(2), m interval minute, n bit(4), o varbit(7), "
                     "p varchar(3)[], q numeric(4,1)[], r timestamptz(1)[], s int, t text, u varchar, v bpchar)")
        rows = conn.execute(
            "SELECT a.attname, format_type(a.atttypid, NULL), a.atttypid::int8, t.typelem::int8, a.atttypmod, "
            "format_type(a.atttypid, a.atttypmod) FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
            "WHERE a.attrelid = 'typmods'::regclass AND a.attnum > 0").fetchall()
        conn.execute("DROP TABLE typmods")
    assert len(rows) == 22
    for name, plain, oid, elem, typmod, want in rows:
        assert format_type_typmod(plain, oid, elem if plain.endswith("[]") else 0, typmod) == want, name
