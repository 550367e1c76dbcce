"""hstore_out (contrib/hstore/hstore_io.c) over the layout of hstore.h.

Payload (after the varlena header): uint32 size_ (count in the low 28 bits,
HS_FLAG_NEWVERSION 0x80000000), then 2 x count HEntry (uint32: 0x80000000
first entry, 0x40000000 NULL value, low 30 bits the end position), then the
keys' and values' bytes.  Text: ``"k"=>"v", "k2"=>NULL`` with ``"`` and ``\\``
backslash-escaped; the empty hstore prints as the empty string.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError, TypeOutputError

HS_FLAG_NEWVERSION = 0x80000000
HENTRY_ISFIRST = 0x80000000
HENTRY_ISNULL = 0x40000000
HENTRY_POSMASK = 0x3FFFFFFF


def _quote(b: bytes) -> str:
    return '"' + b.decode("utf-8", "surrogateescape").replace("\\", "\\\\").replace('"', '\\"') + '"'


def hstore_text(value) -> str:
    n = len(value)
    if n < 4:
        raise CorruptRecordError(f"hstore datum of {n} bytes has no size")
    size = struct.unpack_from("<I", value, 0)[0]
    count = size & 0x0FFFFFFF
    if count == 0:
        return ""
    if not size & HS_FLAG_NEWVERSION:
        raise TypeOutputError("hstore value in the pre-9.0 on-disk format is not supported")
    base = 4 + 8 * count
    if base > n:
        raise CorruptRecordError(f"hstore datum of {n} bytes claims {count} pairs")
    entries = struct.unpack_from(f"<{2 * count}I", value, 4)
    parts = []
    end = 0
    for i in range(count):
        k, v = entries[2 * i], entries[2 * i + 1]
        kstart = 0 if k & HENTRY_ISFIRST else end
        kend = k & HENTRY_POSMASK
        vend = v & HENTRY_POSMASK
        end = vend
        if not (kstart <= kend <= vend) or base + vend > n:
            raise CorruptRecordError(f"hstore pair {i + 1} lies outside the value")
        key = _quote(bytes(value[base + kstart:base + kend]))
        val = "NULL" if v & HENTRY_ISNULL else _quote(bytes(value[base + kend:base + vend]))
        parts.append(f"{key}=>{val}")
    return ", ".join(parts)


def hstore_out(value, typ, ctx) -> str:
    return hstore_text(value)


OUTPUT_FUNCTIONS = {"hstore_out": hstore_out}
