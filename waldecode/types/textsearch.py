"""tsvectorout (tsvector.c) over the layout of tsearch/ts_type.h.

Payload (after the varlena header): int32 size (lexeme count), one uint32
WordEntry per lexeme (bit 0 haspos, bits 1-11 len, bits 12-31 pos: the
lexeme's offset in the string area), then the string area.  A lexeme with
positions is followed, at the next 2-byte boundary, by uint16 npos and npos
uint16 WordEntryPos (top 2 bits weight, low 14 bits position).
Text: ``'lexeme':1A,2 'other'`` with ``'`` and ``\\`` doubled inside the quotes.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError

_WEIGHTS = ("", "C", "B", "A")


def tsvector_text(value) -> str:
    n = len(value)
    if n < 4:
        raise CorruptRecordError(f"tsvector datum of {n} bytes has no size")
    size = struct.unpack_from("<i", value, 0)[0]
    strptr = 4 + 4 * size
    if size < 0 or strptr > n:
        raise CorruptRecordError(f"tsvector datum of {n} bytes claims {size} lexemes")
    entries = struct.unpack_from(f"<{size}I", value, 4)
    out = []
    for e in entries:
        haspos = e & 1
        length = (e >> 1) & 0x7FF
        pos = e >> 12
        start = strptr + pos
        if start + length > n:
            raise CorruptRecordError(f"tsvector lexeme at {pos} (+{length}) runs past the end of the value")
        lexeme = bytes(value[start:start + length]).decode("utf-8", "surrogateescape")
        s = "'" + lexeme.replace("'", "''").replace("\\", "\\\\") + "'"
        if haspos:
            p = strptr + ((pos + length + 1) & ~1)
            if p + 2 > n:
                raise CorruptRecordError("tsvector position vector runs past the end of the value")
            npos = struct.unpack_from("<H", value, p)[0]
            if p + 2 + 2 * npos > n:
                raise CorruptRecordError("tsvector position vector runs past the end of the value")
            if npos:
                s += ":" + ",".join(f"{w & 0x3FFF}{_WEIGHTS[w >> 14]}"
                                    for w in struct.unpack_from(f"<{npos}H", value, p + 2))
        out.append(s)
    return " ".join(out)


def tsvectorout(value, typ, ctx) -> str:
    return tsvector_text(value)


OUTPUT_FUNCTIONS = {"tsvectorout": tsvectorout}
