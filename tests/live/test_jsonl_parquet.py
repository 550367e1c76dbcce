"""JSON lines and Parquet against a live PostgreSQL 15: every value read back is the server's own text.

A throw-away server runs a workload covering every type the project supports
(``type_values.TYPE_COLUMNS`` plus the typed-Parquet edges: numeric(p,s) wide and narrow, NaN
in a numeric(p,s), dates and timestamps beyond Arrow's range), TOAST (new, unchanged, old
tuples of REPLICA IDENTITY FULL), every replica identity, two-phase commit (decoded at COMMIT
PREPARED and at PREPARE), messages (transactional or not, not UTF-8), TRUNCATE and DDL inside
the range (ADD COLUMN with a default, ALTER TYPE, DROP COLUMN, RENAME).  Its test_decoding slot
is peeked; ``waldecode decode --format jsonl`` and ``--parquet`` decode a copy of the WAL.

* every JSON object corresponds to a test_decoding line, in order, and says what the line says:
  operation, xid, commit time, table, columns (name, type, the server's text, NULL,
  unchanged TOAST), old key/row, GIDs, messages, truncated tables;
* every Parquet row is the JSON row, and every typed Parquet value, rendered by the server
  (``format('%s', <the value as a literal of the column's type>)``), is the server's text.
"""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path
from urllib.parse import unquote

import pytest

from live import DB, SlotRun, live_cluster
from td_rows import check_jsonl
from type_values import TYPE_COLUMNS, TYPE_SETUP_SQL
from waldecode import cli
from waldecode.catalog import DEFAULT_SETTINGS

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

pytestmark = [pytest.mark.server]

# Columns whose Parquet form the typed path must reach (name, Arrow type text)
EXTRA_COLUMNS = [
    ("c_numeric_w", "numeric(50,10)", ["'12345678901234567890123456789012345678.1234567890'", "'-0.0000000001'",
                                       "0"]),
    ("c_numeric_0", "numeric(5,0)", ["99999", "-1", "0"]),
    ("c_numeric_nan", "numeric(10,2)", ["'NaN'", "12.5", "-0.01"]),
    ("c_numeric_dom", "money_dom", ["1.25", "0", "-3.5"]),
    ("c_date_bc", "date", ["'4713-01-01 BC'", "'1970-01-01'", "'9999-12-31'"]),
    ("c_ts_far", "timestamp", ["'294276-12-31 23:59:59.999999'", "'1999-12-31 23:59:59.999999'",
                               "'1066-10-14 09:00:00 BC'"]),
    ("c_tstz_dst", "timestamptz", ["'2024-03-31 02:30:00+01'", "'1900-01-01 00:00:00+00'", "'0001-01-01 00:00:00+00'"]),
    ("c_float8_neg0", "double precision", ["'-0'", "1e308", "'-Infinity'"]),
]
TYPED = {"c_int2": "int16", "c_int4": "int32", "c_int8": "int64", "c_float4": "float", "c_float8": "double",
         "c_numeric_s": "decimal128(12, 4)", "c_numeric_w": "decimal256(50, 10)", "c_numeric_0": "decimal128(5, 0)",
         "c_bool": "bool", "c_bytea": "binary", "c_date": "date32[day]", "c_ts": "timestamp[us]",
         "c_tstz": "timestamp[us, tz=UTC]", "c_uuid": "extension<arrow.uuid>", "c_json": "string",
         "c_jsonb": "string", "c_numeric": "string", "c_domain": "int32", "c_numeric_dom": "string",
         "c_interval": "string", "c_text": "string"}


def _schema(xml: bool) -> str:
    cols = [c for c in TYPE_COLUMNS + EXTRA_COLUMNS if c[1] != "xml" or xml]
    return ";\n".join(TYPE_SETUP_SQL + [
        "CREATE DOMAIN money_dom AS numeric(10,2)",
        "CREATE TABLE ty_all (id int PRIMARY KEY, " + ", ".join(f"{n} {t}" for n, t, _ in cols) + ")",
        "ALTER TABLE ty_all REPLICA IDENTITY FULL",
        "CREATE TABLE acct (id int PRIMARY KEY, owner text, balance numeric(12,2))",
        "CREATE TABLE full_ident (id int, a text, b int)",
        "ALTER TABLE full_ident REPLICA IDENTITY FULL",
        "CREATE TABLE no_key (a int, b text)",
        "CREATE TABLE nothing_ident (id int PRIMARY KEY, v text)",
        "ALTER TABLE nothing_ident REPLICA IDENTITY NOTHING",
        "CREATE TABLE idx_ident (id int NOT NULL, code text NOT NULL, v text)",
        "CREATE UNIQUE INDEX idx_ident_code ON idx_ident (code)",
        "ALTER TABLE idx_ident REPLICA IDENTITY USING INDEX idx_ident_code",
        "CREATE TABLE big (id int PRIMARY KEY, v text, w text, b bytea)",
        "ALTER TABLE big ALTER COLUMN w SET COMPRESSION lz4",
        "CREATE TABLE big_full (id int, v text, note text)",
        "ALTER TABLE big_full REPLICA IDENTITY FULL",
        "CREATE TABLE trunc_a (id serial PRIMARY KEY, v text)",
        "CREATE TABLE trunc_b (id int REFERENCES trunc_a, v text)",
        "INSERT INTO full_ident SELECT g, 'a' || g, g FROM generate_series(1, 10) g",
        "INSERT INTO no_key SELECT g, 'b' || g FROM generate_series(1, 10) g",
        "INSERT INTO nothing_ident SELECT g, 'n' || g FROM generate_series(1, 10) g",
        "INSERT INTO idx_ident SELECT g, 'code' || g, 'v' || g FROM generate_series(1, 10) g",
        "INSERT INTO big_full VALUES (1, (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 300) g), 'x')",
        "INSERT INTO trunc_a (v) VALUES ('x'), ('y')",
        "INSERT INTO trunc_b VALUES (1, 'ref')",
    ]) + ";"


@pytest.fixture(scope="module")
def cluster():
    from waldecode.testing.cluster import Cluster, ClusterError

    # xml columns only where the server was built with libxml
    try:
        with Cluster(15) as probe:
            try:
                probe.sql("SELECT '<a/>'::xml")
                xml = True
            except Exception:
                xml = False
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    with live_cluster(_schema(xml), max_prepared_transactions=10, max_replication_slots=10) as c:
        c.xml = xml
        yield c


def _workload(conn, tag: int, xml: bool) -> None:
    cols = [c for c in TYPE_COLUMNS + EXTRA_COLUMNS if c[1] != "xml" or xml]
    names = ", ".join(n for n, _, _ in cols)
    base = 100 * tag
    for row in range(3):
        conn.execute(f"INSERT INTO ty_all (id, {names}) VALUES ({base + row + 1}, "
                     + ", ".join(v[row] for _, _, v in cols) + ")")
    conn.execute(f"INSERT INTO ty_all (id) VALUES ({base + 4})")
    conn.execute(f"UPDATE ty_all SET c_text = 'updated' WHERE id = {base + 1}")
    conn.execute(f"UPDATE ty_all SET c_int4 = NULL, c_jsonb = '{{\"k\": [1, 2]}}' WHERE id = {base + 2}")
    conn.execute(f"DELETE FROM ty_all WHERE id = {base + 3}")
    # two-phase commit: committed, rolled back
    conn.execute(f"BEGIN; INSERT INTO acct VALUES ({base + 1}, 'prep', 1.5); PREPARE TRANSACTION 'g''1 {tag}'")
    conn.execute(f"COMMIT PREPARED 'g''1 {tag}'")
    conn.execute(f"BEGIN; UPDATE acct SET owner = 'rolled back' WHERE id = {base + 1}; "
                 f"PREPARE TRANSACTION 'g2 {tag}'")
    conn.execute(f"ROLLBACK PREPARED 'g2 {tag}'")
    # TOAST: new out-of-line values (pglz, lz4), an update leaving them unchanged, a key change, old rows
    conn.execute("INSERT INTO big VALUES (%s, %s, %s, %s)",
                 (base + 10, "v" * 3000, "lz4 " * 4000, bytes(range(256)) * 40))
    conn.execute(f"UPDATE big SET v = 'changed' WHERE id = {base + 10}")
    conn.execute(f"UPDATE big SET id = id + 1 WHERE id = {base + 10}")
    conn.execute(f"DELETE FROM big WHERE id = {base + 11}")
    conn.execute("UPDATE big_full SET note = %s", (f"note {tag}",))
    # replica identities
    conn.execute(f"UPDATE full_ident SET b = b + 100 WHERE id = 1; DELETE FROM full_ident WHERE id = {tag + 2}")
    conn.execute(f"UPDATE no_key SET b = 'y' WHERE a = 1; DELETE FROM no_key WHERE a = {tag + 2}")
    conn.execute(f"UPDATE nothing_ident SET v = 'z' WHERE id = 1; DELETE FROM nothing_ident WHERE id = {tag + 2}")
    conn.execute(f"UPDATE idx_ident SET code = 'renamed{tag}' || id WHERE id = 3; "
                 f"DELETE FROM idx_ident WHERE id = {tag + 5}")
    # messages
    conn.execute("SELECT pg_logical_emit_message(false, 'nontx', 'now')")
    conn.execute("BEGIN; SELECT pg_logical_emit_message(true, 'tx', '\\x00ff01'::bytea); COMMIT")
    # DDL inside the range: a table created, columns added (with a default: old rows carry no value),
    # retyped, dropped, the table renamed
    conn.execute(f"CREATE TABLE ddl_{tag} (id int PRIMARY KEY, a text, b int)")
    conn.execute(f"INSERT INTO ddl_{tag} VALUES (1, 'one', 10), (2, 'two', 20)")
    conn.execute(f"ALTER TABLE ddl_{tag} ADD COLUMN c numeric(6,2) DEFAULT 1.25, "
                 f"ADD COLUMN d timestamptz DEFAULT '2020-02-02 02:02:02+00'")
    conn.execute(f"UPDATE ddl_{tag} SET a = 'one, after add column' WHERE id = 1")
    conn.execute(f"ALTER TABLE ddl_{tag} ALTER COLUMN b TYPE bigint")
    conn.execute(f"INSERT INTO ddl_{tag} VALUES (3, 'three', 9000000000, 2.5)")
    conn.execute(f"ALTER TABLE ddl_{tag} DROP COLUMN a")
    conn.execute(f"ALTER TABLE ddl_{tag} RENAME TO ddl_{tag}_renamed")
    conn.execute(f"UPDATE ddl_{tag}_renamed SET b = -1 WHERE id = 2")
    # TRUNCATE last
    conn.execute("TRUNCATE trunc_a, trunc_b RESTART IDENTITY")
    conn.execute("TRUNCATE no_key")


# -- Parquet against JSON lines ----------------------------------------------------------------------

class ServerText:
    """The server's output text of a typed Parquet value: ``format('%s', <value as a literal>)`` in a
    session with the catalog snapshot's settings."""

    def __init__(self, conn, settings: dict):
        self.conn = conn
        merged = dict(DEFAULT_SETTINGS)
        merged.update(settings)
        for k in ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output", "lc_monetary"):
            conn.execute("SELECT set_config(%s, %s, false)", (k, str(merged[k])))
        self.checked = 0

    def _one(self, sql: str, *params) -> str:
        self.checked += 1
        return self.conn.execute(sql, params).fetchone()[0]

    @staticmethod
    def _micros(expr_base: str, us: int) -> tuple[str, tuple]:
        # hours and microseconds only: no calendar (day/DST) arithmetic, and exact integers
        hours, rest = divmod(us, 3_600_000_000)
        h1 = hours // 2
        return (f"{expr_base} + make_interval(hours => %s) + make_interval(hours => %s) "
                "+ %s * interval '1 microsecond'", (h1, hours - h1, rest))

    def text(self, typ, value, pg_type: str) -> str:
        if pa.types.is_string(typ):
            return value
        if pa.types.is_integer(typ):
            return self._one("SELECT format('%%s', %s::bigint)", value)
        if pa.types.is_floating(typ):
            cast = "float4" if typ == pa.float32() else "float8"
            return self._one(f"SELECT format('%%s', %s::text::{cast})", repr(value))
        if pa.types.is_boolean(typ):
            return self._one("SELECT format('%%s', %s::bool)", value)
        if pa.types.is_decimal(typ):
            return self._one(f"SELECT format('%%s', %s::numeric({typ.precision},{typ.scale}))", format(value, "f"))
        if pa.types.is_date32(typ):
            return self._one("SELECT format('%%s', '1970-01-01'::date + %s::int)", value)
        if pa.types.is_timestamp(typ):
            base = "'epoch'::timestamptz" if typ.tz else "'epoch'::timestamp"
            expr, params = self._micros(base, value)
            return self._one(f"SELECT format('%%s', {expr})", *params)
        if str(typ) == "extension<arrow.uuid>":
            return self._one("SELECT format('%%s', %s::uuid)", str(uuid.UUID(bytes=value)))
        if pa.types.is_binary(typ):
            return self._one("SELECT format('%%s', %s::bytea)", value)
        raise AssertionError(f"no rendering for {typ} ({pg_type})")


def _plain(arr) -> list:
    """Python values of an Arrow array without pyarrow's datetime conversions (which stop at year 9999):
    dates as days, timestamps as microseconds since 1970, UUIDs as their 16 bytes."""
    typ = arr.type
    if pa.types.is_date32(typ):
        arr = arr.cast(pa.int32())
    elif pa.types.is_timestamp(typ):
        arr = arr.cast(pa.int64())
    elif isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    return arr.to_pylist()


def read_changes(directory: Path) -> tuple[dict, dict]:
    """{(schema, table, commit_lsn, lsn, op): [row...]} from every file of DIR/changes, a row being
    {"new": {name: value} | None, "old": ..., "new_text", "old_text", "unchanged_toast", ...}, and
    {(schema, table): [Arrow schema of each file]}."""
    rows: dict = {}
    schemas: dict = {}
    for f in sorted((directory / "changes").rglob("*.parquet")):
        schema = unquote(f.parent.parent.name.split("=", 1)[1])
        table = unquote(f.parent.name.split("=", 1)[1])
        t = pq.read_table(f)
        assert t.schema.metadata[b"waldecode.schema_version"] == b"1"
        schemas.setdefault((schema, table), []).append(t.schema)
        n = t.num_rows
        cols = {name: t.column(name).combine_chunks() for name in t.column_names}
        plain = {name: _plain(cols[name]) for name in t.column_names if name not in ("new", "old")}
        structs = {}
        for which in ("new", "old"):
            if which not in cols:
                continue
            s = cols[which]
            valid = s.is_valid().to_pylist()
            fields = {s.type.field(j).name: (s.type.field(j).type, _plain(s.field(j)))
                      for j in range(s.type.num_fields)}
            structs[which] = [None if not valid[r] else {k: (ty, vals[r]) for k, (ty, vals) in fields.items()}
                              for r in range(n)]
        for r in range(n):
            row = {k: v[r] for k, v in plain.items()}
            for which in ("new", "old"):
                row[which] = structs[which][r] if which in structs else None
            key = (schema, table, row["commit_lsn"], row["lsn"], row["op"])
            rows.setdefault(key, []).append(row)
    return rows, schemas


def _lsn(text: str | None) -> int | None:
    if text is None:
        return None
    hi, lo = text.split("/")
    return int(hi, 16) << 32 | int(lo, 16)


def check_parquet(directory: Path, objects: list[dict], server: ServerText) -> int:
    rows, schemas = read_changes(directory)
    # typed where a lossless Arrow type exists, text otherwise
    field_types = {f.name: str(f.type) for s in schemas[("public", "ty_all")] for f in s.field("new").type}
    for name, typ in TYPED.items():
        assert field_types[name] == typ, name
    compared = 0
    for obj in objects:
        if obj["op"] not in ("INSERT", "UPDATE", "DELETE", "TRUNCATE"):
            continue
        tables = ([(r["schema"], r["table"]) for r in obj["relations"]] if obj["op"] == "TRUNCATE"
                  else [(obj["schema"], obj["table"])])
        for schema, table in tables:
            key = (schema, table, _lsn(obj["commit_lsn"]), _lsn(obj["lsn"]), obj["op"])
            assert rows.get(key), f"no Parquet row for {key}"
            row = rows[key].pop(0)
            assert row["xid"] == obj["xid"]
            if obj["op"] == "TRUNCATE":
                assert row["new"] is None and row["old"] is None
                continue
            for which, texts, toast in (("columns", "new_text", "unchanged_toast"),
                                        ("old", "old_text", "old_unchanged_toast")):
                got = row["new" if which == "columns" else "old"]
                want = obj[which]
                if want is None:
                    assert got is None
                    continue
                text_map = dict(row[texts] or [])
                toasted = set(row[toast] or [])
                reported = {c["name"] for c in want}
                for c in want:
                    typ, value = got[c["name"]]
                    if c.get("unchanged_toast"):
                        assert value is None and c["name"] in toasted
                    elif c["value"] is None:
                        assert value is None and c["name"] not in text_map and c["name"] not in toasted
                    elif c["name"] in text_map:
                        assert value is None and text_map[c["name"]] == c["value"]
                    else:
                        assert server.text(typ, value, c["type"]) == c["value"], (c, typ, value)
                    compared += 1
                # columns the old key does not report are NULL
                assert all(v[1] is None for k, v in got.items() if k not in reported)
                assert set(text_map) <= reported and toasted <= reported
    assert all(not v for v in rows.values()), "Parquet rows that the JSON lines do not have"
    return compared


def check_transactions(directory: Path, objects: list[dict]) -> None:
    t = pq.read_table(directory / "transactions")
    got = [{k: v for k, v in r.items()} for r in t.to_pylist()]
    want = [o for o in objects if o["op"] not in ("INSERT", "UPDATE", "DELETE")]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert (g["op"], g["xid"], g["commit_lsn"], g["lsn"], g["gid"]) == \
            (w["op"], w["xid"], _lsn(w["commit_lsn"]), _lsn(w["lsn"]), w.get("gid"))
        assert (g["commit_time"] is None) == (w["commit_time"] is None)
        if w["op"] == "MESSAGE":
            assert g["content"] == base64.b64decode(w["content_base64"])
            assert (g["prefix"], g["transactional"]) == (w["prefix"], w["transactional"])
        if w["op"] == "TRUNCATE":
            assert g["relations"] == w["relations"]
            assert (g["restart_seqs"], g["cascade"]) == (w["restart_seqs"], w["cascade"])


# -- the test ----------------------------------------------------------------------------------------

def _decode(run: SlotRun, tmp_path: Path, *extra: str) -> int:
    snap = tmp_path / "catalog.json"
    if not snap.exists():
        snap.write_text(run.catalog.to_json())
    args = ["decode", "--catalog", str(snap), "--start-lsn", run.confirmed_lsn, "--end-lsn", run.end_lsn,
            "--quiet", *extra]
    if run.two_phase:
        args.append("--two-phase")
    return cli.main([*args, str(run.wal)])


@pytest.mark.parametrize("two_phase", [False, True], ids=["at-commit", "two-phase"])
def test_jsonl_and_parquet_carry_the_servers_text(cluster, tmp_path, two_phase):
    run = SlotRun(cluster, two_phase=two_phase, options={"include-timestamp": "1"})
    with cluster.connect(DB) as conn:
        _workload(conn, int(two_phase), cluster.xml)
    got, expected = run.finish(tmp_path)
    assert got == expected
    text = "\n".join(expected)
    for needle in ("unchanged-toast-datum", ": TRUNCATE: restart_seqs", "old-key:", "(no-tuple-data)",
                   "message: transactional: 0 prefix: nontx", "ROLLBACK PREPARED" if two_phase else "(at ",
                   "ddl_1_renamed" if two_phase else "ddl_0_renamed"):
        assert needle in text

    out = tmp_path / "out.jsonl"
    assert _decode(run, tmp_path, "--format", "jsonl", "--output", str(out)) == 0
    lines = out.read_bytes().split(b"\n")
    assert lines[-1] == b""
    objects = [json.loads(ln) for ln in lines[:-1]]
    check_jsonl(objects, expected, run.peek_lsns)

    pq_dir = tmp_path / "pq"
    assert _decode(run, tmp_path, "--parquet", str(pq_dir)) == 0
    with cluster.connect(DB) as conn:
        server = ServerText(conn, run.catalog.settings)
        compared = check_parquet(pq_dir, objects, server)
        assert server.checked > 200
    assert compared > 500
    check_transactions(pq_dir, objects)
    # the DDL made a new file (columns added, retyped, dropped) and a new partition (renamed)
    tag = int(two_phase)
    assert len(list((pq_dir / "changes" / "schema=public" / f"table=ddl_{tag}").glob("*.parquet"))) >= 3
    assert list((pq_dir / "changes" / "schema=public" / f"table=ddl_{tag}_renamed").glob("*.parquet"))


def test_parquet_streams_row_groups(cluster, tmp_path):
    """A transaction larger than a row group is written a row group at a time, not held whole."""
    from waldecode.logical.session import decode_wal
    from waldecode.output.parquet import ParquetOutput
    from waldecode.wal.xlogreader import parse_lsn

    run = SlotRun(cluster)
    with cluster.connect(DB) as conn:
        conn.execute("INSERT INTO acct SELECT g, 'bulk', g FROM generate_series(10000, 14999) g")
    got, expected = run.finish(tmp_path)
    assert got == expected
    groups = []

    class Watched(ParquetOutput):
        def commit(self, txn, commit_lsn):
            # what is on disk and what is buffered when the transaction's commit reaches the plugin
            groups.extend((w.row_groups, len(w.rows)) for _s, w in self._tables.values())
            super().commit(txn, commit_lsn)

    plugin = Watched(directory=str(tmp_path / "pq"), row_group_rows=1000)
    decode_wal([run.wal], run.catalog, plugin, start_lsn=parse_lsn(run.confirmed_lsn),
               end_lsn=parse_lsn(run.end_lsn))
    # the 5000 rows were written as 5 row groups before the transaction ended: never held whole
    assert groups == [(5, 0)]
    files = list((tmp_path / "pq" / "changes" / "schema=public" / "table=acct").glob("*.parquet"))
    assert len(files) == 1
    meta = pq.ParquetFile(files[0]).metadata
    assert meta.num_rows == 5000 and meta.num_row_groups == 5
    with cluster.connect(DB) as conn:
        conn.execute("DELETE FROM acct WHERE owner = 'bulk'")
