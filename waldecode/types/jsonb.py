"""jsonb_out (jsonb.c JsonbToCStringWorker, json.c escape_json) over the
on-disk format of utils/jsonb.h / jsonb_util.c.

A container is a uint32 header (count, and the flags scalar / object /
array), one uint32 JEntry per child (objects: all keys, then all values), then
the data.  A JEntry holds the child's type and either its length or (every
JB_OFFSET_STRIDE-th, flag HAS_OFF) its end offset; numerics and nested
containers start at the next 4-byte boundary.  Text: ``{"k": v, ...}`` and
``[a, b]``, numbers through numeric_out.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..heap.varlena import ToastPointer, read_varlena
from .numeric import numeric_text

_u32 = struct.Struct("<I")

# src/include/utils/jsonb.h
JB_CMASK = 0x0FFFFFFF
JB_FSCALAR = 0x10000000
JB_FOBJECT = 0x20000000
JB_FARRAY = 0x40000000
JENTRY_OFFLENMASK = 0x0FFFFFFF
JENTRY_TYPEMASK = 0x70000000
JENTRY_HAS_OFF = 0x80000000
JENTRY_ISSTRING = 0x00000000
JENTRY_ISNUMERIC = 0x10000000
JENTRY_ISBOOL_FALSE = 0x20000000
JENTRY_ISBOOL_TRUE = 0x30000000
JENTRY_ISNULL = 0x40000000
JENTRY_ISCONTAINER = 0x50000000

_ESCAPES = {0x08: "\\b", 0x0C: "\\f", 0x0A: "\\n", 0x0D: "\\r", 0x09: "\\t", 0x22: '\\"', 0x5C: "\\\\"}
_ESCAPE_TABLE = {c: _ESCAPES.get(c, "\\u%04x" % c) for c in list(range(0x20)) + [0x22, 0x5C]}


def escape_json(s: str) -> str:
    """json.c escape_json."""
    return '"' + s.translate(_ESCAPE_TABLE) + '"'


def _scalar(buf, base: int, start: int, end: int, jtype: int, limit: int) -> str:
    if jtype == JENTRY_ISSTRING:
        return escape_json(bytes(buf[base + start:base + end]).decode("utf-8", "surrogateescape"))
    if jtype == JENTRY_ISNUMERIC:
        p = base + ((start + 3) & ~3)
        value, _size = read_varlena(buf, p, base + end)
        if isinstance(value, ToastPointer):
            raise CorruptRecordError("jsonb numeric is a TOAST pointer")
        return numeric_text(value)
    if jtype == JENTRY_ISBOOL_TRUE:
        return "true"
    if jtype == JENTRY_ISBOOL_FALSE:
        return "false"
    if jtype == JENTRY_ISNULL:
        return "null"
    if jtype == JENTRY_ISCONTAINER:
        return _container(buf, base + ((start + 3) & ~3), base + end, limit)
    raise CorruptRecordError(f"jsonb entry has unknown type 0x{jtype:08X}")


def _container(buf, off: int, end: int, limit: int) -> str:
    if off + 4 > end or end > limit:
        raise CorruptRecordError(f"jsonb container at offset {off} runs past the end of the value")
    header = _u32.unpack_from(buf, off)[0]
    count = header & JB_CMASK
    is_object = header & JB_FOBJECT
    nchildren = count * 2 if is_object else count
    base = off + 4 + 4 * nchildren
    if base > end:
        raise CorruptRecordError(f"jsonb container at offset {off} claims {count} children, more than fit")
    entries = struct.unpack_from(f"<{nchildren}I", buf, off + 4) if nchildren else ()
    items = []
    pos = 0
    size = end - base
    for je in entries:
        start = pos
        pos = (je & JENTRY_OFFLENMASK) if je & JENTRY_HAS_OFF else pos + (je & JENTRY_OFFLENMASK)
        if pos < start or pos > size:
            raise CorruptRecordError(f"jsonb entry at [{start}, {pos}) lies outside its container of {size} bytes")
        items.append(_scalar(buf, base, start, pos, je & JENTRY_TYPEMASK, end))
    if is_object:
        if not count:
            return "{}"
        return "{" + ", ".join([f"{items[i]}: {items[count + i]}" for i in range(count)]) + "}"
    if header & JB_FSCALAR:
        if count != 1:
            raise CorruptRecordError(f"jsonb scalar container has {count} elements")
        return items[0]
    if not header & JB_FARRAY:
        raise CorruptRecordError(f"jsonb container header 0x{header:08X} is neither object nor array")
    return "[" + ", ".join(items) + "]"


def jsonb_text(payload) -> str:
    """jsonb_out of a jsonb varlena payload (the root container)."""
    return _container(payload, 0, len(payload), len(payload))


def jsonb_out(value, typ, ctx) -> str:
    return jsonb_text(value)


OUTPUT_FUNCTIONS = {"jsonb_out": jsonb_out}
