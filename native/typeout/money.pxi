# _typeout: money (waldecode/types/misc.py cash_text).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- money (misc.py cash_text) ---------------------------------------------------------------------

cdef int put_money(TypeOut t, OutBuf o, long long value) except -1:
    """cash_out with the lc_monetary conventions read at set-up."""
    cdef char tmp[(20 + 11) * (MONEY_SYMBOL_MAX + 1)]
    cdef Py_ssize_t pos = sizeof(tmp), blen
    cdef unsigned long long mag
    cdef int points = t.m_points, digit_pos, sep_by_space
    cdef const char *dsym = PyBytes_AS_STRING(t.m_dsymbol)
    cdef Py_ssize_t dlen = PyBytes_GET_SIZE(t.m_dsymbol)
    cdef const char *ssym = PyBytes_AS_STRING(t.m_ssymbol)
    cdef Py_ssize_t slen = PyBytes_GET_SIZE(t.m_ssymbol)
    cdef bytes sign, cs = t.m_csymbol
    if value < 0:
        mag = <unsigned long long>0 - <unsigned long long>value
        sign = t.m_nsign
        sep_by_space = t.m_n_sep_by_space
    else:
        mag = <unsigned long long>value
        sign = t.m_psign
        sep_by_space = t.m_p_sep_by_space
    # built right to left, as cash_out does
    digit_pos = points
    while True:
        if points and digit_pos == 0:
            pos -= dlen
            memcpy(tmp + pos, dsym, dlen)
        elif digit_pos < 0 and digit_pos % t.m_group == 0:
            pos -= slen
            memcpy(tmp + pos, ssym, slen)
        pos -= 1
        tmp[pos] = <char>(c'0' + mag % 10)
        mag //= 10
        digit_pos -= 1
        if not (mag or digit_pos >= 0):
            break
    blen = sizeof(tmp) - pos
    cdef const char *layout = PyBytes_AS_STRING(t.m_n_layout if value < 0 else t.m_p_layout)
    cdef char part
    while layout[0]:
        part = layout[0]
        layout += 1
        if part == c'N':
            ob_put(o, tmp + pos, blen)
        elif part == c'C':
            _put_bytes(o, cs)
        elif part == c'S':
            _put_bytes(o, sign)
        elif part == c'1':
            if sep_by_space == 1:
                ob_putc(o, c' ')
        elif part == c'2':
            if sep_by_space == 2:
                ob_putc(o, c' ')
        else:  # the parentheses of sign_posn 0
            ob_putc(o, part)
    return 0


cdef inline int _put_bytes(OutBuf o, bytes b) except -1:
    return ob_put(o, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


cdef bytes _utf8(s):
    return (<str>s).encode("utf-8", "surrogateescape")
