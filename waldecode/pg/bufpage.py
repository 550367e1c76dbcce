"""The standard page's layout: the facts of src/include/storage/bufpage.h, itemid.h and off.h.

Owns the page header (``PageHeaderData``, its field offsets and flags, the layout version), the
line pointer (``ItemIdData``: its bit fields and ``LP_*`` states), the offset-number bounds and
c.h's ``MAXALIGN``, on which every page offset rests.  One copy for both readers of pages: the
data directory's heap scans (``catalog.datadir.heapscan``, PageIsVerified's checks) and redo
(``redo.bufpage``, bufpage.c's operations), which sit in layers that may not import each other.
"""

from __future__ import annotations

import struct

# src/include/pg_config.h: MAXIMUM_ALIGNOF on the 64-bit platforms PostgreSQL runs on (pg_control
# records the cluster's, which ``catalog.datadir.control`` checks against this one)
MAXIMUM_ALIGNOF = 8


def MAXALIGN(n: int) -> int:
    """src/include/c.h: MAXALIGN, ``n`` rounded up to MAXIMUM_ALIGNOF."""
    return (n + MAXIMUM_ALIGNOF - 1) & ~(MAXIMUM_ALIGNOF - 1)


# src/include/storage/bufpage.h: PageHeaderData
# pd_lsn {xlogid, xrecoff}, pd_checksum, pd_flags, pd_lower, pd_upper, pd_special, pd_pagesize_version, pd_prune_xid
PageHeaderData = struct.Struct("<IIHHHHHHI")
SizeOfPageHeaderData = 24  # offsetof(PageHeaderData, pd_linp)
PD_CHECKSUM_OFF = 8
PD_FLAGS_OFF = 10
PD_LOWER_OFF = 12
PD_UPPER_OFF = 14
PD_SPECIAL_OFF = 16
PD_PAGESIZE_VERSION_OFF = 18
PD_PRUNE_XID_OFF = 20
# pd_flags
PD_HAS_FREE_LINES = 0x0001
PD_PAGE_FULL = 0x0002
PD_ALL_VISIBLE = 0x0004
PD_VALID_FLAG_BITS = 0x0007
PG_PAGE_LAYOUT_VERSION = 4
# PageAddItemExtended flags
PAI_OVERWRITE = 1 << 0
PAI_IS_HEAP = 1 << 1

# src/include/storage/itemid.h: ItemIdData {lp_off:15, lp_flags:2, lp_len:15}, low bits first
ItemIdData = struct.Struct("<I")
SizeOfItemIdData = 4
LP_UNUSED = 0
LP_NORMAL = 1
LP_REDIRECT = 2
LP_DEAD = 3

# src/include/storage/off.h
InvalidOffsetNumber = 0
FirstOffsetNumber = 1

_lsn = struct.Struct("<II")


def page_get_lsn(page) -> int:
    """PageGetLSN: pd_lsn as one 64-bit LSN (PageXLogRecPtr {xlogid, xrecoff}: xlogid is the high half)."""
    hi, lo = _lsn.unpack_from(page, 0)
    return hi << 32 | lo


def item_id_fields(word: int) -> tuple[int, int, int]:
    """ItemIdGetOffset, ItemIdGetFlags, ItemIdGetLength of one ItemIdData word: ``(lp_off, lp_flags, lp_len)``."""
    return word & 0x7FFF, (word >> 15) & 0x3, word >> 17


def item_id_word(lp_off: int, lp_flags: int, lp_len: int) -> int:
    """The ItemIdData word with these fields, each cut to its bit width as the C bit fields are."""
    return (lp_off & 0x7FFF) | (lp_flags & 0x3) << 15 | (lp_len & 0x7FFF) << 17
