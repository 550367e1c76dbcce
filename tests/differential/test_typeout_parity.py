"""Native output (waldecode._typeout) against the pure-Python reference, byte for byte.

Values of every common type -- random, plus the edges (NaN, ±Infinity, -0, BC dates,
infinite timestamps, 1000-digit numerics, empty and multi-dimensional arrays with NULLs,
multibyte and invalid UTF-8 text) -- are encoded into their on-disk bytes
(``waldecode.testing.datums``; test_types_live.py checks the native output against a live
server's text as well).  ``TypeOut.value_text`` must print exactly the bytes of
``OutputContext.output`` under every settings combination of test_types_live (TimeZone,
DateStyle, IntervalStyle, extra_float_digits, bytea_output, lc_monetary) and majors 13, 15
and 17; where the reference raises, the native path raises the same error.

Whole tuples with mixed columns (NULLs anywhere, dropped columns, missing attributes,
1-byte / 4-byte / inline pglz and lz4 varlenas, external TOAST pointers resolved or
unchanged) go through the native deformer and column-list formatter and through
``heaptuple.deform_tuple`` + ``TestDecoding._tuple``: same values, same text; damaged
tuples raise the same errors.
"""

from __future__ import annotations

import dataclasses
import os
import random
import struct
from decimal import Decimal

import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

try:
    from waldecode import _typeout
except ImportError:
    if os.environ.get("WALDECODE_REQUIRE_NATIVE", "") not in ("", "0"):
        raise
    pytest.skip("the native output (waldecode._typeout) is not built", allow_module_level=True)

from fixture_data import FIXTURES  # noqa: E402
from type_values import FLOAT8_EDGES, SETTINGS, json_values  # noqa: E402

from waldecode.catalog import DEFAULT_SETTINGS, Attribute, Catalog, Relation  # noqa: E402
from waldecode.heap.heaptuple import deform_tuple  # noqa: E402
from waldecode.output import UNCHANGED_TOAST  # noqa: E402
from waldecode.output.base import CatalogView  # noqa: E402
from waldecode.output.test_decoding import TestDecoding  # noqa: E402
from waldecode.testing import datums  # noqa: E402
from waldecode.types import OutputContext  # noqa: E402
from waldecode.heap.varlena import ToastPointer  # noqa: E402

CATALOG = Catalog.load(FIXTURES / "pg15-off" / "types" / "snapshot.json.gz")
OID = {t.typname: t.oid for t in CATALOG.types.values() if t.nspname == "pg_catalog"}


def _context(s: dict, major: int = 15):
    merged = dict(DEFAULT_SETTINGS)
    merged.update(s)
    cat = CATALOG if major == CATALOG.major else dataclasses.replace(CATALOG, major=major)
    cat = dataclasses.replace(cat, settings=merged)
    ctx = OutputContext(cat, merged)
    return cat, ctx, _typeout.TypeOut(ctx)


# every settings combination of the live tests, and the majors whose output differs ("char", interval)
CONTEXTS = [_context(s) for s in SETTINGS] + [_context({}, 13), _context(SETTINGS[1], 17)]

# WALDECODE_TYPES_EXAMPLES=10 multiplies the examples, as for test_types_live (a longer hunt)
_SCALE = int(os.environ.get("WALDECODE_TYPES_EXAMPLES", "1"))
MANY = settings(max_examples=300 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))
SOME = settings(max_examples=100 * _SCALE, deadline=None, suppress_health_check=list(HealthCheck))


def outcome(fn):
    """fn()'s result, or (exception type, message) when it raises."""
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 -- the point is to compare whatever is raised
        return (type(e), str(e))


def check(typname: str, payload, contexts=CONTEXTS, native: bool = True) -> None:
    """Native and Python print ``payload`` alike; with ``native``, a value the reference prints
    is printed by the C code itself, not handed back to the Python output function (which
    would hide a bug of the C code behind the reference's right answer)."""
    oid = OID[typname] if isinstance(typname, str) else typname
    for _cat, ctx, typeout in contexts:
        want = outcome(lambda: ctx.output(oid, payload).encode("utf-8", "surrogateescape"))
        declined = typeout.declined_values
        got = outcome(lambda: typeout.value_text(oid, payload))
        assert got == want, f"{typname} {bytes(payload)!r} under {ctx.settings}: native {got!r} != python {want!r}"
        if native and isinstance(want, bytes):
            assert typeout.declined_values == declined, f"{typname} {bytes(payload)!r}: C code declined it"


def test_kinds():
    """The common types print natively; the rare ones are explicitly Python's."""
    typeout = CONTEXTS[0][2]
    native = ["int2", "int4", "int8", "oid", "xid", "cid", "xid8", "bool", "char", "name", "text", "varchar",
              "bpchar", "json", "bytea", "uuid", "float4", "float8", "numeric", "date", "time", "timetz",
              "timestamp", "timestamptz", "interval", "jsonb", "inet", "cidr", "macaddr", "macaddr8", "money",
              "pg_lsn", "tid", "bit", "varbit", "_int4", "_text", "_numeric", "_jsonb", "_timestamptz"]
    for name in native:
        assert typeout.is_native(OID[name]), name
    for name in ("xml", "point", "int4range", "tsvector", "int2vector", "record", "_int4range", "_box"):
        assert not typeout.is_native(OID[name]), name
    assert typeout.kind_name(OID["_int4range"]) == "array"  # an array, whose elements fall back: whole
    assert typeout.kind_name(OID["point"]) == "python"


# -- scalars -----------------------------------------------------------------------------------------

@MANY
@given(st.integers(-2**63, 2**63 - 1))
def test_integers(v):
    check("int8", datums.int8(v))
    check("int4", datums.int4(v >> 32))
    check("int2", datums.int2(v >> 48))
    check("oid", datums.uint4(v & 0xFFFFFFFF))
    check("xid8", datums.uint8(v & 0xFFFFFFFFFFFFFFFF))
    check("money", datums.int8(v))


def test_integer_edges():
    for v in (0, -1, 1, 2**31 - 1, -2**31):
        check("int4", datums.int4(v))
    for v in (2**63 - 1, -2**63):
        check("int8", datums.int8(v))
        check("money", datums.int8(v))
    check("int4", b"\x00\x00\x00")  # impossible length: the reference's CorruptRecordError


@MANY
@given(st.integers(0, 2**64 - 1), st.integers(0, 2**32 - 1))
def test_floats(bits8, bits4):
    check("float8", datums.float8_bits(bits8))
    check("float4", datums.float4_bits(bits4))


def test_float_edges():
    values = FLOAT8_EDGES + [2.0 ** k for k in range(-1074, 1024, 7)] + [-(2.0 ** k) * 3 for k in range(-60, 60)]
    for x in values:
        check("float8", datums.float8(x))
    for e in range(0, 256):
        for bits in ((e << 23), (e << 23) | 1, ((e << 23) - 1) & 0x7FFFFFFF, (e << 23) | 0x7FFFFF):
            check("float4", datums.float4_bits(bits))
            check("float4", datums.float4_bits(bits | 0x80000000))
    for e in range(0, 2048):
        for m in (0, 1, 2**52 - 1, 2**51):
            check("float8", datums.float8_bits((e << 52) | m))


def test_float_bulk():
    """Shortest digits on 100,000 random bit patterns of each width (extra_float_digits 1),
    and %.*g on as many (0 and -3): the exactness of wd_shortest.h's arithmetic."""
    rnd = random.Random(20240601)
    efd = {c[1].extra_float_digits: c for c in CONTEXTS}
    contexts = [efd[1], efd[0], efd[-3]]
    for ctx_pair in contexts:
        _cat, ctx, typeout = ctx_pair
        for _ in range(100_000 if ctx.extra_float_digits == 1 else 20_000):
            b8 = datums.float8_bits(rnd.getrandbits(64))
            assert typeout.value_text(701, b8) == ctx.output(701, b8).encode(), b8
            b4 = datums.float4_bits(rnd.getrandbits(32))
            assert typeout.value_text(700, b4) == ctx.output(700, b4).encode(), b4


NUMERIC_EDGES = ["0", "0.000", "-0.000", "1", "-1", "NaN", "Infinity", "-Infinity", "0.1", "-12345.678900",
                 "9999.9999", "10000", "1e-20", "123456789012345678901234567890.123456789",
                 "0." + "0" * 300 + "1", "1" + "0" * 1000, "-" + "9" * 1000 + "." + "9" * 50,
                 "1E-16383", "0.00001", "100000000.00000001", "1E+1000", "-0.5", "5E+3", "12.3400"]


def test_numeric_edges():
    for v in NUMERIC_EDGES:
        check("numeric", datums.numeric(v))
    rnd = random.Random(3)
    big = "".join(rnd.choice("0123456789") for _ in range(1000))
    check("numeric", datums.numeric(big + "." + big))
    check("numeric", datums.numeric("-0." + big))
    # impossible: odd digit bytes, a bad sign, an unknown special, a truncated long header
    for bad in (b"\x00\x80\x01", b"\x00\x80", struct.pack("<H", 0xE000), b"\x00\x40\x01", b"\x00"):
        check("numeric", bad)


@MANY
@given(st.decimals(allow_nan=False, allow_infinity=False) | st.sampled_from(["NaN", "Infinity", "-Infinity"]))
def test_numeric(v):
    check("numeric", datums.numeric(v), CONTEXTS[:1])


@MANY
@given(st.booleans(), st.integers(-200, 200), st.integers(0, 300),
       st.lists(st.integers(0, 9999) | st.integers(10000, 65535), max_size=40), st.booleans())
def test_numeric_raw(negative, weight, dscale, digits, short):
    """Any NumericShort / NumericLong structure, digits out of range included."""
    short = short and -64 <= weight <= 63 and dscale <= 63
    check("numeric", datums.numeric_raw(negative, weight, dscale, digits, short), CONTEXTS[:1])


@SOME
@given(st.binary(max_size=40), st.text(max_size=40))
def test_text_family(raw, s):
    for name in ("text", "varchar", "bpchar", "json", "bytea"):
        check(name, raw)
        check(name, datums.text(s))
    check("name", datums.name(s))
    check("name", raw)
    check("uuid", (raw * 16)[:16] if raw else bytes(16))


@given(st.integers(0, 255))
def test_bool_char(b):
    check("bool", bytes((b,)))
    check("char", bytes((b,)))


MIN_TS = -211813488000000000  # 4714-11-24 00:00:00 BC
END_TS = 9223371331200000000  # 294277-01-01 00:00:00
TIMESTAMPS = (st.integers(MIN_TS, END_TS - 1) | st.integers(-2**63, 2**63 - 1) | st.integers(-10**17, 10**17)
              | st.integers(6 * 10**14, 9 * 10**14)  # 2019..2028: the DST rules of today
              | st.sampled_from([-2**63, 2**63 - 1, 0, -1, 1, MIN_TS, END_TS - 1]))


@MANY
@given(TIMESTAMPS, st.integers(-2**31, 2**31 - 1) | st.integers(-800000, 800000))
def test_timestamps_dates(us, days):
    check("timestamp", datums.int8(us))
    check("timestamptz", datums.int8(us))
    check("date", datums.int4(days))


def test_datetime_edges():
    for days in (-2**31, 2**31 - 1, -2451545, -2451546, 0, -1, 2145031948):
        check("date", datums.int4(days))
    # 2021 DST transitions of America/New_York and Europe/Berlin, to the second
    for base in (1615705200, 1636264800, 1616893200, 1635642000):
        for d in range(-3, 4):
            us = (base + d - 946684800) * 10**6
            check("timestamptz", datums.int8(us))
            check("timestamptz", datums.int8(us + 999999))


@MANY
@given(st.integers(0, 86400 * 10**6) | st.integers(-2**63, 2**63 - 1), st.integers(-57599, 57599)
       | st.integers(-2**31, 2**31 - 1))
def test_times(us, zone):
    check("time", datums.int8(us))
    check("timetz", datums.timetz(us, zone))


@MANY
@given(st.integers(-2**63, 2**63 - 1) | st.integers(-3599999999, 3599999999) | st.sampled_from([0, 1, -1, 500000]),
       st.integers(-2**31, 2**31 - 1) | st.integers(-40, 40), st.integers(-2**31, 2**31 - 1) | st.integers(-30, 30))
def test_intervals(time, day, month):
    check("interval", datums.interval(time, day, month))


def test_interval_infinities():
    check("interval", datums.interval(-2**63, -2**31, -2**31))
    check("interval", datums.interval(2**63 - 1, 2**31 - 1, 2**31 - 1))


@SOME
@given(json_values)
def test_jsonb(value):
    check("jsonb", datums.jsonb(value), CONTEXTS[:1])


def test_jsonb_edges():
    for v in ({}, [], None, True, False, 0, Decimal("-0"), Decimal("1.50"), "", "\x01\b\f\n\r\t\"\\/é☃",
              {"a": [1, 2, {}], "": None}, [[[[]]]], list(range(100)), {f"k{i}": i for i in range(70)},
              Decimal("1" + "0" * 1000)):
        check("jsonb", datums.jsonb(v), CONTEXTS[:1])
    for bad in (b"", struct.pack("<I", 0x40000005), struct.pack("<II", 0x50000001, 0x70000000),
                struct.pack("<II", 0x10000002, 0) + b"\x00" * 8, struct.pack("<II", 0x40000001, 0x10000003) + b"abc"):
        check("jsonb", bad, CONTEXTS[:1])


@MANY
@given(st.integers(0, 255), st.binary(min_size=16, max_size=16), st.sampled_from([2, 3, 2, 3, 4]),
       st.booleans())
def test_network(bits, addr, family, short):
    size = 4 if family == 2 else 16
    if short:
        bits %= 33 if family == 2 else 129
    payload = datums.inet(family, bits, addr[:size])
    check("inet", payload, CONTEXTS[:1])
    check("cidr", payload, CONTEXTS[:1])
    check("macaddr", addr[:6], CONTEXTS[:1])
    check("macaddr8", addr[:8], CONTEXTS[:1])
    check("pg_lsn", addr[:8], CONTEXTS[:1])
    check("tid", addr[:6], CONTEXTS[:1])
    check("uuid", addr, CONTEXTS[:1])


def test_network_edges():
    for words in ([0] * 8, [0] * 7 + [1], [0] * 7 + [2], [0] * 5 + [0xFFFF, 0x0102, 0x0304],
                  [0] * 6 + [0x0102, 0x0304], [1] + [0] * 7, [1, 0, 0, 2, 0, 0, 0, 3], [0, 0, 1, 0, 0, 0, 0, 0],
                  [0] * 5 + [0xFFFE, 0x0102, 0x0304], [0xFE80, 0, 0, 0, 0, 0, 0, 1]):
        addr = b"".join(w.to_bytes(2, "big") for w in words)
        for bits in (0, 64, 128):
            check("inet", datums.inet(3, bits, addr), CONTEXTS[:1])
            check("cidr", datums.inet(3, bits, addr), CONTEXTS[:1])
    check("inet", b"\x02", CONTEXTS[:1])


@SOME
@given(st.text(alphabet="01", max_size=80))
def test_bit_strings(bits):
    check("varbit", datums.varbit(bits), CONTEXTS[:1])
    check("bit", datums.varbit(bits), CONTEXTS[:1])
    check("varbit", datums.varbit(bits)[:-1] if bits else b"\x01\x00\x00\x00", CONTEXTS[:1])


def test_money_locale():
    """lc_monetary other than C, if this machine has such a locale (the server's rules)."""
    import locale

    for name in ("de_DE.UTF-8", "en_US.UTF-8", "fr_FR.UTF-8", "C.utf8"):
        try:
            saved = locale.setlocale(locale.LC_MONETARY)
            locale.setlocale(locale.LC_MONETARY, name)
            locale.setlocale(locale.LC_MONETARY, saved)
        except locale.Error:
            continue
        contexts = [_context({"lc_monetary": name})]
        for v in (0, 1, -1, 123456789, -123456789, 2**63 - 1, -2**63, 99, -100000):
            check("money", datums.int8(v), contexts)


def test_money_layouts():
    """Every placement cash_out knows (sign_posn 0-4, cs_precedes, sep_by_space 0-2), native and
    Python alike: the machine's locales show few of them, so the conventions are set by hand."""
    base = _context({})[1].monetary
    contexts = []
    for posn in range(5):
        for precedes in (0, 1):
            for sep in (0, 1, 2):
                cat, ctx, _ = _context({})
                ctx.monetary = dict(base, p_sign_posn=posn, n_sign_posn=(posn + 1) % 5, p_cs_precedes=precedes,
                                    n_cs_precedes=1 - precedes, p_sep_by_space=sep, n_sep_by_space=(sep + 1) % 3,
                                    positive_sign="+", negative_sign="-", currency_symbol="EUR")
                contexts.append((cat, ctx, _typeout.TypeOut(ctx)))
    for v in (0, 1, -1, 123456789, -123456789, 2**63 - 1, -2**63):
        check("money", datums.int8(v), contexts)


# -- arrays ------------------------------------------------------------------------------------------

def _elem(name: str):
    """(element type name, strategy of its stored bytes)"""
    return {
        "int4": st.integers(-2**31, 2**31 - 1).map(datums.int4),
        "int8": st.integers(-2**63, 2**63 - 1).map(datums.int8),
        "int2": st.integers(-2**15, 2**15 - 1).map(datums.int2),
        "float8": st.integers(0, 2**64 - 1).map(datums.float8_bits),
        "float4": st.integers(0, 2**32 - 1).map(datums.float4_bits),
        "numeric": st.decimals(allow_nan=False, allow_infinity=False).map(datums.numeric),
        "text": st.text(max_size=12).map(datums.text) | st.sampled_from([b"", b"NULL", b"null", b"a b", b"{x}",
                                                                         b'q"', b"b\\s", b"a,b", b"a;b"]),
        "varchar": st.text(max_size=8).map(datums.text),
        "bpchar": st.text(max_size=8).map(datums.text),
        "bytea": st.binary(max_size=12),
        "bool": st.sampled_from([b"\x00", b"\x01"]),
        "date": st.integers(-2**31, 2**31 - 1).map(datums.int4),
        "timestamptz": TIMESTAMPS.map(datums.int8),
        "interval": st.tuples(st.integers(-10**12, 10**12), st.integers(-40, 40), st.integers(-30, 30)).map(
            lambda t: datums.interval(*t)),
        "uuid": st.binary(min_size=16, max_size=16),
        "jsonb": json_values.map(datums.jsonb),
        "inet": st.tuples(st.integers(0, 32), st.binary(min_size=4, max_size=4)).map(
            lambda t: datums.inet(2, t[0], t[1])),
        "box": st.binary(min_size=32, max_size=32),  # ';'-delimited, and printed by Python: the whole array falls back
        "char": st.binary(min_size=1, max_size=1),
        "name": st.text(max_size=8).map(datums.name),
    }[name]


ELEMS = ["int4", "int8", "int2", "float8", "float4", "numeric", "text", "varchar", "bpchar", "bytea", "bool", "date",
         "timestamptz", "interval", "uuid", "jsonb", "inet", "box", "char", "name"]


@st.composite
def arrays(draw):
    name = draw(st.sampled_from(ELEMS))
    typ = CATALOG.types[OID[name]]
    ndim = draw(st.integers(0, 3))
    dims = [draw(st.integers(0 if draw(st.integers(0, 9)) == 0 else 1, 3)) for _ in range(ndim)]
    nitems = 1
    for d in dims:
        nitems *= d
    if ndim == 0:
        nitems = 0
    items = [None if draw(st.integers(0, 4)) == 0 else draw(_elem(name)) for _ in range(nitems)]
    lbounds = [draw(st.sampled_from([1, 1, 0, -3, 2**31 - 1])) for _ in range(ndim)]
    payload = datums.array(typ.oid, typ.typlen, typ.typalign, items, dims, lbounds,
                           short_headers=draw(st.booleans()))
    return "_" + name, payload


@MANY
@given(arrays())
def test_arrays(arr):
    name, payload = arr
    check(name, payload, CONTEXTS[:2], native=name != "_box")


def test_array_edges():
    i4 = CATALOG.types[OID["int4"]]
    check("_int4", datums.array(i4.oid, 4, "i", [], [], []))
    check("_int4", datums.array(i4.oid, 4, "i", [], [0], [1]))
    check("_int4", datums.array(i4.oid, 4, "i", [None] * 6, [2, 3], [1, 1]))
    check("_text", datums.array(25, -1, "i", [b"NULL", b"", None, b"x y", b'"', b"\\"], [3, 2], [0, 5]))
    check("_int4", struct.pack("<iiI", 7, 0, 23))  # 7 dimensions
    check("_int4", struct.pack("<iiIii", 1, 0, 23, 2, 1) + struct.pack("<i", 5))  # element 2 missing
    check("_int4", struct.pack("<iiIii", 1, 0, 99999, 1, 1) + struct.pack("<i", 5))  # unknown element type


# -- whole tuples --------------------------------------------------------------------------------------

COLUMN_TYPES = ["int4", "int8", "int2", "bool", "float4", "float8", "numeric", "text", "varchar", "bpchar", "name",
                "bytea", "date", "time", "timetz", "timestamp", "timestamptz", "interval", "uuid", "json", "jsonb",
                "inet", "money", "bit", "varbit", "char", "oid", "_int4", "_text", "xml", "point"]
COLUMN_NAMES = ["id", "a", "Mixed", "select", "with space", "é", 'x"y', "_u1", "abalance", "filler"]


def _value(name: str):
    if name.startswith("_"):
        return _array_of(name[1:])
    if name in ("time",):
        return st.integers(0, 86400 * 10**6).map(datums.int8)
    if name == "timetz":
        return st.tuples(st.integers(0, 86400 * 10**6), st.integers(-57599, 57599)).map(lambda t: datums.timetz(*t))
    if name in ("timestamp",):
        return TIMESTAMPS.map(datums.int8)
    if name in ("oid",):
        return st.integers(0, 2**32 - 1).map(datums.uint4)
    if name == "money":
        return st.integers(-2**63, 2**63 - 1).map(datums.int8)
    if name in ("bit", "varbit"):
        return st.text(alphabet="01", max_size=20).map(datums.varbit)
    if name in ("json", "xml"):
        return st.text(max_size=30).map(datums.text)
    if name == "point":
        return st.binary(min_size=16, max_size=16)
    if name == "text":
        return st.text(max_size=30).map(datums.text) | st.sampled_from([b"it's", b"''", b"x" * 3000])
    return _elem(name)


def _array_of(elem: str):
    typ = CATALOG.types[OID[elem]]
    return st.lists(st.none() | _elem(elem), max_size=5).map(
        lambda items: datums.array(typ.oid, typ.typlen, typ.typalign, items))


@st.composite
def tuples(draw):
    """(attributes, datums, natts, toast values): a random relation and one stored tuple of it."""
    ncols = draw(st.integers(1, 14))
    attributes = []
    values = []
    toast = {}
    natts = ncols - draw(st.integers(0, 2)) if ncols > 2 else ncols
    for i in range(ncols):
        name = draw(st.sampled_from(COLUMN_TYPES))
        typ = CATALOG.types[OID[name]]
        dropped = draw(st.integers(0, 9)) == 0
        value = None if draw(st.integers(0, 4)) == 0 else draw(_value(name))
        missing = None
        if i >= natts and draw(st.booleans()):
            missing = draw(st.sampled_from(["t", "f", "12.50", "it's", "", "NaN", "{1,2}"]))
        attributes.append(Attribute(attnum=i + 1, attname=draw(st.sampled_from(COLUMN_NAMES)),
                                    atttypid=0 if dropped else typ.oid, atttypmod=-1, attlen=typ.typlen,
                                    attbyval=typ.typbyval, attalign=typ.typalign, attstorage=typ.typstorage,
                                    attisdropped=dropped, atthasmissing=missing is not None, attmissingval=missing,
                                    type_name=typ.format_type))
        if value is not None and typ.typlen == -1:
            form = draw(st.sampled_from(["4b", "4b", "1b", "pglz", "lz4", "external"]))
            if form == "1b" and len(value) >= 126:
                form = "4b"
            if form == "external":
                valueid = 1000 + i
                if draw(st.booleans()):
                    toast[valueid] = value  # the transaction wrote its chunks: resolved
                value = datums.toast_pointer(len(value), len(value), valueid, 99999)
            else:
                value = datums.varlena(value, form)
        values.append(value)
    return attributes, values, natts, toast


def _python_line(cat, ctx, rel, body, infomask2, infomask, hoff, toast, skip_nulls):
    """replay.py + TestDecoding: deform_tuple, TOAST pointers replaced, the column list."""
    values = deform_tuple(body, infomask2, infomask, hoff, rel.attributes)
    for i, v in enumerate(values):
        if isinstance(v, ToastPointer) and not rel.attributes[i].attisdropped:
            got = toast(v)
            values[i] = UNCHANGED_TOAST if got is None else got
    view = CatalogView(cat, lambda: ctx)
    plugin = TestDecoding(lambda line: None)
    plugin.startup({}, view)
    return plugin._tuple(view, rel, values, skip_nulls).encode("utf-8", "surrogateescape")


@MANY
@given(tuples(), st.sampled_from(range(len(CONTEXTS))))
def test_tuples(tup, ci):
    attributes, values, natts, toast_values = tup
    cat, ctx, typeout = CONTEXTS[ci]
    rel = Relation(oid=1, relname="t", nspname="public", relkind="r", relpersistence="p", relfilenode=1,
                   reltablespace=0, relreplident="d", attributes=tuple(attributes))
    body, infomask2, infomask, hoff = datums.heap_tuple(attributes, values, natts)
    desc = typeout.relation(attributes)

    def toast(pointer):
        return toast_values.get(pointer.va_valueid)

    assert outcome(lambda: desc.deform_values(body, infomask2, infomask, hoff)) == \
        outcome(lambda: deform_tuple(body, infomask2, infomask, hoff, attributes))
    declined = typeout.declined_values
    printed = True
    for skip_nulls in (False, True):
        want = outcome(lambda: _python_line(cat, ctx, rel, body, infomask2, infomask, hoff, toast, skip_nulls))
        printed = printed and isinstance(want, bytes)
        out = _typeout.OutBuf(16)
        got = outcome(lambda: (desc.append_tuple(out, body, infomask2, infomask, hoff, skip_nulls, toast),
                               out.getvalue())[1])
        assert got == want
        wal = datums.wal_tuple(attributes, values, natts)
        out.clear()
        got = outcome(lambda: (desc.append_wal_tuple(out, wal, skip_nulls, toast), out.getvalue())[1])
        assert got == want
    # a valid tuple is walked and printed in C (only the Python types' values go through Python)
    assert desc.python_tuples == 0
    assert typeout.declined_values == declined or not printed


@SOME
@given(tuples(), st.integers(0, 10**6), st.integers(0, 255), st.sampled_from(["truncate", "flip", "hoff", "natts"]))
def test_damaged_tuples(tup, where, byte, how):
    """A damaged tuple: the same error (or, if it still reads, the same text) both ways."""
    attributes, values, natts, toast_values = tup
    cat, ctx, typeout = CONTEXTS[0]
    rel = Relation(oid=1, relname="t", nspname="public", relkind="r", relpersistence="p", relfilenode=1,
                   reltablespace=0, relreplident="d", attributes=tuple(attributes))
    body, infomask2, infomask, hoff = datums.heap_tuple(attributes, values, natts)
    if how == "truncate":
        body = body[:where % (len(body) + 1)]
    elif how == "flip" and body:
        b = bytearray(body)
        b[where % len(b)] = byte
        body = bytes(b)
    elif how == "hoff":
        hoff = byte
    else:
        infomask2 = byte % 20
    desc = typeout.relation(attributes)

    def toast(pointer):
        return toast_values.get(pointer.va_valueid)

    assert outcome(lambda: desc.deform_values(body, infomask2, infomask, hoff)) == \
        outcome(lambda: deform_tuple(body, infomask2, infomask, hoff, attributes))
    want = outcome(lambda: _python_line(cat, ctx, rel, body, infomask2, infomask, hoff, toast, False))
    out = _typeout.OutBuf()
    out.write("kept")
    got = outcome(lambda: (desc.append_tuple(out, body, infomask2, infomask, hoff, False, toast), out.getvalue())[1])
    if isinstance(want, bytes):
        assert got == b"kept" + want
    else:
        assert got == want
        assert out.getvalue() == b"kept"  # nothing of a failed tuple is left in the buffer


def test_toast_pointer_without_resolver():
    """Without a ``toast`` callback an external pointer raises as OutputContext.output does."""
    typ = CATALOG.types[25]
    att = Attribute(attnum=1, attname="v", atttypid=25, atttypmod=-1, attlen=-1, attbyval=False, attalign="i",
                    attstorage="x", attisdropped=False, type_name="text")
    body, infomask2, infomask, hoff = datums.heap_tuple([att], [datums.toast_pointer(5000, 3000, 7, 99999, 1)])
    desc = CONTEXTS[0][2].relation([att])
    with pytest.raises(Exception, match="still a TOAST pointer") as e:
        desc.append_tuple(_typeout.OutBuf(), body, infomask2, infomask, hoff)
    assert type(e.value).__name__ == "TypeOutputError"
    assert typ.typname == "text"


def test_outbuf():
    out = _typeout.OutBuf(1)
    out.write("é")
    out.write(b"\x00x")
    out.write("\udcff")  # a surrogate escape is the byte it stands for
    assert out.getvalue() == "é".encode() + b"\x00x\xff" and len(out) == 5
    import io

    f = io.BytesIO()
    out.flush_to(f)
    assert f.getvalue() == "é".encode() + b"\x00x\xff" and len(out) == 0
    out.write("abc")
    out.truncate(1)
    assert out.take() == b"a" and out.getvalue() == b""


def test_python_implementation_does_not_load_it():
    """WALDECODE_IMPL=python: the package never imports waldecode._typeout; _impl.typeout() says None."""
    import subprocess
    import sys

    code = ("import sys; import waldecode.cli, waldecode.logical.session, waldecode.logical.replay, waldecode.output.test_decoding; "
            "from waldecode import _impl; assert _impl.typeout() is None; "
            "assert 'waldecode._typeout' not in sys.modules, 'imported'")
    env = dict(os.environ, WALDECODE_IMPL="python")
    subprocess.run([sys.executable, "-c", code], env=env, check=True)
    env["WALDECODE_IMPL"] = "cython"
    subprocess.run([sys.executable, "-c", "from waldecode import _impl, _typeout; assert _impl.typeout() is _typeout"],
                   env=env, check=True)


def test_python_columns():
    """Which columns of a relation go through Python output functions, at a glance."""
    def att(num, typname, dropped=False):
        typ = CATALOG.types[OID[typname]]
        return Attribute(attnum=num, attname=f"c{num}", atttypid=0 if dropped else typ.oid, atttypmod=-1,
                         attlen=typ.typlen, attbyval=typ.typbyval, attalign=typ.typalign, attstorage=typ.typstorage,
                         attisdropped=dropped, type_name=typ.format_type)

    desc = CONTEXTS[0][2].relation([att(1, "int4"), att(2, "point"), att(3, "xml", True), att(4, "_int4range"),
                                    att(5, "_text")])
    assert desc.python_columns == [2, 4]
