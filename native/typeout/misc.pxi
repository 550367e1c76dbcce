# _typeout: the small types (waldecode/types/misc.py, network.py).
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- the small types (misc.py, network.py) ---------------------------------------------------------

cdef int put_hex_byte(OutBuf o, unsigned char b) except -1:
    ob_reserve(o, 2)
    o.data[o.size] = HEX_DIGITS[b >> 4]
    o.data[o.size + 1] = HEX_DIGITS[b & 15]
    o.size += 2
    return 0


cdef int put_bytea(OutBuf o, const unsigned char *p, Py_ssize_t n, bint hex_output) except -1:
    """byteaout: \\x and lower-case hex, or the escape format (\\\\ and \\ooo for non-printables)."""
    cdef Py_ssize_t i
    cdef unsigned char b
    cdef char *w
    if hex_output:
        ob_reserve(o, 2 + 2 * n)
        w = o.data + o.size
        w[0] = c'\\'
        w[1] = c'x'
        w += 2
        for i in range(n):
            b = p[i]
            w[0] = HEX_DIGITS[b >> 4]
            w[1] = HEX_DIGITS[b & 15]
            w += 2
        o.size += 2 + 2 * n
        return 0
    ob_reserve(o, 4 * n)
    w = o.data + o.size
    for i in range(n):
        b = p[i]
        if b == c'\\':
            w[0] = c'\\'
            w[1] = c'\\'
            w += 2
        elif b < c' ' or b > c'~':      # not printable ASCII
            w[0] = c'\\'
            w[1] = <char>(c'0' + (b >> 6))
            w[2] = <char>(c'0' + ((b >> 3) & 7))
            w[3] = <char>(c'0' + (b & 7))
            w += 4
        else:
            w[0] = <char>b
            w += 1
    o.size = w - o.data
    return 0


cdef int put_uuid(OutBuf o, const unsigned char *p) except -1:
    cdef int i
    for i in range(16):
        if i == 4 or i == 6 or i == 8 or i == 10:
            ob_putc(o, c'-')
        put_hex_byte(o, p[i])
    return 0


cdef int put_macaddr(OutBuf o, const unsigned char *p, int n) except -1:
    cdef int i
    for i in range(n):
        if i:
            ob_putc(o, c':')
        put_hex_byte(o, p[i])
    return 0


cdef int put_hex(OutBuf o, unsigned long long v, const char *digits) except -1:
    """%X or %x (by ``digits``)"""
    cdef char tmp[16]
    cdef int i = 16
    while True:
        i -= 1
        tmp[i] = digits[v & 15]
        v >>= 4
        if v == 0:
            break
    return ob_put(o, tmp + i, 16 - i)


cdef inline int put_hex_upper(OutBuf o, unsigned long long v) except -1:
    return put_hex(o, v, HEX_UPPER)


cdef int put_varbit(OutBuf o, const unsigned char *p, Py_ssize_t n) except -1:
    """varbit_out: int32 bit_len, then the bits, most significant first."""
    cdef long long nbits, nbytes, i
    if n < 4:
        return W_FALLBACK
    nbits = pg_i32(p)
    nbytes = (nbits + 7) >> 3
    if nbits < 0 or n - 4 != nbytes:
        return W_FALLBACK
    ob_reserve(o, nbits)
    for i in range(nbits):
        o.data[o.size + i] = c'1' if (p[4 + (i >> 3)] >> (7 - (i & 7))) & 1 else c'0'
    o.size += nbits
    return W_OK


cdef int put_ipv6(OutBuf o, const unsigned char *addr, int bits) except -1:
    """inet_net_ntop_ipv6 (network.py _ipv6_text)."""
    cdef unsigned int words[8]
    cdef int i, best_base = -1, best_len = 0, cur_base = -1, cur_len = 0
    for i in range(8):
        words[i] = (addr[2 * i] << 8) | addr[2 * i + 1]
    for i in range(8):
        if words[i] == 0:
            if cur_base == -1:
                cur_base = i
                cur_len = 1
            else:
                cur_len += 1
        elif cur_base != -1:
            if best_base == -1 or cur_len > best_len:
                best_base = cur_base
                best_len = cur_len
            cur_base = -1
    if cur_base != -1 and (best_base == -1 or cur_len > best_len):
        best_base = cur_base
        best_len = cur_len
    if best_base != -1 and best_len < 2:
        best_base = -1
    for i in range(8):
        if best_base != -1 and best_base <= i < best_base + best_len:
            if i == best_base:
                ob_putc(o, c':')
            continue
        if i != 0:
            ob_putc(o, c':')
        if i == 6 and best_base == 0 and (best_len == 6 or (best_len == 7 and words[7] != 0x0001)
                                          or (best_len == 5 and words[5] == 0xFFFF)):
            put_u64(o, addr[12])
            ob_putc(o, c'.')
            put_u64(o, addr[13])
            ob_putc(o, c'.')
            put_u64(o, addr[14])
            ob_putc(o, c'.')
            put_u64(o, addr[15])
            break
        put_hex_lower(o, words[i])
    if best_base != -1 and best_base + best_len == 8:
        ob_putc(o, c':')
    if bits != 128:
        ob_putc(o, c'/')
        put_u64(o, bits)
    return 0


cdef inline int put_hex_lower(OutBuf o, unsigned int v) except -1:
    return put_hex(o, v, HEX_DIGITS)


cdef int put_network(OutBuf o, const unsigned char *p, Py_ssize_t n, bint is_cidr) except -1:
    """network_out (inet_out, cidr_out): cidr always shows its netmask."""
    cdef int family, bits
    if n < 2:
        return W_FALLBACK
    family = p[0]
    bits = p[1]
    if family == PGSQL_AF_INET:
        if n != 6 or bits > 32:
            return W_FALLBACK
        put_u64(o, p[2])
        ob_putc(o, c'.')
        put_u64(o, p[3])
        ob_putc(o, c'.')
        put_u64(o, p[4])
        ob_putc(o, c'.')
        put_u64(o, p[5])
        if bits != 32 or is_cidr:
            ob_putc(o, c'/')
            put_u64(o, bits)
        return W_OK
    if family == PGSQL_AF_INET6:
        if n != 18 or bits > 128:
            return W_FALLBACK
        put_ipv6(o, p + 2, bits)
        if bits == 128 and is_cidr:
            put_lit(o, b"/128")
        return W_OK
    return W_FALLBACK
