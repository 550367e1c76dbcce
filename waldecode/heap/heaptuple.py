"""Heap tuples: from tuple bytes to one datum per column.

Owns the column walk of src/backend/access/common/heaptuple.c
(``heap_deform_tuple``, ``getmissingattr``) over a WAL tuple body
(``deform_tuple``) or a composite datum (``deform_datum_tuple``).  Each column
comes out as ``None`` (NULL, or a dropped column), ``bytes`` (fixed-length:
exactly ``attlen`` bytes as stored, little-endian; varlena: the payload without
its header, decompressed if it was compressed inline; cstring: without the NUL),
a ``varlena.ToastPointer`` (the value is in a TOAST table: the caller resolves
it) or a ``MissingValue`` (a column added after the tuple was written, whose
``attmissingval`` text is printed as is).  Hands these to ``types.output_text``.

A flat walk over bytes and offsets, so that it can move into Cython unchanged.
Every length is checked before it is used; impossible data raises
``CorruptRecordError``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from ..errors import CorruptRecordError
from ..pg.bufpage import MAXALIGN
from .varlena import read_varlena, varsize_any

# src/include/access/htup_details.h
HEAP_NATTS_MASK = 0x07FF
HEAP_HASNULL = 0x0001
HEAP_HASVARWIDTH = 0x0002
HEAP_HASEXTERNAL = 0x0004
HEAP_XMAX_KEYSHR_LOCK = 0x0010
HEAP_XMAX_EXCL_LOCK = 0x0040
HEAP_XMAX_LOCK_ONLY = 0x0080
HEAP_XMAX_SHR_LOCK = HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK
HEAP_LOCK_MASK = HEAP_XMAX_SHR_LOCK | HEAP_XMAX_EXCL_LOCK | HEAP_XMAX_KEYSHR_LOCK
HEAP_XMIN_COMMITTED = 0x0100
HEAP_XMIN_INVALID = 0x0200
HEAP_XMIN_FROZEN = HEAP_XMIN_COMMITTED | HEAP_XMIN_INVALID
HEAP_XMAX_COMMITTED = 0x0400
HEAP_XMAX_INVALID = 0x0800
HEAP_XMAX_IS_MULTI = 0x1000
HEAP_MOVED = 0xC000  # HEAP_MOVED_OFF | HEAP_MOVED_IN (pre-9.0 VACUUM FULL)
HEAP_XMAX_BITS = HEAP_XMAX_COMMITTED | HEAP_XMAX_INVALID | HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK | HEAP_XMAX_LOCK_ONLY
HEAP_KEYS_UPDATED = 0x2000  # t_infomask2
SizeofHeapTupleHeader = 23  # offsetof(HeapTupleHeaderData, t_bits)
# HeapTupleHeaderData up to t_bits: t_xmin, t_xmax, t_cid (t_xvac), t_ctid (ip_blkid bi_hi, bi_lo;
# ip_posid), t_infomask2, t_infomask, t_hoff
HeapTupleHeaderData = struct.Struct("<IIIHHHHHB")
# its fields' offsets, for the readers and writers of one field of a tuple on a page
T_XMIN = 0
T_XMAX = 4
T_CID = 8  # t_field3: t_cid, or t_xvac for tuples moved by pre-9.0 VACUUM FULL
T_CTID = 12  # ItemPointerData {bi_hi, bi_lo, ip_posid}
T_INFOMASK2 = 18
T_INFOMASK = 20
T_HOFF = 22
assert SizeofHeapTupleHeader == T_HOFF + 1  # t_bits follows t_hoff
MaxTupleAttributeNumber = 1664
MaxHeapAttributeNumber = 1600

# Composite datum (HeapTupleHeaderData with t_choice.t_datum), offsets in the payload,
# i.e. after the 4-byte varlena header (datum_len_): datum_typmod @0, datum_typeid @4,
# t_ctid @8, t_infomask2 @14, t_infomask @16, t_hoff @18, t_bits @19.
_datum_header = struct.Struct("<iI6xHHB")
_DATUM_BITS_OFF = SizeofHeapTupleHeader - 4
_u32 = struct.Struct("<I")

# attalign -> alignment in bytes (tupmacs.h att_align_nominal)
ALIGNMENT = {"c": 1, "s": 2, "i": 4, "d": 8}


class MissingValue(NamedTuple):
    """A column added after the tuple was written (attnum > natts) with a default:
    ``pg_attribute.attmissingval`` in its output form, printed as is."""

    text: str


def deform_tuple(body, t_infomask2: int, t_infomask: int, t_hoff: int, attributes, start: int = 0,
                 end: int | None = None) -> list:
    """Split a WAL tuple body into one value per attribute (dropped ones included, as None).

    ``body[start:end]`` is the tuple after the 5-byte xl_heap_header: the null
    bitmap (if HEAP_HASNULL), padding up to ``t_hoff - 23``, then the column
    data.  ``attributes`` are the relation's pg_attribute rows in attnum order
    (``catalog.Attribute``).
    """
    if end is None:
        end = len(body)
    if t_hoff < SizeofHeapTupleHeader:
        raise CorruptRecordError(f"tuple t_hoff {t_hoff} is smaller than the {SizeofHeapTupleHeader}-byte header")
    data_off = start + t_hoff - SizeofHeapTupleHeader
    if data_off > end:
        raise CorruptRecordError(f"tuple t_hoff {t_hoff} lies past the end of its {end - start + 23} bytes")
    return _deform(body, start, data_off, end, t_infomask2 & HEAP_NATTS_MASK, t_infomask & HEAP_HASNULL,
                   attributes, "tuple")


def deform_datum_tuple(payload, attributes, start: int = 0, end: int | None = None) -> list:
    """Split a composite datum (record) into one value per attribute of its type.

    ``payload[start:end]`` is the datum without its varlena header (a
    HeapTupleHeader in datum form from datum_typmod on); ``attributes`` are those
    of the type's ``pg_type.typrelid`` relation.  rowtypes.c record_out /
    heap_deform_tuple.
    """
    if end is None:
        end = len(payload)
    if end - start < _DATUM_BITS_OFF:
        raise CorruptRecordError(f"composite datum of {end - start} bytes is shorter than its tuple header")
    _typmod, _typeid, infomask2, infomask, t_hoff = _datum_header.unpack_from(payload, start)
    if t_hoff < SizeofHeapTupleHeader:
        raise CorruptRecordError(f"composite datum t_hoff {t_hoff} is smaller than the tuple header")
    data_off = start + t_hoff - 4
    if data_off > end:
        raise CorruptRecordError(f"composite datum t_hoff {t_hoff} lies past its end ({end - start + 4} bytes)")
    return _deform(payload, start + _DATUM_BITS_OFF, data_off, end, infomask2 & HEAP_NATTS_MASK,
                   infomask & HEAP_HASNULL, attributes, "composite datum")


def datum_type_oid(payload, start: int = 0) -> int:
    """HeapTupleHeaderGetTypeId of a composite datum payload (datum_typeid)."""
    if len(payload) - start < 8:
        raise CorruptRecordError("composite datum is too short for its type OID")
    return _u32.unpack_from(payload, start + 4)[0]


def _deform(buf, bits_off: int, data_off: int, end: int, natts: int, hasnull: int, attributes, what: str) -> list:
    """heap_deform_tuple: walk ``natts`` attributes from ``data_off``; the rest are missing."""
    nattrs = len(attributes)
    if natts > nattrs:
        raise CorruptRecordError(f"{what} has {natts} attributes but its relation has only {nattrs} "
                                 f"(catalog does not match the data)")
    if hasnull:
        bitmap_len = (natts + 7) >> 3
        if bits_off + bitmap_len > data_off:
            raise CorruptRecordError(f"{what} null bitmap of {bitmap_len} bytes for {natts} attributes "
                                     f"does not fit before its data (t_hoff)")
    values = [None] * nattrs
    off = data_off
    for i in range(natts):
        if hasnull and not (buf[bits_off + (i >> 3)] >> (i & 7)) & 1:
            continue  # NULL: no bytes
        att = attributes[i]
        attlen = att.attlen
        if attlen > 0:
            a = ALIGNMENT[att.attalign]
            pad = (off - data_off) % a
            if pad:
                off += a - pad
            nxt = off + attlen
            if nxt > end:
                raise CorruptRecordError(f"{what} attribute {att.attnum} ({attlen} bytes at offset {off - data_off} "
                                         f"of the data) runs past the end of the tuple ({end - data_off} bytes)")
            if not att.attisdropped:
                values[i] = bytes(buf[off:nxt])
            off = nxt
        elif attlen == -1:
            if off >= end:
                raise CorruptRecordError(f"{what} attribute {att.attnum} (varlena) starts past the end of the tuple")
            if buf[off] == 0:
                # att_align_pointer: a zero byte is padding before a 4-byte header
                a = ALIGNMENT[att.attalign]
                pad = (off - data_off) % a
                if pad:
                    off += a - pad
            if att.attisdropped:
                off += varsize_any(buf, off, end)
            else:
                values[i], size = read_varlena(buf, off, end)
                off += size
        elif attlen == -2:
            nul = buf.find(b"\x00", off, end) if hasattr(buf, "find") else bytes(buf[off:end]).find(b"\x00")
            if nul < 0:
                raise CorruptRecordError(f"{what} attribute {att.attnum} (cstring) has no terminating NUL")
            if not hasattr(buf, "find"):
                nul += off
            if not att.attisdropped:
                values[i] = bytes(buf[off:nul])
            off = nul + 1
        else:
            raise CorruptRecordError(f"{what} attribute {att.attnum} has impossible attlen {attlen}")
    for i in range(natts, nattrs):
        att = attributes[i]
        if att.atthasmissing and not att.attisdropped and att.attmissingval is not None:
            values[i] = MissingValue(att.attmissingval)
    return values


def heap_fill_tuple(attributes, datums, natts: int | None = None) -> tuple[bytes, int, int, int]:
    """heap_fill_tuple: ``datums`` per attribute (None for NULL, else the stored bytes: with
    their varlena header for attlen -1, without the NUL for attlen -2).  Returns
    ``(body, t_infomask2, t_infomask, t_hoff)`` as ``heaptuple.deform_tuple`` takes them.
    ``natts``: store only the first ``natts`` attributes (a tuple older than ADD COLUMN)."""
    if natts is None:
        natts = len(attributes)
    hasnull = any(d is None for d in datums[:natts])
    bitmap_len = (natts + 7) // 8 if hasnull else 0
    t_hoff = MAXALIGN(SizeofHeapTupleHeader + bitmap_len)
    bitmap = bytearray(bitmap_len)
    data = bytearray()
    infomask = HEAP_HASNULL if hasnull else 0
    for i in range(natts):
        d = datums[i]
        if d is None:
            continue
        if hasnull:
            bitmap[i >> 3] |= 1 << (i & 7)
        att = attributes[i]
        a = ALIGNMENT[att.attalign]
        if att.attlen == -1:
            infomask |= HEAP_HASVARWIDTH
            if d[0] == 0x01:
                infomask |= HEAP_HASEXTERNAL
            elif d[0] & 1 == 0:
                data += b"\x00" * ((-len(data)) % a)
            data += d
        elif att.attlen == -2:
            infomask |= HEAP_HASVARWIDTH
            data += b"\x00" * ((-len(data)) % a)
            data += bytes(d) + b"\x00"
        else:
            assert len(d) == att.attlen, (att, len(d))
            data += b"\x00" * ((-len(data)) % a)
            data += d
    body = bytes(bitmap) + b"\x00" * (t_hoff - SizeofHeapTupleHeader - bitmap_len) + bytes(data)
    return body, natts, infomask, t_hoff
