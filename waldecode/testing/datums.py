"""On-disk bytes of values and heap tuples, for tests and benchmarks.

The inverse of ``heaptuple`` and ``types``: each function returns what PostgreSQL
stores for a value (the payload a varlena carries, without its header, for varlena
types), ``varlena`` wraps a payload in one of its header forms (1-byte, 4-byte,
inline-compressed pglz or lz4) and ``toast_pointer`` makes an external TOAST
pointer; ``heap_tuple`` lays datums out as heap_fill_tuple does (the library's
``heaptuple.heap_fill_tuple``, which wal_level=replica decoding uses too, and
``rmgr.heap.wal_tuple`` with the xl_heap_header).  Layouts: numeric.c (NumericShort / NumericLong), jsonb.h and
jsonb_util.c convertToJsonb, array.h construct_md_array, htup_details.h.

Written for the parity tests of the native output (tests/test_typeout_parity.py),
which check them against a live server through tests/test_types_live.py too.
"""

from __future__ import annotations

import decimal
import struct

import lz4.block

from ..heap.heaptuple import ALIGNMENT
from ..heap.heaptuple import heap_fill_tuple as heap_tuple  # noqa: F401 (the tests' name for it)
from ..rmgr.heap import wal_tuple  # noqa: F401 (as above)
from ..heap.varlena import TOAST_LZ4_COMPRESSION_ID, TOAST_PGLZ_COMPRESSION_ID, VARTAG_ONDISK
from ..types.arrays import MAXALIGN
from ..types.jsonb import (JB_FARRAY, JB_FOBJECT, JB_FSCALAR, JENTRY_HAS_OFF, JENTRY_ISBOOL_FALSE,
                           JENTRY_ISBOOL_TRUE, JENTRY_ISCONTAINER, JENTRY_ISNULL, JENTRY_ISNUMERIC, JENTRY_ISSTRING)
from ..types.numeric import (DEC_DIGITS, NBASE, NUMERIC_NAN, NUMERIC_NEG, NUMERIC_NINF, NUMERIC_PINF, NUMERIC_SHORT,
                             NUMERIC_SHORT_DSCALE_SHIFT, NUMERIC_SHORT_SIGN_MASK, NUMERIC_SHORT_WEIGHT_SIGN_MASK)

# numeric.c: what fits a NumericShort
NUMERIC_SHORT_DSCALE_MAX = 0x3F
NUMERIC_SHORT_WEIGHT_MAX = 63
NUMERIC_SHORT_WEIGHT_MIN = -64
NUMERIC_SPECIAL_HEADERS = {"NaN": NUMERIC_NAN, "Infinity": NUMERIC_PINF, "-Infinity": NUMERIC_NINF}
# jsonb.h: every JB_OFFSET_STRIDE'th JEntry holds an offset, not a length
JB_OFFSET_STRIDE = 32


def _align(off: int, a: int) -> int:
    return (off + a - 1) & ~(a - 1)


# -- fixed-length types ----------------------------------------------------------------------------

def int2(v: int) -> bytes:
    return struct.pack("<h", v)


def int4(v: int) -> bytes:
    return struct.pack("<i", v)


def int8(v: int) -> bytes:
    return struct.pack("<q", v)


def uint4(v: int) -> bytes:
    """oid, xid, cid"""
    return struct.pack("<I", v)


def uint8(v: int) -> bytes:
    """xid8, pg_lsn"""
    return struct.pack("<Q", v)


def float4_bits(bits: int) -> bytes:
    return struct.pack("<I", bits)


def float8_bits(bits: int) -> bytes:
    return struct.pack("<Q", bits)


def float8(x: float) -> bytes:
    return struct.pack("<d", x)


def timetz(usecs: int, zone: int) -> bytes:
    """time with time zone: microseconds, then the zone in seconds west of Greenwich."""
    return struct.pack("<qi", usecs, zone)


def interval(time: int, day: int, month: int) -> bytes:
    return struct.pack("<qii", time, day, month)


def tid(block: int, offset: int) -> bytes:
    return struct.pack("<HHH", block >> 16, block & 0xFFFF, offset)


def name(s: str) -> bytes:
    """NAMEDATALEN (64) bytes, NUL-padded."""
    b = s.encode("utf-8", "surrogateescape")[:63]
    return b + b"\x00" * (64 - len(b))


# -- numeric ---------------------------------------------------------------------------------------

def numeric_raw(negative: bool, weight: int, dscale: int, digits, short: bool | None = None) -> bytes:
    """A numeric payload from its fields; ``short`` None: the short form when it fits (make_result)."""
    if short is None:
        short = (0 <= dscale <= NUMERIC_SHORT_DSCALE_MAX
                 and NUMERIC_SHORT_WEIGHT_MIN <= weight <= NUMERIC_SHORT_WEIGHT_MAX)
    body = struct.pack(f"<{len(digits)}H", *digits)
    if short:
        header = NUMERIC_SHORT | (NUMERIC_SHORT_SIGN_MASK if negative else 0) \
            | (dscale << NUMERIC_SHORT_DSCALE_SHIFT) | (weight & 0x7F)
        return struct.pack("<H", header) + body
    return struct.pack("<Hh", (NUMERIC_NEG if negative else 0) | dscale, weight) + body


def numeric(value) -> bytes:
    """The numeric payload PostgreSQL stores for ``value`` (a str, int or Decimal)."""
    text = str(value)
    if text in NUMERIC_SPECIAL_HEADERS:
        return struct.pack("<H", NUMERIC_SPECIAL_HEADERS[text])
    d = decimal.Decimal(text)
    sign, digs, exp = d.as_tuple()
    dscale = max(0, -exp)
    intdigits = "".join(map(str, digs))
    # digits as a string with the decimal point at position len(intdigits) + exp
    point = len(intdigits) + exp
    # pad so that the point falls on a DEC_DIGITS boundary on both sides
    lead = (-point) % DEC_DIGITS
    s = "0" * lead + intdigits
    point += lead
    if len(s) < point:
        s += "0" * (point - len(s))
    s += "0" * ((-len(s)) % DEC_DIGITS)
    groups = [int(s[i:i + DEC_DIGITS]) for i in range(0, len(s), DEC_DIGITS)]
    weight = point // DEC_DIGITS - 1
    # strip_var: no leading or trailing zero digits
    while groups and groups[0] == 0:
        groups.pop(0)
        weight -= 1
    while groups and groups[-1] == 0:
        groups.pop()
    if not groups:
        weight = 0
        sign = 0
    return numeric_raw(bool(sign), weight, dscale, groups)


# -- text-like -------------------------------------------------------------------------------------

def text(s: str) -> bytes:
    return s.encode("utf-8", "surrogateescape")


def varbit(bits: str) -> bytes:
    """bit / varbit: int32 bit length, then the bits, most significant first, zero-padded."""
    n = len(bits)
    raw = int(bits, 2) << ((-n) % 8) if bits else 0
    return struct.pack("<i", n) + raw.to_bytes((n + 7) // 8, "big")


def inet(family: int, bits: int, addr: bytes) -> bytes:
    """inet / cidr: family (2 IPv4, 3 IPv6), netmask bits, the address bytes."""
    return bytes((family, bits)) + bytes(addr)


# -- jsonb -----------------------------------------------------------------------------------------

def jsonb(value) -> bytes:
    """The jsonb payload for a Python JSON value (dict, list, str, int, float, Decimal, bool, None).

    Object keys are stored in the order given (the server sorts them; the output
    function prints them as stored)."""
    if isinstance(value, (dict, list)):
        return _jsonb_container(value)
    return _jsonb_container([value], scalar=True)


def _jsonb_scalar(v) -> tuple[int, bytes, bool]:
    """(JEntry type, data, needs 4-byte alignment)"""
    if v is None:
        return JENTRY_ISNULL, b"", False
    if v is True:
        return JENTRY_ISBOOL_TRUE, b"", False
    if v is False:
        return JENTRY_ISBOOL_FALSE, b"", False
    if isinstance(v, str):
        return JENTRY_ISSTRING, text(v), False
    if isinstance(v, (int, float, decimal.Decimal)):
        return JENTRY_ISNUMERIC, varlena(numeric(repr(v) if isinstance(v, float) else v)), True
    return JENTRY_ISCONTAINER, _jsonb_container(v), True


def _jsonb_container(v, scalar: bool = False) -> bytes:
    if isinstance(v, dict):
        children = [_jsonb_scalar(k) for k in v] + [_jsonb_scalar(x) for x in v.values()]
        header = len(v) | JB_FOBJECT
    else:
        children = [_jsonb_scalar(x) for x in v]
        header = len(v) | JB_FARRAY | (JB_FSCALAR if scalar else 0)
    data = bytearray()
    entries = []
    for i, (jtype, payload, aligned) in enumerate(children):
        start = len(data)
        if aligned:
            data += b"\x00" * ((-len(data)) % 4)
        data += payload
        if i % JB_OFFSET_STRIDE == 0:
            entries.append(JENTRY_HAS_OFF | jtype | len(data))
        else:
            entries.append(jtype | (len(data) - start))
    return struct.pack(f"<I{len(entries)}I", header, *entries) + bytes(data)


# -- arrays ----------------------------------------------------------------------------------------

def array(elemtype: int, typlen: int, typalign: str, items, dims=None, lbounds=None,
          short_headers: bool = False) -> bytes:
    """An array payload (construct_md_array): ``items`` in row-major order, each None or the
    element's stored bytes (for varlena elements: the payload, given a 4-byte header here, or
    a 1-byte one with ``short_headers`` when it fits)."""
    items = list(items)
    if dims is None:
        dims = [len(items)] if items else []
    ndim = len(dims)
    if lbounds is None:
        lbounds = [1] * ndim
    nitems = 1
    for d in dims:
        nitems *= d
    if ndim == 0:
        nitems = 0
    assert nitems == len(items), (dims, len(items))
    hasnull = any(x is None for x in items)
    header_len = 16 + 8 * ndim  # vl_len_, ndim, dataoffset, elemtype, dims, lbounds
    if hasnull:
        dataoffset = _align(header_len + (nitems + 7) // 8, MAXALIGN)
    else:
        dataoffset = _align(header_len, MAXALIGN)
    bitmap = bytearray((nitems + 7) // 8)
    data = bytearray()
    a = ALIGNMENT[typalign]
    for i, x in enumerate(items):
        if x is None:
            continue
        bitmap[i >> 3] |= 1 << (i & 7)
        if typlen == -1:
            datum = varlena(x, "1b" if short_headers and len(x) < 127 else "4b")
            if datum[0] & 1 == 0:
                data += b"\x00" * ((-(dataoffset + len(data))) % a)
        elif typlen == -2:
            datum = bytes(x) + b"\x00"
        else:
            assert len(x) == typlen
            datum = bytes(x)
            data += b"\x00" * ((-(dataoffset + len(data))) % a)
        data += datum
    head = struct.pack(f"<iiI{ndim}i{ndim}i", ndim, dataoffset if hasnull else 0, elemtype, *dims, *lbounds)
    out = head + (bytes(bitmap) if hasnull else b"")
    out += b"\x00" * (dataoffset - 4 - len(out))
    return out + bytes(data)


# -- varlena headers and TOAST ---------------------------------------------------------------------

def varlena(payload: bytes, form: str = "4b") -> bytes:
    """``payload`` with a varlena header: "4b", "1b" (payload < 127 bytes), "pglz" or "lz4"
    (inline compressed: va_header, va_tcinfo, the compressed stream)."""
    payload = bytes(payload)
    if form == "1b":
        assert len(payload) + 1 <= 0x7F
        return bytes((((len(payload) + 1) << 1) | 1,)) + payload
    if form == "4b":
        return struct.pack("<I", (len(payload) + 4) << 2) + payload
    if form == "pglz":
        stream = pglz_compress(payload)
        method = TOAST_PGLZ_COMPRESSION_ID
    elif form == "lz4":
        stream = lz4.block.compress(payload, store_size=False)
        method = TOAST_LZ4_COMPRESSION_ID
    else:
        raise ValueError(form)
    size = 8 + len(stream)
    return struct.pack("<II", (size << 2) | 0x02, len(payload) | (method << 30)) + stream


def toast_pointer(rawsize: int, extsize: int, valueid: int, toastrelid: int, method: int = 0) -> bytes:
    """varattrib_1b_e with VARTAG_ONDISK: va_rawsize includes the 4-byte header; va_extinfo
    holds the stored size and (when compressed) the method in its top two bits."""
    extinfo = extsize | ((method << 30) if extsize < rawsize else 0)
    return b"\x01" + bytes((VARTAG_ONDISK,)) + struct.pack("<iIII", rawsize + 4, extinfo, valueid, toastrelid)


def pglz_compress(src: bytes) -> bytes:
    """A valid pglz stream for ``src`` (greedy matches, offsets ≤ 4095, lengths 3..273).

    Not PostgreSQL's pglz_compress (no history table heuristics, no "give up"
    rule), but any conforming decoder restores ``src`` from it exactly.
    """
    src = bytes(src)
    n = len(src)
    out = bytearray()
    last: dict[bytes, int] = {}
    i = 0
    while i < n:
        ctrl_pos = len(out)
        out.append(0)
        ctrl = 0
        for bit in range(8):
            if i >= n:
                break
            best = 0
            if i + 3 <= n:
                cand = last.get(src[i:i + 3])
                if cand is not None and 0 < i - cand <= 4095:
                    limit = min(273, n - i)
                    while best < limit and src[cand + best] == src[i + best]:
                        best += 1
            if best >= 3:
                off = i - cand
                if best < 18:
                    out += bytes((((off >> 4) & 0xF0) | (best - 3), off & 0xFF))
                else:
                    out += bytes((((off >> 4) & 0xF0) | 0x0F, off & 0xFF, best - 18))
                ctrl |= 1 << bit
                for j in range(i, min(i + best, n - 2)):
                    last[src[j:j + 3]] = j
                i += best
            else:
                if i + 3 <= n:
                    last[src[i:i + 3]] = i
                out.append(src[i])
                i += 1
        out[ctrl_pos] = ctrl
    return bytes(out)


# -- heap tuples -----------------------------------------------------------------------------------

