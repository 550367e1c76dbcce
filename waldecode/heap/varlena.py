"""Variable-length datums (varlena): headers, inline compression and TOAST pointers.

Owns reading one varlena datum out of a tuple or container: its total on-disk size
(``varsize_any``), its payload without the header (``read_varlena``), decompressed
when it was compressed inline (pglz or LZ4), or a ``ToastPointer`` when the value
lives in a TOAST table; and turning the bytes reassembled from TOAST chunks back
into the value (``decompress_toast_value``).  Hands payload bytes (never the
header) to ``heaptuple`` and ``types``.

Layouts: src/include/varatt.h (16+; postgres.h in 13-15), access/toast_compression.h,
access/detoast.c, access/common/toast_compression.c.  All headers little-endian.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from .. import _impl
from ..errors import CorruptRecordError, DecompressionError

# src/include/varatt.h: vartag_external
VARTAG_INDIRECT = 1
VARTAG_EXPANDED_RO = 2
VARTAG_EXPANDED_RW = 3
VARTAG_ONDISK = 18

# src/include/access/toast_compression.h: ToastCompressionId
TOAST_PGLZ_COMPRESSION_ID = 0
TOAST_LZ4_COMPRESSION_ID = 1
TOAST_INVALID_COMPRESSION_ID = 2

VARHDRSZ = 4
VARHDRSZ_SHORT = 1
VARHDRSZ_EXTERNAL = 2
VARHDRSZ_COMPRESSED = 8  # varattrib_4b.va_compressed: va_header + va_tcinfo
VARLENA_EXTSIZE_BITS = 30
VARLENA_EXTSIZE_MASK = (1 << VARLENA_EXTSIZE_BITS) - 1
# src/include/utils/memutils.h: MaxAllocSize (a datum is never larger)
MaxAllocSize = 0x3FFFFFFF

_u32 = struct.Struct("<I")
# src/include/varatt.h: varatt_external (copied out unaligned, after the 2-byte 1B_E header)
_varatt_external = struct.Struct("<iIII")

_COMPRESSION_NAMES = {TOAST_PGLZ_COMPRESSION_ID: "pglz", TOAST_LZ4_COMPRESSION_ID: "lz4"}


class ToastPointer(NamedTuple):
    """An on-disk TOAST pointer (varatt_external): the value is in TOAST table chunks."""

    va_rawsize: int  # original data size, including the 4-byte varlena header
    va_extinfo: int  # low 30 bits: stored size (no header); 14+: top 2 bits = compression method
    va_valueid: int  # chunk_id of the value in the TOAST table
    va_toastrelid: int  # OID of the TOAST table

    def ondisk_datum(self) -> bytes:
        """The pointer as a tuple stores it: varattrib_1b_e with VARTAG_ONDISK, then varatt_external."""
        return b"\x01" + bytes((VARTAG_ONDISK,)) + _varatt_external.pack(*self)

    @property
    def extsize(self) -> int:
        """Bytes stored in the TOAST table (VARATT_EXTERNAL_GET_EXTSIZE)."""
        return self.va_extinfo & VARLENA_EXTSIZE_MASK

    @property
    def rawsize(self) -> int:
        """Size of the value's payload, without the varlena header."""
        return self.va_rawsize - VARHDRSZ

    @property
    def is_compressed(self) -> bool:
        """VARATT_EXTERNAL_IS_COMPRESSED: stored compressed iff extsize < rawsize - 4."""
        return self.extsize < self.va_rawsize - VARHDRSZ

    @property
    def compression_method(self) -> int:
        """TOAST_PGLZ_COMPRESSION_ID or TOAST_LZ4_COMPRESSION_ID (13 stores 0 = pglz)."""
        return self.va_extinfo >> VARLENA_EXTSIZE_BITS

    @property
    def compression(self) -> str | None:
        """'pglz', 'lz4' or None if stored uncompressed."""
        if not self.is_compressed:
            return None
        return _COMPRESSION_NAMES.get(self.compression_method, f"method {self.compression_method}")


def varsize_any(buf, off: int, end: int) -> int:
    """Total on-disk size (header included) of the varlena datum at ``buf[off]``.

    VARSIZE_ANY; checks the datum fits before ``end``.
    """
    if off >= end:
        raise CorruptRecordError(f"varlena datum at offset {off} starts at or past the end of its data ({end})")
    b0 = buf[off]
    if b0 == 0x01:
        # varattrib_1b_e: VARHDRSZ_EXTERNAL + size of the vartag's payload
        if off + 1 >= end:
            raise CorruptRecordError(f"external varlena datum at offset {off} is truncated before its vartag")
        tag = buf[off + 1]
        if tag == VARTAG_ONDISK:
            size = VARHDRSZ_EXTERNAL + _varatt_external.size
        elif tag in (VARTAG_INDIRECT, VARTAG_EXPANDED_RO, VARTAG_EXPANDED_RW):
            size = VARHDRSZ_EXTERNAL + 8  # an in-memory pointer: never valid on disk
        else:
            raise CorruptRecordError(f"external varlena datum at offset {off} has unknown vartag {tag}")
    elif b0 & 0x01:
        size = b0 >> 1
    else:
        if off + 4 > end:
            raise CorruptRecordError(f"4-byte varlena header at offset {off} is truncated ({end - off} bytes left)")
        size = _u32.unpack_from(buf, off)[0] >> 2
        if size < VARHDRSZ:
            raise CorruptRecordError(f"varlena datum at offset {off} claims {size} bytes, less than its 4-byte header")
    if off + size > end:
        raise CorruptRecordError(f"varlena datum at offset {off} claims {size} bytes but only {end - off} remain")
    return size


def read_varlena(buf, off: int, end: int):
    """The varlena datum at ``buf[off]``: ``(value, size)``.

    ``value`` is the payload bytes without the header (decompressed if it was
    compressed inline) or a ``ToastPointer``; ``size`` is the datum's on-disk size.
    """
    if off >= end:
        raise CorruptRecordError(f"varlena datum at offset {off} starts at or past the end of its data ({end})")
    b0 = buf[off]
    if b0 == 0x01:
        size = varsize_any(buf, off, end)
        tag = buf[off + 1]
        if tag != VARTAG_ONDISK:
            raise CorruptRecordError(f"varlena datum at offset {off} is an in-memory pointer (vartag {tag}), "
                                     f"which cannot appear on disk")
        return ToastPointer(*_varatt_external.unpack_from(buf, off + 2)), size
    if b0 & 0x01:
        size = b0 >> 1
        if off + size > end:
            raise CorruptRecordError(f"varlena datum at offset {off} claims {size} bytes but only {end - off} remain")
        if size < 1:
            raise CorruptRecordError(f"short varlena header at offset {off} claims {size} bytes")
        return bytes(buf[off + 1:off + size]), size
    if off + 4 > end:
        raise CorruptRecordError(f"4-byte varlena header at offset {off} is truncated ({end - off} bytes left)")
    header = _u32.unpack_from(buf, off)[0]
    size = header >> 2
    if size < VARHDRSZ or off + size > end:
        raise CorruptRecordError(f"varlena datum at offset {off} claims {size} bytes but only {end - off} remain")
    if b0 & 0x03 == 0x02:
        # VARATT_IS_4B_C: va_tcinfo, then the compressed stream
        if size < VARHDRSZ_COMPRESSED:
            raise CorruptRecordError(f"compressed varlena datum at offset {off} is only {size} bytes long")
        tcinfo = _u32.unpack_from(buf, off + 4)[0]
        return decompress(buf[off + 8:off + size], tcinfo & VARLENA_EXTSIZE_MASK,
                          tcinfo >> VARLENA_EXTSIZE_BITS, f"inline compressed datum at offset {off}"), size
    return bytes(buf[off + 4:off + size]), size


def decompress(data, rawsize: int, method: int, what: str = "datum") -> bytes:
    """Decompress ``data`` (the stream after va_tcinfo) to exactly ``rawsize`` bytes.

    access/common/toast_compression.c: pglz_decompress_datum (complete
    decompression required) and lz4_decompress_datum (LZ4_decompress_safe, a raw block).
    """
    if rawsize > MaxAllocSize:
        raise DecompressionError(f"{what}: raw size {rawsize} exceeds the 1 GB limit of a datum")
    if method == TOAST_PGLZ_COMPRESSION_ID:
        try:
            return _impl.pglz_decompress(data, rawsize, True)
        except DecompressionError as e:
            raise DecompressionError(f"{what}: {e.reason}") from None
    if method == TOAST_LZ4_COMPRESSION_ID:
        import lz4.block  # lazy: only lz4-compressed values need it

        try:
            out = lz4.block.decompress(bytes(data), uncompressed_size=rawsize)
        except Exception as e:  # lz4 raises its own LZ4BlockError
            raise DecompressionError(f"{what}: lz4: compressed data is corrupt: {e}") from None
        if len(out) != rawsize:
            raise DecompressionError(f"{what}: lz4: decompressed {len(out)} bytes, expected {rawsize}")
        return out
    raise DecompressionError(f"{what}: unknown compression method {method}")


def detoast_inline(datum) -> bytes | ToastPointer:
    """The payload of one complete varlena datum (header included), decompressed if needed.

    For datums handed over whole, e.g. inlined old-key values; a TOAST pointer
    is returned as a ``ToastPointer`` for the caller to resolve.
    """
    value, size = read_varlena(datum, 0, len(datum))
    if size != len(datum):
        raise CorruptRecordError(f"varlena datum claims {size} bytes but {len(datum)} were given")
    return value


def decompress_toast_value(data, pointer: ToastPointer) -> bytes:
    """The value's payload from its TOAST chunks (concatenated in chunk_seq order).

    detoast.c toast_fetch_datum: the chunks hold ``extsize`` bytes; when
    ``extsize < rawsize - 4`` they are va_tcinfo plus a compressed stream, else
    the raw payload.
    """
    extsize = pointer.extsize
    what = f"TOAST value {pointer.va_valueid} in TOAST relation {pointer.va_toastrelid}"
    if len(data) != extsize:
        raise CorruptRecordError(f"{what}: chunks hold {len(data)} bytes, the pointer says {extsize}")
    if not pointer.is_compressed:
        return bytes(data)
    if extsize < 4:
        raise CorruptRecordError(f"{what}: compressed value of {extsize} bytes has no room for va_tcinfo")
    tcinfo = _u32.unpack_from(data, 0)[0]
    rawsize = tcinfo & VARLENA_EXTSIZE_MASK
    if rawsize != pointer.va_rawsize - VARHDRSZ:
        raise DecompressionError(f"{what}: va_tcinfo raw size {rawsize} differs from the pointer's "
                                 f"{pointer.va_rawsize - VARHDRSZ}")
    return decompress(memoryview(data)[4:], rawsize, tcinfo >> VARLENA_EXTSIZE_BITS, what)
