# _typeout: float4 / float8 output (waldecode/types/float.py).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- float4 / float8 (float.py) ------------------------------------------------------------------

cdef int put_float_special(OutBuf o, double x) except -1:
    if x != x:
        put_lit(o, b"NaN")
        return 1
    if x > 1.7976931348623157e308:
        put_lit(o, b"Infinity")
        return 1
    if x < -1.7976931348623157e308:
        put_lit(o, b"-Infinity")
        return 1
    return 0


cdef int put_strfromd(OutBuf o, double x, int precision) except -1:
    """src/port/snprintf.c pg_strfromd: '%.*g', precision clamped to 1..32 (float.py _strfromd)."""
    cdef char tmp[FLOAT_TEXT_MAX]
    cdef int n
    if put_float_special(o, x):
        return 0
    if precision < 1:
        precision = 1
    elif precision > 32:
        precision = 32
    n = snprintf(tmp, FLOAT_TEXT_MAX, b"%.*g", precision, x)
    return ob_put(o, tmp, n)


cdef int put_shortest(OutBuf o, bint negative, unsigned long long mantissa, int exponent, int mbits, int bias,
                      int maxexp, int fixed_limit) except -1:
    """float.py _shortest_text and _format: Ryu's digits, fixed notation for -4 <= exp < fixed_limit."""
    cdef unsigned long long output
    cdef int exp10, olength, exp, i
    cdef char digits[24]
    if exponent == maxexp:
        if mantissa:
            return put_lit(o, b"NaN")
        return put_lit(o, b"-Infinity" if negative else b"Infinity")
    if exponent == 0 and mantissa == 0:
        return put_lit(o, b"-0" if negative else b"0")
    wd_shortest_digits(mantissa, exponent, mbits, bias, &output, &exp10)
    # digits without trailing zeros (moved into the exponent)
    i = 24
    while True:
        i -= 1
        digits[i] = <char>(c'0' + output % 10)
        output //= 10
        if output == 0:
            break
    olength = 24 - i
    while olength > 1 and digits[i + olength - 1] == c'0':
        olength -= 1
        exp10 += 1
    exp = exp10 + olength - 1      # exponent of the first digit
    if negative:
        ob_putc(o, c'-')
    if -4 <= exp < fixed_limit:
        if exp10 >= 0:
            ob_put(o, digits + i, olength)
            ob_reserve(o, exp10)
            memset(o.data + o.size, c'0', exp10)
            o.size += exp10
        elif exp >= 0:
            ob_put(o, digits + i, exp + 1)
            ob_putc(o, c'.')
            ob_put(o, digits + i + exp + 1, olength - exp - 1)
        else:
            put_lit(o, b"0.")
            ob_reserve(o, -exp - 1)
            memset(o.data + o.size, c'0', -exp - 1)
            o.size += -exp - 1
            ob_put(o, digits + i, olength)
        return 0
    ob_putc(o, digits[i])
    if olength > 1:
        ob_putc(o, c'.')
        ob_put(o, digits + i + 1, olength - 1)
    if exp < 0:
        put_lit(o, b"e-")
        return put_pad(o, -exp, 2)
    put_lit(o, b"e+")
    return put_pad(o, exp, 2)


cdef int put_float4(OutBuf o, unsigned int bits, int extra_float_digits) except -1:
    """float4out_internal."""
    if extra_float_digits <= 0:
        return put_strfromd(o, <double>pg_f4(bits), FLT_DIG + extra_float_digits)
    return put_shortest(o, bits >> 31, bits & ((1u << FLOAT_MANTISSA_BITS) - 1),
                        (bits >> FLOAT_MANTISSA_BITS) & FLOAT_MAX_EXPONENT, FLOAT_MANTISSA_BITS, FLOAT_BIAS,
                        FLOAT_MAX_EXPONENT, FLOAT_FIXED_LIMIT)


cdef int put_float8(OutBuf o, unsigned long long bits, int extra_float_digits) except -1:
    """float8out_internal."""
    if extra_float_digits <= 0:
        return put_strfromd(o, pg_f8(bits), DBL_DIG + extra_float_digits)
    return put_shortest(o, bits >> 63, bits & ((<unsigned long long>1 << DOUBLE_MANTISSA_BITS) - 1),
                        (bits >> DOUBLE_MANTISSA_BITS) & DOUBLE_MAX_EXPONENT, DOUBLE_MANTISSA_BITS, DOUBLE_BIAS,
                        DOUBLE_MAX_EXPONENT, DOUBLE_FIXED_LIMIT)
