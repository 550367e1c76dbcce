"""array_out (arrayfuncs.c) over the layout of utils/array.h, and the two
vector types printed without braces (int2vectorout, oidvectorout).

Array payload (offsets after the varlena header; PostgreSQL's own offsets
count the 4-byte header too): int32 ndim, int32 dataoffset (0: no null
bitmap), Oid elemtype, int32 dims[ndim], int32 lbound[ndim], the null bitmap
(bit set = not null), then the non-null elements, each aligned to the element
type's typalign on offsets from the start of the 4-byte header.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..heap.heaptuple import ALIGNMENT
from ..heap.varlena import ToastPointer, read_varlena

_arr_header = struct.Struct("<iiI")
MAXDIM = 6
MAXALIGN = 8

_SPACE = " \t\n\r\v\f"


def deconstruct(value, ctx):
    """deconstruct_array: (elemtype, dims, lbounds, items) with items a list of
    element values (bytes, or None for NULL) in row-major order."""
    n = len(value)
    if n < 12:
        raise CorruptRecordError(f"array datum of {n} bytes is shorter than its header")
    ndim, dataoffset, elemtype = _arr_header.unpack_from(value, 0)
    if ndim < 0 or ndim > MAXDIM:
        raise CorruptRecordError(f"array datum has {ndim} dimensions (at most {MAXDIM})")
    if ndim == 0:
        return elemtype, (), (), []
    if n < 12 + 8 * ndim:
        raise CorruptRecordError(f"array datum of {n} bytes is too short for {ndim} dimensions")
    dims = struct.unpack_from(f"<{ndim}i", value, 12)
    lbounds = struct.unpack_from(f"<{ndim}i", value, 12 + 4 * ndim)
    nitems = 1
    for d in dims:
        if d < 0:
            raise CorruptRecordError(f"array datum has a negative dimension {d}")
        nitems *= d
    if nitems > 0x3FFFFFFF // 4:
        raise CorruptRecordError(f"array datum claims {nitems} elements")
    bitmap_off = 12 + 8 * ndim  # payload offset of the null bitmap
    if dataoffset:
        data = dataoffset - 4
        if data < bitmap_off + (nitems + 7) // 8 or data > n:
            raise CorruptRecordError(f"array datum has impossible dataoffset {dataoffset}")
        hasnull = True
    else:
        data = ((16 + 8 * ndim + MAXALIGN - 1) & ~(MAXALIGN - 1)) - 4
        hasnull = False
    typ = ctx.type(elemtype)
    typlen = typ.typlen
    align = ALIGNMENT[typ.typalign]
    items = []
    off = data
    for i in range(nitems):
        if hasnull and not (value[bitmap_off + (i >> 3)] >> (i & 7)) & 1:
            items.append(None)
            continue
        pad = (off + 4) % align
        if pad:
            off += align - pad
        if typlen > 0:
            nxt = off + typlen
            if nxt > n:
                raise CorruptRecordError(f"array element {i + 1} of {nitems} runs past the end of the array")
            items.append(bytes(value[off:nxt]))
            off = nxt
        elif typlen == -1:
            item, size = read_varlena(value, off, n)
            if isinstance(item, ToastPointer):
                raise CorruptRecordError(f"array element {i + 1} is a TOAST pointer")
            items.append(item)
            off += size
        elif typlen == -2:
            nul = bytes(value[off:]).find(b"\x00")
            if nul < 0:
                raise CorruptRecordError(f"array element {i + 1} (cstring) has no terminating NUL")
            items.append(bytes(value[off:off + nul]))
            off += nul + 1
        else:
            raise CorruptRecordError(f"array element type {typ.typname} has impossible typlen {typlen}")
    return elemtype, dims, lbounds, items


def _quote(s: str, delim: str) -> str:
    """array_out's quoting of one element."""
    need = not s or (len(s) == 4 and s.isascii() and s.upper() == "NULL")
    if not need:
        for ch in s:
            if ch == '"' or ch == "\\" or ch == "{" or ch == "}" or ch == delim or ch in _SPACE:
                need = True
                break
    if not need:
        return s
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _nest(items: list, dims, delim: str) -> str:
    if len(dims) == 1:
        return "{" + delim.join(items) + "}"
    step = len(items) // dims[0] if dims[0] else 0
    sub = dims[1:]
    return "{" + delim.join([_nest(items[k * step:(k + 1) * step], sub, delim) for k in range(dims[0])]) + "}"


def array_text(value, ctx) -> str:
    elemtype, dims, lbounds, items = deconstruct(value, ctx)
    if not items:
        return "{}"
    delim = ctx.type(elemtype).typdelim
    out = ctx.output
    strs = ["NULL" if v is None else _quote(out(elemtype, v), delim) for v in items]
    prefix = ""
    if any(lb != 1 for lb in lbounds):
        prefix = "".join([f"[{lb}:{lb + d - 1}]" for lb, d in zip(lbounds, dims)]) + "="
    return prefix + _nest(strs, dims, delim)


def array_out(value, typ, ctx) -> str:
    return array_text(value, ctx)


def _vector_out(value, ctx) -> str:
    elemtype, _dims, _lbounds, items = deconstruct(value, ctx)
    return " ".join(ctx.output(elemtype, v) for v in items if v is not None)


def int2vectorout(value, typ, ctx) -> str:
    return _vector_out(value, ctx)


def oidvectorout(value, typ, ctx) -> str:
    return _vector_out(value, ctx)


OUTPUT_FUNCTIONS = {
    "array_out": array_out,
    "int2vectorout": int2vectorout,
    "oidvectorout": oidvectorout,
}
