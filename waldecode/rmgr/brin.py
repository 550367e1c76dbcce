"""BRIN resource manager (RM_BRIN_ID 17): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/brindesc.c (unchanged 13-18), layouts from
src/include/access/brin_xlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/access/brin_xlog.h
XLOG_BRIN_CREATE_INDEX = 0x00
XLOG_BRIN_INSERT = 0x10
XLOG_BRIN_UPDATE = 0x20
XLOG_BRIN_SAMEPAGE_UPDATE = 0x30
XLOG_BRIN_REVMAP_EXTEND = 0x40
XLOG_BRIN_DESUMMARIZE = 0x50
XLOG_BRIN_OPMASK = 0x70
XLOG_BRIN_INIT_PAGE = 0x80

xl_brin_createidx = struct.Struct("<IH")  # pagesPerRange, version
xl_brin_insert = struct.Struct("<IIH")  # heapBlk, pagesPerRange, offnum
xl_brin_update = struct.Struct("<H2xIIH")  # oldOffnum, insert {heapBlk, pagesPerRange, offnum}
xl_brin_samepage_update = struct.Struct("<H")  # offnum
xl_brin_revmap_extend = struct.Struct("<I")  # targetBlk
xl_brin_desummarize = struct.Struct("<IIH")  # pagesPerRange, heapBlk, regOffset

_NAMES = {
    XLOG_BRIN_CREATE_INDEX: "CREATE_INDEX",
    XLOG_BRIN_INSERT: "INSERT",
    XLOG_BRIN_INSERT | XLOG_BRIN_INIT_PAGE: "INSERT+INIT",
    XLOG_BRIN_UPDATE: "UPDATE",
    XLOG_BRIN_UPDATE | XLOG_BRIN_INIT_PAGE: "UPDATE+INIT",
    XLOG_BRIN_SAMEPAGE_UPDATE: "SAMEPAGE_UPDATE",
    XLOG_BRIN_REVMAP_EXTEND: "REVMAP_EXTEND",
    XLOG_BRIN_DESUMMARIZE: "DESUMMARIZE",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & XLOG_BRIN_OPMASK
    if info == XLOG_BRIN_CREATE_INDEX:
        pagesPerRange, version = xl_brin_createidx.unpack_from(rec)
        return "v%d pagesPerRange %u" % (version, pagesPerRange)
    if info == XLOG_BRIN_INSERT:
        return "heapBlk %u pagesPerRange %u offnum %u" % xl_brin_insert.unpack_from(rec)
    if info == XLOG_BRIN_UPDATE:
        oldOffnum, heapBlk, pagesPerRange, offnum = xl_brin_update.unpack_from(rec)
        return "heapBlk %u pagesPerRange %u old offnum %u, new offnum %u" % (heapBlk, pagesPerRange, oldOffnum, offnum)
    if info == XLOG_BRIN_SAMEPAGE_UPDATE:
        return "offnum %u" % xl_brin_samepage_update.unpack_from(rec)
    if info == XLOG_BRIN_REVMAP_EXTEND:
        return "targetBlk %u" % xl_brin_revmap_extend.unpack_from(rec)
    if info == XLOG_BRIN_DESUMMARIZE:
        return "pagesPerRange %u, heapBlk %u, page offset %u" % xl_brin_desummarize.unpack_from(rec)
    return ""
