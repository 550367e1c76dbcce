"""SP-GiST resource manager (RM_SPGIST_ID 16): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/spgdesc.c for 13-18 (14 rewrote the text,
16 renamed the conflict horizon, 17 added isCatalogRel), layouts from
src/include/access/spgxlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/access/spgxlog.h
XLOG_SPGIST_ADD_LEAF = 0x10
XLOG_SPGIST_MOVE_LEAFS = 0x20
XLOG_SPGIST_ADD_NODE = 0x30
XLOG_SPGIST_SPLIT_TUPLE = 0x40
XLOG_SPGIST_PICKSPLIT = 0x50
XLOG_SPGIST_VACUUM_LEAF = 0x60
XLOG_SPGIST_VACUUM_ROOT = 0x70
XLOG_SPGIST_VACUUM_REDIRECT = 0x80

# spgxlogAddLeaf {newPage, storesNulls, offnumLeaf, offnumHeadLeaf, offnumParent, nodeI}
spgxlogAddLeaf = struct.Struct("<BBHHHH")
# spgxlogMoveLeafs {nMoves, newPage, replaceDead, storesNulls, offnumParent @6, nodeI}
spgxlogMoveLeafs = struct.Struct("<HBBBxHH")
# spgxlogAddNode {offnum, offnumNew, newPage, int8 parentBlk, offnumParent, nodeI}
spgxlogAddNode = struct.Struct("<HHBbHH")
# spgxlogSplitTuple {offnumPrefix, offnumPostfix, newPage, postfixBlkSame}
spgxlogSplitTuple = struct.Struct("<HHBB")
# spgxlogPickSplit {isRootSplit, nDelete @2, nInsert, initSrc, initDest, offnumInner @8, initInner,
#                   storesNulls, innerIsParent, offnumParent @14, nodeI}
spgxlogPickSplit = struct.Struct("<BxHHBBHBBBxHH")
# spgxlogVacuumLeaf {nDead, nPlaceholder, nMove, nChain}
spgxlogVacuumLeaf = struct.Struct("<HHHH")
# spgxlogVacuumRoot {nDelete}
spgxlogVacuumRoot = struct.Struct("<H")
# spgxlogVacuumRedirect {nToPlaceholder, firstPlaceholder, newestRedirectXid (snapshotConflictHorizon in 16+),
#                        16+: isCatalogRel}
spgxlogVacuumRedirect = struct.Struct("<HHI")
spgxlogVacuumRedirect_16 = struct.Struct("<HHIB")

_NAMES = {
    XLOG_SPGIST_ADD_LEAF: "ADD_LEAF",
    XLOG_SPGIST_MOVE_LEAFS: "MOVE_LEAFS",
    XLOG_SPGIST_ADD_NODE: "ADD_NODE",
    XLOG_SPGIST_SPLIT_TUPLE: "SPLIT_TUPLE",
    XLOG_SPGIST_PICKSPLIT: "PICKSPLIT",
    XLOG_SPGIST_VACUUM_LEAF: "VACUUM_LEAF",
    XLOG_SPGIST_VACUUM_ROOT: "VACUUM_ROOT",
    XLOG_SPGIST_VACUUM_REDIRECT: "VACUUM_REDIRECT",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def _desc_13(rec: bytes, info: int) -> str:
    if info == XLOG_SPGIST_ADD_LEAF:
        newPage, storesNulls, offnumLeaf, offnumHeadLeaf, offnumParent, _nodeI = spgxlogAddLeaf.unpack_from(rec)
        out = "add leaf to page; off %u; headoff %u; parentoff %u" % (offnumLeaf, offnumHeadLeaf, offnumParent)
        if newPage:
            out += " (newpage)"
        if storesNulls:
            out += " (nulls)"
        return out
    if info == XLOG_SPGIST_MOVE_LEAFS:
        return "%u leafs" % spgxlogMoveLeafs.unpack_from(rec)[0]
    if info == XLOG_SPGIST_ADD_NODE:
        return "off %u" % spgxlogAddNode.unpack_from(rec)[0]
    if info == XLOG_SPGIST_SPLIT_TUPLE:
        prefix, postfix, newPage, same = spgxlogSplitTuple.unpack_from(rec)
        return "prefix off: %u, postfix off: %u (same %d, new %d)" % (prefix, postfix, same, newPage)
    if info == XLOG_SPGIST_PICKSPLIT:
        vals = spgxlogPickSplit.unpack_from(rec)
        out = "ndel %u; nins %u" % (vals[1], vals[2])
        if vals[8]:
            out += " (innerIsParent)"
        if vals[0]:
            out += " (isRootSplit)"
        return out
    if info == XLOG_SPGIST_VACUUM_REDIRECT:
        return "newest XID %u" % spgxlogVacuumRedirect.unpack_from(rec)[2]
    return ""


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if major <= 13:
        return _desc_13(rec, info)
    if info == XLOG_SPGIST_ADD_LEAF:
        newPage, storesNulls, offnumLeaf, offnumHeadLeaf, offnumParent, nodeI = spgxlogAddLeaf.unpack_from(rec)
        out = "off: %u, headoff: %u, parentoff: %u, nodeI: %u" % (offnumLeaf, offnumHeadLeaf, offnumParent, nodeI)
        if newPage:
            out += " (newpage)"
        if storesNulls:
            out += " (nulls)"
        return out
    if info == XLOG_SPGIST_MOVE_LEAFS:
        nMoves, newPage, replaceDead, storesNulls, offnumParent, nodeI = spgxlogMoveLeafs.unpack_from(rec)
        out = "nmoves: %u, parentoff: %u, nodeI: %u" % (nMoves, offnumParent, nodeI)
        if newPage:
            out += " (newpage)"
        if replaceDead:
            out += " (replacedead)"
        if storesNulls:
            out += " (nulls)"
        return out
    if info == XLOG_SPGIST_ADD_NODE:
        offnum, offnumNew, newPage, parentBlk, offnumParent, nodeI = spgxlogAddNode.unpack_from(rec)
        out = "off: %u, newoff: %u, parentBlk: %d, parentoff: %u, nodeI: %u" % (
            offnum, offnumNew, parentBlk, offnumParent, nodeI)
        if newPage:
            out += " (newpage)"
        return out
    if info == XLOG_SPGIST_SPLIT_TUPLE:
        prefix, postfix, newPage, same = spgxlogSplitTuple.unpack_from(rec)
        out = "prefixoff: %u, postfixoff: %u" % (prefix, postfix)
        if newPage:
            out += " (newpage)"
        if same:
            out += " (same)"
        return out
    if info == XLOG_SPGIST_PICKSPLIT:
        (isRootSplit, nDelete, nInsert, _initSrc, _initDest, offnumInner, _initInner, storesNulls,
         innerIsParent, offnumParent, nodeI) = spgxlogPickSplit.unpack_from(rec)
        out = "ndelete: %u, ninsert: %u, inneroff: %u, parentoff: %u, nodeI: %u" % (
            nDelete, nInsert, offnumInner, offnumParent, nodeI)
        if innerIsParent:
            out += " (innerIsParent)"
        if storesNulls:
            out += " (nulls)"
        if isRootSplit:
            out += " (isRootSplit)"
        return out
    if info == XLOG_SPGIST_VACUUM_LEAF:
        return "ndead: %u, nplaceholder: %u, nmove: %u, nchain: %u" % spgxlogVacuumLeaf.unpack_from(rec)
    if info == XLOG_SPGIST_VACUUM_ROOT:
        return "ndelete: %u" % spgxlogVacuumRoot.unpack_from(rec)
    if info == XLOG_SPGIST_VACUUM_REDIRECT:
        if major >= 16:
            nToPlaceholder, firstPlaceholder, horizon, is_catalog = spgxlogVacuumRedirect_16.unpack_from(rec)
            out = "ntoplaceholder: %u, firstplaceholder: %u, snapshotConflictHorizon: %u" % (
                nToPlaceholder, firstPlaceholder, horizon)
            if major >= 17:
                out += ", isCatalogRel: %s" % ("T" if is_catalog else "F")
            return out
        return ("ntoplaceholder: %u, firstplaceholder: %u, newestredirectxid: %u"
                % spgxlogVacuumRedirect.unpack_from(rec))
    return ""
