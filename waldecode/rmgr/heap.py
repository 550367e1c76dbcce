"""Heap and Heap2 resource managers (RM_HEAP_ID 10, RM_HEAP2_ID 9): pg_waldump text.

Port of src/backend/access/rmgrdesc/heapdesc.c (heap_identify, heap_desc,
heap2_identify, heap2_desc) for 13-18, with layouts from
src/include/access/heapam_xlog.h.  The desc text changed format in 16 ("off: 1,
flags: 0x08" instead of "off 1 flags 0x08"), Heap2's vacuum records were
renumbered in 14 and 17.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from ..heap.heaptuple import (HEAP_KEYS_UPDATED, HEAP_XMAX_EXCL_LOCK, HEAP_XMAX_IS_MULTI, HEAP_XMAX_KEYSHR_LOCK,
                              HEAP_XMAX_LOCK_ONLY, heap_fill_tuple)
from .rmgrdesc_utils import (RelFileLocator, array_desc, block_data, flag_list, item_pointer, offset_elems,
                             oid_elems, redirect_elems)
from .standby import SizeOfSharedInvalidationMessage, standby_desc_invalidations

# src/include/access/heapam_xlog.h
XLOG_HEAP_INSERT = 0x00
XLOG_HEAP_DELETE = 0x10
XLOG_HEAP_UPDATE = 0x20
XLOG_HEAP_TRUNCATE = 0x30
XLOG_HEAP_HOT_UPDATE = 0x40
XLOG_HEAP_CONFIRM = 0x50
XLOG_HEAP_LOCK = 0x60
XLOG_HEAP_INPLACE = 0x70
XLOG_HEAP_OPMASK = 0x70
XLOG_HEAP_INIT_PAGE = 0x80

XLOG_HEAP2_REWRITE = 0x00
XLOG_HEAP2_CLEAN = 0x10  # 13
XLOG_HEAP2_PRUNE = 0x10  # 14-16
XLOG_HEAP2_PRUNE_ON_ACCESS = 0x10  # 17+
XLOG_HEAP2_FREEZE_PAGE_13 = 0x20  # 13 (XLOG_HEAP2_FREEZE_PAGE)
XLOG_HEAP2_VACUUM = 0x20  # 14-16
XLOG_HEAP2_PRUNE_VACUUM_SCAN = 0x20  # 17+
XLOG_HEAP2_CLEANUP_INFO = 0x30  # 13
XLOG_HEAP2_FREEZE_PAGE = 0x30  # 14-16
XLOG_HEAP2_PRUNE_VACUUM_CLEANUP = 0x30  # 17+
XLOG_HEAP2_VISIBLE = 0x40
XLOG_HEAP2_MULTI_INSERT = 0x50
XLOG_HEAP2_LOCK_UPDATED = 0x60
XLOG_HEAP2_NEW_CID = 0x70

# What each record type is to logical decoding (decode.c heap_decode, heap2_decode): the one table
# logical.decode, spark.tasks and the native fast path (_logical, through pgconsts) read.  A set of
# record types per kind, one bit each (``1 << (info >> 4)``, ``record_types``); every type of each
# resource manager is in exactly one.  The same in 13-18: the pruning and freezing records share
# their info values across versions under other names (13: CLEAN, FREEZE_PAGE, CLEANUP_INFO; 14-16:
# PRUNE, VACUUM, FREEZE_PAGE; 17+: PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN, PRUNE_VACUUM_CLEANUP).
# Row changes (DecodeInsert, DecodeUpdate, DecodeDelete, DecodeTruncate, DecodeSpecConfirm, DecodeMultiInsert)
HEAP_CHANGE_TYPES = ((1 << (XLOG_HEAP_INSERT >> 4)) | (1 << (XLOG_HEAP_UPDATE >> 4)) | (1 << (XLOG_HEAP_HOT_UPDATE >> 4))
                     | (1 << (XLOG_HEAP_DELETE >> 4)) | (1 << (XLOG_HEAP_TRUNCATE >> 4))
                     | (1 << (XLOG_HEAP_CONFIRM >> 4)))
HEAP2_CHANGE_TYPES = 1 << (XLOG_HEAP2_MULTI_INSERT >> 4)
# No change, but the transaction changes the catalog (XLOG_HEAP_INPLACE: only catalog tuples are updated in
# place; XLOG_HEAP2_NEW_CID: SnapBuildProcessNewCid)
HEAP_CATALOG_TYPES = 1 << (XLOG_HEAP_INPLACE >> 4)
HEAP2_CATALOG_TYPES = 1 << (XLOG_HEAP2_NEW_CID >> 4)
# Nothing to decode ("nothing to do here", "only used for ... locking")
HEAP_IGNORED_TYPES = 1 << (XLOG_HEAP_LOCK >> 4)
HEAP2_IGNORED_TYPES = ((1 << (XLOG_HEAP2_REWRITE >> 4)) | (1 << (XLOG_HEAP2_PRUNE >> 4)) | (1 << (XLOG_HEAP2_VACUUM >> 4))
                       | (1 << (XLOG_HEAP2_FREEZE_PAGE >> 4)) | (1 << (XLOG_HEAP2_VISIBLE >> 4))
                       | (1 << (XLOG_HEAP2_LOCK_UPDATED >> 4)))


def record_types(kind: int) -> frozenset:
    """The record types (info & XLOG_HEAP_OPMASK) of one kind of the table above."""
    return frozenset(info for info in range(0, XLOG_HEAP_OPMASK + 1, 0x10) if kind >> (info >> 4) & 1)

XLHL_XMAX_IS_MULTI = 0x01
XLHL_XMAX_LOCK_ONLY = 0x02
XLHL_XMAX_EXCL_LOCK = 0x04
XLHL_XMAX_KEYSHR_LOCK = 0x08
XLHL_KEYS_UPDATED = 0x10


def fix_infomask_from_infobits(infobits: int, infomask: int, infomask2: int) -> tuple[int, int]:
    """heapam.c fix_infomask_from_infobits: a tuple's xmax lock bits as a delete, update or lock record's
    infobits give them (compute_infobits reversed).  For heap redo and the catalog history's redo alike."""
    infomask &= ~(HEAP_XMAX_IS_MULTI | HEAP_XMAX_LOCK_ONLY | HEAP_XMAX_KEYSHR_LOCK | HEAP_XMAX_EXCL_LOCK)
    infomask2 &= ~HEAP_KEYS_UPDATED
    if infobits & XLHL_XMAX_IS_MULTI:
        infomask |= HEAP_XMAX_IS_MULTI
    if infobits & XLHL_XMAX_LOCK_ONLY:
        infomask |= HEAP_XMAX_LOCK_ONLY
    if infobits & XLHL_XMAX_EXCL_LOCK:
        infomask |= HEAP_XMAX_EXCL_LOCK
    # HEAP_XMAX_SHR_LOCK (EXCL_LOCK | KEYSHR_LOCK) is not considered here, as in the server: the two bits set it
    if infobits & XLHL_XMAX_KEYSHR_LOCK:
        infomask |= HEAP_XMAX_KEYSHR_LOCK
    if infobits & XLHL_KEYS_UPDATED:
        infomask2 |= HEAP_KEYS_UPDATED
    return infomask, infomask2

XLH_TRUNCATE_CASCADE = 1 << 0
XLH_TRUNCATE_RESTART_SEQS = 1 << 1

XLH_INSERT_ALL_VISIBLE_CLEARED = 1 << 0
XLH_INSERT_LAST_IN_MULTI = 1 << 1
XLH_INSERT_IS_SPECULATIVE = 1 << 2
XLH_INSERT_CONTAINS_NEW_TUPLE = 1 << 3
XLH_INSERT_ON_TOAST_RELATION = 1 << 4  # 14+
XLH_INSERT_ALL_FROZEN_SET = 1 << 5  # 14+
XLH_UPDATE_OLD_ALL_VISIBLE_CLEARED = 1 << 0
XLH_UPDATE_NEW_ALL_VISIBLE_CLEARED = 1 << 1
XLH_UPDATE_CONTAINS_OLD_TUPLE = 1 << 2
XLH_UPDATE_CONTAINS_OLD_KEY = 1 << 3
XLH_UPDATE_CONTAINS_NEW_TUPLE = 1 << 4
XLH_UPDATE_PREFIX_FROM_OLD = 1 << 5
XLH_UPDATE_SUFFIX_FROM_OLD = 1 << 6
XLH_UPDATE_CONTAINS_OLD = XLH_UPDATE_CONTAINS_OLD_TUPLE | XLH_UPDATE_CONTAINS_OLD_KEY
XLH_DELETE_ALL_VISIBLE_CLEARED = 1 << 0
XLH_DELETE_CONTAINS_OLD_TUPLE = 1 << 1
XLH_DELETE_CONTAINS_OLD_KEY = 1 << 2
XLH_DELETE_IS_SUPER = 1 << 3
XLH_DELETE_IS_PARTITION_MOVE = 1 << 4
XLH_DELETE_CONTAINS_OLD = XLH_DELETE_CONTAINS_OLD_TUPLE | XLH_DELETE_CONTAINS_OLD_KEY

# 17+: xl_heap_prune.flags
XLHP_IS_CATALOG_REL = 1 << 1
XLHP_CLEANUP_LOCK = 1 << 2
XLHP_HAS_CONFLICT_HORIZON = 1 << 3
XLHP_HAS_FREEZE_PLANS = 1 << 4
XLHP_HAS_REDIRECTIONS = 1 << 5
XLHP_HAS_DEAD_ITEMS = 1 << 6
XLHP_HAS_NOW_UNUSED_ITEMS = 1 << 7

xl_heap_insert = struct.Struct("<HB")  # offnum, flags
xl_heap_delete = struct.Struct("<IHBB")  # xmax, offnum, infobits_set, flags
xl_heap_update = struct.Struct("<IHBBIH")  # old_xmax, old_offnum, old_infobits_set, flags, new_xmax, new_offnum
xl_heap_truncate = struct.Struct("<IIB3x")  # dbId, nrelids, flags, relids[] @12
xl_heap_confirm = struct.Struct("<H")  # offnum
xl_heap_lock = struct.Struct("<IHBB")  # locking_xid (xmax in 16+), offnum, infobits_set, flags
xl_heap_inplace = struct.Struct("<H")  # offnum
xl_heap_inplace_18 = struct.Struct("<H2xIIB3xi")  # offnum, dbId, tsId, relcacheInitFileInval, nmsgs; msgs @20
xl_heap_clean = struct.Struct("<IHH")  # 13: latestRemovedXid, nredirected, ndead
xl_heap_cleanup_info = struct.Struct("<12xI")  # 13: node, latestRemovedXid
xl_heap_prune_14 = struct.Struct("<IHH")  # latestRemovedXid (14/15) or snapshotConflictHorizon (16), nredirected, ndead
xl_heap_vacuum = struct.Struct("<H")  # nunused
xl_heap_freeze_page_14 = struct.Struct("<IH")  # 13-15: cutoff_xid, ntuples; 16: snapshotConflictHorizon, nplans
xl_heap_freeze_plan = struct.Struct("<IHHBxH")  # 16: xl_heap_freeze_plan; 17+: xlhp_freeze_plan
xl_heap_prune_17 = struct.Struct("<BB")  # reason, flags; then conflict horizon xid, unaligned
SizeOfHeapPrune = 2
xl_heap_visible = struct.Struct("<IB")  # cutoff_xid / snapshotConflictHorizon, flags
xl_heap_multi_insert = struct.Struct("<BxH")  # flags, ntuples; offsets[] @4 unless INIT_PAGE
SizeOfHeapMultiInsert = 4
xl_multi_insert_tuple = struct.Struct("<HHHB")  # datalen, t_infomask2, t_infomask, t_hoff
SizeOfMultiInsertTuple = 7
xl_heap_header = struct.Struct("<HHB")  # t_infomask2, t_infomask, t_hoff: what WAL keeps of a tuple header


def wal_tuple(attributes, datums, natts: int | None = None) -> bytes:
    """A tuple as a heap WAL record carries it: xl_heap_header (t_infomask2, t_infomask,
    t_hoff), then the body (decode.py keeps this in ``Change.newtuple`` / ``oldtuple``)."""
    body, infomask2, infomask, t_hoff = heap_fill_tuple(attributes, datums, natts)
    return xl_heap_header.pack(infomask2, infomask, t_hoff) + body

SizeOfHeapHeader = 5
SizeOfHeapUpdate = 14
SizeOfHeapDelete = 8
SizeOfHeapTruncate = 12
xl_heap_lock_updated = struct.Struct("<IHBB")  # xmax, offnum, infobits_set, flags
xl_heap_new_cid = struct.Struct("<IIII")  # top_xid, cmin, cmax, combocid; target locator @16, tid @28
uint16 = struct.Struct("<H")
uint32 = struct.Struct("<I")

_HEAP_NAMES = {
    XLOG_HEAP_INSERT: "INSERT",
    XLOG_HEAP_INSERT | XLOG_HEAP_INIT_PAGE: "INSERT+INIT",
    XLOG_HEAP_DELETE: "DELETE",
    XLOG_HEAP_UPDATE: "UPDATE",
    XLOG_HEAP_UPDATE | XLOG_HEAP_INIT_PAGE: "UPDATE+INIT",
    XLOG_HEAP_HOT_UPDATE: "HOT_UPDATE",
    XLOG_HEAP_HOT_UPDATE | XLOG_HEAP_INIT_PAGE: "HOT_UPDATE+INIT",
    XLOG_HEAP_TRUNCATE: "TRUNCATE",
    XLOG_HEAP_CONFIRM: "HEAP_CONFIRM",
    XLOG_HEAP_LOCK: "LOCK",
    XLOG_HEAP_INPLACE: "INPLACE",
}

_HEAP2_COMMON = {
    XLOG_HEAP2_VISIBLE: "VISIBLE",
    XLOG_HEAP2_MULTI_INSERT: "MULTI_INSERT",
    XLOG_HEAP2_MULTI_INSERT | XLOG_HEAP_INIT_PAGE: "MULTI_INSERT+INIT",
    XLOG_HEAP2_LOCK_UPDATED: "LOCK_UPDATED",
    XLOG_HEAP2_NEW_CID: "NEW_CID",
    XLOG_HEAP2_REWRITE: "REWRITE",
}
_HEAP2_NAMES = {
    13: {**_HEAP2_COMMON, 0x10: "CLEAN", 0x20: "FREEZE_PAGE", 0x30: "CLEANUP_INFO"},
    14: {**_HEAP2_COMMON, 0x10: "PRUNE", 0x20: "VACUUM", 0x30: "FREEZE_PAGE"},
    17: {**_HEAP2_COMMON, 0x10: "PRUNE_ON_ACCESS", 0x20: "PRUNE_VACUUM_SCAN", 0x30: "PRUNE_VACUUM_CLEANUP"},
}


def _heap2_names(major: int) -> dict:
    if major <= 13:
        return _HEAP2_NAMES[13]
    if major <= 16:
        return _HEAP2_NAMES[14]
    return _HEAP2_NAMES[17]


def heap_identify(info: int, major: int) -> str | None:
    return _HEAP_NAMES.get(info & 0xF0)


def heap2_identify(info: int, major: int) -> str | None:
    return _heap2_names(major).get(info & 0xF0)


def out_infobits(infobits: int) -> str:
    """heapdesc.c 13-15: out_infobits (each name followed by a space)."""
    out = []
    if infobits & XLHL_XMAX_IS_MULTI:
        out.append("IS_MULTI ")
    if infobits & XLHL_XMAX_LOCK_ONLY:
        out.append("LOCK_ONLY ")
    if infobits & XLHL_XMAX_EXCL_LOCK:
        out.append("EXCL_LOCK ")
    if infobits & XLHL_XMAX_KEYSHR_LOCK:
        out.append("KEYSHR_LOCK ")
    if infobits & XLHL_KEYS_UPDATED:
        out.append("KEYS_UPDATED ")
    return "".join(out)


def infobits_desc(infobits: int, keyname: str) -> str:
    """heapdesc.c 16+: infobits_desc."""
    names = []
    if infobits & XLHL_XMAX_IS_MULTI:
        names.append("IS_MULTI")
    if infobits & XLHL_XMAX_LOCK_ONLY:
        names.append("LOCK_ONLY")
    if infobits & XLHL_XMAX_EXCL_LOCK:
        names.append("EXCL_LOCK")
    if infobits & XLHL_XMAX_KEYSHR_LOCK:
        names.append("KEYSHR_LOCK")
    if infobits & XLHL_KEYS_UPDATED:
        names.append("KEYS_UPDATED")
    return flag_list(keyname + ": ", names)


def truncate_flags_desc(flags: int) -> str:
    names = []
    if flags & XLH_TRUNCATE_CASCADE:
        names.append("CASCADE")
    if flags & XLH_TRUNCATE_RESTART_SEQS:
        names.append("RESTART_SEQS")
    return flag_list("flags: ", names)


def heap_desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & XLOG_HEAP_OPMASK
    new = major >= 16
    if info == XLOG_HEAP_INSERT:
        offnum, flags = xl_heap_insert.unpack_from(rec)
        return ("off: %u, flags: 0x%02X" if new else "off %u flags 0x%02X") % (offnum, flags)
    if info == XLOG_HEAP_DELETE:
        xmax, offnum, infobits_set, flags = xl_heap_delete.unpack_from(rec)
        if new:
            return "xmax: %u, off: %u, %s, flags: 0x%02X" % (
                xmax, offnum, infobits_desc(infobits_set, "infobits"), flags)
        return "off %u flags 0x%02X " % (offnum, flags) + out_infobits(infobits_set)
    if info in (XLOG_HEAP_UPDATE, XLOG_HEAP_HOT_UPDATE):
        old_xmax, old_offnum, old_infobits_set, flags, new_xmax, new_offnum = xl_heap_update.unpack_from(rec)
        if new:
            return "old_xmax: %u, old_off: %u, %s, flags: 0x%02X, new_xmax: %u, new_off: %u" % (
                old_xmax, old_offnum, infobits_desc(old_infobits_set, "old_infobits"), flags,
                new_xmax, new_offnum)
        return ("off %u xmax %u flags 0x%02X " % (old_offnum, old_xmax, flags) + out_infobits(old_infobits_set)
                + "; new off %u xmax %u" % (new_offnum, new_xmax))
    if info == XLOG_HEAP_TRUNCATE:
        _dbId, nrelids, flags = xl_heap_truncate.unpack_from(rec)
        relids = oid_elems(rec, xl_heap_truncate.size, nrelids)
        if new:
            return truncate_flags_desc(flags) + ", nrelids: %u" % nrelids + ", relids:" + array_desc(relids)
        out = []
        if flags & XLH_TRUNCATE_CASCADE:
            out.append("cascade ")
        if flags & XLH_TRUNCATE_RESTART_SEQS:
            out.append("restart_seqs ")
        out.append("nrelids %u relids" % nrelids)
        out.extend(" " + r for r in relids)
        return "".join(out)
    if info == XLOG_HEAP_CONFIRM:
        return ("off: %u" if new else "off %u") % xl_heap_confirm.unpack_from(rec)
    if info == XLOG_HEAP_LOCK:
        xmax, offnum, infobits_set, flags = xl_heap_lock.unpack_from(rec)
        if new:
            return "xmax: %u, off: %u, %s, flags: 0x%02X" % (
                xmax, offnum, infobits_desc(infobits_set, "infobits"), flags)
        return "off %u: xid %u: flags 0x%02X " % (offnum, xmax, flags) + out_infobits(infobits_set)
    if info == XLOG_HEAP_INPLACE:
        if major >= 18:
            offnum, dbId, tsId, relcache_init, nmsgs = xl_heap_inplace_18.unpack_from(rec)
            msgs = rec[xl_heap_inplace_18.size:xl_heap_inplace_18.size
                       + SizeOfSharedInvalidationMessage * max(nmsgs, 0)]
            return "off: %u" % offnum + standby_desc_invalidations(msgs, dbId, tsId, bool(relcache_init), major)
        return ("off: %u" if new else "off %u") % xl_heap_inplace.unpack_from(rec)
    return ""


def _plan_elems(plans_data: bytes, nplans: int, offsets_data: bytes, offsets_pos: int) -> list[str]:
    """plan_elem_desc over ``nplans`` freeze plans; the offsets follow in ``offsets_data``."""
    out = []
    for i in range(nplans):
        xmax, t_infomask2, t_infomask, _frzflags, ntuples = xl_heap_freeze_plan.unpack_from(
            plans_data, i * xl_heap_freeze_plan.size)
        offs = offset_elems(offsets_data, offsets_pos, ntuples)
        offsets_pos += 2 * ntuples
        out.append("{ xmax: %u, infomask: %u, infomask2: %u, ntuples: %u, offsets:%s }"
                   % (xmax, t_infomask, t_infomask2, ntuples, array_desc(offs)))
    return out


def heap_xlog_deserialize_prune_and_freeze(cursor: bytes, flags: int):
    """heapdesc.c 17+: where the sub-records of a prune/freeze record's block 0 data lie."""
    pos = 0
    nplans = 0
    plans_pos = 0
    if flags & XLHP_HAS_FREEZE_PLANS:
        nplans = uint16.unpack_from(cursor, pos)[0]
        plans_pos = pos + 4  # offsetof(xlhp_freeze_plans, plans)
        pos = plans_pos + xl_heap_freeze_plan.size * nplans
    nredirected = ndead = nunused = 0
    redirected_pos = nowdead_pos = nowunused_pos = 0
    if flags & XLHP_HAS_REDIRECTIONS:
        nredirected = uint16.unpack_from(cursor, pos)[0]
        redirected_pos = pos + 2  # offsetof(xlhp_prune_items, data)
        pos = redirected_pos + 4 * nredirected
    if flags & XLHP_HAS_DEAD_ITEMS:
        ndead = uint16.unpack_from(cursor, pos)[0]
        nowdead_pos = pos + 2
        pos = nowdead_pos + 2 * ndead
    if flags & XLHP_HAS_NOW_UNUSED_ITEMS:
        nunused = uint16.unpack_from(cursor, pos)[0]
        nowunused_pos = pos + 2
        pos = nowunused_pos + 2 * nunused
    frz_offsets_pos = pos
    return (nplans, plans_pos, frz_offsets_pos, nredirected, redirected_pos, ndead, nowdead_pos,
            nunused, nowunused_pos)


def heap2_desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & XLOG_HEAP_OPMASK
    if major <= 13:
        return _heap2_desc_13(record, info)
    if major >= 17 and info in (XLOG_HEAP2_PRUNE_ON_ACCESS, XLOG_HEAP2_PRUNE_VACUUM_SCAN,
                                XLOG_HEAP2_PRUNE_VACUUM_CLEANUP):
        return _heap2_prune_desc_17(record)
    new = major >= 16
    if info == XLOG_HEAP2_PRUNE:
        horizon, nredirected, ndead = xl_heap_prune_14.unpack_from(rec)
        if not new:
            return "latestRemovedXid %u nredirected %u ndead %u" % (horizon, nredirected, ndead)
        out = ["snapshotConflictHorizon: %u, nredirected: %u, ndead: %u" % (horizon, nredirected, ndead)]
        data = block_data(record, 0)
        if data is not None:
            nowdead_pos = 4 * nredirected
            nowunused_pos = nowdead_pos + 2 * ndead
            nunused = (len(data) - nowunused_pos) // 2
            out.append(", nunused: %d" % nunused)
            out.append(", redirected:" + array_desc(redirect_elems(data, 0, nredirected)))
            out.append(", dead:" + array_desc(offset_elems(data, nowdead_pos, ndead)))
            out.append(", unused:" + array_desc(offset_elems(data, nowunused_pos, nunused)))
        return "".join(out)
    if info == XLOG_HEAP2_VACUUM:
        nunused = xl_heap_vacuum.unpack_from(rec)[0]
        if not new:
            return "nunused %u" % nunused
        out = "nunused: %u" % nunused
        data = block_data(record, 0)
        if data is not None:
            out += ", unused:" + array_desc(offset_elems(data, 0, nunused))
        return out
    if info == XLOG_HEAP2_FREEZE_PAGE:
        cutoff, n = xl_heap_freeze_page_14.unpack_from(rec)
        if not new:
            return "cutoff xid %u ntuples %u" % (cutoff, n)
        out = "snapshotConflictHorizon: %u, nplans: %u" % (cutoff, n)
        data = block_data(record, 0)
        if data is not None:
            out += ", plans:" + array_desc(_plan_elems(data, n, data, n * xl_heap_freeze_plan.size))
        return out
    return _heap2_desc_common(record, info, new)


def _heap2_prune_desc_17(record) -> str:
    rec = record.main_data
    _reason, flags = xl_heap_prune_17.unpack_from(rec)
    out = []
    if flags & XLHP_HAS_CONFLICT_HORIZON:
        out.append("snapshotConflictHorizon: %u" % uint32.unpack_from(rec, SizeOfHeapPrune)[0])
    out.append(", isCatalogRel: %s" % ("T" if flags & XLHP_IS_CATALOG_REL else "F"))
    data = block_data(record, 0)
    if data is not None:
        (nplans, plans_pos, frz_offsets_pos, nredirected, redirected_pos, ndead, nowdead_pos,
         nunused, nowunused_pos) = heap_xlog_deserialize_prune_and_freeze(data, flags)
        out.append(", nplans: %u, nredirected: %u, ndead: %u, nunused: %u" % (nplans, nredirected, ndead, nunused))
        if nplans > 0:
            out.append(", plans:" + array_desc(_plan_elems(data[plans_pos:], nplans, data, frz_offsets_pos)))
        if nredirected > 0:
            out.append(", redirected:" + array_desc(redirect_elems(data, redirected_pos, nredirected)))
        if ndead > 0:
            out.append(", dead:" + array_desc(offset_elems(data, nowdead_pos, ndead)))
        if nunused > 0:
            out.append(", unused:" + array_desc(offset_elems(data, nowunused_pos, nunused)))
    return "".join(out)


def _heap2_desc_common(record, info: int, new: bool) -> str:
    """VISIBLE, MULTI_INSERT, LOCK_UPDATED and NEW_CID, 14+ (13 shares the old texts)."""
    rec = record.main_data
    if info == XLOG_HEAP2_VISIBLE:
        cutoff, flags = xl_heap_visible.unpack_from(rec)
        return ("snapshotConflictHorizon: %u, flags: 0x%02X" if new else "cutoff xid %u flags 0x%02X") % (
            cutoff, flags)
    if info == XLOG_HEAP2_MULTI_INSERT:
        flags, ntuples = xl_heap_multi_insert.unpack_from(rec)
        if not new:
            return "%d tuples flags 0x%02X" % (ntuples, flags)
        out = "ntuples: %d, flags: 0x%02X" % (ntuples, flags)
        isinit = bool(record.xl_info & XLOG_HEAP_INIT_PAGE)
        if block_data(record, 0) is not None and not isinit:
            out += ", offsets:" + array_desc(offset_elems(rec, SizeOfHeapMultiInsert, ntuples))
        return out
    if info == XLOG_HEAP2_LOCK_UPDATED:
        xmax, offnum, infobits_set, flags = xl_heap_lock_updated.unpack_from(rec)
        if new:
            return "xmax: %u, off: %u, %s, flags: 0x%02X" % (
                xmax, offnum, infobits_desc(infobits_set, "infobits"), flags)
        return "off %u: xmax %u: flags 0x%02X " % (offnum, xmax, flags) + out_infobits(infobits_set)
    if info == XLOG_HEAP2_NEW_CID:
        _top_xid, cmin, cmax, combocid = xl_heap_new_cid.unpack_from(rec)
        spc, db, rel = RelFileLocator.unpack_from(rec, 16)
        blk, off = item_pointer(rec, 28)
        if new:
            return "rel: %u/%u/%u, tid: %u/%u, cmin: %u, cmax: %u, combo: %u" % (
                spc, db, rel, blk, off, cmin, cmax, combocid)
        return "rel %u/%u/%u; tid %u/%u; cmin: %u, cmax: %u, combo: %u" % (
            spc, db, rel, blk, off, cmin, cmax, combocid)
    return ""


def _heap2_desc_13(record, info: int) -> str:
    rec = record.main_data
    if info == XLOG_HEAP2_CLEAN:
        return "remxid %u" % xl_heap_clean.unpack_from(rec)[0]
    if info == XLOG_HEAP2_FREEZE_PAGE_13:
        return "cutoff xid %u ntuples %u" % xl_heap_freeze_page_14.unpack_from(rec)
    if info == XLOG_HEAP2_CLEANUP_INFO:
        return "remxid %u" % xl_heap_cleanup_info.unpack_from(rec)[0]
    return _heap2_desc_common(record, info, False)
