# _typeout: jsonb output (waldecode/types/jsonb.py).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- jsonb (jsonb.py) ------------------------------------------------------------------------------

cdef int put_json_string(OutBuf o, const unsigned char *s, Py_ssize_t n) except -1:
    """json.c escape_json."""
    cdef Py_ssize_t i
    cdef unsigned char c
    ob_putc(o, c'"')
    for i in range(n):
        c = s[i]
        if c >= c' ' and c != c'"' and c != c'\\':
            ob_putc(o, <char>c)
        elif c == c'"':
            put_lit(o, b"\\\"")
        elif c == c'\\':
            put_lit(o, b"\\\\")
        elif c == 0x08:
            put_lit(o, b"\\b")
        elif c == 0x0C:
            put_lit(o, b"\\f")
        elif c == 0x0A:
            put_lit(o, b"\\n")
        elif c == 0x0D:
            put_lit(o, b"\\r")
        elif c == 0x09:
            put_lit(o, b"\\t")
        else:
            put_lit(o, b"\\u00")
            put_hex_byte(o, c)
    return ob_putc(o, c'"')


cdef int varlena_payload(const unsigned char *buf, Py_ssize_t off, Py_ssize_t end, Py_ssize_t *pstart,
                         Py_ssize_t *plen) noexcept nogil:
    """An uncompressed inline varlena inside a container (array element, jsonb numeric):
    its payload, as varlena.read_varlena finds it.  W_FALLBACK for anything else (a TOAST
    pointer, which the reference rejects; a compressed datum, which it decompresses)."""
    cdef unsigned char b0
    cdef Py_ssize_t size
    if off >= end:
        return W_FALLBACK
    b0 = buf[off]
    if VARATT_IS_1B_E(b0):
        return W_FALLBACK
    if VARATT_IS_1B(b0):
        size = VARSIZE_1B(b0)
        if off + size > end or size < 1:
            return W_FALLBACK
        pstart[0] = off + 1
        plen[0] = size - 1
        return W_OK
    if off + 4 > end:
        return W_FALLBACK
    size = VARSIZE_4B(buf + off)
    if size < VARHDRSZ or off + size > end or VARATT_IS_4B_C(b0):
        return W_FALLBACK
    pstart[0] = off + VARHDRSZ
    plen[0] = size - VARHDRSZ
    return W_OK


cdef int put_jsonb_scalar(OutBuf o, const unsigned char *buf, Py_ssize_t base, Py_ssize_t start, Py_ssize_t end,
                          unsigned int jtype, Py_ssize_t limit) except -1:
    cdef Py_ssize_t q, qlen
    if jtype == JENTRY_ISSTRING:
        return put_json_string(o, buf + base + start, end - start)
    if jtype == JENTRY_ISNUMERIC:
        if varlena_payload(buf, base + ((start + 3) & ~3), base + end, &q, &qlen) != W_OK:
            return W_FALLBACK
        return put_numeric(o, buf + q, qlen)
    if jtype == JENTRY_ISBOOL_TRUE:
        return put_lit(o, b"true")
    if jtype == JENTRY_ISBOOL_FALSE:
        return put_lit(o, b"false")
    if jtype == JENTRY_ISNULL:
        return put_lit(o, b"null")
    if jtype == JENTRY_ISCONTAINER:
        return put_jsonb_container(o, buf, base + ((start + 3) & ~3), base + end, limit)
    return W_FALLBACK


cdef int put_jsonb_container(OutBuf o, const unsigned char *buf, Py_ssize_t off, Py_ssize_t end,
                             Py_ssize_t limit) except -1:
    """jsonb.py _container: one container, its children first validated (offsets), then printed."""
    cdef unsigned int header, je
    cdef Py_ssize_t count, nchildren, base, size, pos, start, k, i
    cdef bint is_object
    cdef Py_ssize_t small[32]
    cdef Py_ssize_t *ends = small
    cdef int r = W_OK
    if off + 4 > end or end > limit:
        return W_FALLBACK
    header = pg_u32(buf + off)
    count = header & JB_CMASK
    is_object = (header & JB_FOBJECT) != 0
    nchildren = count * 2 if is_object else count
    base = off + 4 + 4 * nchildren
    if base > end:
        return W_FALLBACK
    size = end - base
    if nchildren > 32:
        ends = <Py_ssize_t *>PyMem_Malloc(nchildren * sizeof(Py_ssize_t))
        if ends == NULL:
            raise MemoryError()
    try:
        pos = 0
        for k in range(nchildren):
            je = pg_u32(buf + off + 4 + 4 * k)
            start = pos
            if je & JENTRY_HAS_OFF:
                pos = je & JENTRY_OFFLENMASK
            else:
                pos = pos + (je & JENTRY_OFFLENMASK)
            if pos < start or pos > size:
                return W_FALLBACK
            ends[k] = pos
        if is_object:
            ob_putc(o, c'{')
            # all keys come first, then all values: key i pairs with value count + i
            for i in range(count):
                if i:
                    put_lit(o, b", ")
                r = put_jsonb_scalar(o, buf, base, ends[i - 1] if i else 0, ends[i],
                                     pg_u32(buf + off + 4 + 4 * i) & JENTRY_TYPEMASK, end)
                if r != W_OK:
                    return r
                put_lit(o, b": ")
                k = count + i
                r = put_jsonb_scalar(o, buf, base, ends[k - 1], ends[k],
                                     pg_u32(buf + off + 4 + 4 * k) & JENTRY_TYPEMASK, end)
                if r != W_OK:
                    return r
            return ob_putc(o, c'}')
        if header & JB_FSCALAR:
            if count != 1:
                return W_FALLBACK
            return put_jsonb_scalar(o, buf, base, 0, ends[0], pg_u32(buf + off + 4) & JENTRY_TYPEMASK, end)
        if not header & JB_FARRAY:
            return W_FALLBACK
        ob_putc(o, c'[')
        for k in range(count):
            if k:
                put_lit(o, b", ")
            r = put_jsonb_scalar(o, buf, base, ends[k - 1] if k else 0, ends[k],
                                 pg_u32(buf + off + 4 + 4 * k) & JENTRY_TYPEMASK, end)
            if r != W_OK:
                return r
        return ob_putc(o, c']')
    finally:
        if ends != small:
            PyMem_Free(ends)
