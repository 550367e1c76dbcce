"""Network addresses: inet_out, cidr_out (network.c network_out with
src/port/inet_net_ntop.c), macaddr_out (mac.c), macaddr8_out (mac8.c).

inet/cidr payload (utils/inet.h inet_struct): family (2 = PGSQL_AF_INET, 3 =
PGSQL_AF_INET6), bits (netmask length), then 4 or 16 address bytes.
"""

from __future__ import annotations

from ..errors import CorruptRecordError

PGSQL_AF_INET = 2
PGSQL_AF_INET6 = 3


def _ipv4_text(addr, bits: int) -> str:
    """inet_net_ntop_ipv4: all four octets, then /bits unless 32."""
    s = f"{addr[0]}.{addr[1]}.{addr[2]}.{addr[3]}"
    return s if bits == 32 else f"{s}/{bits}"


def _ipv6_text(addr, bits: int) -> str:
    """inet_net_ntop_ipv6: longest run (first on ties, at least 2) of zero
    groups as '::', embedded IPv4 for ::a.b.c.d and ::ffff:a.b.c.d, then
    /bits unless 128."""
    words = [(addr[2 * i] << 8) | addr[2 * i + 1] for i in range(8)]
    best_base, best_len = -1, 0
    cur_base, cur_len = -1, 0
    for i in range(8):
        if words[i] == 0:
            if cur_base == -1:
                cur_base, cur_len = i, 1
            else:
                cur_len += 1
        elif cur_base != -1:
            if best_base == -1 or cur_len > best_len:
                best_base, best_len = cur_base, cur_len
            cur_base = -1
    if cur_base != -1 and (best_base == -1 or cur_len > best_len):
        best_base, best_len = cur_base, cur_len
    if best_base != -1 and best_len < 2:
        best_base = -1
    out = []
    for i in range(8):
        if best_base != -1 and best_base <= i < best_base + best_len:
            if i == best_base:
                out.append(":")
            continue
        if i != 0:
            out.append(":")
        if i == 6 and best_base == 0 and (best_len == 6 or (best_len == 7 and words[7] != 0x0001)
                                          or (best_len == 5 and words[5] == 0xFFFF)):
            out.append(f"{addr[12]}.{addr[13]}.{addr[14]}.{addr[15]}")
            break
        out.append("%x" % words[i])
    if best_base != -1 and best_base + best_len == 8:
        out.append(":")
    s = "".join(out)
    return s if bits == 128 else f"{s}/{bits}"


def _network_text(value, is_cidr: bool) -> str:
    n = len(value)
    if n < 2:
        raise CorruptRecordError(f"inet datum of {n} bytes has no family and netmask")
    family, bits = value[0], value[1]
    if family == PGSQL_AF_INET:
        if n != 6 or bits > 32:
            raise CorruptRecordError(f"IPv4 inet datum is {n} bytes with /{bits}")
        s = _ipv4_text(value[2:6], bits)
    elif family == PGSQL_AF_INET6:
        if n != 18 or bits > 128:
            raise CorruptRecordError(f"IPv6 inet datum is {n} bytes with /{bits}")
        s = _ipv6_text(value[2:18], bits)
    else:
        raise CorruptRecordError(f"inet datum has unknown address family {family}")
    if is_cidr and "/" not in s:
        s = f"{s}/{bits}"
    return s


def inet_out(value, typ, ctx) -> str:
    return _network_text(value, False)


def cidr_out(value, typ, ctx) -> str:
    return _network_text(value, True)


def macaddr_out(value, typ, ctx) -> str:
    if len(value) != 6:
        raise CorruptRecordError(f"macaddr datum is {len(value)} bytes, expected 6")
    return ":".join("%02x" % b for b in value)


def macaddr8_out(value, typ, ctx) -> str:
    if len(value) != 8:
        raise CorruptRecordError(f"macaddr8 datum is {len(value)} bytes, expected 8")
    return ":".join("%02x" % b for b in value)


OUTPUT_FUNCTIONS = {
    "inet_out": inet_out,
    "cidr_out": cidr_out,
    "macaddr_out": macaddr_out,
    "macaddr8_out": macaddr8_out,
}
