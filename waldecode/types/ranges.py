"""range_out (rangetypes.c) and multirange_out (multirangetypes.c).

Range payload (after the varlena header): Oid rangetypid, the lower bound (if
present), the upper bound (if present, aligned as att_align_pointer does:
varlenas with a short header are not aligned), then one flags byte.
Multirange payload: Oid multirangetypid, uint32 rangeCount, uint32
items[rangeCount - 1] (lengths, every 4th an offset), uint8 flags[rangeCount],
then the ranges' bound data from the next subtype-aligned offset.  Alignment
counts from the start of the 4-byte varlena header.

Text: ``empty``, or ``[``/``(`` lower ``,`` upper ``]``/``)``, bounds quoted
when empty or containing ``"`` ``\\`` ``(`` ``)`` ``[`` ``]`` ``,`` or white
space (``"`` and ``\\`` doubled); multiranges ``{r1,r2}``.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError, UnsupportedTypeError
from ..heap.heaptuple import ALIGNMENT
from ..heap.varlena import ToastPointer, read_varlena

_u32 = struct.Struct("<I")

# src/include/utils/rangetypes.h
RANGE_EMPTY = 0x01
RANGE_LB_INC = 0x02
RANGE_UB_INC = 0x04
RANGE_LB_INF = 0x08
RANGE_UB_INF = 0x10
RANGE_LB_NULL = 0x20
RANGE_UB_NULL = 0x40
RANGE_CONTAIN_EMPTY = 0x80
_NO_LBOUND = RANGE_EMPTY | RANGE_LB_NULL | RANGE_LB_INF
_NO_UBOUND = RANGE_EMPTY | RANGE_UB_NULL | RANGE_UB_INF
MULTIRANGE_ITEM_OFF_BIT = 0x80000000
MULTIRANGE_ITEM_OFFSET_STRIDE = 4

_SPECIAL = frozenset('"\\()[],') | frozenset(" \t\n\r\v\f")


def _escape_bound(s: str) -> str:
    """range_bound_escape."""
    if s and _SPECIAL.isdisjoint(s):
        return s
    return '"' + s.replace('"', '""').replace("\\", "\\\\") + '"'


def _fetch(value, off: int, end: int, sub):
    """One bound at ``off`` (already aligned): (value, offset after it)."""
    typlen = sub.typlen
    if typlen > 0:
        if off + typlen > end:
            raise CorruptRecordError(f"range bound of {typlen} bytes at offset {off} runs past the bound data")
        return bytes(value[off:off + typlen]), off + typlen
    if typlen == -1:
        v, size = read_varlena(value, off, end)
        if isinstance(v, ToastPointer):
            raise CorruptRecordError("range bound is a TOAST pointer")
        return v, off + size
    if typlen == -2:
        nul = bytes(value[off:end]).find(b"\x00")
        if nul < 0:
            raise CorruptRecordError("range bound (cstring) has no terminating NUL")
        return bytes(value[off:off + nul]), off + nul + 1
    raise CorruptRecordError(f"range subtype {sub.typname} has impossible typlen {typlen}")


def _align_pointer(value, off: int, end: int, sub) -> int:
    """att_align_pointer on payload offsets (alignment counted with the 4-byte header)."""
    if sub.typlen == -1 and off < end and value[off] != 0:
        return off
    a = ALIGNMENT[sub.typalign]
    pad = (off + 4) % a
    return off + (a - pad) if pad else off


def _deparse(flags: int, lower, upper, subtype: int, ctx) -> str:
    """range_deparse with the subtype's output function."""
    if flags & RANGE_EMPTY:
        return "empty"
    out = ctx.output
    lo = _escape_bound(out(subtype, lower)) if lower is not None else ""
    hi = _escape_bound(out(subtype, upper)) if upper is not None else ""
    return f"{'[' if flags & RANGE_LB_INC else '('}{lo},{hi}{']' if flags & RANGE_UB_INC else ')'}"


def _bounds(value, off: int, end: int, flags: int, sub):
    lower = upper = None
    if not flags & _NO_LBOUND:
        lower, off = _fetch(value, off, end, sub)
    if not flags & _NO_UBOUND:
        off = _align_pointer(value, off, end, sub)
        upper, off = _fetch(value, off, end, sub)
    return lower, upper


def _subtype(typ, typeoid: int, ctx):
    rtyp = ctx.catalog.type(typeoid) or typ
    if not rtyp.rngsubtype and rtyp.typtype == "m":
        rng = _range_of_multirange(rtyp, ctx)
        if rng is not None:
            return rng.rngsubtype, ctx.type(rng.rngsubtype)
    if not rtyp.rngsubtype:
        raise UnsupportedTypeError(rtyp.oid, rtyp.typname, "range subtype unknown (rngsubtype missing in catalog)")
    return rtyp.rngsubtype, ctx.type(rtyp.rngsubtype)


def _multirange_name(range_name: str) -> str:
    """pg_type.c makeMultirangeTypeName: the default name of a range's multirange."""
    pos = range_name.find("range")
    if pos >= 0:
        return range_name[:pos] + "multirange" + range_name[pos + 5:]
    return range_name + "_multirange"


def _range_of_multirange(mtyp, ctx):
    """The range type of a multirange whose TypeInfo lacks rngsubtype: by CREATE TYPE's naming rule."""
    for t in ctx.catalog.types.values():
        if (t.typtype == "r" and t.rngsubtype and t.nspname == mtyp.nspname
                and _multirange_name(t.typname) == mtyp.typname):
            return t
    return None


def range_text(value, typ, ctx) -> str:
    subtype, flags, lower, upper = range_parts(value, typ, ctx)
    return _deparse(flags, lower, upper, subtype, ctx)


def range_out(value, typ, ctx) -> str:
    return range_text(value, typ, ctx)


def multirange_ranges(value, typ, ctx) -> tuple:
    """(subtype OID, [(flags, lower, upper), ...]): the ranges of a multirange datum, in order."""
    n = len(value)
    if n < 8:
        raise CorruptRecordError(f"multirange datum of {n} bytes is too short")
    typeoid, count = struct.unpack_from("<II", value, 0)
    if count == 0:
        return 0, []
    subtype, sub = _subtype(typ, typeoid, ctx)
    items_off = 8
    flags_off = items_off + 4 * (count - 1)
    a = ALIGNMENT[sub.typalign]
    bounds_abs = 4 + flags_off + count
    bounds_abs = (bounds_abs + a - 1) // a * a
    bounds = bounds_abs - 4
    if bounds > n:
        raise CorruptRecordError(f"multirange datum of {n} bytes is too short for {count} ranges")
    items = struct.unpack_from(f"<{count - 1}I", value, items_off) if count > 1 else ()
    ranges = []
    offset = 0
    for i in range(count):
        if i > 0:
            item = items[i - 1]
            if item & MULTIRANGE_ITEM_OFF_BIT:
                offset = item & 0x7FFFFFFF
            else:
                offset += item
        flags = value[flags_off + i]
        lower, upper = _bounds(value, bounds + offset, n, flags, sub)
        ranges.append((flags, lower, upper))
    return subtype, ranges


def range_parts(value, typ, ctx) -> tuple:
    """(subtype OID, flags, lower, upper) of a range datum (a bound absent: None)."""
    n = len(value)
    if n < 5:
        raise CorruptRecordError(f"range datum of {n} bytes is too short")
    flags = value[n - 1]
    subtype, sub = _subtype(typ, _u32.unpack_from(value, 0)[0], ctx)
    lower, upper = _bounds(value, 4, n - 1, flags, sub)
    return subtype, flags, lower, upper


def multirange_text(value, typ, ctx) -> str:
    subtype, ranges = multirange_ranges(value, typ, ctx)
    return "{" + ",".join(_deparse(flags, lower, upper, subtype, ctx) for flags, lower, upper in ranges) + "}"


def multirange_out(value, typ, ctx) -> str:
    return multirange_text(value, typ, ctx)


OUTPUT_FUNCTIONS = {
    "range_out": range_out,
    "multirange_out": multirange_out,
}
