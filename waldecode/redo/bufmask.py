"""Page masking for consistency checks (src/backend/access/common/bufmask.c).

Owns the masks every resource manager's ``rm_mask`` starts from: what a page may differ in
between the primary and a replay without anything being wrong (the LSN and checksum, hint bits
set without WAL, the bytes of the hole between the line pointers and the tuples).  A page is a
``bytearray``, masked in place with MASK_MARKER.  Hands masked pages to ``heapam_xlog.heap_mask``
and to the consistency check (``xlogrecovery``).
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..wal.xlogrecord import BLCKSZ
from . import bufpage as bp

# src/include/access/bufmask.h
MASK_MARKER = 0

_u32 = struct.Struct("<I")


def mask_page_lsn_and_checksum(page: bytearray) -> None:
    """mask_page_lsn_and_checksum: the LSN moves on replay (full-page images, the LSN rule) and the
    checksum is computed when the page is written out."""
    page[0:8] = bytes([MASK_MARKER]) * 8
    page[bp.PD_CHECKSUM_OFF:bp.PD_CHECKSUM_OFF + 2] = bytes([MASK_MARKER]) * 2


def mask_page_hint_bits(page: bytearray) -> None:
    """mask_page_hint_bits: pd_prune_xid and the PD_PAGE_FULL and PD_HAS_FREE_LINES flags are hints;
    PD_ALL_VISIBLE is masked too, because replay does not set it when the page LSN is already past
    the record (heap_xlog_visible)."""
    _u32.pack_into(page, bp.PD_PRUNE_XID_OFF, MASK_MARKER)
    bp.set_pd_flags(page, bp.pd_flags(page) & ~(bp.PD_PAGE_FULL | bp.PD_HAS_FREE_LINES | bp.PD_ALL_VISIBLE))


def mask_unused_space(page: bytearray) -> None:
    """mask_unused_space: the bytes between pd_lower and pd_upper hold whatever was there before."""
    lower, upper, special = bp.pd_lower(page), bp.pd_upper(page), bp.pd_special(page)
    if lower > upper or special < upper or lower < bp.SizeOfPageHeaderData or special > BLCKSZ:
        raise CorruptRecordError(f"invalid page pd_lower {lower} pd_upper {upper} pd_special {special}")
    page[lower:upper] = bytes([MASK_MARKER]) * (upper - lower)
