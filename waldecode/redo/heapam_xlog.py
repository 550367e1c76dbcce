"""Heap redo: the heap and heap2 redo routines and heap_mask.

A port of heap_redo, heap2_redo and heap_mask (src/backend/access/heap/heapam.c in 14-16,
src/backend/access/heap/heapam_xlog.c from 17) with heap_page_prune_execute
(src/backend/access/heap/pruneheap.c) and heap_execute_freeze_tuple (heapam.c), over pages of a
``PageStore`` read through ``xlogutils.RedoRecord``.  Record layouts and record types come from
``waldecode.rmgr.heap`` (src/include/access/heapam_xlog.h).

What changes the heap page, and the visibility map (``visibilitymap``), is done as the server does
it; what the server does besides is not: the free space map, hot standby conflicts and the logical
rewrite mapping files of XLOG_HEAP2_REWRITE.

Versions (the record type values are shared; ``rmgr/heap.py`` names them per version):

* 14 and 15: XLOG_HEAP2_PRUNE {latestRemovedXid, nredirected, ndead}, XLOG_HEAP2_VACUUM
  {nunused}, XLOG_HEAP2_FREEZE_PAGE {cutoff_xid, ntuples} with one xl_heap_freeze_tuple per tuple.
* 16: the same prune and vacuum records (xl_heap_prune gains isCatalogRel after ndead), and
  XLOG_HEAP2_FREEZE_PAGE {snapshotConflictHorizon, nplans, isCatalogRel} with freeze plans
  (xl_heap_freeze_plan) followed by the offsets of each plan's tuples.
* 17 and later: XLOG_HEAP2_PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN and PRUNE_VACUUM_CLEANUP share one
  layout (xl_heap_prune {reason, flags}, sub-records in block 0's data, heap_xlog_prune_freeze);
  without XLHP_CLEANUP_LOCK (vacuum's second pass) the line-pointer array is only truncated, not
  defragmented.
* 13's heap2 records (XLOG_HEAP2_CLEAN, the old FREEZE_PAGE, CLEANUP_INFO) are refused.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError
from ..heap.heaptuple import (HEAP_KEYS_UPDATED, HEAP_MOVED, HEAP_XMAX_BITS, HEAP_XMAX_COMMITTED, HEAP_XMAX_INVALID,
                              SizeofHeapTupleHeader)
from ..pg.transam import FrozenTransactionId, InvalidTransactionId
from ..rmgr import heap as h
from ..wal.xlogrecord import BLCKSZ, XLR_INFO_MASK
from . import bufpage as bp
from . import htup_details as ht
from .bufmask import MASK_MARKER, mask_page_hint_bits, mask_page_lsn_and_checksum, mask_unused_space
from .visibilitymap import (VISIBILITYMAP_ALL_FROZEN, VISIBILITYMAP_VALID_BITS, heap_xlog_visible_map,
                            visibilitymap_clear)
from .xlogutils import BLK_NEEDS_REDO, RBM_NORMAL, RedoRecord, block_locator

# src/include/access/heapam_xlog.h: xl_heap_freeze_tuple (14-15) {xmax, offset, t_infomask2, t_infomask, frzflags}
xl_heap_freeze_tuple = struct.Struct("<IHHHBx")
# xl_heap_lock.flags, xl_heap_lock_updated.flags
XLH_LOCK_ALL_FROZEN_CLEARED = 0x01
XLH_FREEZE_XVAC = 0x02
XLH_INVALID_XVAC = 0x04
# src/include/access/htup_details.h: MaxHeapTupleSize
MaxHeapTupleSize = BLCKSZ - bp.MAXALIGN(bp.SizeOfPageHeaderData + bp.SizeOfItemIdData)

_u16 = struct.Struct("<H")


def _lp_normal_tuple(rr: RedoRecord, page, offnum: int) -> int:
    """The header position of the normal tuple at ``offnum`` (the "invalid lp" PANIC otherwise)."""
    if bp.page_get_max_offset_number(page) < offnum or offnum < bp.FirstOffsetNumber:
        raise rr.error(f"heap redo: invalid lp: offset {offnum} past the page's "
                       f"{bp.page_get_max_offset_number(page)} line pointers")
    lp_off, lp_flags, lp_len = bp.item_id(page, offnum)
    if lp_flags != bp.LP_NORMAL:
        raise rr.error(f"heap redo: invalid lp: line pointer {offnum} is not normal (flags {lp_flags})")
    if lp_off + SizeofHeapTupleHeader > BLCKSZ or lp_off + lp_len > BLCKSZ:
        raise rr.error(f"heap redo: invalid lp: line pointer {offnum} points outside the page")
    return lp_off


def _set_xmax_bits(page, tup: int, infobits: int) -> None:
    """The common start of delete, update (old tuple), lock and lock_updated redo: forget the old
    xmax bits, then take the record's."""
    m = ht.infomask(page, tup) & ~(HEAP_XMAX_BITS | HEAP_MOVED)
    m2 = ht.infomask2(page, tup) & ~HEAP_KEYS_UPDATED
    m, m2 = h.fix_infomask_from_infobits(infobits, m, m2)
    ht.set_infomask(page, tup, m)
    ht.set_infomask2(page, tup, m2)


def _new_tuple(header: tuple, body: bytes) -> bytearray:
    """A tuple from the WAL: a zeroed HeapTupleHeaderData up to t_bits with the logged
    t_infomask2, t_infomask and t_hoff, then the logged bitmap, padding and data."""
    t_infomask2, t_infomask, t_hoff = header
    tup = bytearray(SizeofHeapTupleHeader)
    tup += body
    _u16.pack_into(tup, ht.T_INFOMASK2, t_infomask2)
    _u16.pack_into(tup, ht.T_INFOMASK, t_infomask)
    tup[ht.T_HOFF] = t_hoff
    return tup


def _add_tuple(rr: RedoRecord, page, tup: bytearray, offnum: int) -> None:
    if bp.page_add_item(page, tup, len(tup), offnum, True, True) == bp.InvalidOffsetNumber:
        raise rr.error(f"heap redo: failed to add tuple at offset {offnum}")


def heap_xlog_insert(rr: RedoRecord) -> None:
    offnum, flags = h.xl_heap_insert.unpack_from(rr.record.main_data)
    block = rr.block(0)
    if flags & h.XLH_INSERT_ALL_VISIBLE_CLEARED:
        visibilitymap_clear(rr, block_locator(block), block.blkno, VISIBILITYMAP_VALID_BITS)
    if rr.info & h.XLOG_HEAP_INIT_PAGE:
        buf = rr.init_buffer_for_redo(0)
        bp.page_init(buf.page, BLCKSZ, 0)
        action = BLK_NEEDS_REDO
    else:
        action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    if bp.page_get_max_offset_number(page) + 1 < offnum:
        raise rr.error(f"heap redo: invalid max offset number {offnum}")
    data = rr.block_data(0)
    if len(data) <= h.SizeOfHeapHeader or len(data) - h.SizeOfHeapHeader > MaxHeapTupleSize - SizeofHeapTupleHeader:
        raise rr.error(f"heap insert redo: block data of {len(data)} bytes cannot hold a tuple")
    tup = _new_tuple(h.xl_heap_header.unpack_from(data), data[h.SizeOfHeapHeader:])
    ht.set_xmin(tup, 0, rr.xid)
    ht.set_cmin(tup, 0, ht.FirstCommandId)
    ht.set_ctid(tup, 0, block.blkno, offnum)
    _add_tuple(rr, page, tup, offnum)
    bp.page_set_lsn(page, rr.lsn)
    if flags & h.XLH_INSERT_ALL_VISIBLE_CLEARED:
        bp.page_clear_all_visible(page)
    # XLH_INSERT_ALL_FROZEN_SET (14+) implies that all tuples are visible
    if flags & h.XLH_INSERT_ALL_FROZEN_SET:
        bp.page_set_all_visible(page)
    rr.mark_dirty(buf)


def heap_xlog_multi_insert(rr: RedoRecord) -> None:
    main = rr.record.main_data
    flags, ntuples = h.xl_heap_multi_insert.unpack_from(main)
    isinit = bool(rr.info & h.XLOG_HEAP_INIT_PAGE)
    block = rr.block(0)
    if flags & h.XLH_INSERT_ALL_VISIBLE_CLEARED:
        visibilitymap_clear(rr, block_locator(block), block.blkno, VISIBILITYMAP_VALID_BITS)
    if isinit:
        buf = rr.init_buffer_for_redo(0)
        bp.page_init(buf.page, BLCKSZ, 0)
        action = BLK_NEEDS_REDO
    else:
        action, buf = rr.read_buffer_for_redo(0)
        if len(main) < h.SizeOfHeapMultiInsert + 2 * ntuples:
            raise rr.error(f"heap multi-insert redo: main data of {len(main)} bytes cannot hold {ntuples} offsets")
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    data = rr.block_data(0)
    pos = 0
    for i in range(ntuples):
        offnum = bp.FirstOffsetNumber + i if isinit else _u16.unpack_from(main, h.SizeOfHeapMultiInsert + 2 * i)[0]
        if bp.page_get_max_offset_number(page) + 1 < offnum:
            raise rr.error(f"heap multi-insert redo: invalid max offset number {offnum}")
        pos += pos & 1  # SHORTALIGN: the block data starts aligned, so relative alignment is the server's
        if pos + h.SizeOfMultiInsertTuple > len(data):
            raise rr.error("heap multi-insert redo: total tuple length mismatch")
        datalen, t_infomask2, t_infomask, t_hoff = h.xl_multi_insert_tuple.unpack_from(data, pos)
        pos += h.SizeOfMultiInsertTuple
        if pos + datalen > len(data) or datalen > MaxHeapTupleSize - SizeofHeapTupleHeader:
            raise rr.error("heap multi-insert redo: total tuple length mismatch")
        tup = _new_tuple((t_infomask2, t_infomask, t_hoff), data[pos:pos + datalen])
        pos += datalen
        ht.set_xmin(tup, 0, rr.xid)
        ht.set_cmin(tup, 0, ht.FirstCommandId)
        ht.set_ctid(tup, 0, block.blkno, offnum)
        _add_tuple(rr, page, tup, offnum)
    if pos != len(data):
        raise rr.error("heap multi-insert redo: total tuple length mismatch")
    bp.page_set_lsn(page, rr.lsn)
    if flags & h.XLH_INSERT_ALL_VISIBLE_CLEARED:
        bp.page_clear_all_visible(page)
    if flags & h.XLH_INSERT_ALL_FROZEN_SET:
        bp.page_set_all_visible(page)
    rr.mark_dirty(buf)


def heap_xlog_delete(rr: RedoRecord) -> None:
    xmax, offnum, infobits_set, flags = h.xl_heap_delete.unpack_from(rr.record.main_data)
    blkno = rr.block(0).blkno
    if flags & h.XLH_DELETE_ALL_VISIBLE_CLEARED:
        visibilitymap_clear(rr, block_locator(rr.block(0)), blkno, VISIBILITYMAP_VALID_BITS)
    action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    tup = _lp_normal_tuple(rr, page, offnum)
    _set_xmax_bits(page, tup, infobits_set)
    ht.set_hot_updated(page, tup, False)
    if not flags & h.XLH_DELETE_IS_SUPER:
        ht.set_xmax(page, tup, xmax)
    else:
        ht.set_xmin(page, tup, InvalidTransactionId)  # a speculative insertion killed
    ht.set_cmax(page, tup, ht.FirstCommandId, False)
    bp.page_set_prunable(page, rr.xid)
    if flags & h.XLH_DELETE_ALL_VISIBLE_CLEARED:
        bp.page_clear_all_visible(page)
    if flags & h.XLH_DELETE_IS_PARTITION_MOVE:
        ht.set_moved_partitions(page, tup)
    else:
        ht.set_ctid(page, tup, blkno, offnum)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_update(rr: RedoRecord, hot_update: bool) -> None:
    (old_xmax, old_offnum, old_infobits_set, flags, new_xmax,
     new_offnum) = h.xl_heap_update.unpack_from(rr.record.main_data)
    newblk = rr.block(0).blkno
    same = not rr.has_block(1)  # block 1 is the old page when the new version went to another one
    if not same and hot_update:
        raise rr.error("heap redo: a HOT update across pages")
    locator = block_locator(rr.block(0))
    if flags & h.XLH_UPDATE_OLD_ALL_VISIBLE_CLEARED:
        visibilitymap_clear(rr, locator, newblk if same else rr.block(1).blkno, VISIBILITYMAP_VALID_BITS)
    # the old tuple version
    oldaction, obuf = rr.read_buffer_for_redo(0 if same else 1)
    oldtup = None  # (page, header position, length)
    if oldaction == BLK_NEEDS_REDO:
        page = obuf.page
        tup = _lp_normal_tuple(rr, page, old_offnum)
        oldtup = (page, tup, bp.item_id(page, old_offnum)[2])
        _set_xmax_bits(page, tup, old_infobits_set)
        ht.set_hot_updated(page, tup, hot_update)
        ht.set_xmax(page, tup, old_xmax)
        ht.set_cmax(page, tup, ht.FirstCommandId, False)
        ht.set_ctid(page, tup, newblk, new_offnum)  # the forward link to the new version
        bp.page_set_prunable(page, rr.xid)
        if flags & h.XLH_UPDATE_OLD_ALL_VISIBLE_CLEARED:
            bp.page_clear_all_visible(page)
        bp.page_set_lsn(page, rr.lsn)
        rr.mark_dirty(obuf)
    # the page the new version goes to
    if same:
        nbuf, newaction = obuf, oldaction
    elif rr.info & h.XLOG_HEAP_INIT_PAGE:
        nbuf = rr.init_buffer_for_redo(0)
        bp.page_init(nbuf.page, BLCKSZ, 0)
        newaction = BLK_NEEDS_REDO
    else:
        newaction, nbuf = rr.read_buffer_for_redo(0)
    if flags & h.XLH_UPDATE_NEW_ALL_VISIBLE_CLEARED:
        visibilitymap_clear(rr, locator, newblk, VISIBILITYMAP_VALID_BITS)
    if newaction != BLK_NEEDS_REDO:
        return
    page = nbuf.page
    if bp.page_get_max_offset_number(page) + 1 < new_offnum:
        raise rr.error(f"heap update redo: invalid max offset number {new_offnum}")
    data = rr.block_data(0)
    pos = 0
    prefixlen = suffixlen = 0
    if flags & h.XLH_UPDATE_PREFIX_FROM_OLD:
        prefixlen = _u16.unpack_from(data, pos)[0]
        pos += 2
    if flags & h.XLH_UPDATE_SUFFIX_FROM_OLD:
        suffixlen = _u16.unpack_from(data, pos)[0]
        pos += 2
    if (prefixlen or suffixlen) and oldtup is None:
        raise rr.error("heap update redo: prefix or suffix from an old tuple on another page")
    if pos + h.SizeOfHeapHeader > len(data):
        raise rr.error(f"heap update redo: block data of {len(data)} bytes cannot hold a tuple")
    t_infomask2, t_infomask, t_hoff = h.xl_heap_header.unpack_from(data, pos)
    pos += h.SizeOfHeapHeader
    rest = data[pos:]
    if len(rest) + prefixlen + suffixlen > MaxHeapTupleSize - SizeofHeapTupleHeader:
        raise rr.error("heap update redo: the new tuple is too long")
    if prefixlen:
        # bitmap [+ padding] from the record, the prefix from the old tuple, then the rest from the record
        opage, otup, _olen = oldtup
        nbits = t_hoff - SizeofHeapTupleHeader
        ostart = otup + ht.t_hoff(opage, otup)
        body = rest[:nbits] + bytes(opage[ostart:ostart + prefixlen]) + rest[nbits:]
    else:
        body = rest
    if suffixlen:
        opage, otup, olen = oldtup
        body += bytes(opage[otup + olen - suffixlen:otup + olen])
    tup = _new_tuple((t_infomask2, t_infomask, t_hoff), body)
    ht.set_xmin(tup, 0, rr.xid)
    ht.set_cmin(tup, 0, ht.FirstCommandId)
    ht.set_xmax(tup, 0, new_xmax)
    ht.set_ctid(tup, 0, newblk, new_offnum)
    _add_tuple(rr, page, tup, new_offnum)
    if flags & h.XLH_UPDATE_NEW_ALL_VISIBLE_CLEARED:
        bp.page_clear_all_visible(page)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(nbuf)


def heap_xlog_confirm(rr: RedoRecord) -> None:
    offnum, = h.xl_heap_confirm.unpack_from(rr.record.main_data)
    action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    tup = _lp_normal_tuple(rr, page, offnum)
    ht.set_ctid(page, tup, buf.blkno, offnum)  # the speculative token gives way to the tuple's own TID
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_lock(rr: RedoRecord) -> None:
    # xl_heap_lock: locking_xid (13-15) / xmax (16+), offnum, infobits_set, flags
    xmax, offnum, infobits_set, flags = h.xl_heap_lock.unpack_from(rr.record.main_data)
    if flags & XLH_LOCK_ALL_FROZEN_CLEARED:
        visibilitymap_clear(rr, block_locator(rr.block(0)), rr.block(0).blkno, VISIBILITYMAP_ALL_FROZEN)
    action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    tup = _lp_normal_tuple(rr, page, offnum)
    _set_xmax_bits(page, tup, infobits_set)
    # clear the update flags only if the new infomask says there is no update
    if ht.xmax_is_locked_only(ht.infomask(page, tup)):
        ht.set_hot_updated(page, tup, False)
        ht.set_ctid(page, tup, buf.blkno, offnum)
    ht.set_xmax(page, tup, xmax)
    ht.set_cmax(page, tup, ht.FirstCommandId, False)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_lock_updated(rr: RedoRecord) -> None:
    xmax, offnum, infobits_set, flags = h.xl_heap_lock_updated.unpack_from(rr.record.main_data)
    if flags & XLH_LOCK_ALL_FROZEN_CLEARED:
        visibilitymap_clear(rr, block_locator(rr.block(0)), rr.block(0).blkno, VISIBILITYMAP_ALL_FROZEN)
    action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    tup = _lp_normal_tuple(rr, page, offnum)
    _set_xmax_bits(page, tup, infobits_set)
    ht.set_xmax(page, tup, xmax)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_inplace(rr: RedoRecord) -> None:
    offnum = h.xl_heap_inplace.unpack_from(rr.record.main_data)[0]  # offnum comes first in 18's layout too
    action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    newtup = rr.block_data(0)
    tup = _lp_normal_tuple(rr, page, offnum)
    hoff = ht.t_hoff(page, tup)
    oldlen = bp.item_id(page, offnum)[2] - hoff
    if oldlen != len(newtup):
        raise rr.error(f"heap inplace redo: wrong tuple length ({len(newtup)} bytes for {oldlen})")
    page[tup + hoff:tup + hoff + oldlen] = newtup
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_page_prune_execute(rr: RedoRecord, page, lp_truncate_only: bool, redirected: list, nowdead: list,
                            nowunused: list) -> None:
    """heap_page_prune_execute (pruneheap.c): set the line pointers a prune decided, then repair
    fragmentation (or, 17+ without a cleanup lock, only truncate the line-pointer array)."""
    maxoff = bp.page_get_max_offset_number(page)
    for off in [o for pair in redirected for o in pair] + nowdead + nowunused:
        if not bp.FirstOffsetNumber <= off <= maxoff:
            raise rr.error(f"heap prune redo: offset {off} past the page's {maxoff} line pointers")
    for fromoff, tooff in redirected:
        bp.item_id_set_redirect(page, fromoff, tooff)
    for off in nowdead:
        bp.item_id_set_dead(page, off)
    for off in nowunused:
        bp.item_id_set_unused(page, off)
    if lp_truncate_only:
        bp.page_truncate_line_pointer_array(page)
    else:
        bp.page_repair_fragmentation(page)


def _offsets(rr: RedoRecord, data: bytes, pos: int, n: int) -> list[int]:
    if pos + 2 * n > len(data):
        raise rr.error(f"heap2 redo: block data of {len(data)} bytes cannot hold {n} offsets at {pos}")
    return list(struct.unpack_from("<%dH" % n, data, pos))


def heap_xlog_prune(rr: RedoRecord) -> None:
    """XLOG_HEAP2_PRUNE, 14-16."""
    _horizon, nredirected, ndead = h.xl_heap_prune_14.unpack_from(rr.record.main_data)
    action, buf = rr.read_buffer_for_redo_extended(0, RBM_NORMAL, True)
    if action != BLK_NEEDS_REDO:
        return
    data = rr.block_data(0)
    red = _offsets(rr, data, 0, 2 * nredirected)
    nowdead = _offsets(rr, data, 4 * nredirected, ndead)
    upos = 4 * nredirected + 2 * ndead
    nowunused = _offsets(rr, data, upos, (len(data) - upos) // 2)
    heap_page_prune_execute(rr, buf.page, False, list(zip(red[0::2], red[1::2])), nowdead, nowunused)
    # the page's prunability hint is not updated: at worst an extra prune cycle happens soon
    bp.page_set_lsn(buf.page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_vacuum(rr: RedoRecord) -> None:
    """XLOG_HEAP2_VACUUM, 14-16: vacuum's second pass makes LP_DEAD items unused."""
    nunused = h.xl_heap_vacuum.unpack_from(rr.record.main_data)[0]
    action, buf = rr.read_buffer_for_redo_extended(0, RBM_NORMAL, False)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    maxoff = bp.page_get_max_offset_number(page)
    for off in _offsets(rr, rr.block_data(0), 0, nunused):
        if not bp.FirstOffsetNumber <= off <= maxoff:
            raise rr.error(f"heap vacuum redo: offset {off} past the page's {maxoff} line pointers")
        bp.item_id_set_unused(page, off)
    bp.page_truncate_line_pointer_array(page)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_execute_freeze_tuple(page, tup: int, xmax: int, t_infomask2: int, t_infomask: int, frzflags: int) -> None:
    """heap_execute_freeze_tuple: the tuple header a freeze plan prescribes."""
    ht.set_xmax(page, tup, xmax)
    if frzflags & XLH_FREEZE_XVAC:
        ht.set_xvac(page, tup, FrozenTransactionId)
    if frzflags & XLH_INVALID_XVAC:
        ht.set_xvac(page, tup, InvalidTransactionId)
    ht.set_infomask(page, tup, t_infomask)
    ht.set_infomask2(page, tup, t_infomask2)


def _freeze_plans(rr: RedoRecord, data: bytes, plans_pos: int, nplans: int, offsets_pos: int) -> list:
    """(plan, offsets) of 16+'s freeze plans: each xl_heap_freeze_plan, then all plans' offsets."""
    if plans_pos + nplans * h.xl_heap_freeze_plan.size > len(data):
        raise rr.error(f"heap2 redo: block data of {len(data)} bytes cannot hold {nplans} freeze plans")
    out = []
    for p in range(nplans):
        xmax, t_infomask2, t_infomask, frzflags, ntuples = h.xl_heap_freeze_plan.unpack_from(
            data, plans_pos + p * h.xl_heap_freeze_plan.size)
        out.append(((xmax, t_infomask2, t_infomask, frzflags), _offsets(rr, data, offsets_pos, ntuples)))
        offsets_pos += 2 * ntuples
    return out


def heap_xlog_freeze_page(rr: RedoRecord) -> None:
    """XLOG_HEAP2_FREEZE_PAGE, 14-16."""
    _cutoff, n = h.xl_heap_freeze_page_14.unpack_from(rr.record.main_data)
    action, buf = rr.read_buffer_for_redo(0)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    data = rr.block_data(0)
    if rr.major <= 15:
        # one xl_heap_freeze_tuple per tuple
        if n * xl_heap_freeze_tuple.size > len(data):
            raise rr.error(f"heap freeze redo: block data of {len(data)} bytes cannot hold {n} tuples")
        for i in range(n):
            xmax, offset, t_infomask2, t_infomask, frzflags = xl_heap_freeze_tuple.unpack_from(
                data, i * xl_heap_freeze_tuple.size)
            tup = _lp_normal_tuple(rr, page, offset)
            heap_execute_freeze_tuple(page, tup, xmax, t_infomask2, t_infomask, frzflags)
    else:
        for plan, offsets in _freeze_plans(rr, data, 0, n, n * h.xl_heap_freeze_plan.size):
            for offset in offsets:
                heap_execute_freeze_tuple(page, _lp_normal_tuple(rr, page, offset), *plan)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_prune_freeze(rr: RedoRecord) -> None:
    """XLOG_HEAP2_PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN and PRUNE_VACUUM_CLEANUP, 17+."""
    _reason, flags = h.xl_heap_prune_17.unpack_from(rr.record.main_data)
    cleanup_lock = bool(flags & h.XLHP_CLEANUP_LOCK)
    action, buf = rr.read_buffer_for_redo_extended(0, RBM_NORMAL, cleanup_lock)
    if action != BLK_NEEDS_REDO:
        return
    page = buf.page
    data = rr.block_data(0)
    (nplans, plans_pos, frz_offsets_pos, nredirected, redirected_pos, ndead, nowdead_pos,
     nunused, nowunused_pos) = h.heap_xlog_deserialize_prune_and_freeze(data, flags)
    if nredirected or ndead or nunused:
        red = _offsets(rr, data, redirected_pos, 2 * nredirected)
        heap_page_prune_execute(rr, page, not cleanup_lock, list(zip(red[0::2], red[1::2])),
                                _offsets(rr, data, nowdead_pos, ndead), _offsets(rr, data, nowunused_pos, nunused))
    for plan, offsets in _freeze_plans(rr, data, plans_pos, nplans, frz_offsets_pos):
        for offset in offsets:
            heap_execute_freeze_tuple(page, _lp_normal_tuple(rr, page, offset), *plan)
    bp.page_set_lsn(page, rr.lsn)
    rr.mark_dirty(buf)


def heap_xlog_visible(rr: RedoRecord, hint_bits_logged: bool) -> None:
    """XLOG_HEAP2_VISIBLE: PD_ALL_VISIBLE on the heap page (block 1), then the map bits (block 0),
    set even when the heap page is already past the record.  The heap page's LSN moves only when
    hint bits are WAL-logged (data checksums or wal_log_hints: XLogHintBitIsNeeded)."""
    _cutoff, flags = h.xl_heap_visible.unpack_from(rr.record.main_data)
    action, buf = rr.read_buffer_for_redo(1)
    if action == BLK_NEEDS_REDO:
        bp.page_set_all_visible(buf.page)
        if hint_bits_logged:
            bp.page_set_lsn(buf.page, rr.lsn)
        rr.mark_dirty(buf)
    heap_xlog_visible_map(rr, flags)


# -- dispatch (heap_redo, heap2_redo) ----------------------------------------------------------

HEAP_REDO = {
    h.XLOG_HEAP_INSERT: heap_xlog_insert,
    h.XLOG_HEAP_DELETE: heap_xlog_delete,
    h.XLOG_HEAP_UPDATE: lambda rr: heap_xlog_update(rr, False),
    h.XLOG_HEAP_HOT_UPDATE: lambda rr: heap_xlog_update(rr, True),
    h.XLOG_HEAP_CONFIRM: heap_xlog_confirm,
    h.XLOG_HEAP_LOCK: heap_xlog_lock,
    h.XLOG_HEAP_INPLACE: heap_xlog_inplace,
}
# TRUNCATE is a no-op in redo: the truncation itself is logged as SMGR records; the heap record
# exists for logical decoding
HEAP_NO_PAGE_CHANGE = frozenset({h.XLOG_HEAP_TRUNCATE})

HEAP2_REDO_COMMON = {
    h.XLOG_HEAP2_MULTI_INSERT: heap_xlog_multi_insert,
    h.XLOG_HEAP2_LOCK_UPDATED: heap_xlog_lock_updated,
}
HEAP2_REDO_14 = {
    **HEAP2_REDO_COMMON,
    h.XLOG_HEAP2_PRUNE: heap_xlog_prune,
    h.XLOG_HEAP2_VACUUM: heap_xlog_vacuum,
    h.XLOG_HEAP2_FREEZE_PAGE: heap_xlog_freeze_page,
}
HEAP2_REDO_17 = {
    **HEAP2_REDO_COMMON,
    h.XLOG_HEAP2_PRUNE_ON_ACCESS: heap_xlog_prune_freeze,
    h.XLOG_HEAP2_PRUNE_VACUUM_SCAN: heap_xlog_prune_freeze,
    h.XLOG_HEAP2_PRUNE_VACUUM_CLEANUP: heap_xlog_prune_freeze,
}
# NEW_CID is only for logical decoding; REWRITE writes logical rewrite mapping files, no page
HEAP2_NO_PAGE_CHANGE = frozenset({h.XLOG_HEAP2_NEW_CID, h.XLOG_HEAP2_REWRITE})


def heap_redo(rr: RedoRecord) -> None:
    info = rr.info & ~XLR_INFO_MASK & h.XLOG_HEAP_OPMASK
    fn = HEAP_REDO.get(info)
    if fn is not None:
        fn(rr)
    elif info not in HEAP_NO_PAGE_CHANGE:
        raise rr.error(f"heap_redo: unknown op code {info}")


def heap2_redo(rr: RedoRecord, hint_bits_logged: bool = False) -> None:
    if rr.major < 14:
        raise rr.error(f"heap2 redo supports the records of PostgreSQL 14 and later, not {rr.major}")
    info = rr.info & ~XLR_INFO_MASK & h.XLOG_HEAP_OPMASK
    if info == h.XLOG_HEAP2_VISIBLE:
        heap_xlog_visible(rr, hint_bits_logged)
        return
    fn = (HEAP2_REDO_17 if rr.major >= 17 else HEAP2_REDO_14).get(info)
    if fn is not None:
        fn(rr)
    elif info not in HEAP2_NO_PAGE_CHANGE:
        raise rr.error(f"heap2_redo: unknown op code {info}")


# -- heap_mask ---------------------------------------------------------------------------------

def heap_mask(page: bytearray, blkno: int) -> None:
    """heap_mask: blank out what may legitimately differ between a primary's page and a replayed
    one (page LSN and checksum, hint bits, unused space, tuple hint bits, command ids, speculative
    tokens, alignment padding), in place, as wal_consistency_checking compares pages."""
    mask_page_lsn_and_checksum(page)
    mask_page_hint_bits(page)
    mask_unused_space(page)
    for off in range(1, bp.page_get_max_offset_number(page) + 1):
        lp_off, lp_flags, lp_len = bp.item_id(page, off)
        if lp_flags == bp.LP_NORMAL:
            if lp_off + SizeofHeapTupleHeader > BLCKSZ:
                raise CorruptRecordError(f"heap_mask: line pointer {off} of block {blkno} points outside the page")
            m = ht.infomask(page, lp_off)
            # hint bits may be set without WAL: ignore them unless xmin is frozen, and even then
            # the xmax hints
            if not ht.xmin_frozen(m):
                m &= ~ht.HEAP_XACT_MASK
            else:
                m &= ~(HEAP_XMAX_INVALID | HEAP_XMAX_COMMITTED)
            ht.set_infomask(page, lp_off, m)
            # redo sets the command id to FirstCommandId
            ht.set_u32(page, lp_off + ht.T_CID, MASK_MARKER)
            # a speculative tuple's t_ctid holds a token the WAL does not carry; redo sets the TID
            if ht.get_ctid(page, lp_off)[1] == ht.SpecTokenOffsetNumber:
                ht.set_ctid(page, lp_off, blkno, off)
        if lp_len != 0:  # ItemIdHasStorage: ignore the padding after an item that is not MAXALIGNed
            padlen = bp.MAXALIGN(lp_len) - lp_len
            if padlen > 0:
                end = min(lp_off + lp_len + padlen, BLCKSZ)
                page[lp_off + lp_len:end] = bytes([MASK_MARKER]) * (end - lp_off - lp_len)
