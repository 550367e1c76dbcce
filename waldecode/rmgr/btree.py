"""B-tree resource manager (RM_BTREE_ID 11): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/nbtdesc.c for 13-18 (the text became
"key: value" in 16; 17 added isCatalogRel), layouts from
src/include/access/nbtxlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import RelFileLocator, array_desc, block_data, offset_elems

# src/include/access/nbtxlog.h
XLOG_BTREE_INSERT_LEAF = 0x00
XLOG_BTREE_INSERT_UPPER = 0x10
XLOG_BTREE_INSERT_META = 0x20
XLOG_BTREE_SPLIT_L = 0x30
XLOG_BTREE_SPLIT_R = 0x40
XLOG_BTREE_INSERT_POST = 0x50
XLOG_BTREE_DEDUP = 0x60
XLOG_BTREE_DELETE = 0x70
XLOG_BTREE_UNLINK_PAGE = 0x80
XLOG_BTREE_UNLINK_PAGE_META = 0x90
XLOG_BTREE_NEWROOT = 0xA0
XLOG_BTREE_MARK_PAGE_HALFDEAD = 0xB0
XLOG_BTREE_VACUUM = 0xC0
XLOG_BTREE_REUSE_PAGE = 0xD0
XLOG_BTREE_META_CLEANUP = 0xE0

xl_btree_insert = struct.Struct("<H")  # offnum
xl_btree_split = struct.Struct("<IHHH")  # level, firstrightoff, newitemoff, postingoff
xl_btree_dedup = struct.Struct("<H")  # nintervals
xl_btree_vacuum = struct.Struct("<HH")  # ndeleted, nupdated
# xl_btree_delete: 13 {latestRemovedXid, uint32 ndeleted}; 14/15 {latestRemovedXid, ndeleted, nupdated};
# 16+ {snapshotConflictHorizon, ndeleted, nupdated, isCatalogRel}
xl_btree_delete_13 = struct.Struct("<II")
xl_btree_delete_14 = struct.Struct("<IHH")
xl_btree_delete = struct.Struct("<IHHB")
# xl_btree_mark_page_halfdead {poffset, leafblk, leftblk, rightblk, topparent}
xl_btree_mark_page_halfdead = struct.Struct("<H2xIIII")
# xl_btree_unlink_page: 13 {leftsib, rightsib, leafleftsib, leafrightsib, topparent, btpo_xact};
# 14+ {leftsib, rightsib, level, FullTransactionId safexid @16, leafleftsib, leafrightsib, leaftopparent}
xl_btree_unlink_page_13 = struct.Struct("<IIIIII")
xl_btree_unlink_page = struct.Struct("<III4xQIII")
xl_btree_newroot = struct.Struct("<II")  # rootblk, level
# xl_btree_reuse_page: locator, block, 13: latestRemovedXid; 14+: FullTransactionId @16; 16+: isCatalogRel @24
xl_btree_reuse_page_13 = struct.Struct("<IIIII")
xl_btree_reuse_page = struct.Struct("<IIII Q B")
# xl_btree_metadata: version, root, level, fastroot, fastlevel, then
# 13: oldest_btpo_xact, float8 last_cleanup_num_heap_tuples @24; 14+: last_cleanup_num_delpages
xl_btree_metadata_13 = struct.Struct("<IIIIII d")
xl_btree_metadata = struct.Struct("<IIIIII")
SizeOfBtreeUpdate = 2
uint16 = struct.Struct("<H")

_NAMES = {
    XLOG_BTREE_INSERT_LEAF: "INSERT_LEAF",
    XLOG_BTREE_INSERT_UPPER: "INSERT_UPPER",
    XLOG_BTREE_INSERT_META: "INSERT_META",
    XLOG_BTREE_SPLIT_L: "SPLIT_L",
    XLOG_BTREE_SPLIT_R: "SPLIT_R",
    XLOG_BTREE_INSERT_POST: "INSERT_POST",
    XLOG_BTREE_DEDUP: "DEDUP",
    XLOG_BTREE_VACUUM: "VACUUM",
    XLOG_BTREE_DELETE: "DELETE",
    XLOG_BTREE_MARK_PAGE_HALFDEAD: "MARK_PAGE_HALFDEAD",
    XLOG_BTREE_UNLINK_PAGE: "UNLINK_PAGE",
    XLOG_BTREE_UNLINK_PAGE_META: "UNLINK_PAGE_META",
    XLOG_BTREE_NEWROOT: "NEWROOT",
    XLOG_BTREE_REUSE_PAGE: "REUSE_PAGE",
    XLOG_BTREE_META_CLEANUP: "META_CLEANUP",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def _tf(b) -> str:
    return "T" if b else "F"


def delvacuum_desc(data: bytes, ndeleted: int, nupdated: int) -> str:
    """nbtdesc.c 16+: delvacuum_desc."""
    out = [", deleted:" + array_desc(offset_elems(data, 0, ndeleted)), ", updated: ["]
    updated_pos = 2 * ndeleted
    updates_pos = updated_pos + 2 * nupdated
    items = []
    for i in range(nupdated):
        off = uint16.unpack_from(data, updated_pos + 2 * i)[0]
        ndeletedtids = uint16.unpack_from(data, updates_pos)[0]
        ptids = struct.unpack_from("<%dH" % ndeletedtids, data, updates_pos + SizeOfBtreeUpdate)
        items.append("{ off: %u, nptids: %u, ptids: [%s] }" % (off, ndeletedtids, ", ".join("%u" % p for p in ptids)))
        updates_pos += SizeOfBtreeUpdate + 2 * ndeletedtids
    out.append(", ".join(items))
    out.append("]")
    return "".join(out)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    new = major >= 16
    if info in (XLOG_BTREE_INSERT_LEAF, XLOG_BTREE_INSERT_UPPER, XLOG_BTREE_INSERT_META, XLOG_BTREE_INSERT_POST):
        return ("off: %u" if new else "off %u") % xl_btree_insert.unpack_from(rec)
    if info in (XLOG_BTREE_SPLIT_L, XLOG_BTREE_SPLIT_R):
        fmt = ("level: %u, firstrightoff: %d, newitemoff: %d, postingoff: %d" if new
               else "level %u, firstrightoff %d, newitemoff %d, postingoff %d")
        return fmt % xl_btree_split.unpack_from(rec)
    if info == XLOG_BTREE_DEDUP:
        return ("nintervals: %u" if new else "nintervals %u") % xl_btree_dedup.unpack_from(rec)
    if info == XLOG_BTREE_VACUUM:
        ndeleted, nupdated = xl_btree_vacuum.unpack_from(rec)
        if not new:
            return "ndeleted %u; nupdated %u" % (ndeleted, nupdated)
        out = "ndeleted: %u, nupdated: %u" % (ndeleted, nupdated)
        data = block_data(record, 0)
        if data is not None:
            out += delvacuum_desc(data, ndeleted, nupdated)
        return out
    if info == XLOG_BTREE_DELETE:
        if major <= 13:
            return "latestRemovedXid %u; ndeleted %u" % xl_btree_delete_13.unpack_from(rec)
        if not new:
            return "latestRemovedXid %u; ndeleted %u; nupdated %u" % xl_btree_delete_14.unpack_from(rec)
        horizon, ndeleted, nupdated, is_catalog = xl_btree_delete.unpack_from(rec)
        out = "snapshotConflictHorizon: %u, ndeleted: %u, nupdated: %u" % (horizon, ndeleted, nupdated)
        if major >= 17:
            out += ", isCatalogRel: %s" % _tf(is_catalog)
        data = block_data(record, 0)
        if data is not None:
            out += delvacuum_desc(data, ndeleted, nupdated)
        return out
    if info == XLOG_BTREE_MARK_PAGE_HALFDEAD:
        _poffset, leafblk, leftblk, rightblk, topparent = xl_btree_mark_page_halfdead.unpack_from(rec)
        fmt = ("topparent: %u, leaf: %u, left: %u, right: %u" if new
               else "topparent %u; leaf %u; left %u; right %u")
        return fmt % (topparent, leafblk, leftblk, rightblk)
    if info in (XLOG_BTREE_UNLINK_PAGE_META, XLOG_BTREE_UNLINK_PAGE):
        if major <= 13:
            leftsib, rightsib, leafleftsib, leafrightsib, topparent, btpo_xact = \
                xl_btree_unlink_page_13.unpack_from(rec)
            return ("left %u; right %u; btpo_xact %u; leafleft %u; leafright %u; topparent %u"
                    % (leftsib, rightsib, btpo_xact, leafleftsib, leafrightsib, topparent))
        leftsib, rightsib, level, safexid, leafleftsib, leafrightsib, leaftopparent = \
            xl_btree_unlink_page.unpack_from(rec)
        fmt = ("left: %u, right: %u, level: %u, safexid: %u:%u, leafleft: %u, leafright: %u, leaftopparent: %u"
               if new else
               "left %u; right %u; level %u; safexid %u:%u; leafleft %u; leafright %u; leaftopparent %u")
        return fmt % (leftsib, rightsib, level, safexid >> 32, safexid & 0xFFFFFFFF,
                      leafleftsib, leafrightsib, leaftopparent)
    if info == XLOG_BTREE_NEWROOT:
        return ("level: %u" if new else "lev %u") % xl_btree_newroot.unpack_from(rec)[1]
    if info == XLOG_BTREE_REUSE_PAGE:
        spc, db, rel = RelFileLocator.unpack_from(rec)
        if major <= 13:
            return "rel %u/%u/%u; latestRemovedXid %u" % (spc, db, rel, xl_btree_reuse_page_13.unpack_from(rec)[4])
        if not new:
            fxid = struct.unpack_from("<Q", rec, 16)[0]
            return "rel %u/%u/%u; latestRemovedXid %u:%u" % (spc, db, rel, fxid >> 32, fxid & 0xFFFFFFFF)
        _s, _d, _r, _block, fxid, is_catalog = xl_btree_reuse_page.unpack_from(rec)
        out = "rel: %u/%u/%u, snapshotConflictHorizon: %u:%u" % (spc, db, rel, fxid >> 32, fxid & 0xFFFFFFFF)
        if major >= 17:
            out += ", isCatalogRel: %s" % _tf(is_catalog)
        return out
    if info == XLOG_BTREE_META_CLEANUP:
        data = block_data(record, 0) or b""
        if major <= 13:
            vals = xl_btree_metadata_13.unpack_from(data)
            return "oldest_btpo_xact %u; last_cleanup_num_heap_tuples: %f" % (vals[5], vals[6])
        delpages = xl_btree_metadata.unpack_from(data)[5]
        return ("last_cleanup_num_delpages: %u" if new else "last_cleanup_num_delpages %u") % delpages
    return ""
