"""Page layout: the standard page as src/backend/storage/page/bufpage.c lays it out and changes it.

Owns the page operations heap redo needs on the page header and line-pointer array whose layout
``pg.bufpage`` declares (src/include/storage/bufpage.h, itemid.h), done as bufpage.c does them:
``page_init`` (PageInit), ``page_add_item_extended`` (PageAddItemExtended), ``page_repair_fragmentation``
(PageRepairFragmentation with compactify_tuples, 14+: trailing unused line pointers are
truncated away) and ``page_truncate_line_pointer_array`` (PageTruncateLinePointerArray, 14+).
A page is a ``bytearray`` of ``BLCKSZ`` bytes, changed in place.  Hands pages to the redo
routines (``heapam_xlog``) and to masking (``bufmask``).

Where the server PANICs or ERRORs on a page it cannot work with, these raise
``CorruptRecordError`` without an LSN; the redo driver adds the record's LSN.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..heap.heaptuple import SizeofHeapTupleHeader
# the layout facts (bufpage.h, itemid.h, off.h, MAXALIGN) are pg.bufpage's, shared with the data
# directory's heap scans; the redo modules reach them through this module (``bp.LP_NORMAL``)
from ..pg.bufpage import (LP_DEAD, LP_NORMAL, LP_REDIRECT, LP_UNUSED, MAXALIGN, PAI_IS_HEAP,  # noqa: F401
                          PAI_OVERWRITE, PD_ALL_VISIBLE, PD_CHECKSUM_OFF, PD_FLAGS_OFF, PD_HAS_FREE_LINES,
                          PD_LOWER_OFF, PD_PAGE_FULL, PD_PRUNE_XID_OFF, PD_SPECIAL_OFF, PD_UPPER_OFF,
                          PG_PAGE_LAYOUT_VERSION, FirstOffsetNumber, InvalidOffsetNumber, PageHeaderData,
                          SizeOfItemIdData, SizeOfPageHeaderData, item_id_fields, item_id_word, page_get_lsn)
from ..pg.transam import xid_precedes
from ..wal.xlogrecord import BLCKSZ

# src/include/access/htup_details.h: MaxHeapTuplesPerPage
# (BLCKSZ - SizeOfPageHeaderData) / (MAXALIGN(SizeofHeapTupleHeader) + sizeof(ItemIdData))
MaxHeapTuplesPerPage = (BLCKSZ - SizeOfPageHeaderData) // (MAXALIGN(SizeofHeapTupleHeader) + SizeOfItemIdData)

_u16 = struct.Struct("<H")
_u32 = struct.Struct("<I")
_lsn = struct.Struct("<II")


# -- header fields -----------------------------------------------------------------------------

def page_set_lsn(page: bytearray, lsn: int) -> None:
    _lsn.pack_into(page, 0, lsn >> 32, lsn & 0xFFFFFFFF)


def pd_lower(page) -> int:
    return _u16.unpack_from(page, PD_LOWER_OFF)[0]


def pd_upper(page) -> int:
    return _u16.unpack_from(page, PD_UPPER_OFF)[0]


def pd_special(page) -> int:
    return _u16.unpack_from(page, PD_SPECIAL_OFF)[0]


def pd_flags(page) -> int:
    return _u16.unpack_from(page, PD_FLAGS_OFF)[0]


def set_pd_flags(page: bytearray, flags: int) -> None:
    _u16.pack_into(page, PD_FLAGS_OFF, flags)


def pd_prune_xid(page) -> int:
    return _u32.unpack_from(page, PD_PRUNE_XID_OFF)[0]


def page_is_new(page) -> bool:
    """PageIsNew: a page never initialized (all zeros as the file system gives it) has pd_upper 0."""
    return pd_upper(page) == 0


def page_set_all_visible(page: bytearray) -> None:
    set_pd_flags(page, pd_flags(page) | PD_ALL_VISIBLE)


def page_clear_all_visible(page: bytearray) -> None:
    set_pd_flags(page, pd_flags(page) & ~PD_ALL_VISIBLE)


def page_is_all_visible(page) -> bool:
    return bool(pd_flags(page) & PD_ALL_VISIBLE)


def page_set_prunable(page: bytearray, xid: int) -> None:
    """PageSetPrunable: remember the oldest xid that may leave something to prune."""
    old = pd_prune_xid(page)
    if old == 0 or xid_precedes(xid, old):
        _u32.pack_into(page, PD_PRUNE_XID_OFF, xid)


def page_get_max_offset_number(page) -> int:
    """PageGetMaxOffsetNumber: how many line pointers the array holds."""
    lower = pd_lower(page)
    return 0 if lower <= SizeOfPageHeaderData else (lower - SizeOfPageHeaderData) // SizeOfItemIdData


# -- line pointers -----------------------------------------------------------------------------

def _lp_pos(offnum: int) -> int:
    return SizeOfPageHeaderData + (offnum - 1) * SizeOfItemIdData


def item_id(page, offnum: int) -> tuple[int, int, int]:
    """PageGetItemId: ``(lp_off, lp_flags, lp_len)`` of line pointer ``offnum`` (1-based)."""
    return item_id_fields(_u32.unpack_from(page, _lp_pos(offnum))[0])


def set_item_id(page: bytearray, offnum: int, lp_off: int, lp_flags: int, lp_len: int) -> None:
    _u32.pack_into(page, _lp_pos(offnum), item_id_word(lp_off, lp_flags, lp_len))


def item_id_set_unused(page: bytearray, offnum: int) -> None:
    set_item_id(page, offnum, 0, LP_UNUSED, 0)


def item_id_set_dead(page: bytearray, offnum: int) -> None:
    set_item_id(page, offnum, 0, LP_DEAD, 0)


def item_id_set_redirect(page: bytearray, offnum: int, link: int) -> None:
    set_item_id(page, offnum, link, LP_REDIRECT, 0)


def item_id_set_normal(page: bytearray, offnum: int, off: int, length: int) -> None:
    set_item_id(page, offnum, off, LP_NORMAL, length)


# -- page operations ---------------------------------------------------------------------------

def page_init(page: bytearray, page_size: int = BLCKSZ, special_size: int = 0) -> None:
    """PageInit: a zeroed page with an empty line-pointer array and ``special_size`` bytes of special space."""
    special_size = MAXALIGN(special_size)
    page[:page_size] = bytes(page_size)
    PageHeaderData.pack_into(page, 0, 0, 0, 0, 0, SizeOfPageHeaderData, page_size - special_size,
                             page_size - special_size, page_size | PG_PAGE_LAYOUT_VERSION, 0)


def new_page() -> bytearray:
    """A page as XLogInitBufferForRedo hands it out (zeros; the redo routine runs PageInit)."""
    return bytearray(BLCKSZ)


def _check_pointers(page, what: str) -> tuple[int, int, int]:
    lower, upper, special = pd_lower(page), pd_upper(page), pd_special(page)
    if lower < SizeOfPageHeaderData or lower > upper or upper > special or special > BLCKSZ:
        raise CorruptRecordError(f"{what}: corrupted page pointers: lower = {lower}, upper = {upper}, "
                                 f"special = {special}")
    return lower, upper, special


def page_add_item_extended(page: bytearray, item, size: int, offset_number: int, flags: int) -> int:
    """PageAddItemExtended: put ``item`` (``size`` bytes) on the page; its offset number, or
    InvalidOffsetNumber (0) where the server warns and refuses (no room, a used slot with
    PAI_OVERWRITE, an offset past the end)."""
    lower, upper, _special = _check_pointers(page, "PageAddItemExtended")
    limit = page_get_max_offset_number(page) + 1
    needshuffle = False
    if offset_number != InvalidOffsetNumber:
        if flags & PAI_OVERWRITE:
            if offset_number < limit:
                _off, lp_flags, lp_len = item_id(page, offset_number)
                if lp_flags != LP_UNUSED or lp_len != 0:  # ItemIdIsUsed || ItemIdHasStorage
                    return InvalidOffsetNumber
        elif offset_number < limit:
            needshuffle = True
    else:
        # find a recyclable line pointer when the hint says there is one
        if pd_flags(page) & PD_HAS_FREE_LINES:
            offset_number = FirstOffsetNumber
            while offset_number < limit:
                _off, lp_flags, lp_len = item_id(page, offset_number)
                if lp_flags == LP_UNUSED and lp_len == 0:
                    break
                offset_number += 1
            if offset_number >= limit:
                set_pd_flags(page, pd_flags(page) & ~PD_HAS_FREE_LINES)  # the hint was wrong
        else:
            offset_number = limit
    if offset_number > limit:
        return InvalidOffsetNumber
    if flags & PAI_IS_HEAP and offset_number > MaxHeapTuplesPerPage:
        return InvalidOffsetNumber
    new_lower = lower + SizeOfItemIdData if (offset_number == limit or needshuffle) else lower
    new_upper = upper - MAXALIGN(size)
    if new_lower > new_upper:
        return InvalidOffsetNumber
    if needshuffle:
        pos = _lp_pos(offset_number)
        end = _lp_pos(limit)
        page[pos + SizeOfItemIdData:end + SizeOfItemIdData] = page[pos:end]
    item_id_set_normal(page, offset_number, new_upper, size)
    # only ``size`` bytes are written: the alignment padding after the item keeps what was there
    page[new_upper:new_upper + size] = item[:size]
    _u16.pack_into(page, PD_LOWER_OFF, new_lower)
    _u16.pack_into(page, PD_UPPER_OFF, new_upper)
    return offset_number


def page_add_item(page: bytearray, item, size: int, offset_number: int, overwrite: bool, is_heap: bool) -> int:
    """PageAddItem (bufpage.h macro)."""
    return page_add_item_extended(page, item, size, offset_number,
                                  (PAI_OVERWRITE if overwrite else 0) | (PAI_IS_HEAP if is_heap else 0))


def page_repair_fragmentation(page: bytearray) -> None:
    """PageRepairFragmentation: move the tuples with storage together at the end of the page, in
    line-pointer order from pd_special down (compactify_tuples gives that layout whether or not the
    items were presorted), truncate trailing unused line pointers (14+) and set the
    PD_HAS_FREE_LINES hint."""
    lower, upper, special = pd_lower(page), pd_upper(page), pd_special(page)
    if (lower < SizeOfPageHeaderData or lower > upper or upper > special or special > BLCKSZ
            or special != MAXALIGN(special)):
        raise CorruptRecordError(f"PageRepairFragmentation: corrupted page pointers: lower = {lower}, "
                                 f"upper = {upper}, special = {special}")
    nline = page_get_max_offset_number(page)
    items = []  # (offnum, itemoff, alignedlen) in line-pointer order
    nunused = 0
    totallen = 0
    finalusedlp = InvalidOffsetNumber
    for i in range(FirstOffsetNumber, nline + 1):
        lp_off, lp_flags, lp_len = item_id(page, i)
        if lp_flags != LP_UNUSED:
            if lp_len != 0:
                if lp_off < upper or lp_off >= special:
                    raise CorruptRecordError(f"PageRepairFragmentation: corrupted line pointer: {lp_off}")
                alignedlen = MAXALIGN(lp_len)
                items.append((i, lp_off, alignedlen))
                totallen += alignedlen
            finalusedlp = i
        else:
            item_id_set_unused(page, i)  # unused entries should have lp_len 0: make sure
            nunused += 1
    if not items:
        _u16.pack_into(page, PD_UPPER_OFF, special)
    else:
        if totallen > special - lower:
            raise CorruptRecordError(f"PageRepairFragmentation: corrupted item lengths: total {totallen}, "
                                     f"available space {special - lower}")
        # compactify_tuples: copy each tuple (with its alignment padding) from a scratch copy of
        # the page, so that overlapping moves cannot clobber a tuple not yet moved
        scratch = bytes(page)
        new_upper = special
        for i, itemoff, alignedlen in items:
            new_upper -= alignedlen
            page[new_upper:new_upper + alignedlen] = scratch[itemoff:itemoff + alignedlen]
            _off, lp_flags, lp_len = item_id(page, i)
            set_item_id(page, i, new_upper, lp_flags, lp_len)
        _u16.pack_into(page, PD_UPPER_OFF, new_upper)
    if finalusedlp != nline:
        nunusedend = nline - finalusedlp
        nunused -= nunusedend
        _u16.pack_into(page, PD_LOWER_OFF, lower - SizeOfItemIdData * nunusedend)
    if nunused > 0:
        set_pd_flags(page, pd_flags(page) | PD_HAS_FREE_LINES)
    else:
        set_pd_flags(page, pd_flags(page) & ~PD_HAS_FREE_LINES)


def page_truncate_line_pointer_array(page: bytearray) -> None:
    """PageTruncateLinePointerArray (14+): drop the unused line pointers at the end of the array,
    never the first one, and set the PD_HAS_FREE_LINES hint when unused ones remain before them."""
    countdone = False
    sethint = False
    nunusedend = 0
    for i in range(page_get_max_offset_number(page), FirstOffsetNumber - 1, -1):
        _off, lp_flags, _len = item_id(page, i)
        if not countdone and i > FirstOffsetNumber:
            if lp_flags == LP_UNUSED:
                nunusedend += 1
            else:
                countdone = True
        elif lp_flags == LP_UNUSED:
            sethint = True
            break
    if nunusedend > 0:
        _u16.pack_into(page, PD_LOWER_OFF, pd_lower(page) - SizeOfItemIdData * nunusedend)
    if sethint:
        set_pd_flags(page, pd_flags(page) | PD_HAS_FREE_LINES)
    else:
        set_pd_flags(page, pd_flags(page) & ~PD_HAS_FREE_LINES)
