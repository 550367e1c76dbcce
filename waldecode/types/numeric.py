"""Integers and numeric: int2out, int4out, int8out (int.c, int8.c) and numeric_out (numeric.c).

numeric on disk (numeric.c NumericData, after the varlena header): a uint16
``n_header``; specials (NaN, 14+: ±Infinity) when its top two bits are 11;
short format (2-byte header) when 10; else long format (``n_sign_dscale`` then
int16 ``n_weight``).  Digits are uint16 base-10000 (NBASE), most significant
first.  Text by get_str_from_var: sign, integer part, and exactly dscale
fraction digits.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError

_i16 = struct.Struct("<h")
_i32 = struct.Struct("<i")
_i64 = struct.Struct("<q")
_u16 = struct.Struct("<H")
_long_header = struct.Struct("<Hh")

# src/backend/utils/adt/numeric.c
NUMERIC_SIGN_MASK = 0xC000
NUMERIC_POS = 0x0000
NUMERIC_NEG = 0x4000
NUMERIC_SHORT = 0x8000
NUMERIC_SPECIAL = 0xC000
NUMERIC_EXT_SIGN_MASK = 0xF000
NUMERIC_NAN = 0xC000
NUMERIC_PINF = 0xD000
NUMERIC_NINF = 0xF000
NUMERIC_DSCALE_MASK = 0x3FFF
NUMERIC_SHORT_SIGN_MASK = 0x2000
NUMERIC_SHORT_DSCALE_MASK = 0x1F80
NUMERIC_SHORT_DSCALE_SHIFT = 7
NUMERIC_SHORT_WEIGHT_SIGN_MASK = 0x0040
NUMERIC_SHORT_WEIGHT_MASK = 0x003F
NBASE = 10000
DEC_DIGITS = 4


def _fixed(value, n: int, what: str):
    if len(value) != n:
        raise CorruptRecordError(f"{what} datum is {len(value)} bytes, expected {n}")


def int2out(value, typ, ctx) -> str:
    _fixed(value, 2, "int2")
    return str(_i16.unpack(value)[0])


def int4out(value, typ, ctx) -> str:
    _fixed(value, 4, "int4")
    return str(_i32.unpack(value)[0])


def int8out(value, typ, ctx) -> str:
    _fixed(value, 8, "int8")
    return str(_i64.unpack(value)[0])


def numeric_parts(payload) -> tuple:
    """init_var_from_num over a numeric varlena payload: (sign, weight, dscale, digits).  ``sign`` is
    NUMERIC_POS or NUMERIC_NEG, or for the specials NUMERIC_NAN, NUMERIC_PINF, NUMERIC_NINF (their
    weight and dscale read from the header as the short format's, as NUMERIC_HEADER_IS_SHORT has
    it; no digits)."""
    n = len(payload)
    if n < 2:
        raise CorruptRecordError(f"numeric datum of {n} bytes has no header")
    header = _u16.unpack_from(payload, 0)[0]
    flags = header & NUMERIC_SIGN_MASK
    if flags == NUMERIC_SHORT or flags == NUMERIC_SPECIAL:
        dscale = (header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT
        weight = header & NUMERIC_SHORT_WEIGHT_MASK
        if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK:
            weight -= 64
        if flags == NUMERIC_SPECIAL:
            special = header & NUMERIC_EXT_SIGN_MASK
            if special not in (NUMERIC_NAN, NUMERIC_PINF, NUMERIC_NINF):
                raise CorruptRecordError(f"numeric datum has unknown special header 0x{header:04X}")
            return special, weight, dscale, ()
        sign = NUMERIC_NEG if header & NUMERIC_SHORT_SIGN_MASK else NUMERIC_POS
        pos = 2
    else:
        if n < 4:
            raise CorruptRecordError(f"numeric datum of {n} bytes is too short for its long header")
        if flags != NUMERIC_POS and flags != NUMERIC_NEG:
            raise CorruptRecordError(f"numeric datum has invalid sign 0x{flags:04X}")
        sign = flags
        dscale = header & NUMERIC_DSCALE_MASK
        weight = _i16.unpack_from(payload, 2)[0]
        pos = 4
    if (n - pos) & 1:
        raise CorruptRecordError(f"numeric datum has an odd number ({n - pos}) of digit bytes")
    ndigits = (n - pos) >> 1
    digits = struct.unpack_from(f"<{ndigits}H", payload, pos) if ndigits else ()
    return sign, weight, dscale, digits


_SPECIAL_TEXT = {NUMERIC_NAN: "NaN", NUMERIC_PINF: "Infinity", NUMERIC_NINF: "-Infinity"}


def numeric_text(payload) -> str:
    """numeric_out of a numeric varlena payload (without its varlena header)."""
    sign, weight, dscale, digits = numeric_parts(payload)
    special = _SPECIAL_TEXT.get(sign)
    if special is not None:
        return special
    return _var_text(sign == NUMERIC_NEG, weight, dscale, digits)


def _var_text(negative, weight: int, dscale: int, digits) -> str:
    """get_str_from_var."""
    ndigits = len(digits)
    parts = ["-"] if negative else []
    if weight < 0:
        parts.append("0")
        d = weight + 1
    else:
        d0 = digits[0] if ndigits else 0
        parts.append(str(d0))
        if weight > 0:
            top = min(weight + 1, ndigits)
            if top > 1:
                parts.append("".join(["%04d" % x for x in digits[1:top]]))
            if weight + 1 > top:
                parts.append("0000" * (weight + 1 - max(top, 1)))
        d = weight + 1
    if dscale > 0:
        parts.append(".")
        ngroups = (dscale + DEC_DIGITS - 1) // DEC_DIGITS
        frac = []
        for i in range(d, d + ngroups):
            frac.append("%04d" % digits[i] if 0 <= i < ndigits else "0000")
        parts.append("".join(frac)[:dscale])
    return "".join(parts)


def numeric_out(value, typ, ctx) -> str:
    return numeric_text(value)


OUTPUT_FUNCTIONS = {
    "int2out": int2out,
    "int4out": int4out,
    "int8out": int8out,
    "numeric_out": numeric_out,
}
