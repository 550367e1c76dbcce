"""Hash index resource manager (RM_HASH_ID 12): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/hashdesc.c for 13-18, layouts from
src/include/access/hash_xlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/access/hash_xlog.h
XLOG_HASH_INIT_META_PAGE = 0x00
XLOG_HASH_INIT_BITMAP_PAGE = 0x10
XLOG_HASH_INSERT = 0x20
XLOG_HASH_ADD_OVFL_PAGE = 0x30
XLOG_HASH_SPLIT_ALLOCATE_PAGE = 0x40
XLOG_HASH_SPLIT_PAGE = 0x50
XLOG_HASH_SPLIT_COMPLETE = 0x60
XLOG_HASH_MOVE_PAGE_CONTENTS = 0x70
XLOG_HASH_SQUEEZE_PAGE = 0x80
XLOG_HASH_DELETE = 0x90
XLOG_HASH_SPLIT_CLEANUP = 0xA0
XLOG_HASH_UPDATE_META_PAGE = 0xB0
XLOG_HASH_VACUUM_ONE_PAGE = 0xC0

XLH_SPLIT_META_UPDATE_MASKS = 1 << 0
XLH_SPLIT_META_UPDATE_SPLITPOINT = 1 << 1

xl_hash_init_meta_page = struct.Struct("<dIH")  # num_tuples, procid, ffactor
xl_hash_init_bitmap_page = struct.Struct("<H")  # bmsize
xl_hash_insert = struct.Struct("<H")  # offnum
xl_hash_add_ovfl_page = struct.Struct("<HB")  # bmsize, bmpage_found
xl_hash_split_allocate_page = struct.Struct("<IHHB")  # new_bucket, old_bucket_flag, new_bucket_flag, flags
xl_hash_split_complete = struct.Struct("<HH")  # old_bucket_flag, new_bucket_flag
xl_hash_move_page_contents = struct.Struct("<HB")  # ntups, is_prim_bucket_same_wrt
xl_hash_squeeze_page = struct.Struct("<IIHB")  # prevblkno, nextblkno, ntups, is_prim_bucket_same_wrt
xl_hash_delete = struct.Struct("<BB")  # clear_dead_marking, is_primary_bucket_page
xl_hash_update_meta_page = struct.Struct("<d")  # ntuples
# xl_hash_vacuum_one_page: 13-15 {latestRemovedXid, int ntuples};
# 16+ {snapshotConflictHorizon, uint16 ntuples, isCatalogRel}
xl_hash_vacuum_one_page_13 = struct.Struct("<Ii")
xl_hash_vacuum_one_page = struct.Struct("<IHB")

_NAMES = {
    XLOG_HASH_INIT_META_PAGE: "INIT_META_PAGE",
    XLOG_HASH_INIT_BITMAP_PAGE: "INIT_BITMAP_PAGE",
    XLOG_HASH_INSERT: "INSERT",
    XLOG_HASH_ADD_OVFL_PAGE: "ADD_OVFL_PAGE",
    XLOG_HASH_SPLIT_ALLOCATE_PAGE: "SPLIT_ALLOCATE_PAGE",
    XLOG_HASH_SPLIT_PAGE: "SPLIT_PAGE",
    XLOG_HASH_SPLIT_COMPLETE: "SPLIT_COMPLETE",
    XLOG_HASH_MOVE_PAGE_CONTENTS: "MOVE_PAGE_CONTENTS",
    XLOG_HASH_SQUEEZE_PAGE: "SQUEEZE_PAGE",
    XLOG_HASH_DELETE: "DELETE",
    XLOG_HASH_SPLIT_CLEANUP: "SPLIT_CLEANUP",
    XLOG_HASH_UPDATE_META_PAGE: "UPDATE_META_PAGE",
    XLOG_HASH_VACUUM_ONE_PAGE: "VACUUM_ONE_PAGE",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def _tf(b) -> str:
    return "T" if b else "F"


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_HASH_INIT_META_PAGE:
        num_tuples, _procid, ffactor = xl_hash_init_meta_page.unpack_from(rec)
        return "num_tuples %g, fillfactor %d" % (num_tuples, ffactor)
    if info == XLOG_HASH_INIT_BITMAP_PAGE:
        return "bmsize %d" % xl_hash_init_bitmap_page.unpack_from(rec)
    if info == XLOG_HASH_INSERT:
        return "off %u" % xl_hash_insert.unpack_from(rec)
    if info == XLOG_HASH_ADD_OVFL_PAGE:
        bmsize, found = xl_hash_add_ovfl_page.unpack_from(rec)
        return "bmsize %d, bmpage_found %s" % (bmsize, _tf(found))
    if info == XLOG_HASH_SPLIT_ALLOCATE_PAGE:
        new_bucket, _o, _n, flags = xl_hash_split_allocate_page.unpack_from(rec)
        return "new_bucket %u, meta_page_masks_updated %s, issplitpoint_changed %s" % (
            new_bucket, _tf(flags & XLH_SPLIT_META_UPDATE_MASKS), _tf(flags & XLH_SPLIT_META_UPDATE_SPLITPOINT))
    if info == XLOG_HASH_SPLIT_COMPLETE:
        return "old_bucket_flag %u, new_bucket_flag %u" % xl_hash_split_complete.unpack_from(rec)
    if info == XLOG_HASH_MOVE_PAGE_CONTENTS:
        ntups, is_prim = xl_hash_move_page_contents.unpack_from(rec)
        return "ntups %d, is_primary %s" % (ntups, _tf(is_prim))
    if info == XLOG_HASH_SQUEEZE_PAGE:
        prevblkno, nextblkno, ntups, is_prim = xl_hash_squeeze_page.unpack_from(rec)
        return "prevblkno %u, nextblkno %u, ntups %d, is_primary %s" % (prevblkno, nextblkno, ntups, _tf(is_prim))
    if info == XLOG_HASH_DELETE:
        clear_dead, is_primary = xl_hash_delete.unpack_from(rec)
        return "clear_dead_marking %s, is_primary %s" % (_tf(clear_dead), _tf(is_primary))
    if info == XLOG_HASH_UPDATE_META_PAGE:
        return "ntuples %g" % xl_hash_update_meta_page.unpack_from(rec)
    if info == XLOG_HASH_VACUUM_ONE_PAGE:
        if major <= 15:
            xid, ntuples = xl_hash_vacuum_one_page_13.unpack_from(rec)
            label = "latest removed xid" if major <= 13 else "latestRemovedXid"
            return "ntuples %d, %s %u" % (ntuples, label, xid)
        xid, ntuples, is_catalog = xl_hash_vacuum_one_page.unpack_from(rec)
        out = "ntuples %d, snapshotConflictHorizon %u" % (ntuples, xid)
        if major >= 17:
            out += ", isCatalogRel %s" % _tf(is_catalog)
        return out
    return ""
