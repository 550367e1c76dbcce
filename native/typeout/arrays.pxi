# _typeout: array_out (waldecode/types/arrays.py).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- array_out (arrays.py) -------------------------------------------------------------------------

cdef inline bint array_char_needs_quote(unsigned char c, char delim) noexcept nogil:
    return (c == c'"' or c == c'\\' or c == c'{' or c == c'}' or c == <unsigned char>delim or c == c' '
            or c == c'\t' or c == c'\n' or c == c'\r' or c == c'\v' or c == c'\f')


cdef inline char ascii_lower(char c) noexcept nogil:
    return c + (c'a' - c'A') if c'A' <= c <= c'Z' else c


cdef int array_quote(OutBuf o, Py_ssize_t mark, char delim) except -1:
    """arrays.py _quote on the element text at o.data[mark:]: double-quoted (with \\ before
    \\ and ") when empty, NULL in any case, or holding a delimiter, brace, quote or space."""
    cdef Py_ssize_t n = o.size - mark, i, esc = 0, src, dst
    cdef unsigned char c
    cdef bint need = n == 0
    cdef char *s = o.data + mark
    if n == 4 and ascii_lower(s[0]) == c'n' and ascii_lower(s[1]) == c'u' and ascii_lower(s[2]) == c'l' \
            and ascii_lower(s[3]) == c'l':
        need = True
    for i in range(n):
        c = <unsigned char>s[i]
        if array_char_needs_quote(c, delim):
            need = True
            if c == c'"' or c == c'\\':
                esc += 1
    if not need:
        return 0
    ob_reserve(o, esc + 2)
    s = o.data + mark
    # shift right, from the end, inserting the backslashes; then the opening quote
    src = n - 1
    dst = n + esc      # index (after the opening quote) of the last character
    while src >= 0:
        c = <unsigned char>s[src]
        s[dst] = <char>c
        dst -= 1
        if c == c'"' or c == c'\\':
            s[dst] = c'\\'
            dst -= 1
        src -= 1
    s[0] = c'"'
    s[n + esc + 1] = c'"'
    o.size = mark + n + esc + 2
    return 0


cdef int put_array(TypeOut t, OutBuf o, const unsigned char *v, Py_ssize_t n) except -1:
    """array_out over an array payload (the datum without its varlena header)."""
    cdef int ndim, dataoffset, i, j
    cdef unsigned int elemtype
    cdef long long dims[MAXDIM]
    cdef long long lbounds[MAXDIM]
    cdef int indx[MAXDIM]
    cdef long long nitems = 1, k, lb
    cdef bint any_zero = False, hasnull, nonunit = False
    cdef Py_ssize_t bitmap_off, data, off, nxt, q, qlen, mark
    cdef const unsigned char *nul
    cdef ElemInfo *e
    cdef int pad, r
    if n < 12:
        return W_FALLBACK
    ndim = pg_i32(v)
    dataoffset = pg_i32(v + 4)
    elemtype = pg_u32(v + 8)
    if ndim < 0 or ndim > MAXDIM:
        return W_FALLBACK
    if ndim == 0:
        return put_lit(o, b"{}")
    if n < 12 + 8 * ndim:
        return W_FALLBACK
    for i in range(ndim):
        dims[i] = pg_i32(v + 12 + 4 * i)
        lbounds[i] = pg_i32(v + 12 + 4 * ndim + 4 * i)
        if dims[i] < 0:
            return W_FALLBACK
        if dims[i] == 0:
            any_zero = True
        if lbounds[i] != 1:
            nonunit = True
    if any_zero:
        nitems = 0
    else:
        for i in range(ndim):
            nitems *= dims[i]
            if nitems > MaxAllocSize // 4:      # arrays.py's bound on the element count
                return W_FALLBACK
    bitmap_off = 12 + 8 * ndim
    if dataoffset:
        data = dataoffset - VARHDRSZ
        if data < bitmap_off + (nitems + 7) // 8 or data > n:
            return W_FALLBACK
        hasnull = True
    else:
        data = ((SIZEOF_ARRAYTYPE + 8 * ndim + MAXALIGN - 1) & ~(MAXALIGN - 1)) - VARHDRSZ
        hasnull = False
    e = t._elem(elemtype)
    if e == NULL or e.kind == KIND_PYTHON:
        return W_FALLBACK
    if nitems == 0:
        return put_lit(o, b"{}")
    if nonunit:
        for i in range(ndim):
            ob_putc(o, c'[')
            put_i64(o, lbounds[i])
            ob_putc(o, c':')
            put_i64(o, lbounds[i] + dims[i] - 1)
            ob_putc(o, c']')
        ob_putc(o, c'=')
    for i in range(ndim):
        indx[i] = 0
    j = 0
    off = data
    for k in range(nitems):
        for i in range(j, ndim):
            ob_putc(o, c'{')
        if hasnull and not (v[bitmap_off + (k >> 3)] >> (k & 7)) & 1:
            put_lit(o, b"NULL")
        else:
            # elements are aligned on offsets from the start of the 4-byte varlena header
            pad = (off + VARHDRSZ) % e.typalign
            if pad:
                off += e.typalign - pad
            if e.typlen > 0:
                nxt = off + e.typlen
                if nxt > n:
                    return W_FALLBACK
                q = off
                qlen = e.typlen
                off = nxt
            elif e.typlen == -1:
                if varlena_payload(v, off, n, &q, &qlen) != W_OK:
                    return W_FALLBACK
                # the datum's on-disk size: header + payload
                off = q + qlen
            elif e.typlen == -2:
                if off >= n:
                    return W_FALLBACK
                nul = <const unsigned char *>memchr(v + off, 0, n - off)
                if nul == NULL:
                    return W_FALLBACK
                q = off
                qlen = nul - (v + off)
                off = off + qlen + 1
            else:
                return W_FALLBACK
            mark = o.size
            r = t.write(o, e.kind, v + q, qlen)
            if r != W_OK:
                return r
            array_quote(o, mark, e.typdelim)
        i = ndim - 1
        while i >= 0:
            indx[i] += 1
            if indx[i] < dims[i]:
                ob_putc(o, e.typdelim)
                break
            indx[i] = 0
            ob_putc(o, c'}')
            i -= 1
        j = i + 1
    return W_OK
