"""Heap tuple headers on a page: the HeapTupleHeader macros of src/include/access/htup_details.h.

Owns reading and setting the header fields of a tuple that lies on a page (``t_xmin``,
``t_xmax``, ``t_cid``/``t_xvac``, ``t_ctid``, ``t_infomask2``, ``t_infomask``, ``t_hoff``) as the
macros redo uses do it (HeapTupleHeaderSetXmax, HeapTupleHeaderSetCmax, ...).  A tuple is named by
the page and the byte offset of its header (``lp_off``).  The header's layout (its fields'
offsets ``T_*``) and the infomask bits waldecode already names live in ``waldecode.heap.heaptuple``;
the bits only redo and masking need are here.
"""

from __future__ import annotations

import struct

from ..heap.heaptuple import (HEAP_LOCK_MASK, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_IS_MULTI,  # noqa: F401
                              HEAP_XMAX_LOCK_ONLY, HEAP_XMIN_FROZEN, T_CID, T_CTID, T_HOFF, T_INFOMASK, T_INFOMASK2,
                              T_XMAX, T_XMIN)

# src/include/access/htup_details.h: t_infomask bits used by redo and masking
HEAP_COMBOCID = 0x0020
HEAP_XACT_MASK = 0xFFF0  # visibility-related bits
# t_infomask2
HEAP_HOT_UPDATED = 0x4000
HEAP_ONLY_TUPLE = 0x8000
# src/include/storage/itemptr.h and htup_details.h: special t_ctid offsets
SpecTokenOffsetNumber = 0xFFFE
MovedPartitionsOffsetNumber = 0xFFFD
MovedPartitionsBlockNumber = 0xFFFFFFFF  # InvalidBlockNumber
# src/include/access/xact.h
FirstCommandId = 0

_u16 = struct.Struct("<H")
_u32 = struct.Struct("<I")
_ctid = struct.Struct("<HHH")


def get_u16(page, pos: int) -> int:
    return _u16.unpack_from(page, pos)[0]


def set_u16(page: bytearray, pos: int, v: int) -> None:
    _u16.pack_into(page, pos, v & 0xFFFF)


def get_u32(page, pos: int) -> int:
    return _u32.unpack_from(page, pos)[0]


def set_u32(page: bytearray, pos: int, v: int) -> None:
    _u32.pack_into(page, pos, v & 0xFFFFFFFF)


def infomask(page, tup: int) -> int:
    return get_u16(page, tup + T_INFOMASK)


def set_infomask(page: bytearray, tup: int, v: int) -> None:
    set_u16(page, tup + T_INFOMASK, v)


def infomask2(page, tup: int) -> int:
    return get_u16(page, tup + T_INFOMASK2)


def set_infomask2(page: bytearray, tup: int, v: int) -> None:
    set_u16(page, tup + T_INFOMASK2, v)


def t_hoff(page, tup: int) -> int:
    return page[tup + T_HOFF]


def set_xmin(page: bytearray, tup: int, xid: int) -> None:
    """HeapTupleHeaderSetXmin."""
    set_u32(page, tup + T_XMIN, xid)


def set_xmax(page: bytearray, tup: int, xid: int) -> None:
    """HeapTupleHeaderSetXmax."""
    set_u32(page, tup + T_XMAX, xid)


def set_cmin(page: bytearray, tup: int, cid: int) -> None:
    """HeapTupleHeaderSetCmin: the command id, and no combo cid."""
    set_u32(page, tup + T_CID, cid)
    set_infomask(page, tup, infomask(page, tup) & ~HEAP_COMBOCID)


def set_cmax(page: bytearray, tup: int, cid: int, iscombo: bool) -> None:
    """HeapTupleHeaderSetCmax."""
    set_u32(page, tup + T_CID, cid)
    m = infomask(page, tup)
    set_infomask(page, tup, m | HEAP_COMBOCID if iscombo else m & ~HEAP_COMBOCID)


def set_xvac(page: bytearray, tup: int, xid: int) -> None:
    """HeapTupleHeaderSetXvac: t_xvac shares t_cid's place."""
    set_u32(page, tup + T_CID, xid)


def get_ctid(page, tup: int) -> tuple[int, int]:
    """t_ctid as ``(block, offset)``."""
    hi, lo, posid = _ctid.unpack_from(page, tup + T_CTID)
    return hi << 16 | lo, posid


def set_ctid(page: bytearray, tup: int, blkno: int, offnum: int) -> None:
    """ItemPointerSet(&tup->t_ctid, blkno, offnum)."""
    _ctid.pack_into(page, tup + T_CTID, blkno >> 16 & 0xFFFF, blkno & 0xFFFF, offnum)


def set_moved_partitions(page: bytearray, tup: int) -> None:
    """HeapTupleHeaderSetMovedPartitions: t_ctid says the row moved to another partition."""
    set_ctid(page, tup, MovedPartitionsBlockNumber, MovedPartitionsOffsetNumber)


def set_hot_updated(page: bytearray, tup: int, on: bool) -> None:
    """HeapTupleHeaderSetHotUpdated / HeapTupleHeaderClearHotUpdated."""
    m = infomask2(page, tup)
    set_infomask2(page, tup, m | HEAP_HOT_UPDATED if on else m & ~HEAP_HOT_UPDATED)


def xmin_frozen(mask: int) -> bool:
    """HeapTupleHeaderXminFrozen on a t_infomask."""
    return mask & HEAP_XMIN_FROZEN == HEAP_XMIN_FROZEN


def xmax_is_locked_only(mask: int) -> bool:
    """HEAP_XMAX_IS_LOCKED_ONLY: xmax only locks the tuple (a lone EXCL_LOCK is how pre-9.3 said so)."""
    return bool(mask & HEAP_XMAX_LOCK_ONLY) or mask & (HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK) == HEAP_XMAX_EXCL_LOCK

