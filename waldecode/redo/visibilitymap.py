"""The visibility map fork during redo (src/backend/access/heap/visibilitymap.c).

Owns the map's layout (two bits per heap block, ALL_VISIBLE and ALL_FROZEN, in the contents of
PageInit'd pages of the ``vm`` fork: HEAPBLK_TO_MAPBLOCK, HEAPBLK_TO_MAPBYTE, HEAPBLK_TO_OFFSET) and
what redo does to it: visibilitymap_clear for the *_ALL_VISIBLE_CLEARED flags of insert, update,
delete and multi-insert and XLH_LOCK_ALL_FROZEN_CLEARED of the lock records (done whatever the heap
page's LSN: "the visibility map may need to be fixed even if the heap page is already up-to-date"),
visibilitymap_set for XLOG_HEAP2_VISIBLE's block 0, and visibilitymap_prepare_truncate for an SMGR
truncation of the heap.

The store has no relation sizes: a map page it does not hold is taken for one past the end of the
fork, which the server extends with zeros (vm_extend) and initializes in memory (vm_readbuf).  That
is right when the store was filled from a base backup (``md.load_base_backup``), which holds every
map page; a store that starts empty knows the map only from what the WAL rewrites.
"""

from __future__ import annotations

from . import bufpage as bp
from .xlogutils import BLK_NEEDS_REDO, RBM_ZERO_ON_ERROR, RedoRecord

# src/include/common/relpath.h
VISIBILITYMAP_FORKNUM = 2
# src/include/access/visibilitymapdefs.h
VISIBILITYMAP_ALL_VISIBLE = 0x01
VISIBILITYMAP_ALL_FROZEN = 0x02
VISIBILITYMAP_VALID_BITS = 0x03
# src/backend/access/heap/visibilitymap.c
BITS_PER_HEAPBLOCK = 2
HEAPBLOCKS_PER_BYTE = 8 // BITS_PER_HEAPBLOCK
MAPSIZE = bp.BLCKSZ - bp.MAXALIGN(bp.SizeOfPageHeaderData)  # PageGetContents: after the aligned header
HEAPBLOCKS_PER_PAGE = MAPSIZE * HEAPBLOCKS_PER_BYTE
_CONTENTS = bp.MAXALIGN(bp.SizeOfPageHeaderData)


def mapping(heap_blk: int) -> tuple[int, int, int]:
    """HEAPBLK_TO_MAPBLOCK, HEAPBLK_TO_MAPBYTE, HEAPBLK_TO_OFFSET."""
    return (heap_blk // HEAPBLOCKS_PER_PAGE, heap_blk % HEAPBLOCKS_PER_PAGE // HEAPBLOCKS_PER_BYTE,
            heap_blk % HEAPBLOCKS_PER_BYTE * BITS_PER_HEAPBLOCK)


def _readbuf(store, locator: tuple, map_block: int) -> bytearray:
    """vm_readbuf(extend=true): the map page, initialized in memory if it is new or past the end."""
    page = store.read(locator, VISIBILITYMAP_FORKNUM, map_block)
    if page is None:
        page = bp.new_page()
    if bp.page_is_new(page):
        bp.page_init(page, bp.BLCKSZ, 0)
    return page


def visibilitymap_clear(rr: RedoRecord, locator: tuple, heap_blk: int, flags: int) -> None:
    """visibilitymap_clear: drop ``flags`` of a heap block; the page is written only if a bit was set
    (it is not dirtied otherwise, and its LSN never moves)."""
    if rr.wanted is not None and not rr.wanted(locator):
        return
    map_block, map_byte, offset = mapping(heap_blk)
    page = _readbuf(rr.store, locator, map_block)
    mask = flags << offset
    pos = _CONTENTS + map_byte
    if page[pos] & mask:
        page[pos] &= ~mask & 0xFF
        rr.store.write(locator, VISIBILITYMAP_FORKNUM, map_block, page)


def heap_xlog_visible_map(rr: RedoRecord, flags: int) -> None:
    """heap_xlog_visible's map part: block 0 read with RBM_ZERO_ON_ERROR, then visibilitymap_set
    (the map page's LSN becomes the record's end when a bit changes)."""
    action, buf = rr.read_buffer_for_redo_extended(0, RBM_ZERO_ON_ERROR, False)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    if bp.page_is_new(page):
        bp.page_init(page, bp.BLCKSZ, 0)
    heap_blk = rr.block(1).blkno
    map_block, map_byte, offset = mapping(heap_blk)
    if map_block != buf.blkno:
        raise rr.error(f"visibility map block {buf.blkno} does not hold heap block {heap_blk}")
    vmbits = flags & VISIBILITYMAP_VALID_BITS
    pos = _CONTENTS + map_byte
    if vmbits != (page[pos] >> offset & VISIBILITYMAP_VALID_BITS):
        page[pos] |= vmbits << offset
        bp.page_set_lsn(page, rr.lsn)
        rr.mark_dirty(buf)


def visibilitymap_prepare_truncate(store, locator: tuple, nheapblocks: int) -> int | None:
    """visibilitymap_prepare_truncate: clear the bits past the heap's new end on the last map page
    kept; the number of map pages to keep, or None when there is nothing to cut."""
    trunc_block, trunc_byte, trunc_offset = mapping(nheapblocks)
    newnblocks = trunc_block
    if trunc_byte != 0 or trunc_offset != 0:
        page = store.read(locator, VISIBILITYMAP_FORKNUM, trunc_block)
        if page is None:
            return None  # vm_readbuf(extend=false) finds no such page: nothing to do
        if bp.page_is_new(page):
            bp.page_init(page, bp.BLCKSZ, 0)
        pos = _CONTENTS + trunc_byte
        page[pos + 1:_CONTENTS + MAPSIZE] = bytes(MAPSIZE - trunc_byte - 1)
        page[pos] &= (1 << trunc_offset) - 1
        store.write(locator, VISIBILITYMAP_FORKNUM, trunc_block, page)
        newnblocks += 1
    present = list(store.blocks(locator, VISIBILITYMAP_FORKNUM))
    if not present or present[-1] < newnblocks:
        return None
    return newnblocks

