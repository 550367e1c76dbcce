"""The built-in functions a row filter may call, by pg_proc OID (src/include/catalog/pg_proc.dat), each as its
C function (prosrc) computes it, errors included."""

from __future__ import annotations

import math
import re
import struct
from decimal import ROUND_HALF_UP, Decimal
from fractions import Fraction

from ...pg.pg_type import INT2OID, INT4OID, INT8OID
from ...types.datetime import (DATEVAL_NOBEGIN, DATEVAL_NOEND, DT_NOBEGIN, DT_NOEND, POSTGRES_EPOCH_JDATE,
                               USECS_PER_DAY)
from .datums import TIMESTAMP_END_JULIAN, _NUMERIC_CONTEXT
from .nodetree import RowFilterError


# ---------------------------------------------------------------------------------------------
# Built-in functions by pg_proc OID (src/include/catalog/pg_proc.dat), implemented by prosrc
# ---------------------------------------------------------------------------------------------

# OID -> prosrc, the C function (several SQL functions share one); immutable built-ins only
_PROCS = {
    56: 'boollt',  # boollt(boolean, boolean)
    57: 'boolgt',  # boolgt(boolean, boolean)
    60: 'booleq',  # booleq(boolean, boolean)
    62: 'nameeq',  # nameeq(name, name)
    63: 'int2eq',  # int2eq(smallint, smallint)
    64: 'int2lt',  # int2lt(smallint, smallint)
    65: 'int4eq',  # int4eq(integer, integer)
    66: 'int4lt',  # int4lt(integer, integer)
    67: 'texteq',  # texteq(text, text)
    84: 'boolne',  # boolne(boolean, boolean)
    141: 'int4mul',  # int4mul(integer, integer)
    144: 'int4ne',  # int4ne(integer, integer)
    145: 'int2ne',  # int2ne(smallint, smallint)
    146: 'int2gt',  # int2gt(smallint, smallint)
    147: 'int4gt',  # int4gt(integer, integer)
    148: 'int2le',  # int2le(smallint, smallint)
    149: 'int4le',  # int4le(integer, integer)
    150: 'int4ge',  # int4ge(integer, integer)
    151: 'int2ge',  # int2ge(smallint, smallint)
    152: 'int2mul',  # int2mul(smallint, smallint)
    153: 'int2div',  # int2div(smallint, smallint)
    154: 'int4div',  # int4div(integer, integer)
    155: 'int2mod',  # int2mod(smallint, smallint)
    156: 'int4mod',  # int4mod(integer, integer)
    157: 'textne',  # textne(text, text)
    158: 'int24eq',  # int24eq(smallint, integer)
    159: 'int42eq',  # int42eq(integer, smallint)
    160: 'int24lt',  # int24lt(smallint, integer)
    161: 'int42lt',  # int42lt(integer, smallint)
    162: 'int24gt',  # int24gt(smallint, integer)
    163: 'int42gt',  # int42gt(integer, smallint)
    164: 'int24ne',  # int24ne(smallint, integer)
    165: 'int42ne',  # int42ne(integer, smallint)
    166: 'int24le',  # int24le(smallint, integer)
    167: 'int42le',  # int42le(integer, smallint)
    168: 'int24ge',  # int24ge(smallint, integer)
    169: 'int42ge',  # int42ge(integer, smallint)
    170: 'int24mul',  # int24mul(smallint, integer)
    171: 'int42mul',  # int42mul(integer, smallint)
    172: 'int24div',  # int24div(smallint, integer)
    173: 'int42div',  # int42div(integer, smallint)
    176: 'int2pl',  # int2pl(smallint, smallint)
    177: 'int4pl',  # int4pl(integer, integer)
    178: 'int24pl',  # int24pl(smallint, integer)
    179: 'int42pl',  # int42pl(integer, smallint)
    180: 'int2mi',  # int2mi(smallint, smallint)
    181: 'int4mi',  # int4mi(integer, integer)
    182: 'int24mi',  # int24mi(smallint, integer)
    183: 'int42mi',  # int42mi(integer, smallint)
    184: 'oideq',  # oideq(oid, oid)
    185: 'oidne',  # oidne(oid, oid)
    202: 'float4mul',  # float4mul(real, real)
    203: 'float4div',  # float4div(real, real)
    204: 'float4pl',  # float4pl(real, real)
    205: 'float4mi',  # float4mi(real, real)
    206: 'float4um',  # float4um(real)
    207: 'float4abs',  # float4abs(real)
    212: 'int4um',  # int4um(integer)
    213: 'int2um',  # int2um(smallint)
    216: 'float8mul',  # float8mul(double precision, double precision)
    217: 'float8div',  # float8div(double precision, double precision)
    218: 'float8pl',  # float8pl(double precision, double precision)
    219: 'float8mi',  # float8mi(double precision, double precision)
    220: 'float8um',  # float8um(double precision)
    221: 'float8abs',  # float8abs(double precision)
    235: 'i2tod',  # float8(smallint)
    236: 'i2tof',  # float4(smallint)
    237: 'dtoi2',  # int2(double precision)
    238: 'ftoi2',  # int2(real)
    279: 'float48mul',  # float48mul(real, double precision)
    280: 'float48div',  # float48div(real, double precision)
    281: 'float48pl',  # float48pl(real, double precision)
    282: 'float48mi',  # float48mi(real, double precision)
    283: 'float84mul',  # float84mul(double precision, real)
    284: 'float84div',  # float84div(double precision, real)
    285: 'float84pl',  # float84pl(double precision, real)
    286: 'float84mi',  # float84mi(double precision, real)
    287: 'float4eq',  # float4eq(real, real)
    288: 'float4ne',  # float4ne(real, real)
    289: 'float4lt',  # float4lt(real, real)
    290: 'float4le',  # float4le(real, real)
    291: 'float4gt',  # float4gt(real, real)
    292: 'float4ge',  # float4ge(real, real)
    293: 'float8eq',  # float8eq(double precision, double precision)
    294: 'float8ne',  # float8ne(double precision, double precision)
    295: 'float8lt',  # float8lt(double precision, double precision)
    296: 'float8le',  # float8le(double precision, double precision)
    297: 'float8gt',  # float8gt(double precision, double precision)
    298: 'float8ge',  # float8ge(double precision, double precision)
    299: 'float48eq',  # float48eq(real, double precision)
    300: 'float48ne',  # float48ne(real, double precision)
    301: 'float48lt',  # float48lt(real, double precision)
    302: 'float48le',  # float48le(real, double precision)
    303: 'float48gt',  # float48gt(real, double precision)
    304: 'float48ge',  # float48ge(real, double precision)
    305: 'float84eq',  # float84eq(double precision, real)
    306: 'float84ne',  # float84ne(double precision, real)
    307: 'float84lt',  # float84lt(double precision, real)
    308: 'float84le',  # float84le(double precision, real)
    309: 'float84gt',  # float84gt(double precision, real)
    310: 'float84ge',  # float84ge(double precision, real)
    311: 'ftod',  # float8(real)
    312: 'dtof',  # float4(double precision)
    313: 'i2toi4',  # int4(smallint)
    314: 'i4toi2',  # int2(integer)
    316: 'i4tod',  # float8(integer)
    317: 'dtoi4',  # int4(double precision)
    318: 'i4tof',  # float4(integer)
    319: 'ftoi4',  # int4(real)
    401: 'rtrim1',  # text(character)
    462: 'int8um',  # int8um(bigint)
    463: 'int8pl',  # int8pl(bigint, bigint)
    464: 'int8mi',  # int8mi(bigint, bigint)
    465: 'int8mul',  # int8mul(bigint, bigint)
    466: 'int8div',  # int8div(bigint, bigint)
    467: 'int8eq',  # int8eq(bigint, bigint)
    468: 'int8ne',  # int8ne(bigint, bigint)
    469: 'int8lt',  # int8lt(bigint, bigint)
    470: 'int8gt',  # int8gt(bigint, bigint)
    471: 'int8le',  # int8le(bigint, bigint)
    472: 'int8ge',  # int8ge(bigint, bigint)
    474: 'int84eq',  # int84eq(bigint, integer)
    475: 'int84ne',  # int84ne(bigint, integer)
    476: 'int84lt',  # int84lt(bigint, integer)
    477: 'int84gt',  # int84gt(bigint, integer)
    478: 'int84le',  # int84le(bigint, integer)
    479: 'int84ge',  # int84ge(bigint, integer)
    480: 'int84',  # int4(bigint)
    481: 'int48',  # int8(integer)
    482: 'i8tod',  # float8(bigint)
    483: 'dtoi8',  # int8(double precision)
    653: 'ftoi8',  # int8(real)
    655: 'namelt',  # namelt(name, name)
    656: 'namele',  # namele(name, name)
    657: 'namegt',  # namegt(name, name)
    658: 'namege',  # namege(name, name)
    659: 'namene',  # namene(name, name)
    714: 'int82',  # int2(bigint)
    716: 'oidlt',  # oidlt(oid, oid)
    717: 'oidle',  # oidle(oid, oid)
    740: 'text_lt',  # text_lt(text, text)
    741: 'text_le',  # text_le(text, text)
    742: 'text_gt',  # text_gt(text, text)
    743: 'text_ge',  # text_ge(text, text)
    754: 'int28',  # int8(smallint)
    837: 'int82pl',  # int82pl(bigint, smallint)
    838: 'int82mi',  # int82mi(bigint, smallint)
    839: 'int82mul',  # int82mul(bigint, smallint)
    840: 'int82div',  # int82div(bigint, smallint)
    841: 'int28pl',  # int28pl(smallint, bigint)
    850: 'textlike',  # textlike(text, text)
    851: 'textnlike',  # textnlike(text, text)
    852: 'int48eq',  # int48eq(integer, bigint)
    853: 'int48ne',  # int48ne(integer, bigint)
    854: 'int48lt',  # int48lt(integer, bigint)
    855: 'int48gt',  # int48gt(integer, bigint)
    856: 'int48le',  # int48le(integer, bigint)
    857: 'int48ge',  # int48ge(integer, bigint)
    870: 'lower',  # lower(text)
    871: 'upper',  # upper(text)
    881: 'ltrim1',  # ltrim(text)
    882: 'rtrim1',  # rtrim(text)
    885: 'btrim1',  # btrim(text)
    940: 'int2mod',  # mod(smallint, smallint)
    941: 'int4mod',  # mod(integer, integer)
    942: 'int28mi',  # int28mi(smallint, bigint)
    943: 'int28mul',  # int28mul(smallint, bigint)
    945: 'int8mod',  # int8mod(bigint, bigint)
    947: 'int8mod',  # mod(bigint, bigint)
    948: 'int28div',  # int28div(smallint, bigint)
    1048: 'bpchareq',  # bpchareq(character, character)
    1049: 'bpcharlt',  # bpcharlt(character, character)
    1050: 'bpcharle',  # bpcharle(character, character)
    1051: 'bpchargt',  # bpchargt(character, character)
    1052: 'bpcharge',  # bpcharge(character, character)
    1053: 'bpcharne',  # bpcharne(character, character)
    1086: 'date_eq',  # date_eq(date, date)
    1087: 'date_lt',  # date_lt(date, date)
    1088: 'date_le',  # date_le(date, date)
    1089: 'date_gt',  # date_gt(date, date)
    1090: 'date_ge',  # date_ge(date, date)
    1091: 'date_ne',  # date_ne(date, date)
    1152: 'timestamp_eq',  # timestamptz_eq(timestamp with time zone, timestamp with time zone)
    1153: 'timestamp_ne',  # timestamptz_ne(timestamp with time zone, timestamp with time zone)
    1154: 'timestamp_lt',  # timestamptz_lt(timestamp with time zone, timestamp with time zone)
    1155: 'timestamp_le',  # timestamptz_le(timestamp with time zone, timestamp with time zone)
    1156: 'timestamp_ge',  # timestamptz_ge(timestamp with time zone, timestamp with time zone)
    1157: 'timestamp_gt',  # timestamptz_gt(timestamp with time zone, timestamp with time zone)
    1230: 'int8abs',  # int8abs(bigint)
    1251: 'int4abs',  # int4abs(integer)
    1253: 'int2abs',  # int2abs(smallint)
    1257: 'textlen',  # textlen(text)
    1258: 'textcat',  # textcat(text, text)
    1274: 'int84pl',  # int84pl(bigint, integer)
    1275: 'int84mi',  # int84mi(bigint, integer)
    1276: 'int84mul',  # int84mul(bigint, integer)
    1277: 'int84div',  # int84div(bigint, integer)
    1278: 'int48pl',  # int48pl(integer, bigint)
    1279: 'int48mi',  # int48mi(integer, bigint)
    1280: 'int48mul',  # int48mul(integer, bigint)
    1281: 'int48div',  # int48div(integer, bigint)
    1317: 'textlen',  # length(text)
    1318: 'bpcharlen',  # length(character)
    1367: 'bpcharlen',  # character_length(character)
    1369: 'textlen',  # character_length(text)
    1372: 'bpcharlen',  # char_length(character)
    1374: 'textoctetlen',  # octet_length(text)
    1381: 'textlen',  # char_length(text)
    1394: 'float4abs',  # abs(real)
    1395: 'float8abs',  # abs(double precision)
    1396: 'int8abs',  # abs(bigint)
    1397: 'int4abs',  # abs(integer)
    1398: 'int2abs',  # abs(smallint)
    1569: 'textlike',  # like(text, text)
    1570: 'textnlike',  # notlike(text, text)
    1631: 'textlike',  # bpcharlike(character, text)
    1632: 'textnlike',  # bpcharnlike(character, text)
    1638: 'oidgt',  # oidgt(oid, oid)
    1639: 'oidge',  # oidge(oid, oid)
    1691: 'boolle',  # boolle(boolean, boolean)
    1692: 'boolge',  # boolge(boolean, boolean)
    1704: 'numeric_abs',  # numeric_abs(numeric)
    1705: 'numeric_abs',  # abs(numeric)
    1718: 'numeric_eq',  # numeric_eq(numeric, numeric)
    1719: 'numeric_ne',  # numeric_ne(numeric, numeric)
    1720: 'numeric_gt',  # numeric_gt(numeric, numeric)
    1721: 'numeric_ge',  # numeric_ge(numeric, numeric)
    1722: 'numeric_lt',  # numeric_lt(numeric, numeric)
    1723: 'numeric_le',  # numeric_le(numeric, numeric)
    1724: 'numeric_add',  # numeric_add(numeric, numeric)
    1725: 'numeric_sub',  # numeric_sub(numeric, numeric)
    1726: 'numeric_mul',  # numeric_mul(numeric, numeric)
    1740: 'int4_numeric',  # numeric(integer)
    1742: 'float4_numeric',  # numeric(real)
    1743: 'float8_numeric',  # numeric(double precision)
    1744: 'numeric_int4',  # int4(numeric)
    1745: 'numeric_float4',  # float4(numeric)
    1746: 'numeric_float8',  # float8(numeric)
    1771: 'numeric_uminus',  # numeric_uminus(numeric)
    1779: 'numeric_int8',  # int8(numeric)
    1781: 'int8_numeric',  # numeric(bigint)
    1782: 'int2_numeric',  # numeric(smallint)
    1783: 'numeric_int2',  # int2(numeric)
    1850: 'int28eq',  # int28eq(smallint, bigint)
    1851: 'int28ne',  # int28ne(smallint, bigint)
    1852: 'int28lt',  # int28lt(smallint, bigint)
    1853: 'int28gt',  # int28gt(smallint, bigint)
    1854: 'int28le',  # int28le(smallint, bigint)
    1855: 'int28ge',  # int28ge(smallint, bigint)
    1856: 'int82eq',  # int82eq(bigint, smallint)
    1857: 'int82ne',  # int82ne(bigint, smallint)
    1858: 'int82lt',  # int82lt(bigint, smallint)
    1859: 'int82gt',  # int82gt(bigint, smallint)
    1860: 'int82le',  # int82le(bigint, smallint)
    1861: 'int82ge',  # int82ge(bigint, smallint)
    2024: 'date_timestamp',  # timestamp(date)
    2052: 'timestamp_eq',  # timestamp_eq(timestamp without time zone, timestamp without time zone)
    2053: 'timestamp_ne',  # timestamp_ne(timestamp without time zone, timestamp without time zone)
    2054: 'timestamp_lt',  # timestamp_lt(timestamp without time zone, timestamp without time zone)
    2055: 'timestamp_le',  # timestamp_le(timestamp without time zone, timestamp without time zone)
    2056: 'timestamp_ge',  # timestamp_ge(timestamp without time zone, timestamp without time zone)
    2057: 'timestamp_gt',  # timestamp_gt(timestamp without time zone, timestamp without time zone)
    2954: 'uuid_lt',  # uuid_lt(uuid, uuid)
    2955: 'uuid_le',  # uuid_le(uuid, uuid)
    2956: 'uuid_eq',  # uuid_eq(uuid, uuid)
    2957: 'uuid_ge',  # uuid_ge(uuid, uuid)
    2958: 'uuid_gt',  # uuid_gt(uuid, uuid)
    2959: 'uuid_ne',  # uuid_ne(uuid, uuid)
}


class _EvalError(RowFilterError):
    """An ERROR the C function raises (overflow, division by zero, ...); ``evaluate`` names the relation."""


_INT_RANGE = {INT2OID: (-(1 << 15), (1 << 15) - 1, "smallint out of range"),
              INT4OID: (-(1 << 31), (1 << 31) - 1, "integer out of range"),
              INT8OID: (-(1 << 63), (1 << 63) - 1, "bigint out of range")}


def _int_result(restype: int):
    lo, hi, msg = _INT_RANGE[restype]

    def check(v: int) -> int:
        if v < lo or v > hi:
            raise _EvalError(msg)
        return v
    return check


def _int_div(a: int, b: int) -> int:
    if b == 0:
        raise _EvalError("division by zero")
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _int_mod(a: int, b: int) -> int:
    if b == 0:
        raise _EvalError("division by zero")
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def _float_cmp(a: float, b: float) -> int:
    # float8_cmp_internal: NaN equals NaN and sorts above every other value
    if math.isnan(a):
        return 0 if math.isnan(b) else 1
    if math.isnan(b):
        return -1
    return (a > b) - (a < b)


def _numeric_cmp(a: Decimal, b: Decimal) -> int:
    # cmp_numerics: NaN equals NaN and sorts above everything, infinities at the ends
    if a.is_nan():
        return 0 if b.is_nan() else 1
    if b.is_nan():
        return -1
    return (a > b) - (a < b)


def _plain_cmp(a, b) -> int:
    return (a > b) - (a < b)


def _bpchar_cmp(a: str, b: str) -> int:
    # bpcharcmp: trailing blanks do not count (bcTruelen)
    a, b = a.rstrip(" "), b.rstrip(" ")
    return (a > b) - (a < b)


_F32 = struct.Struct("<f")
_U32 = struct.Struct("<I")


def _to_float4(x: float) -> float:
    try:
        return _F32.unpack(_F32.pack(x))[0]
    except OverflowError:
        return math.copysign(math.inf, x)


def _float_checked(result: float, a: float, b: float, zero_ok: bool) -> float:
    # float_overflow_error / float_underflow_error of float.h's check_float8_val
    if math.isinf(result) and not math.isinf(a) and not math.isinf(b):
        raise _EvalError("value out of range: overflow")
    if result == 0.0 and not zero_ok:
        raise _EvalError("value out of range: underflow")
    return result


def _float_arith(op: str, single: bool):
    def fn(a: float, b: float) -> float:
        if op == "pl":
            r, zero_ok = a + b, True
        elif op == "mi":
            r, zero_ok = a - b, True
        elif op == "mul":
            r, zero_ok = a * b, a == 0.0 or b == 0.0
        else:
            if b == 0.0 and not math.isnan(a):
                raise _EvalError("division by zero")
            r = a / b if b != 0.0 else math.nan
            zero_ok = a == 0.0 or math.isinf(b)
        if single:
            r = _to_float4(r)
        return _float_checked(r, a, b, zero_ok)
    return fn


def _numeric_to_int(restype: int):
    check = _int_result(restype)

    def fn(d: Decimal) -> int:
        if d.is_nan():
            raise _EvalError(f"cannot convert NaN to {_INT_NAMES[restype]}")
        if d.is_infinite():
            raise _EvalError(f"cannot convert infinity to {_INT_NAMES[restype]}")
        return check(int(d.quantize(Decimal(1), rounding=ROUND_HALF_UP, context=_NUMERIC_CONTEXT)))
    return fn


_INT_NAMES = {INT2OID: "smallint", INT4OID: "integer", INT8OID: "bigint"}


def _float_to_int(restype: int):
    check = _int_result(restype)

    def fn(x: float) -> int:
        if math.isnan(x) or math.isinf(x):
            raise _EvalError(_INT_RANGE[restype][2])
        return check(round(x))  # rint: halves to even
    return fn


def _numeric_to_float8(d: Decimal) -> float:
    # numeric_float8 goes through numeric_out and float8in (strtod: correctly rounded)
    x = float(d)
    if math.isinf(x) and not d.is_infinite():
        raise _EvalError(f"\"{d}\" is out of range for type double precision")
    return x


def _nearest_float4(exact: Fraction) -> float:
    """The float4 nearest to ``exact``, ties to even (strtof), without double rounding."""
    f = _to_float4(float(exact))
    if math.isinf(f):
        return f
    bits = _U32.unpack(_F32.pack(f))[0]
    cands = [f]
    for b in (bits - 1, bits + 1):
        if 0 <= b < 1 << 32:
            g = _F32.unpack(_U32.pack(b))[0]
            if math.isfinite(g):
                cands.append(g)
    return min(cands, key=lambda g: (abs(Fraction(g) - exact), _U32.unpack(_F32.pack(g))[0] & 1))


def _numeric_to_float4(d: Decimal) -> float:
    # numeric_float4 goes through numeric_out and float4in (strtof: correctly rounded, no double rounding)
    if d.is_nan():
        return math.nan
    if d.is_infinite():
        return math.inf if d > 0 else -math.inf
    x = _nearest_float4(Fraction(d))
    if math.isinf(x) or (x == 0.0 and d != 0):
        raise _EvalError(f"\"{d}\" is out of range for type real")
    return x


def _float_to_numeric(digits: int):
    def fn(x: float) -> Decimal:
        # float8_numeric / float4_numeric: snprintf("%.*g", DBL_DIG or FLT_DIG), then numeric_in
        if math.isnan(x):
            return Decimal("NaN")
        if math.isinf(x):
            return Decimal("Infinity") if x > 0 else Decimal("-Infinity")
        return Decimal(format(x, f".{digits}g"))
    return fn


def _dtof(x: float) -> float:
    r = _to_float4(x)
    if math.isinf(r) and not math.isinf(x):
        raise _EvalError("value out of range: overflow")
    if r == 0.0 and x != 0.0:
        raise _EvalError("value out of range: underflow")
    return r


def _date_timestamp(d: int) -> int:
    if d == DATEVAL_NOBEGIN:
        return DT_NOBEGIN
    if d == DATEVAL_NOEND:
        return DT_NOEND
    if d >= TIMESTAMP_END_JULIAN - POSTGRES_EPOCH_JDATE:
        raise _EvalError("date out of range for timestamp")
    return d * USECS_PER_DAY


def _like(s: str, pattern: str) -> bool:
    # like_match.c MatchText: % any run, _ any one character, backslash escapes the next
    return _like_regex(pattern).fullmatch(s) is not None


_LIKE_CACHE: dict = {}


def _like_regex(pattern: str):
    rx = _LIKE_CACHE.get(pattern)
    if rx is None:
        out = []
        i = 0
        while i < len(pattern):
            c = pattern[i]
            if c == "\\":
                if i + 1 >= len(pattern):
                    raise _EvalError("LIKE pattern must not end with escape character")
                out.append(re.escape(pattern[i + 1]))
                i += 2
                continue
            out.append(".*" if c == "%" else "." if c == "_" else re.escape(c))
            i += 1
        if len(_LIKE_CACHE) > 256:
            _LIKE_CACHE.clear()
        rx = _LIKE_CACHE[pattern] = re.compile("".join(out), re.S)
    return rx


_CMP_RESULT = {"eq": lambda c: c == 0, "ne": lambda c: c != 0, "lt": lambda c: c < 0, "le": lambda c: c <= 0,
               "gt": lambda c: c > 0, "ge": lambda c: c >= 0}
_CMP_SUFFIX = re.compile(r"^(.*?)_?(eq|ne|lt|le|gt|ge)$")
_INT_WIDTH = {"2": INT2OID, "4": INT4OID, "8": INT8OID}
