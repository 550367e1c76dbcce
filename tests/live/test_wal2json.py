"""--format wal2json against Debian's wal2json 2.5 on a live PostgreSQL 15: the same bytes.

One workload (many types, TOAST, every replica identity, 2PC, messages, truncate, partitions, an
origin, DDL inside the range) goes through a wal2json slot; for each option set the server's
messages (``pg_logical_slot_peek_changes``, each followed by a newline as ``pg_recvlogical -f``
writes it) are compared with waldecode's, byte for byte.  ``pg_recvlogical -f -`` itself is run
for some option sets against ``waldecode decode --format wal2json``; bad options must fail with
the server's own message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from waldecode.catalog.dsn import snapshot_from_connection
from waldecode.errors import OutputPluginError
from waldecode.logical.session import decode_wal
from waldecode.output.wal2json import Wal2Json
from waldecode.wal.xlogreader import parse_lsn
from live import DB, live_cluster

pytestmark = pytest.mark.skipif(not Path("/usr/lib/postgresql/15/lib/wal2json.so").exists(),
                                reason="wal2json for PostgreSQL 15 is not installed (./dev test installs it)")

SCHEMA = r"""
CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
CREATE DOMAIN short_text AS varchar(10);
CREATE DOMAIN "Odd Domain" AS numeric(6,2);
CREATE SCHEMA "My Schema";
CREATE TYPE "My Schema"."Color" AS ENUM ('red', 'green');
CREATE TABLE types (
    id serial PRIMARY KEY, i2 smallint, i4 integer NOT NULL DEFAULT 7, i8 bigint, n numeric(10,2), n2 numeric,
    f4 real, f8 double precision, b boolean, t text DEFAULT 'x''y', vc varchar(20), c char(3), bp bpchar,
    bi bit(4), vb varbit(8), by bytea, ts timestamp(3), tstz timestamptz DEFAULT now(), d date, tm time(2),
    tmtz timetz, iv interval day to second(2), iv2 interval, iv3 interval(3), u uuid, j json, jb jsonb, arr int[],
    tarr text[], vcarr varchar(5)[], m mood, dom posint, sdom short_text, odd "Odd Domain", ip inet,
    "Quoted Col" text, mon money, pt point, r int4range, o oid, col "My Schema"."Color", cols "My Schema"."Color"[],
    gen integer GENERATED ALWAYS AS (i4 * 2) STORED, iv4 interval year to month, n3 numeric(5,-2),
    tz0 timestamptz(0), ttz1 time(1) with time zone, "Select" varchar, qb "bit", qbs "bit"[]
);
CREATE TABLE ri_default (id int PRIMARY KEY, v text, big text);
CREATE TABLE ri_nopk (id int, v text);
CREATE TABLE ri_full (id int PRIMARY KEY, v text, big text);
ALTER TABLE ri_full REPLICA IDENTITY FULL;
CREATE TABLE ri_nothing (id int PRIMARY KEY, v text);
ALTER TABLE ri_nothing REPLICA IDENTITY NOTHING;
CREATE TABLE ri_index (id int PRIMARY KEY, k int NOT NULL, v text);
CREATE UNIQUE INDEX ri_index_k ON ri_index (k);
ALTER TABLE ri_index REPLICA IDENTITY USING INDEX ri_index_k;
CREATE TABLE "My Schema"."Tab.le" ("Id" int PRIMARY KEY, "v""q" text);
CREATE TABLE parted (id int, region text, v text, PRIMARY KEY (id, region)) PARTITION BY LIST (region);
CREATE TABLE parted_eu PARTITION OF parted FOR VALUES IN ('eu');
CREATE TABLE parted_us PARTITION OF parted FOR VALUES IN ('us');
SELECT pg_replication_origin_create('upstream');
"""

BIG = "(SELECT string_agg(md5(i::text), '') FROM generate_series(1, 200) i)"

WORKLOAD = [
    # many types, NULLs, special values
    r"""INSERT INTO types (i2, i8, n, n2, f4, f8, b, t, vc, c, bp, bi, vb, by, ts, tstz, d, tm, tmtz, iv, iv2, iv3, u,
        j, jb, arr, tarr, vcarr, m, dom, sdom, odd, ip, "Quoted Col", mon, pt, r, o, col, cols) VALUES
        (-32768, 9223372036854775807, 12345678.91, 'NaN', 1.5e-7, 'Infinity', true,
         E'tab\there "quoted" back\\slash \u00e9 \x01 newline\n', 'varchar', 'ab', 'bpc', B'1010', B'101',
         '\xdeadbeef', '2024-02-29 12:34:56.789', '2024-02-29 12:34:56.789+05:30', '2024-02-29', '12:34:56.78',
         '12:34:56+02', '1 day 02:03:04.5', '1 year 2 mons -3 days', '00:00:01.2345', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11',
         '{"a": [1, "x\"y"]}', '{"b": {"c": null}, "a": 1.50}', '{1,NULL,3}', '{"a b","c,d",NULL}', '{ab,cd}',
         'happy', 42, 'short', 1234.5, '192.168.0.1/24', 'Q', '12.34', '(1.5,-2)', '[1,10)', 4294967295,
         'red', '{red,green}')""",
    "INSERT INTO types (f8, n2, f4, iv4, n3, tz0, ttz1, \"Select\", qb, qbs) VALUES ('-Infinity', '-Infinity', 'NaN', "
    "'1 year 2 months', 12345, '2020-01-01 00:00:00.6+00', '01:02:03.45+01', 'kw', B'101', '{1,01}')",
    "INSERT INTO types DEFAULT VALUES",
    "UPDATE types SET t = 'updated', b = false WHERE id = 2",
    "DELETE FROM types WHERE id = 3",
    # replica identities, TOAST
    f"INSERT INTO ri_default VALUES (1, 'one', {BIG}), (2, 'two', NULL)",
    "UPDATE ri_default SET v = 'one again' WHERE id = 1",  # big is unchanged TOAST
    "UPDATE ri_default SET id = 10 WHERE id = 2",  # the key changes: old key logged
    "DELETE FROM ri_default WHERE id = 10",
    "INSERT INTO ri_nopk VALUES (1, 'a')", "UPDATE ri_nopk SET v = 'b'", "DELETE FROM ri_nopk",
    f"INSERT INTO ri_full VALUES (1, 'f', {BIG})",
    "UPDATE ri_full SET v = 'g' WHERE id = 1",
    "DELETE FROM ri_full WHERE id = 1",
    "INSERT INTO ri_nothing VALUES (1, 'n')", "UPDATE ri_nothing SET v = 'm'", "DELETE FROM ri_nothing",
    "INSERT INTO ri_index VALUES (1, 100, 'i')", "UPDATE ri_index SET v = 'j'", "UPDATE ri_index SET k = 101",
    "DELETE FROM ri_index",
    """INSERT INTO "My Schema"."Tab.le" VALUES (1, 'odd "names"')""",
    """UPDATE "My Schema"."Tab.le" SET "v""q" = NULL""",
    # partitions
    "INSERT INTO parted VALUES (1, 'eu', 'a'), (2, 'us', 'b')",
    "UPDATE parted SET v = 'c' WHERE id = 1",
    "UPDATE parted SET region = 'us' WHERE id = 1",  # moves: a delete and an insert
    # messages: transactional, non-transactional, with a NUL byte
    "BEGIN; SELECT pg_logical_emit_message(true, 'pfx', E'trans \"msg\"\\n'); "
    "INSERT INTO ri_default VALUES (3, 'with message', NULL); "
    "SELECT pg_logical_emit_message(true, 'other', 'second'); COMMIT",
    "SELECT pg_logical_emit_message(false, 'pfx', 'non-transactional')",
    "SELECT pg_logical_emit_message(true, 'bin', '\\x61006263'::bytea)",
    "SELECT pg_logical_emit_message(false, 'bin', '\\xff0a221b5cc328'::bytea)",  # not UTF-8, control bytes
    "SELECT pg_logical_emit_message(true, '', E'empty prefix \\u00fc')",
    "BEGIN; SELECT pg_logical_emit_message(false, 'other', 'inside an open transaction'); "
    "INSERT INTO ri_default VALUES (4, 'after', NULL); INSERT INTO ri_default VALUES (5, 'x', NULL); COMMIT",
    "SELECT pg_logical_emit_message(false, 'pfx', 'after a transaction of two changes')",
    # two-phase commit
    "BEGIN; INSERT INTO ri_default VALUES (20, 'prepared', NULL); PREPARE TRANSACTION 'g1'",
    "COMMIT PREPARED 'g1'",
    "BEGIN; INSERT INTO ri_default VALUES (21, 'rolled back', NULL); PREPARE TRANSACTION 'g2'",
    "ROLLBACK PREPARED 'g2'",
    # a replication origin
    "SELECT pg_replication_origin_session_setup('upstream'); "
    "BEGIN; SELECT pg_replication_origin_xact_setup('0/AB', now()); "
    "INSERT INTO ri_default VALUES (30, 'from upstream', NULL); COMMIT; "
    "SELECT pg_replication_origin_session_reset()",
    # truncate
    "TRUNCATE ri_full, ri_nothing",
    "TRUNCATE parted RESTART IDENTITY CASCADE",
    # DDL inside the range
    "ALTER TABLE ri_default ADD COLUMN extra int",
    "INSERT INTO ri_default VALUES (40, 'extra', NULL, 7)",
    "ALTER TABLE ri_default RENAME COLUMN v TO vv",
    "UPDATE ri_default SET vv = 'renamed' WHERE id = 40",
    "CREATE TABLE made_here (id int PRIMARY KEY, n numeric(5,1) NOT NULL, tags varchar(3)[])",
    "INSERT INTO made_here VALUES (1, 2.5, '{a,b}')",
    "ALTER TABLE made_here DROP COLUMN tags",
    "INSERT INTO made_here VALUES (2, 3.5)",
    # types made and changed inside the range
    "CREATE TYPE later_mood AS ENUM ('x', 'y'); CREATE DOMAIN later_dom AS numeric(4,1); "
    "CREATE TABLE uses_later (id int PRIMARY KEY, m later_mood, ms later_mood[], d later_dom)",
    "INSERT INTO uses_later VALUES (1, 'y', '{x,y}', 12.34)",
    "ALTER TYPE mood ADD VALUE 'ecstatic'",
    "INSERT INTO types (m) VALUES ('ecstatic')",
    "BEGIN; INSERT INTO types (i4) VALUES (1); INSERT INTO types (i4) VALUES (2); UPDATE types SET i4 = 3 "
    "WHERE i4 = 2; COMMIT",
]

# Option sets: every option at least once, both format versions, pretty-print and write-in-chunks
OPTION_SETS = [
    {},
    {"format-version": "2"},
    {"include-xids": "1", "include-timestamp": "on", "include-lsn": "true", "include-origin": "1",
     "include-type-oids": "1", "include-column-positions": "1", "include-not-null": "1", "include-default": "1",
     "include-pk": "1", "pretty-print": "1"},
    {"write-in-chunks": "1", "include-pk": "1", "include-typmod": "off", "include-domain-data-type": "1",
     "include-type-oids": "yes"},
    {"pretty-print": "1", "write-in-chunks": "1", "include-schemas": "0", "include-types": "false",
     "include-xids": "1", "include-not-null": "1"},
    {"include-domain-data-type": "1", "include-typmod": "1", "include-pk": "1", "pretty-print": "1"},
    {"format-version": "2", "include-xids": "1", "include-timestamp": "1", "include-lsn": "1", "include-origin": "1",
     "include-type-oids": "1", "include-column-positions": "1", "include-not-null": "1", "include-default": "1",
     "include-pk": "1"},
    {"format-version": "2", "include-transaction": "off", "include-domain-data-type": "1", "actions": "insert,truncate",
     "pretty-print": "1", "write-in-chunks": "1"},
    {"format-version": "2", "include-types": "0", "include-schemas": "0", "actions": " update , delete ",
     "filter-tables": r"*.ri_full, My\ Schema.Tab\.le", "add-msg-prefixes": "pfx,bin", "filter-origins": "1"},
    {"format-version": "2", "add-tables": r"public.*,My\ Schema.Tab\.le", "filter-tables": "public.types",
     "filter-msg-prefixes": "pfx", "include-xids": "1", "include-timestamp": "1", "include-origin": "1"},
    {"add-tables": "*.ri_default,public.parted_us", "filter-msg-prefixes": "other", "include-lsn": "1",
     "filter-origins": "3, 1", "actions": "update"},
    {"format-version": "1", "include-typmod": "0", "include-type-oids": "1", "include-not-null": "1",
     "include-default": "1", "include-column-positions": "1"},
]

# Options wal2json refuses (numeric-data-types-as-string is 2.6's: unknown to the 2.5 Debian installs)
BAD_OPTIONS = [
    {"no-such-option": "1"},
    {"numeric-data-types-as-string": "1"},
    {"include-xids": "maybe"},
    {"pretty-print": ""},
    {"format-version": "3"},
    {"format-version": "0"},
    {"format-version": "two"},
    {"include-unchanged-toast": "1"},
    {"actions": "insert,upsert"},
    {"actions": "insert,,update"},
    {"filter-tables": "no_schema"},
    {"add-tables": "a.b c.d"},
    {"filter-msg-prefixes": "a b"},
    {"filter-origins": "1 2"},
]


def _record(c, tmp: Path, statements, slots) -> dict:
    """``statements`` (SQL, or callables) between a catalog snapshot and a checkpoint, with a wal2json slot of each name in
    ``slots`` (the first for peeking, one per pg_recvlogical run); the WAL copied as an archive holds it."""
    with c.connect(DB) as conn:
        catalog = snapshot_from_connection(conn)
        conn.execute("CHECKPOINT")
        for s in slots:
            conn.execute("SELECT pg_create_logical_replication_slot(%s, 'wal2json')", (s,))
        restart, confirmed = conn.execute(
            "SELECT restart_lsn::text, confirmed_flush_lsn::text FROM pg_replication_slots "
            "WHERE slot_name = %s", (slots[0],)).fetchone()
        for statement in statements:
            if callable(statement):
                statement()
            else:
                conn.execute(statement)
        conn.execute("CHECKPOINT")
        end_lsn = conn.execute("SELECT pg_current_wal_insert_lsn()::text").fetchone()[0]
        first = conn.execute("SELECT pg_walfile_name(%s::pg_lsn)", (restart,)).fetchone()[0]
    tmp.mkdir()
    wal = c.archive_wal(tmp / "wal", first)
    return {"cluster": c, "catalog": catalog, "confirmed": confirmed, "end_lsn": end_lsn, "wal": wal,
            "tmp": tmp, "peek_slot": slots[0], "recv_slots": slots[1:]}


@pytest.fixture(scope="module")
def cluster():
    with live_cluster(SCHEMA, max_prepared_transactions=5) as c:
        yield c


@pytest.fixture(scope="module")
def run(cluster, tmp_path_factory):
    return _record(cluster, tmp_path_factory.mktemp("wal2json") / "main", WORKLOAD,
                   ["w2j_peek", "w2j_recv_1", "w2j_recv_2", "w2j_recv_3"])


def _peek(run, options: dict) -> bytes:
    """The server's messages for ``options``, each followed by a newline (what pg_recvlogical -f writes)."""
    args = [x for kv in options.items() for x in kv]
    with run["cluster"].connect(DB) as conn:
        rows = conn.execute("SELECT data FROM pg_logical_slot_peek_binary_changes(%s, %s::pg_lsn, NULL"
                            + ", %s" * len(args) + ")", (run["peek_slot"], run["end_lsn"], *args)).fetchall()
    return b"".join(bytes(r[0]) + b"\n" for r in rows)


def _decode(run, options: dict) -> bytes:
    messages: list[str] = []
    spill = run["tmp"] / "spill"
    spill.mkdir(exist_ok=True)
    result = decode_wal([run["wal"]], run["catalog"], Wal2Json(messages.append), plugin_options=options,
                        start_lsn=parse_lsn(run["confirmed"]), end_lsn=parse_lsn(run["end_lsn"]),
                        spill_dir=str(spill))
    assert result.not_decoded == []
    return b"".join(m.encode("utf-8", "surrogateescape") + b"\n" for m in messages)


def _same(got: bytes, expected: bytes) -> None:
    """Byte equality, failing with the first line that differs and where in it."""
    if got == expected:
        return
    g, e = got.split(b"\n"), expected.split(b"\n")
    for i, (a, b) in enumerate(zip(g, e)):
        if a != b:
            at = next((j for j, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
            pytest.fail(f"line {i + 1} differs at byte {at}:\n ours:   {a[max(0, at - 80):at + 80]!r}\n"
                        f" server: {b[max(0, at - 80):at + 80]!r}")
    pytest.fail(f"{len(g)} lines, the server wrote {len(e)}")


@pytest.mark.parametrize("options", OPTION_SETS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()) or "defaults")
def test_peek_equals_server(run, options):
    expected = _peek(run, options)
    got = _decode(run, options)
    _same(got, expected)


@pytest.mark.parametrize("options", BAD_OPTIONS, ids=lambda o: ",".join(f"{k}={v}" for k, v in o.items()))
def test_bad_options_fail_as_the_server_fails(run, options):
    import psycopg

    args = [x for kv in options.items() for x in kv]
    with run["cluster"].connect(DB) as conn:
        with pytest.raises(psycopg.Error) as server:
            conn.execute("SELECT count(*) FROM pg_logical_slot_peek_changes(%s, NULL, 1"
                         + ", %s" * len(args) + ")", (run["peek_slot"], *args))
    with pytest.raises(OutputPluginError) as ours:
        _decode(run, options)
    assert str(ours.value) == server.value.diag.message_primary


RECV_OPTIONS = [
    # bare options (-o name) as only pg_recvlogical passes them: NULL values
    {"pretty-print": None, "write-in-chunks": "1", "include-xids": None, "include-default": "1", "include-pk": "1"},
    {"format-version": "2", "include-timestamp": "1", "include-lsn": "1", "include-default": "1"},
    {"include-timestamp": "1", "include-types": "1"},
]


@pytest.mark.parametrize("n", range(len(RECV_OPTIONS)))
def test_pg_recvlogical_equals_waldecode_decode(run, n):
    """pg_recvlogical -f - (a replication connection: empty search_path) against the CLI with --set
    search_path= ."""
    c = run["cluster"]
    options = RECV_OPTIONS[n]
    opt_args = [a for k, v in options.items() for a in ("-o", k if v is None else f"{k}={v}")]
    server = c.run_bin("pg_recvlogical", "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres", "-d", DB,
                       "-S", run["recv_slots"][n], "--start", "--no-loop", "-E", run["end_lsn"], "-f", "-",
                       *opt_args, text=False).stdout
    catalog_file = run["tmp"] / "catalog.json"
    catalog_file.write_text(run["catalog"].to_json())
    ours = subprocess.run([sys.executable, "-m", "waldecode.cli", "decode", "--quiet", "--format", "wal2json",
                           "--catalog", str(catalog_file), "--start-lsn", run["confirmed"], "--end-lsn",
                           run["end_lsn"], "--set", "search_path=", *opt_args, str(run["wal"])],
                          capture_output=True)
    assert ours.returncode == 0, ours.stderr.decode()
    assert server.count(b"\n") > 20
    _same(ours.stdout, server)


def test_default_set_inside_the_range_is_refused_not_guessed(run, tmp_path):
    """pg_attrdef's expression is not followed through the WAL: a default set inside the range makes
    include-default fail with a clear error, while the output without it still equals the server's."""
    later = _record(run["cluster"], tmp_path / "later", [
        "ALTER TABLE made_here ALTER COLUMN n SET DEFAULT 1.5",
        "INSERT INTO made_here (id) VALUES (3)",
    ], ["w2j_later"])
    for options in ({}, {"format-version": "2", "include-not-null": "1"}):
        _same(_decode(later, options), _peek(later, options))
    with pytest.raises(OutputPluginError, match=r"default of column n of table public.made_here is not known"):
        _decode(later, {"include-default": "1"})
    # what the server prints there, which waldecode cannot know from the WAL
    assert b'"columndefaults":[null,"1.5"]' in _peek(later, {"include-default": "1"})


def test_bare_unknown_option_fails_as_pg_recvlogical_reports(run):
    """-o name without a value reaches the plugin as NULL (only a replication connection can send it)."""
    c = run["cluster"]
    server = c.run_bin("pg_recvlogical", "-h", c.socket_dir, "-p", str(c.port), "-U", "postgres", "-d", DB,
                       "-S", run["peek_slot"], "--start", "--no-loop", "-E", run["end_lsn"], "-f", "-",
                       "-o", "no-such-option", check=False)
    assert server.returncode != 0
    with pytest.raises(OutputPluginError) as ours:
        _decode(run, {"no-such-option": None})
    assert str(ours.value) == 'option "no-such-option" = "(null)" is unknown'
    assert f"ERROR:  {ours.value}" in server.stderr


def test_uncommitted_transaction_is_refused(run, tmp_path):
    """A transaction still open at the end of the WAL read has no wal2json form: an error, not a commit."""
    c = run["cluster"]
    with c.connect(DB) as other:
        later = _record(c, tmp_path / "open", [
            lambda: other.execute("BEGIN"),
            lambda: other.execute("INSERT INTO ri_nopk VALUES (99, 'still open')"),
            "INSERT INTO ri_nopk VALUES (100, 'committed')",
        ], ["w2j_open"])
        other.execute("ROLLBACK")
    spill = tmp_path / "spill"
    spill.mkdir()
    for options in ({}, {"format-version": "2"}):
        with pytest.raises(OutputPluginError, match=r"has no commit in the WAL read"):
            decode_wal([later["wal"]], later["catalog"], Wal2Json(lambda m: None), plugin_options=options,
                       start_lsn=parse_lsn(later["confirmed"]), end_lsn=parse_lsn(later["end_lsn"]),
                       spill_dir=str(spill), include_uncommitted=True)
        _same(_decode(later, options), _peek(later, options))
