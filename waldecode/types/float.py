"""float4out and float8out (float.c float4out_internal / float8out_internal).

With extra_float_digits > 0 the output is the shortest decimal that reads back
to the same binary value, as Ryu prints it (src/common/d2s.c, f2s.c): fixed
notation for decimal exponents -4 <= e < 15 (float8) / < 6 (float4), else
``d.ddde+XX``.  ``shortest_digits`` runs Ryu's digit-removal loop on exact
integers.  Not Python's repr: PostgreSQL's Ryu never accepts a rounding
interval's bound, so it is not always the shortest (1e23 prints as
9.999999999999999e+22; repr says 1e+23).
With extra_float_digits <= 0: ``%.{15+efd}g`` / ``%.{6+efd}g`` (pg_strfromd).
"""

from __future__ import annotations

import math
import struct

from ..errors import CorruptRecordError

_f4 = struct.Struct("<f")
_u32 = struct.Struct("<I")
_f8 = struct.Struct("<d")
_u64 = struct.Struct("<Q")

DBL_DIG = 15
FLT_DIG = 6

FLOAT_MANTISSA_BITS = 23
FLOAT_BIAS = 127
DOUBLE_MANTISSA_BITS = 52
DOUBLE_BIAS = 1023


def _special(x: float) -> str | None:
    if x != x:
        return "NaN"
    if x == math.inf:
        return "Infinity"
    if x == -math.inf:
        return "-Infinity"
    return None


def _strfromd(x: float, precision: int) -> str:
    """src/port/snprintf.c pg_strfromd: '%.*g' with precision clamped to 1..32."""
    s = _special(x)
    if s is not None:
        return s
    if precision < 1:
        precision = 1
    elif precision > 32:
        precision = 32
    return "%.*g" % (precision, x)


def _format(negative: bool, digits: str, exp10: int, fixed_limit: int) -> str:
    """Ryu to_chars / to_chars_f: ``digits`` x 10^``exp10`` (digits without trailing zeros)."""
    olength = len(digits)
    exp = exp10 + olength - 1  # exponent of the first digit
    sign = "-" if negative else ""
    if -4 <= exp < fixed_limit:
        if exp10 >= 0:
            return sign + digits + "0" * exp10
        if exp >= 0:
            return sign + digits[:exp + 1] + "." + digits[exp + 1:]
        return sign + "0." + "0" * (-exp - 1) + digits
    mant = digits[0] + ("." + digits[1:] if olength > 1 else "")
    if exp < 0:
        return f"{sign}{mant}e-{-exp:02d}"
    return f"{sign}{mant}e+{exp:02d}"


def float8_text(x: float, extra_float_digits: int = 1) -> str:
    """float8out_internal of a Python float."""
    return float8_text_bits(_u64.unpack(_f8.pack(x))[0], extra_float_digits)


def float8_text_bits(bits: int, extra_float_digits: int = 1) -> str:
    """float8out_internal of the binary64 value with bit pattern ``bits``."""
    if extra_float_digits <= 0:
        return _strfromd(_f8.unpack(_u64.pack(bits))[0], DBL_DIG + extra_float_digits)
    exponent = (bits >> DOUBLE_MANTISSA_BITS) & 0x7FF
    mantissa = bits & ((1 << DOUBLE_MANTISSA_BITS) - 1)
    return _shortest_text(bits >> 63, mantissa, exponent, DOUBLE_MANTISSA_BITS, DOUBLE_BIAS, 0x7FF, 15)


def _shortest_text(negative: int, mantissa: int, exponent: int, mbits: int, bias: int, maxexp: int,
                   fixed_limit: int) -> str:
    if exponent == maxexp:
        if mantissa:
            return "NaN"
        return "-Infinity" if negative else "Infinity"
    if exponent == 0 and mantissa == 0:
        return "-0" if negative else "0"
    output, exp10 = shortest_digits(mantissa, exponent, mbits, bias)
    digits = str(output)
    stripped = digits.rstrip("0")
    exp10 += len(digits) - len(stripped)
    return _format(bool(negative), stripped, exp10, fixed_limit)


_LOG10_2 = 0.30102999566398119521
_LOG10_5 = 0.69897000433601880479


def shortest_digits(ieee_mantissa: int, ieee_exponent: int, mantissa_bits: int, bias: int,
                    accept_bounds_when_even: bool = False) -> tuple[int, int]:
    """Ryu's (output, exponent) for a finite non-zero binary float: src/common/d2s.c d2d / f2s.c f2d.

    The digit-removal loop of Ryu, run on exactly computed integers.  PostgreSQL
    builds Ryu without STRICTLY_SHORTEST, so the interval bounds are never
    accepted (``accept_bounds_when_even`` False): 1e23 prints as
    9.999999999999999e+22, which reads back to the same double as the shorter 1e+23.
    Among the candidates the one nearest the exact value wins (ties to even).
    """
    if ieee_exponent == 0:
        e2 = 1 - bias - mantissa_bits - 2
        m2 = ieee_mantissa
    else:
        e2 = ieee_exponent - bias - mantissa_bits - 2
        m2 = (1 << mantissa_bits) | ieee_mantissa
    accept_bounds = accept_bounds_when_even and (m2 & 1) == 0
    mv = 4 * m2
    mm_shift = 1 if (ieee_mantissa != 0 or ieee_exponent <= 1) else 0
    mp = mv + 2
    mm = mv - 1 - mm_shift
    # Scale exactly to a decimal exponent e10 a few digits finer than the
    # interval's width (so the loop below removes at least one digit), keeping
    # the remainders to know which values were exact.
    if e2 >= 0:
        q = max(0, int(e2 * _LOG10_2) - 3)
        p10 = 10 ** q
        vr, rr = divmod(mv << e2, p10)
        vp, rp = divmod(mp << e2, p10)
        vm, rm = divmod(mm << e2, p10)
        e10 = q
    else:
        q = max(0, int(-e2 * _LOG10_5) - 3)
        f = 5 ** (-e2 - q)
        mask = (1 << q) - 1
        n = mv * f
        vr, rr = n >> q, n & mask
        n = mp * f
        vp, rp = n >> q, n & mask
        n = mm * f
        vm, rm = n >> q, n & mask
        e10 = e2 + q
    vr_trailing_zeros = rr == 0
    vm_trailing_zeros = accept_bounds and rm == 0
    if not accept_bounds and rp == 0:
        vp -= 1  # the upper bound itself is excluded
    removed = 0
    last_removed = 0
    while vp // 10 > vm // 10:
        vm_trailing_zeros = vm_trailing_zeros and vm % 10 == 0
        vr_trailing_zeros = vr_trailing_zeros and last_removed == 0
        last_removed = vr % 10
        vr //= 10
        vp //= 10
        vm //= 10
        removed += 1
    if vm_trailing_zeros:
        while vm % 10 == 0:
            vr_trailing_zeros = vr_trailing_zeros and last_removed == 0
            last_removed = vr % 10
            vr //= 10
            vp //= 10
            vm //= 10
            removed += 1
    if vr_trailing_zeros and last_removed == 5 and vr % 2 == 0:
        last_removed = 4  # round half to even
    output = vr + (1 if ((vr == vm and (not accept_bounds or not vm_trailing_zeros)) or last_removed >= 5) else 0)
    return output, e10 + removed


def float4_text_bits(bits: int, extra_float_digits: int = 1) -> str:
    """float4out_internal of the binary32 value with bit pattern ``bits``."""
    if extra_float_digits <= 0:
        return _strfromd(_f4.unpack(_u32.pack(bits))[0], FLT_DIG + extra_float_digits)
    return _shortest_text(bits >> 31, bits & ((1 << FLOAT_MANTISSA_BITS) - 1), (bits >> FLOAT_MANTISSA_BITS) & 0xFF,
                          FLOAT_MANTISSA_BITS, FLOAT_BIAS, 0xFF, 6)


def float4out(value, typ, ctx) -> str:
    if len(value) != 4:
        raise CorruptRecordError(f"float4 datum is {len(value)} bytes, expected 4")
    return float4_text_bits(_u32.unpack(value)[0], ctx.extra_float_digits)


def float8out(value, typ, ctx) -> str:
    if len(value) != 8:
        raise CorruptRecordError(f"float8 datum is {len(value)} bytes, expected 8")
    return float8_text_bits(_u64.unpack(value)[0], ctx.extra_float_digits)


OUTPUT_FUNCTIONS = {
    "float4out": float4out,
    "float8out": float8out,
}
