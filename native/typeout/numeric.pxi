# _typeout: numeric output (waldecode/types/numeric.py).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- numeric (numeric.py numeric_text / _var_text) -------------------------------------------------

cdef int put_numeric(OutBuf o, const unsigned char *p, Py_ssize_t n) except -1:
    """numeric_out of a numeric varlena payload: get_str_from_var."""
    cdef unsigned int header, flags, special
    cdef bint negative
    cdef long long dscale, weight, d, top, k, ngroups, i
    cdef Py_ssize_t pos, ndigits, frac_start
    if n < 2:
        return W_FALLBACK
    header = pg_u16(p)
    flags = header & NUMERIC_SIGN_MASK
    if flags == NUMERIC_SPECIAL:
        special = header & NUMERIC_EXT_SIGN_MASK
        if special == NUMERIC_NAN:
            put_lit(o, b"NaN")
        elif special == NUMERIC_PINF:
            put_lit(o, b"Infinity")
        elif special == NUMERIC_NINF:
            put_lit(o, b"-Infinity")
        else:
            return W_FALLBACK
        return W_OK
    if flags == NUMERIC_SHORT:
        negative = (header & NUMERIC_SHORT_SIGN_MASK) != 0
        dscale = (header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT
        weight = header & NUMERIC_SHORT_WEIGHT_MASK
        if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK:
            weight -= NUMERIC_SHORT_WEIGHT_RANGE
        pos = 2
    else:
        if n < 4 or (flags != NUMERIC_POS and flags != NUMERIC_NEG):
            return W_FALLBACK
        negative = flags == NUMERIC_NEG
        dscale = header & NUMERIC_DSCALE_MASK
        weight = pg_i16(p + 2)
        pos = 4
    if (n - pos) & 1:
        return W_FALLBACK
    ndigits = (n - pos) >> 1
    p += pos
    if negative:
        ob_putc(o, c'-')
    if weight < 0:
        ob_putc(o, c'0')
    else:
        put_u64(o, pg_u16(p) if ndigits else 0)
        if weight > 0:
            top = weight + 1 if weight + 1 < ndigits else ndigits
            for k in range(1, top):
                put_pad(o, pg_u16(p + 2 * k), DEC_DIGITS)
            if weight + 1 > top:
                k = (weight + 1 - (top if top > 1 else 1)) * DEC_DIGITS
                ob_reserve(o, k)
                memset(o.data + o.size, c'0', k)
                o.size += k
    d = weight + 1
    if dscale > 0:
        ob_putc(o, c'.')
        frac_start = o.size
        ngroups = (dscale + DEC_DIGITS - 1) // DEC_DIGITS
        for i in range(d, d + ngroups):
            if 0 <= i < ndigits:
                put_pad(o, pg_u16(p + 2 * i), DEC_DIGITS)
            else:
                put_lit(o, b"0000")
        o.size = frac_start + dscale   # exactly dscale fraction digits
    return W_OK
