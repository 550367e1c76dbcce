"""Type output against a live PostgreSQL 15: our text for a stored datum equals the server's.

For each type family, values (hypothesis-generated plus explicit edge cases)
are stored in a throw-away table; each row's raw tuple is read back with
pageinspect (``heap_page_items(get_raw_page(...))``, not our WAL decoding),
split with ``heaptuple.deform_tuple`` using pg_attribute, TOAST pointers are
resolved from the TOAST table, and ``types.output_text`` must equal the
server's output (``format('%s', v)``) under several session settings (TimeZone, DateStyle,
IntervalStyle, extra_float_digits, bytea_output).  The same rows are decoded
by a ``test_decoding`` slot and its INSERT lines must equal the lines built
with test_decoding's ``print_literal``.

When the native output (``waldecode._typeout``) is built, every value is printed by it
too and must equal the server's text, and every INSERT line is built a third way: the
raw tuple through the native deformer and column-list formatter.

One server for the module; skipped when PostgreSQL 15 is not installed.
"""

from __future__ import annotations

import ipaddress
import itertools
import json
import math
import os
import random
import struct
import uuid

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from type_values import FLOAT8_EDGES, SETTINGS, json_values, safe_text  # noqa: E402
from waldecode.catalog import DEFAULT_SETTINGS, Attribute, Catalog, Relation, TypeInfo  # noqa: E402
from waldecode.heap.heaptuple import MissingValue, deform_tuple  # noqa: E402
from waldecode.output.test_decoding import print_literal  # noqa: E402
from waldecode.types import output_text  # noqa: E402
from waldecode.types.datetime import DATEORDER_MDY, USE_ISO_DATES, timestamp_text  # noqa: E402
from waldecode.heap.varlena import ToastPointer, decompress_toast_value  # noqa: E402

try:
    from waldecode import _typeout  # the native output, compared with the server as well
except ImportError:
    _typeout = None

def live_test(fn):
    """Marks a test that needs the server (the corrupt-datum tests at the end do not).

    The whole module runs in ~20 s on 2 cores, so not ``slow``."""
    return pytest.mark.server(fn)

SLOT = "wd_types"
# The type's output function, as the server runs it.  Not v::text: some types have
# their own cast to text (bool -> 'true', inet -> with /32, bpchar -> trimmed, "char").
OUTPUT_SQL = "CASE WHEN num_nulls(v) = 0 THEN format('%s', v) END"  # a row of NULLs IS NULL

# test_decoding is compared under these (a peek per setting)
DECODING_SETTINGS = [SETTINGS[0], SETTINGS[1], SETTINGS[2]]

# WALDECODE_TYPES_EXAMPLES=10 multiplies the hypothesis examples (a longer hunt; the default keeps CI quick)
_SCALE = int(os.environ.get("WALDECODE_TYPES_EXAMPLES", "1"))
FEW = settings(max_examples=15 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
SOME = settings(max_examples=30 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))


def lit(s: str) -> str:
    """A standard-conforming SQL string literal."""
    return "'" + s.replace("'", "''") + "'"


def arr_elem(s: str | None) -> str:
    """One element of an array input literal."""
    if s is None:
        return "NULL"
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def rec_field(s: str | None) -> str:
    if s is None:
        return ""
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- the live server -------------------------------------------------------------------------------

class Live:
    """One server, its catalog as waldecode sees it, and the compare loop."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.conn = cluster.connect()
        self.counter = itertools.count(1)
        self.checked = 0
        self._native: dict = {}  # settings -> _typeout.TypeOut
        self.raw_tuples: dict = {}  # id -> (body, t_infomask2, t_infomask, t_hoff) of the last raw_rows

    def sql(self, q, params=None):
        cur = self.conn.execute(q, params)
        return cur.fetchall() if cur.description is not None else None

    def set(self, s: dict):
        merged = dict(DEFAULT_SETTINGS)
        merged.update(s)
        for k in ("TimeZone", "DateStyle", "IntervalStyle", "extra_float_digits", "bytea_output", "lc_monetary"):
            self.sql("SELECT set_config(%s, %s, false)", (k, str(merged[k])))

    # catalog -------------------------------------------------------------------------------------

    def native(self, merged: dict):
        """The native output for ``merged`` settings (None when the extension is not built)."""
        if _typeout is None:
            return None
        from waldecode.types import OutputContext

        key = tuple(sorted(merged.items()))
        typeout = self._native.get(key)
        if typeout is None:
            typeout = self._native[key] = _typeout.TypeOut(OutputContext(self.catalog, merged))
        return typeout

    def build_catalog(self):
        self._native.clear()
        labels: dict = {}
        for typid, oid, label in self.sql("SELECT enumtypid, oid, enumlabel FROM pg_enum"):
            labels.setdefault(typid, {})[oid] = label
        types = {}
        rows = self.sql("""
            SELECT t.oid, t.typname, n.nspname, t.typlen, t.typbyval, t.typalign, t.typstorage, t.typtype,
                   t.typcategory, t.typdelim, t.typelem, t.typarray, t.typbasetype, t.typtypmod, t.typrelid,
                   t.typoutput::regproc::text, format_type(t.oid, NULL),
                   coalesce((SELECT r.rngsubtype FROM pg_range r
                             WHERE r.rngtypid = t.oid OR r.rngmultitypid = t.oid), 0)
            FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace""")
        for r in rows:
            types[r[0]] = TypeInfo(oid=r[0], typname=r[1], nspname=r[2], typlen=r[3], typbyval=r[4],
                                   typalign=r[5], typstorage=r[6], typtype=r[7], typcategory=r[8],
                                   typdelim=r[9], typelem=r[10], typarray=r[11], typbasetype=r[12],
                                   typtypmod=r[13], typrelid=r[14], typoutput=r[15], format_type=r[16],
                                   rngsubtype=r[17], enum_labels=labels.get(r[0], {}))
        relations = {}
        relids = [r[0] for r in self.sql(
            "SELECT c.oid FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = 'public' AND c.relkind IN ('r', 'c')")]
        for relid in relids:
            relations[relid] = self.relation(relid)
        v = self.sql("SELECT current_setting('server_version'), current_setting('server_version_num')::int")[0]
        self.catalog = Catalog(server_version=v[0], server_version_num=v[1], major=v[1] // 10000, lsn=0,
                               database="postgres", database_oid=0, database_tablespace=0,
                               settings=dict(DEFAULT_SETTINGS), relations=relations, types=types)
        return self.catalog

    def relation(self, relid: int) -> Relation:
        c = self.sql("SELECT c.relname, n.nspname, c.relkind FROM pg_class c "
                     "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = %s", (relid,))[0]
        atts = []
        for a in self.sql("""
                SELECT attnum, attname, atttypid, atttypmod, attlen, attbyval, attalign, attstorage, attisdropped,
                       attnotnull, atthasmissing,
                       CASE WHEN atthasmissing THEN (attmissingval::text::text[])[1] END,
                       format_type(atttypid, NULL)
                FROM pg_attribute WHERE attrelid = %s AND attnum > 0 ORDER BY attnum""", (relid,)):
            atts.append(Attribute(attnum=a[0], attname=a[1], atttypid=a[2], atttypmod=a[3], attlen=a[4],
                                  attbyval=a[5], attalign=a[6], attstorage=a[7], attisdropped=a[8],
                                  attnotnull=a[9], atthasmissing=a[10], attmissingval=a[11], type_name=a[12] or ""))
        return Relation(oid=relid, relname=c[0], nspname=c[1], relkind=c[2], relpersistence="p", relfilenode=0,
                        reltablespace=0, relreplident="d", attributes=tuple(atts))

    # raw tuples ----------------------------------------------------------------------------------

    def raw_rows(self, table: str, relation: Relation) -> list:
        """Every live tuple of ``table`` deformed from its raw page bytes."""
        npages = self.sql("SELECT pg_relation_size(%s::regclass) / 8192", (table,))[0][0]
        out = []
        self.raw_tuples = {}
        for blk in range(npages):
            for lp, flags, infomask2, infomask, hoff, bits, data in self.sql(
                    "SELECT lp, lp_flags, t_infomask2, t_infomask, t_hoff, t_bits, t_data "
                    "FROM heap_page_items(get_raw_page(%s, %s))", (table, blk)):
                if flags != 1 or data is None:
                    continue
                bitmap = b""
                if bits is not None:
                    ba = bytearray((len(bits) + 7) // 8)
                    for i, ch in enumerate(bits):
                        if ch == "1":
                            ba[i >> 3] |= 1 << (i & 7)
                    bitmap = bytes(ba)
                body = bitmap + b"\x00" * (hoff - 23 - len(bitmap)) + bytes(data)
                values = deform_tuple(body, infomask2, infomask, hoff, relation.attributes)
                if values and isinstance(values[0], bytes) and relation.attributes[0].atttypid == 23:
                    self.raw_tuples[struct.unpack("<i", values[0])[0]] = (body, infomask2, infomask, hoff)
                out.append([self.detoast(v) for v in values])
        return out

    def detoast(self, v):
        if not isinstance(v, ToastPointer):
            return v
        rel = self.sql("SELECT %s::regclass::text", (v.va_toastrelid,))[0][0]
        data = self.sql(f"SELECT string_agg(chunk_data, ''::bytea ORDER BY chunk_seq) FROM {rel} "
                        f"WHERE chunk_id = %s", (v.va_valueid,))[0][0]
        return decompress_toast_value(bytes(data), v)

    # the comparison ------------------------------------------------------------------------------

    def check(self, coltype: str, exprs: list, *, settings_list=SETTINGS, decoding=True, setup: str = "",
              compression: str | None = None):
        """Store ``exprs`` (SQL expressions) in a ``coltype`` column and compare every output."""
        table = f"t{next(self.counter)}"
        self.sql(f"CREATE TABLE {table} (id int4, b bool, v {coltype}{setup})")
        if compression:
            self.sql(f"ALTER TABLE {table} ALTER COLUMN v SET COMPRESSION {compression}")
        if decoding:
            self.sql("SELECT pg_replication_slot_advance(%s, pg_current_wal_lsn())", (SLOT,))
        rows = [f"({i}, {('true', 'false', 'NULL')[i % 3]}, {e})" for i, e in enumerate(exprs, 1)]
        rows.append(f"({len(exprs) + 1}, NULL, NULL)")
        self.sql(f"INSERT INTO {table} (id, b, v) VALUES " + ", ".join(rows))
        relid = self.sql("SELECT %s::regclass::oid", (table,))[0][0]
        relation = self.relation(relid)
        self.catalog.relations[relid] = relation
        vatt = relation.attributes[2]
        raw = {}
        for values in self.raw_rows(table, relation):
            raw[struct.unpack("<i", values[0])[0]] = values
        assert len(raw) == len(exprs) + 1
        try:
            for s in settings_list:
                self.set(s)
                merged = dict(DEFAULT_SETTINGS)
                merged.update(s)
                native = self.native(merged)
                for rid, text in self.sql(f"SELECT id, {OUTPUT_SQL} FROM {table} ORDER BY id"):
                    value = raw[rid][2]
                    ours = None if value is None else output_text(vatt.atttypid, value, self.catalog, merged)
                    assert ours == text, (f"{coltype} row {rid} ({exprs[rid - 1] if rid <= len(exprs) else 'NULL'})"
                                          f" under {s}: ours {ours!r} != server {text!r}")
                    if native is not None and value is not None:
                        declined = native.declined_values
                        got = native.value_text(vatt.atttypid, value)
                        assert got == text.encode("utf-8", "surrogateescape"), (
                            f"{coltype} row {rid} ({exprs[rid - 1] if rid <= len(exprs) else 'NULL'}) under {s}: "
                            f"native {got!r} != server {text!r}")
                        # printed by the C code itself when the type has C code
                        assert native.declined_values == declined or not native.is_native(vatt.atttypid), \
                            f"{coltype} row {rid}: the C code declined it"
                    self.checked += 1
            if decoding:
                self.check_decoding(table, relation, raw)
        finally:
            self.set({})
            self.sql(f"DROP TABLE {table}")
        return raw

    def check_decoding(self, table: str, relation: Relation, raw: dict, skip_lines: int = 0):
        """test_decoding's INSERT lines (after the first ``skip_lines``) equal the ones built from our output."""
        for s in DECODING_SETTINGS:
            self.set(s)
            merged = dict(DEFAULT_SETTINGS)
            merged.update(s)
            lines = [r[0] for r in self.sql(
                "SELECT data FROM pg_logical_slot_peek_changes(%s, NULL, NULL, 'include-xids', '0', "
                "'skip-empty-xacts', '1')", (SLOT,)) if r[0].startswith(f"table public.{table}: INSERT:")][skip_lines:]
            expected = []
            for rid in sorted(raw)[skip_lines:]:
                cols = []
                for att, value in zip(relation.attributes, raw[rid]):
                    if att.attisdropped:
                        continue
                    text = None if value is None else output_text(att.atttypid, value, self.catalog, merged)
                    if isinstance(value, MissingValue):
                        text = value.text
                    literal = "null" if text is None else print_literal(att.atttypid, text)
                    cols.append(f" {att.attname}[{att.type_name}]:{literal}")
                expected.append(f"table public.{table}: INSERT:" + "".join(cols))
            assert lines == expected, f"test_decoding under {s}"
            native = self.native(merged)
            if native is not None:
                desc = native.relation(relation.attributes)
                built = []
                for rid in sorted(raw)[skip_lines:]:
                    out = _typeout.OutBuf()
                    out.write(f"table public.{table}: INSERT:")
                    desc.append_tuple(out, *self.raw_tuples[rid], toast=self.detoast)
                    built.append(out.getvalue())
                assert desc.python_tuples == 0, "a raw tuple took the Python path"
                assert built == [ln.encode("utf-8", "surrogateescape") for ln in lines], \
                    f"native test_decoding lines under {s}"


@pytest.fixture(scope="module")
def live():
    from waldecode.testing.cluster import Cluster, ClusterError

    pytest.importorskip("psycopg")
    try:
        cluster = Cluster(15)
    except ClusterError as e:
        pytest.skip(f"PostgreSQL 15 is not available: {e}")
    with cluster:
        lv = Live(cluster)
        lv.sql("CREATE EXTENSION pageinspect")
        lv.sql("SELECT pg_create_logical_replication_slot(%s, 'test_decoding')", (SLOT,))
        for ddl in SCHEMA:
            lv.sql(ddl)
        lv.build_catalog()
        yield lv
        lv.conn.close()


SCHEMA = [
    "CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy', 'with space', 'quo\"te', 'É')",
    "CREATE TYPE inner_t AS (a int4, b text, c float8)",
    "CREATE TYPE outer_t AS (x inner_t, y text[], z numeric, w bool, gone int8, d date)",
    "ALTER TYPE outer_t DROP ATTRIBUTE gone",
    "CREATE DOMAIN posint AS int4 CHECK (VALUE > 0)",
    "CREATE DOMAIN shorttext AS text",
    "CREATE DOMAIN mood_d AS mood",
    "CREATE DOMAIN flt_d AS float8",
    "CREATE DOMAIN bits_d AS varbit",
    "CREATE DOMAIN pair_d AS inner_t",
    "CREATE TYPE floatrange AS RANGE (subtype = float8)",
    "CREATE TYPE textrange AS RANGE (subtype = text, collation = \"C\")",
]


# -- value generators ------------------------------------------------------------------------------

def f4_value(bits: int) -> float:
    return struct.unpack("<f", struct.pack("<I", bits))[0]


def f8_value(bits: int) -> float:
    return struct.unpack("<d", struct.pack("<Q", bits))[0]


def float_text(x: float) -> str:
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "Infinity" if x > 0 else "-Infinity"
    return repr(x)


int4s = st.integers(-2**31, 2**31 - 1)
int8s = st.integers(-2**63, 2**63 - 1)
MIN_TS = -211813488000000000  # 4714-11-24 00:00:00 BC
END_TS = 9223371331200000000  # 294277-01-01 00:00:00
timestamps = st.one_of(st.integers(MIN_TS, END_TS - 1), st.integers(-10**17, 10**17),
                       st.integers(-3 * 10**15, 3 * 10**15))
dates = st.one_of(st.integers(-2451545, 2145031948), st.integers(-800000, 800000))


def ts_text(us: int) -> str:
    return timestamp_text(us, USE_ISO_DATES, DATEORDER_MDY)


def tstz_text(us: int) -> str:
    return ts_text(us) .replace(" BC", "") + "+00" + (" BC" if ts_text(us).endswith(" BC") else "")


def interval_expr(months: int, days: int, hours: int, usecs: int) -> str:
    sign = "-" if usecs < 0 else ""
    return (f"make_interval(months => {months}, days => {days}, hours => {hours}, "
            f"secs => {sign}{abs(usecs) // 10**6}.{abs(usecs) % 10**6:06d})")


intervals = st.tuples(st.integers(-2**31, 2**31 - 1) | st.integers(-30, 30),
                      st.integers(-2**31, 2**31 - 1) | st.integers(-40, 40),
                      st.integers(-2**31 + 1, 2**31 - 1) | st.integers(-30, 30),
                      st.integers(-3599999999, 3599999999) | st.sampled_from([0, 1, -1, 500000, -999999]))


def ipv6_text(groups) -> str:
    return str(ipaddress.IPv6Address(b"".join(g.to_bytes(2, "big") for g in groups)))


ipv6_groups = st.lists(st.sampled_from([0, 0, 0, 1, 0xFFFF, 0x1234, 0xFE80]) | st.integers(0, 0xFFFF),
                       min_size=8, max_size=8)



# -- tests -----------------------------------------------------------------------------------------

INT_EDGES = {"int2": [-32768, 32767, 0, -1], "int4": [-2**31, 2**31 - 1, 0, -1],
             "int8": [-2**63, 2**63 - 1, 0, -1]}


@live_test
def test_integers(live):
    for t, edges in INT_EDGES.items():
        live.check(t, [f"'{v}'::{t}" for v in edges])
    live.check("oid", ["0", "4294967295", "12345"])
    live.check("posint", ["1", "2147483647"])  # a domain: quoted by test_decoding


@live_test
@SOME
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=40))
def test_integers_hypothesis(live, values):
    live.check("int8", [str(v) for v in values])
    live.check("int4", [str(v >> 32) for v in values], settings_list=SETTINGS[:1])
    live.check("int2", [str(v >> 48) for v in values], settings_list=SETTINGS[:1], decoding=False)





@live_test
def test_float8(live):
    values = FLOAT8_EDGES + [2.0 ** k for k in range(-1074, 1024, 37)] + [-(2.0 ** k) * 3 for k in range(-60, 60)]
    live.check("float8", [f"'{float_text(v)}'::float8" for v in values])
    live.check("flt_d", [f"'{float_text(v)}'::float8" for v in FLOAT8_EDGES])


@live_test
def test_float4_binade_edges(live):
    bits = [0, 0x80000000, 0x7FC00000, 0x7F800000, 0xFF800000, 1, 2, 0x007FFFFF, 0x00800000, 0x7F7FFFFF,
            0x3DCCCCCD, 0x49742400, 0x4B800000, 0x4B7FFFFF, 0x3F800001, 0x3F7FFFFF]
    for e in range(0, 255):
        bits += [e << 23, (e << 23) | 1, ((e << 23) - 1) & 0x7FFFFFFF]
    values = [f4_value(b) for b in bits]
    live.check("float4", [f"'{float_text(v)}'::float8::float4" for v in values], decoding=False)


@live_test
@SOME
@given(st.lists(st.integers(0, 2**32 - 1), min_size=1, max_size=60),
       st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=60))
def test_floats_hypothesis(live, bits4, bits8):
    live.check("float4", [f"'{float_text(f4_value(b))}'::float8::float4" for b in bits4])
    live.check("float8", [f"'{float_text(f8_value(b))}'::float8" for b in bits8])


NUMERIC_EDGES = ["0", "0.000", "-0.000", "1", "-1", "NaN", "Infinity", "-Infinity", "0.1", "-12345.678900",
                 "9999.9999", "10000", "1e-20", "123456789012345678901234567890.123456789",
                 "0." + "0" * 300 + "1", "1" + "0" * 1000, "-" + "9" * 1000 + "." + "9" * 50,
                 "1e-16383", "0.00001", "100000000.00000001", "1e130000"]


@live_test
def test_numeric(live):
    rnd = random.Random(7)
    big = "".join(rnd.choice("0123456789") for _ in range(30000))  # ~15 kB: stored externally
    live.check("numeric", [f"'{v}'::numeric" for v in NUMERIC_EDGES] + [f"'{big}.5'::numeric", f"'-0.{big[:16000]}'"])
    live.check("numeric(10,3)", ["1", "-2.5", "1234567.891", "0"])


@live_test
@SOME
@given(st.lists(st.decimals(allow_nan=False, allow_infinity=False) | st.sampled_from(["NaN", "Infinity"]),
                min_size=1, max_size=40))
def test_numeric_hypothesis(live, values):
    live.check("numeric", [f"'{v}'::numeric" for v in values], settings_list=SETTINGS[:1])


@live_test
def test_bool_and_small_types(live):
    live.check("bool", ["true", "false"])
    live.check('"char"', [f"({n})::\"char\"" for n in (-128, -1, 0, 1, 32, 34, 39, 65, 92, 127)])
    live.check("name", [lit(s) for s in ("", "abc", "x" * 70, "ñandú" * 20, "a'b")])
    live.check("uuid", [lit(str(uuid.UUID(int=n))) for n in (0, 2**128 - 1, 0x0123456789ABCDEF0123456789ABCDEF)])
    live.check("xid", ["'0'", "'4294967295'", "'12345'"])
    live.check("cid", ["'0'", "'4294967295'"])
    live.check("xid8", ["'0'", "'18446744073709551615'"])
    live.check("pg_lsn", ["'0/0'", "'FFFFFFFF/FFFFFFFF'", "'16/B374D848'"])
    live.check("tid", ["'(0,0)'", "'(4294967295,65535)'", "'(70000,3)'"])
    live.check("money", [f"({n}::numeric / 100)::money" for n in (0, 1, -1, 100, -310, 123450, 123456789012,
                                                                   -2**63, 2**63 - 1, 99, -100000)])
    live.check("bit(5)", ["B'10101'", "B'00000'"])
    live.check("varbit", ["B''", "B'1'", "B'0101010101010101'", "B'1111111100000000111'"])
    live.check("bits_d", ["B'101'"])
    live.check("macaddr", ["'08:00:2b:01:02:03'", "'ff:ff:ff:ff:ff:ff'", "'00:00:00:00:00:00'"])
    live.check("macaddr8", ["'08:00:2b:01:02:03:04:05'", "'00:00:00:00:00:00:00:00'"])
    live.check("xml", [lit(s) for s in ("<a>b</a>", '<?xml version="1.0"?><a/>', '<?xml version="1.0"?>\n<a/>',
                                        '<?xml version="1.1" standalone="yes"?><a/>', "\n<a/>", "text",
                                        '<?xml version="1.0" encoding="UTF-8" standalone="no"?><x/>',
                                        "<?xml-stylesheet href='a'?><b/>", "")])


@live_test
@FEW
@given(st.lists(st.integers(-2**63, 2**63 - 1), min_size=1, max_size=30),
       st.lists(st.binary(max_size=30) | st.text(alphabet="01", max_size=70), min_size=1, max_size=20))
def test_small_types_hypothesis(live, ints, blobs):
    live.check("money", [f"({n}::numeric / 100)::money" for n in ints], settings_list=SETTINGS[:1])
    live.check("varbit", [f"B'{b}'" for b in blobs if isinstance(b, str)] or ["B''"], settings_list=SETTINGS[:1])
    live.check("uuid", [lit(str(uuid.UUID(int=n % 2**128))) for n in ints], settings_list=SETTINGS[:1],
               decoding=False)


@live_test
def test_text_family(live):
    samples = ["", "a", "with space", "quote'd", 'dq"', "back\\slash", "tab\there", "new\nline", "ümlaut ☃ 𝄞",
               "NULL", "{curly}", "(paren)", "a,b"]
    for t in ("text", "varchar", "varchar(8)", "bpchar", "char(6)", "shorttext", "json"):
        exprs = [f"{lit(s)}::{t}" for s in samples] if t != "json" else [lit(json.dumps(s)) for s in samples]
        live.check(t, exprs, settings_list=SETTINGS[:1])
    # inline compressed (pglz and lz4) and external TOAST values
    big = ["repeat('abcdefgh', 2000)", "repeat('xy', 600)", "(SELECT string_agg(md5(i::text), '') FROM "
           "generate_series(1, 300) i)", "repeat('é', 5000)"]
    live.check("text", big, settings_list=SETTINGS[:1])
    live.check("text", big, settings_list=SETTINGS[:1], compression="lz4")


@live_test
@FEW
@given(st.lists(safe_text, min_size=1, max_size=30))
def test_text_hypothesis(live, values):
    live.check("text", [lit(s) for s in values], settings_list=SETTINGS[:1])
    live.check("char(10)", [f"{lit(s)}::char(10)" for s in values], settings_list=SETTINGS[:1], decoding=False)


@live_test
def test_bytea(live):
    values = [b"", b"\x00", bytes(range(256)), b"\\", b"'", b"abc", bytes(range(256)) * 40]
    live.check("bytea", [f"'\\x{v.hex()}'::bytea" for v in values], settings_list=SETTINGS[:2])


@live_test
@FEW
@given(st.lists(st.binary(max_size=60), min_size=1, max_size=30))
def test_bytea_hypothesis(live, values):
    live.check("bytea", [f"'\\x{v.hex()}'::bytea" for v in values], settings_list=SETTINGS[:2])


DATE_EDGES = ["'infinity'", "'-infinity'", "'4714-11-24 BC'", "'5874897-12-31'", "'0001-01-01'",
              "'0001-12-31 BC'", "'10000-01-01'", "'2000-02-29'", "'1999-12-31'", "'0044-03-15 BC'"]


@live_test
def test_dates(live):
    live.check("date", [f"{d}::date" for d in DATE_EDGES])


@live_test
@SOME
@given(st.lists(dates, min_size=1, max_size=40))
def test_dates_hypothesis(live, days):
    live.check("date", [f"'2000-01-01'::date + {d}" for d in days])


TIME_EDGES = ["'00:00:00'", "'24:00:00'", "'23:59:59.999999'", "'12:34:56.789'", "'00:00:00.000001'"]
TIMETZ_EDGES = ["'00:00:00+00'", "'24:00:00-15:59:59'", "'12:00:00+05:30'", "'12:00:00-08'", "'01:02:03.5+15:59'",
                "'23:59:59.999999-00:00:01'", "'10:00:00+00:53:28'"]


@live_test
def test_times(live):
    live.check("time", [f"{t}::time" for t in TIME_EDGES])
    live.check("timetz", [f"{t}::timetz" for t in TIMETZ_EDGES])


@live_test
@FEW
@given(st.lists(st.tuples(st.integers(0, 86400 * 10**6), st.integers(-57599, 57599)), min_size=1, max_size=40))
def test_times_hypothesis(live, values):
    def t(us):
        if us == 86400 * 10**6:
            return "24:00:00"
        h, r = divmod(us, 3600 * 10**6)
        m, r = divmod(r, 60 * 10**6)
        return f"{h:02d}:{m:02d}:{r // 10**6:02d}.{r % 10**6:06d}"

    def z(sec):
        sign = "-" if sec > 0 else "+"
        a = abs(sec)
        return f"{sign}{a // 3600:02d}:{a // 60 % 60:02d}:{a % 60:02d}"

    live.check("time", [f"'{t(us)}'::time" for us, _ in values], settings_list=SETTINGS[:1])
    live.check("timetz", [f"'{t(us)}{z(zone)}'::timetz" for us, zone in values], settings_list=SETTINGS[:1])


TS_EDGES = ["'infinity'", "'-infinity'", "'4714-11-24 00:00:00 BC'", "'294276-12-31 23:59:59.999999'",
            "'0001-01-01 00:00:00 BC'", "'1999-12-31 23:59:59.999999'", "'10000-01-01 00:00:00'",
            "'2000-01-01 00:00:00.5'", "'0044-03-15 10:00:00 BC'", "'1883-11-18 16:59:59'",
            "'1883-11-18 17:00:00'", "'2021-03-14 06:59:59.999999'", "'2021-03-14 07:00:00'",
            "'2021-10-31 00:59:59'", "'2021-10-31 01:00:00'", "'1941-10-01 00:00:00'", "'1970-01-01 00:00:00'",
            "'2038-01-19 03:14:08'", "'2100-07-01 12:00:00'", "'9999-12-31 23:59:59'", "'12000-06-15 12:00:00'",
            "'100000-03-01 00:00:00'", "'1000-01-01 00:00:00 BC'", "'1900-01-01 00:00:00'"]


@live_test
def test_timestamps(live):
    live.check("timestamp", [f"{t}::timestamp" for t in TS_EDGES])
    live.check("timestamptz", [f"({t}::timestamp AT TIME ZONE 'UTC')" if "infinity" not in t else f"{t}::timestamptz"
                               for t in TS_EDGES])


@live_test
@SOME
@given(st.lists(timestamps, min_size=1, max_size=40))
def test_timestamps_hypothesis(live, values):
    live.check("timestamp", [f"'{ts_text(us)}'::timestamp" for us in values])
    live.check("timestamptz", [f"'{tstz_text(us)}'::timestamptz" for us in values])


INTERVAL_EDGES = ["'0'", "'1 year 2 mons -3 days 04:05:06.5'", "'-1 days +02:03:00'", "'1 mon -1 day'",
                  "'-00:00:00.000001'", "'1 day -00:00:01'", "'-1 year -2 mons'", "'1 year'", "'-1 day'",
                  "'1 sec'", "'-1 sec'", "'1.5 sec'", "'-0.5 sec'", "'178000000 years'", "'-178000000 years'",
                  "'2147483647 days'", "'-2147483648 days'", "'2562047788 hours'", "'-2562047788 hours'",
                  "'1 year -1 sec'", "'-1 year 1 day'", "'1 day 1 sec'", "'3 mons 00:00:00.25'", "'12 mons'",
                  "'-12 mons 1 day'", "'1 min'", "'-1 hour -1 min'"]


@live_test
def test_intervals(live):
    live.check("interval", [f"{t}::interval" for t in INTERVAL_EDGES])


@live_test
@SOME
@given(st.lists(intervals, min_size=1, max_size=40))
def test_intervals_hypothesis(live, values):
    live.check("interval", [interval_expr(*v) for v in values])


@live_test
def test_network(live):
    inet = ["'192.168.0.1/24'", "'10.0.0.1'", "'0.0.0.0/0'", "'255.255.255.255/32'", "'::'", "'::1'", "'::2'",
            "'::ffff:1.2.3.4'", "'::1.2.3.4'", "'1::'", "'1:0:0:1::'", "'1::1:0:0:1'", "'fe80::1/64'",
            "'2001:db8::ff00:42:8329'", "'::ffff:0:0/96'", "'1:2:3:4:5:6:7:8'", "'0:0:1::'", "'::0.0.0.1'",
            "'::ffff:0.0.0.0'", "'0:0:0:0:0:1:0:0'", "'::fffe:1.2.3.4'", "'1:0:0:2:0:0:0:3'", "'1:0:0:0:2:0:0:3/128'"]
    live.check("inet", [f"{v}::inet" for v in inet])
    cidr = ["'10.0.0.0/8'", "'192.168.1.0/24'", "'0.0.0.0/0'", "'1.2.3.4/32'", "'::/0'", "'fe80::/10'",
            "'2001:db8::/32'", "'::1/128'", "'::ffff:1.2.3.0/120'"]
    live.check("cidr", [f"{v}::cidr" for v in cidr])


@live_test
@FEW
@given(st.lists(st.tuples(ipv6_groups, st.integers(0, 128), st.integers(0, 2**32 - 1), st.integers(0, 32)),
                min_size=1, max_size=30))
def test_network_hypothesis(live, values):
    inet = []
    cidr = []
    for groups, bits6, v4, bits4 in values:
        a6 = ipv6_text(groups)
        a4 = str(ipaddress.IPv4Address(v4))
        inet += [f"'{a6}/{bits6}'::inet", f"'{a4}/{bits4}'::inet"]
        cidr += [f"'{ipaddress.IPv6Network(f'{a6}/{bits6}', strict=False)}'::cidr",
                 f"'{ipaddress.IPv4Network(f'{a4}/{bits4}', strict=False)}'::cidr"]
    live.check("inet", inet, settings_list=SETTINGS[:1])
    live.check("cidr", cidr, settings_list=SETTINGS[:1])


JSONB_EDGES = ['{}', '[]', 'null', 'true', 'false', '0', '-0', '1.50', '"str"', '""', '{"a": 1, "b": [1, 2, {}]}',
               '{"aa": 1, "b": 2, "a": 3, "": 4}', '[1, "two", null, true, false, 1e100, -1.5e-10]',
               '{"k": "\\u0001\\b\\f\\n\\r\\t\\"\\\\/é☃"}', '"\\u00e9\\ud83d\\ude00"', '[[[[]]]]',
               '{"dup": 1, "dup": 2}', '123456789012345678901234567890.00001', '{"nested": {"x": {"y": [{}]}}}']


@live_test
def test_jsonb(live):
    live.check("jsonb", [lit(j) + "::jsonb" for j in JSONB_EDGES])
    big = "(SELECT jsonb_object_agg('key' || i, repeat('v', i % 50)) FROM generate_series(1, 400) i)"
    live.check("jsonb", [big, "(SELECT jsonb_agg(i) FROM generate_series(1, 3000) i)"], settings_list=SETTINGS[:1])
    live.check("json", [lit(j) for j in JSONB_EDGES], settings_list=SETTINGS[:1])


@live_test
@SOME
@given(st.lists(json_values, min_size=1, max_size=15))
def test_jsonb_hypothesis(live, values):
    docs = [json.dumps(v, ensure_ascii=bool(i % 2)) for i, v in enumerate(values)]
    live.check("jsonb", [lit(d) + "::jsonb" for d in docs], settings_list=SETTINGS[:1])


@live_test
def test_arrays(live):
    live.check("int4[]", ["'{}'", "'{1,NULL,3}'", "'{{1,2},{3,NULL}}'", "'[0:1]={5,6}'", "'[-3:-2][1:2]={{1,2},{3,4}}'",
                          "'{{{1},{2}},{{3},{4}}}'", "ARRAY[NULL]::int4[]", "(SELECT array_agg(i) FROM "
                          "generate_series(1, 5000) i)"])
    live.check("text[]", [lit("{" + ",".join(arr_elem(s) for s in ["a b", "", "NULL", "null", 'q"x', None, "\\",
                                                                     "{", "}", ",", "é", " lead", "Null"]) + "}"),
                          "'{{a,b},{c,d}}'", "ARRAY['x', NULL, '']", "'[2:3]={\"\",\"\"}'"])
    live.check("float8[]", ["'{NaN,Infinity,-Infinity,-0,1e-310,0.1}'"])
    live.check("numeric[]", ["'{1.50,NaN,-0.001}'"])
    live.check("bool[]", ["'{t,f,NULL}'"])
    live.check("bytea[]", ["ARRAY['\\x00ff'::bytea, '\\x'::bytea, NULL]"])
    live.check("date[]", ["'{2000-01-01,infinity,0044-03-15 BC}'"])
    live.check("timestamptz[]", ["ARRAY['2000-01-01 00:00:00+00'::timestamptz, 'infinity', NULL]"])
    live.check("interval[]", ["ARRAY['1 day -2 hours'::interval, '-1 year']"])
    live.check("inet[]", ["'{10.0.0.1/8,::1}'"])
    live.check("uuid[]", ["ARRAY['00000000-0000-0000-0000-000000000001'::uuid]"])
    live.check("jsonb[]", ["ARRAY['{\"a\": [1, 2]}'::jsonb, 'null', '\"x y\"']"])
    live.check('"char"[]', ["ARRAY['a'::\"char\", ' '::\"char\", (-3)::\"char\"]"])
    live.check("mood[]", ["'{sad,\"with space\",\"quo\\\"te\",É,NULL}'"])
    live.check("inner_t[]", ["ARRAY[ROW(1, 'x y', 1.5)::inner_t, NULL, ROW(NULL, NULL, NULL)::inner_t]"])
    live.check("int4range[]", ["ARRAY['[1,5)'::int4range, 'empty']"])
    live.check("varbit[]", ["'{101,\"\"}'"])
    live.check("money[]", ["ARRAY[1.5::numeric::money, (-2)::numeric::money]"])
    live.check("box[]", ["ARRAY['(1,2),(3,4)'::box, '(0,0),(0,0)'::box]"])
    live.check("posint[]", ["ARRAY[1, 2]::posint[]"])
    live.check("int2vector", ["'1 2 3'::int2vector", "''::int2vector"])
    live.check("oidvector", ["'1 4294967295'::oidvector"])


@live_test
@SOME
@given(st.lists(st.lists(st.one_of(st.none(), safe_text), max_size=6), min_size=1, max_size=8),
       st.integers(-5, 5), st.integers(1, 3))
def test_arrays_hypothesis(live, lists, lb, ndim):
    exprs = []
    for items in lists:
        if ndim == 1 or len(items) < 2:
            body = "{" + ",".join(arr_elem(s) for s in items) + "}"
            dims = f"[{lb}:{lb + len(items) - 1}]=" if items and lb != 1 else ""
        else:
            half = len(items) // 2
            rows = [items[:half], items[half:2 * half]]
            body = "{" + ",".join("{" + ",".join(arr_elem(s) for s in r) + "}" for r in rows) + "}"
            dims = f"[{lb}:{lb + 1}][1:{half}]=" if lb != 1 else ""
        exprs.append(lit(dims + body))
    live.check("text[]", exprs, settings_list=SETTINGS[:1])


@live_test
def test_enums_composites_domains(live):
    live.check("mood", ["'sad'", "'with space'", "'quo\"te'", "'É'", "'happy'"])
    live.check("mood_d", ["'ok'"])
    live.check("inner_t", ["ROW(1, 'a', 2.5)", "ROW(NULL, NULL, NULL)", "ROW(-1, '', 'NaN')",
                           "ROW(7, 'x\"y\\z (,)', '-Infinity')", "ROW(0, repeat('long ', 3000), 1e-310)"])
    live.check("outer_t", ["ROW(ROW(1, 'a b', 0.5), ARRAY['x', NULL, 'y z'], 1.250, true, '2000-01-01')",
                           "ROW(NULL, '{}', NULL, NULL, NULL)", "ROW(ROW(NULL, NULL, NULL), NULL, 'NaN', false, "
                           "'infinity')"])
    live.check("pair_d", ["ROW(3, 'p', 1)::inner_t"])


@live_test
def test_missing_and_dropped_attributes(live):
    """Rows written before ADD COLUMN ... DEFAULT carry fewer attributes (the default comes from
    attmissingval); a dropped column's bytes are still walked over."""
    live.sql("CREATE TABLE tmiss (id int4, x text, b bool)")
    live.sql("SELECT pg_replication_slot_advance(%s, pg_current_wal_lsn())", (SLOT,))
    live.sql("INSERT INTO tmiss VALUES (1, 'gone', true), (2, NULL, NULL), (3, repeat('y', 300), false)")
    live.sql("ALTER TABLE tmiss DROP COLUMN x")
    live.sql("ALTER TABLE tmiss ADD COLUMN v numeric DEFAULT 12.50")
    live.sql("ALTER TABLE tmiss ADD COLUMN w text")
    live.sql("INSERT INTO tmiss VALUES (4, true, 1.5, 'new')")
    try:
        relid = live.sql("SELECT 'tmiss'::regclass::oid")[0][0]
        relation = live.relation(relid)
        live.catalog.relations[relid] = relation
        rows = {struct.unpack("<i", r[0])[0]: r for r in live.raw_rows("tmiss", relation)}
        assert rows[1][1] is None and rows[1][3] == MissingValue("12.50") and rows[1][4] is None
        for rid, text in live.sql("SELECT id, format('%s', v) FROM tmiss"):
            assert output_text(relation.attributes[3].atttypid, rows[rid][3], live.catalog) == text
        # rows 1-3 were decoded with the table as it was then (x, no v, w): only row 4 has today's columns
        live.check_decoding("tmiss", relation, rows, skip_lines=3)
    finally:
        live.sql("DROP TABLE tmiss")


@live_test
def test_extension_types(live):
    live.sql("CREATE EXTENSION IF NOT EXISTS hstore")
    live.build_catalog()
    live.check("hstore", ["''", "'a=>1'", "'a=>NULL, b=>\"x y\", \"q\\\"\"=>\"\\\\\"'",
                          "'\"\"=>\"\"'", "hstore('é', 'ü')", "(SELECT hstore(array_agg(i::text), "
                          "array_agg(repeat('v', i))) FROM generate_series(1, 200) i)"])
    live.check("tsvector", ["''", "'a fat cat'", "to_tsvector('english', 'The quick brown foxes jumped over "
                            "the lazy dogs, again and again')", "'a:1A,2B,3C,4 b:16383'",
                            "$$'it''s' 'back\\slash' 'x y':1$$::tsvector", "setweight(to_tsvector('simple', "
                            "'é ü ☃'), 'B')"])


@live_test
def test_ranges(live):
    live.check("int4range", ["'empty'", "'[1,5)'", "'(,5]'", "'[3,)'", "'(,)'", "int4range(NULL, NULL)",
                             "'[-2147483648,2147483647)'"])
    live.check("int8range", ["'[1,10000000000)'", "'empty'"])
    live.check("numrange", ["'[1.50,2.5]'", "'(,NaN)'", "'[-Infinity,Infinity]'"])
    live.check("daterange", ["'[2000-01-01,infinity)'", "'[0044-03-15 BC,2000-01-01)'"])
    live.check("tsrange", ["'[2000-01-01 00:00:00,2000-01-02 12:00:00.5)'", "'(-infinity,infinity)'"])
    live.check("tstzrange", ["'[2000-01-01 00:00:00+00,2021-03-14 12:00:00+00]'", "'empty'"])
    live.check("floatrange", ["'[-0,1e-310]'", "'(NaN,NaN)'", "'[1.5,Infinity)'"])
    live.check("textrange", ["'[\"\",\"a b\")'", "'[\"q\\\"\",z]'", "'(,\"\\\\\")'", "'[A,b)'", "'[\"(\",\"]\"]'"])
    live.check("int4multirange", ["'{}'", "'{[1,3), [5,7), [10,20), [30,40), [50,60), [70,80)}'", "'{(,5), [7,)}'"])
    live.check("datemultirange", ["'{[2000-01-01,2000-02-01), [2001-01-01,infinity)}'"])
    live.check("nummultirange", ["'{[1.5,2.5], (3,)}'"])


@live_test
def test_geometric(live):
    live.check("point", ["'(1,2)'", "'(-0,NaN)'", "'(1e-310,1e300)'", "'(0.1,Infinity)'"])
    live.check("lseg", ["'[(1,2),(3,4)]'"])
    live.check("box", ["'(3,4),(1,2)'", "'(0,0),(0,0)'"])
    live.check("line", ["'{1,-1,0}'", "'{0.5,2,-3.25}'"])
    live.check("circle", ["'<(1,2),3>'", "'<(0.1,-0.2),1e-5>'"])
    live.check("path", ["'[(1,2),(3,4),(5,6)]'", "'((0,0),(1,1),(2,0))'"])
    live.check("polygon", ["'((0,0),(1,1),(2,0))'", "'((1,2))'"])


# -- bulk: many random values in one round trip ------------------------------------------------------

@live_test
def test_bulk_floats(live):
    rnd = random.Random(20240601)
    b4 = [rnd.getrandbits(32) for _ in range(6000)] + [rnd.getrandbits(23) | (rnd.randrange(256) << 23)
                                                       for _ in range(2000)]
    b8 = [rnd.getrandbits(64) for _ in range(6000)] + [(rnd.randrange(2048) << 52) | rnd.choice((0, 1, 2**52 - 1))
                                                       for _ in range(2000)]
    short = [SETTINGS[0], SETTINGS[1], SETTINGS[2]]
    live.check("float4", [f"'{float_text(f4_value(b))}'::float8::float4" for b in b4], settings_list=short,
               decoding=False)
    live.check("float8", [f"'{float_text(f8_value(b))}'::float8" for b in b8], settings_list=short, decoding=False)


@live_test
def test_bulk_datetimes(live):
    rnd = random.Random(99)
    ts = [rnd.randrange(MIN_TS, END_TS) for _ in range(1500)] + [rnd.randrange(-3 * 10**15, 3 * 10**15)
                                                                 for _ in range(1500)]
    live.check("timestamptz", [f"'{tstz_text(us)}'::timestamptz" for us in ts], decoding=False)
    live.check("timestamp", [f"'{ts_text(us)}'::timestamp" for us in ts[:1500]], decoding=False)
    iv = [(rnd.randrange(-2**31, 2**31), rnd.randrange(-2**31, 2**31), rnd.randrange(-2**31 + 1, 2**31),
           rnd.randrange(-3599999999, 3600000000)) for _ in range(800)]
    iv += [(rnd.randrange(-30, 30), rnd.randrange(-40, 40), rnd.randrange(-30, 30), rnd.randrange(-10**7, 10**7))
           for _ in range(800)]
    live.check("interval", [interval_expr(*v) for v in iv], decoding=False)


@live_test
def test_bulk_numeric(live):
    rnd = random.Random(5)
    values = []
    for _ in range(3000):
        ip = str(rnd.randrange(10 ** rnd.randrange(0, 40))) if rnd.random() < 0.8 else "0"
        fp = "".join(rnd.choice("0123456789") for _ in range(rnd.randrange(0, 30)))
        values.append(("-" if rnd.random() < 0.5 else "") + ip + ("." + fp if fp else ""))
    live.check("numeric", [f"'{v}'::numeric" for v in values], settings_list=SETTINGS[:1], decoding=False)


# -- TOAST: every storage path of a varlena ----------------------------------------------------------

@live_test
def test_toast_paths(live):
    """Inline pglz and lz4, external compressed (both methods) and external uncompressed values."""
    from waldecode.heap.varlena import read_varlena

    md5s = "(SELECT string_agg(md5(i::text || %s), '') FROM generate_series(1, %d) i)"
    exprs = ["repeat('abc', 1000)", md5s % ("'x'", 2000), "repeat('z', 100)", md5s % ("'y'", 30),
             "(SELECT string_agg(md5(i::text) || repeat('-', 40), '') FROM generate_series(1, 2000) i)"]
    seen = set()
    for compression, storage in (("pglz", "extended"), ("lz4", "extended"), ("pglz", "external")):
        table = f"t{next(live.counter)}"
        live.sql(f"CREATE TABLE {table} (id int4, v text COMPRESSION {compression})")
        live.sql(f"ALTER TABLE {table} ALTER COLUMN v SET STORAGE {storage}")
        live.sql(f"INSERT INTO {table} VALUES " + ", ".join(f"({i}, {e})" for i, e in enumerate(exprs, 1)))
        for hoff, data in live.sql(f"SELECT t_hoff, t_data FROM heap_page_items(get_raw_page('{table}', 0)) "
                                   "ORDER BY lp"):
            data = bytes(data)
            off = 4 if data[4] != 0 else 8  # after id int4, maybe aligned
            b0 = data[off]
            value, _ = read_varlena(data, off, len(data))
            if isinstance(value, ToastPointer):
                seen.add(("external", value.compression))
            elif b0 & 3 == 2:
                seen.add(("inline", compression))
            else:
                seen.add(("plain", None))
        relid = live.sql("SELECT %s::regclass::oid", (table,))[0][0]
        relation = live.relation(relid)
        rows = {struct.unpack("<i", r[0])[0]: r for r in live.raw_rows(table, relation)}
        for rid, text in live.sql(f"SELECT id, v FROM {table}"):
            assert output_text(25, rows[rid][1], live.catalog) == text
        live.sql(f"DROP TABLE {table}")
    assert seen >= {("inline", "pglz"), ("inline", "lz4"), ("external", "pglz"), ("external", "lz4"),
                    ("external", None), ("plain", None)}, seen


@live_test
def test_more_containers(live):
    live.sql("CREATE DOMAIN intarr AS int4[]")
    live.sql("CREATE TYPE wide_t AS (a int2, b int8, c text, d \"char\", e float4, f timestamptz, g numeric)")
    live.build_catalog()
    live.check("intarr", ["'{1,2,3}'", "'[5:5]={1}'"])
    live.check("mood_d[]", ["ARRAY['ok', 'sad']::mood_d[]"])
    live.check("int4multirange[]", ["ARRAY['{[1,2), [4,8)}'::int4multirange, '{}']"])
    live.check("wide_t", ["ROW(1, 2, 'three', 'x', 1.5, '2000-01-01 00:00:00+00', 7.000)",
                          "ROW(NULL, 9223372036854775807, NULL, NULL, 'NaN', 'infinity', NULL)",
                          "ROW(-1, NULL, repeat('q', 200), NULL, NULL, NULL, 'NaN')"])
    live.check("wide_t[]", ["ARRAY[ROW(1, 2, 'a b', 'x', 1.5, '2000-01-01 00:00:00+00', 7)::wide_t, NULL]"])
    live.check("text[]", ["(SELECT array_agg(repeat(chr(65 + i % 26), i)) FROM generate_series(1, 400) i)"],
               settings_list=SETTINGS[:1])


# -- corrupt datums: the error names what is wrong -----------------------------------------------------

def _catalog():
    typ = dict(nspname="pg_catalog", typbyval=False, typstorage="x", typcategory="U", typdelim=",", typelem=0,
               typarray=0, typbasetype=0, typtypmod=-1, typrelid=0, format_type="")
    types = {
        1700: TypeInfo(oid=1700, typname="numeric", typlen=-1, typalign="i", typtype="b", typoutput="numeric_out",
                       **typ),
        23: TypeInfo(oid=23, typname="int4", typlen=4, typalign="i", typtype="b", typoutput="int4out", **typ),
        1007: TypeInfo(oid=1007, typname="_int4", typlen=-1, typalign="i", typtype="b", typoutput="array_out",
                       **typ),
        3802: TypeInfo(oid=3802, typname="jsonb", typlen=-1, typalign="i", typtype="b", typoutput="jsonb_out",
                       **typ),
        2950: TypeInfo(oid=2950, typname="uuid", typlen=16, typalign="c", typtype="b", typoutput="uuid_out", **typ),
        3615: TypeInfo(oid=3615, typname="tsquery", typlen=-1, typalign="i", typtype="b", typoutput="tsqueryout",
                       **typ),
    }
    return Catalog(server_version="15.0", server_version_num=150000, major=15, lsn=0, database="x",
                   database_oid=0, database_tablespace=0, settings=dict(DEFAULT_SETTINGS), relations={},
                   types=types)


def test_corrupt_datums():
    from waldecode.errors import CorruptRecordError, DecompressionError
    from waldecode.types import UnsupportedTypeError
    from waldecode.heap.varlena import read_varlena

    cat = _catalog()
    with pytest.raises(CorruptRecordError, match="int4 datum is 3 bytes, expected 4"):
        output_text(23, b"\x00\x00\x00", cat)
    with pytest.raises(CorruptRecordError, match="odd number"):
        output_text(1700, b"\x00\x80\x01", cat)
    with pytest.raises(CorruptRecordError, match="array datum has 7 dimensions"):
        output_text(1007, struct.pack("<iiI", 7, 0, 23), cat)
    with pytest.raises(CorruptRecordError, match="array element 2 of 2 runs past"):
        output_text(1007, struct.pack("<iiIii", 1, 0, 23, 2, 1) + struct.pack("<i", 5), cat)
    with pytest.raises(CorruptRecordError, match="jsonb container"):
        output_text(3802, struct.pack("<I", 0x40000005), cat)
    with pytest.raises(UnsupportedTypeError, match="type tsquery \\(OID 3615\\): output function tsqueryout"):
        output_text(3615, b"", cat)
    with pytest.raises(UnsupportedTypeError, match="type OID 99999 is not in the catalog"):
        output_text(99999, b"", cat)
    with pytest.raises(CorruptRecordError, match="claims 100 bytes but only 5 remain"):
        read_varlena(struct.pack("<I", 100 << 2) + b"x", 0, 5)
    with pytest.raises(DecompressionError, match="inline compressed datum at offset 0: pglz"):
        read_varlena(struct.pack("<II", (12 << 2) | 2, 50) + b"\x01\xff\xff\x00", 0, 12)
    with pytest.raises(CorruptRecordError, match="unknown vartag 7"):
        read_varlena(b"\x01\x07" + b"\x00" * 16, 0, 18)


def test_corrupt_tuples():
    from waldecode.errors import CorruptRecordError

    atts = (Attribute(attnum=1, attname="a", atttypid=23, atttypmod=-1, attlen=4, attbyval=True, attalign="i",
                      attstorage="p", attisdropped=False),
            Attribute(attnum=2, attname="b", atttypid=20, atttypmod=-1, attlen=8, attbyval=True, attalign="d",
                      attstorage="p", attisdropped=False))
    body = b"\x00" + struct.pack("<iiq", 1, 0, 2)  # 1 pad byte to t_hoff 24, a, padding, b
    assert deform_tuple(body, 2, 0, 24, atts) == [struct.pack("<i", 1), struct.pack("<q", 2)]
    with pytest.raises(CorruptRecordError, match="attribute 2 \\(8 bytes at offset 8 of the data\\) runs past"):
        deform_tuple(body[:-1], 2, 0, 24, atts)
    with pytest.raises(CorruptRecordError, match="has 3 attributes but its relation has only 2"):
        deform_tuple(body, 3, 0, 24, atts)
    with pytest.raises(CorruptRecordError, match="t_hoff 16 is smaller"):
        deform_tuple(body, 2, 0, 16, atts)
    # HEAP_HASNULL with a bitmap saying b is NULL: nothing after a is read
    assert deform_tuple(b"\x01" + struct.pack("<i", 7), 2, 1, 24, atts) == [struct.pack("<i", 7), None]


def test_print_literal():
    assert print_literal(23, "-5") == "-5"
    assert print_literal(701, "NaN") == "NaN"
    assert print_literal(1560, "101") == "B'101'"
    assert print_literal(16, "t") == "true" and print_literal(16, "f") == "false"
    assert print_literal(25, "it's \\x") == "'it''s \\x'"
