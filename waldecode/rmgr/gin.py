"""GIN resource manager (RM_GIN_ID 13): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/gindesc.c (same text 13-18), layouts from
src/include/access/ginxlog.h and ginblock.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import block_data, block_id_number, block_image_apply, item_pointer

# src/include/access/ginxlog.h
XLOG_GIN_CREATE_PTREE = 0x10
XLOG_GIN_INSERT = 0x20
XLOG_GIN_SPLIT = 0x30
XLOG_GIN_VACUUM_PAGE = 0x40
XLOG_GIN_DELETE_PAGE = 0x50
XLOG_GIN_UPDATE_META_PAGE = 0x60
XLOG_GIN_INSERT_LISTPAGE = 0x70
XLOG_GIN_DELETE_LISTPAGE = 0x80
XLOG_GIN_VACUUM_DATA_LEAF_PAGE = 0x90

GIN_INSERT_ISDATA = 0x01
GIN_INSERT_ISLEAF = 0x02
GIN_SPLIT_ROOT = 0x04

GIN_SEGMENT_UNMODIFIED = 0
GIN_SEGMENT_DELETE = 1
GIN_SEGMENT_INSERT = 2
GIN_SEGMENT_REPLACE = 3
GIN_SEGMENT_ADDITEMS = 4

ginxlogInsert = struct.Struct("<H")  # flags
ginxlogInsertEntry = struct.Struct("<HB")  # offset, isDelete, tuple...
ginxlogRecompressDataLeaf = struct.Struct("<H")  # nactions
# ginxlogSplit {RelFileLocator locator; rrlink; leftChildBlkno; rightChildBlkno; uint16 flags @24}
ginxlogSplit_flags_offset = 24
# ginxlogDeleteListPages {GinMetaPageData metadata (56 bytes); int32 ndeleted}
ginxlogDeleteListPages_ndeleted_offset = 56
# GinPostingList {ItemPointerData first; uint16 nbytes; bytes[]}
GinPostingList_nbytes_offset = 6
GinPostingList_bytes_offset = 8
SizeOfItemPointerData = 6
uint16 = struct.Struct("<H")
int32 = struct.Struct("<i")

_NAMES = {
    XLOG_GIN_CREATE_PTREE: "CREATE_PTREE",
    XLOG_GIN_INSERT: "INSERT",
    XLOG_GIN_SPLIT: "SPLIT",
    XLOG_GIN_VACUUM_PAGE: "VACUUM_PAGE",
    XLOG_GIN_VACUUM_DATA_LEAF_PAGE: "VACUUM_DATA_LEAF_PAGE",
    XLOG_GIN_DELETE_PAGE: "DELETE_PAGE",
    XLOG_GIN_UPDATE_META_PAGE: "UPDATE_META_PAGE",
    XLOG_GIN_INSERT_LISTPAGE: "INSERT_LISTPAGE",
    XLOG_GIN_DELETE_LISTPAGE: "DELETE_LISTPAGE",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def _shortalign(n: int) -> int:
    return (n + 1) & ~1


def desc_recompress_leaf(data: bytes, pos: int) -> str:
    nactions = ginxlogRecompressDataLeaf.unpack_from(data, pos)[0]
    walbuf = pos + ginxlogRecompressDataLeaf.size
    out = [" %d segments:" % nactions]
    for _ in range(nactions):
        a_segno = data[walbuf]
        a_action = data[walbuf + 1]
        walbuf += 2
        nitems = 0
        if a_action in (GIN_SEGMENT_INSERT, GIN_SEGMENT_REPLACE):
            nbytes = uint16.unpack_from(data, walbuf + GinPostingList_nbytes_offset)[0]
            newsegsize = GinPostingList_bytes_offset + _shortalign(nbytes)
            walbuf += _shortalign(newsegsize)
        if a_action == GIN_SEGMENT_ADDITEMS:
            nitems = uint16.unpack_from(data, walbuf)[0]
            walbuf += 2 + nitems * SizeOfItemPointerData
        if a_action == GIN_SEGMENT_ADDITEMS:
            out.append(" %d (add %d items)" % (a_segno, nitems))
        elif a_action == GIN_SEGMENT_DELETE:
            out.append(" %d (delete)" % a_segno)
        elif a_action == GIN_SEGMENT_INSERT:
            out.append(" %d (insert)" % a_segno)
        elif a_action == GIN_SEGMENT_REPLACE:
            out.append(" %d (replace)" % a_segno)
        else:
            out.append(" %d unknown action %d ???" % (a_segno, a_action))
            break
    return "".join(out)


def _image_note(record, major: int) -> str | None:
    for b in record.blocks:
        if b.block_id == 0 and b.has_image:
            return " (full page image)" if block_image_apply(b, major) else " (full page image, for WAL verification)"
    return None


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_GIN_INSERT:
        flags = ginxlogInsert.unpack_from(rec)[0]
        out = ["isdata: %s isleaf: %s" % ("T" if flags & GIN_INSERT_ISDATA else "F",
                                          "T" if flags & GIN_INSERT_ISLEAF else "F")]
        if not flags & GIN_INSERT_ISLEAF:
            left = block_id_number(rec, 2)
            right = block_id_number(rec, 6)
            out.append(" children: %u/%u" % (left, right))
        note = _image_note(record, major)
        if note is not None:
            out.append(note)
        else:
            payload = block_data(record, 0) or b""
            if not flags & GIN_INSERT_ISDATA:
                out.append(" isdelete: %s" % ("T" if ginxlogInsertEntry.unpack_from(payload)[1] else "F"))
            elif flags & GIN_INSERT_ISLEAF:
                out.append(desc_recompress_leaf(payload, 0))
            else:
                # ginxlogInsertDataInternal {offset; PostingItem newitem {child_blkno; key}}
                child = block_id_number(payload, 2)
                kblk, koff = item_pointer(payload, 6)
                out.append(" pitem: %u-%u/%u" % (child, kblk, koff))
        return "".join(out)
    if info == XLOG_GIN_SPLIT:
        flags = uint16.unpack_from(rec, ginxlogSplit_flags_offset)[0]
        return "isrootsplit: %s isdata: %s isleaf: %s" % (
            "T" if flags & GIN_SPLIT_ROOT else "F", "T" if flags & GIN_INSERT_ISDATA else "F",
            "T" if flags & GIN_INSERT_ISLEAF else "F")
    if info == XLOG_GIN_VACUUM_DATA_LEAF_PAGE:
        note = _image_note(record, major)
        if note is not None:
            return note
        return desc_recompress_leaf(block_data(record, 0) or b"", 0)
    if info == XLOG_GIN_DELETE_LISTPAGE:
        return "ndeleted: %d" % int32.unpack_from(rec, ginxlogDeleteListPages_ndeleted_offset)[0]
    return ""
