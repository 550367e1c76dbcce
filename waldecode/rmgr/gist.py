"""GiST resource manager (RM_GIST_ID 14): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/gistdesc.c for 13-18 (16 renamed the
conflict horizon, 17 added isCatalogRel), layouts from
src/include/access/gistxlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import RelFileLocator

# src/include/access/gistxlog.h
XLOG_GIST_PAGE_UPDATE = 0x00
XLOG_GIST_DELETE = 0x10
XLOG_GIST_PAGE_REUSE = 0x20
XLOG_GIST_PAGE_SPLIT = 0x30
XLOG_GIST_PAGE_DELETE = 0x60
XLOG_GIST_ASSIGN_LSN = 0x70

# gistxlogPageReuse {locator; block @12; FullTransactionId @16; 16+: isCatalogRel @24}
gistxlogPageReuse = struct.Struct("<12xIQ")
gistxlogPageReuse_16 = struct.Struct("<12xIQB")
# gistxlogDelete {xid; uint16 ntodelete; 16+: isCatalogRel}
gistxlogDelete = struct.Struct("<IH")
gistxlogDelete_16 = struct.Struct("<IHB")
# gistxlogPageSplit {origrlink; GistNSN orignsn @8; origleaf @16; uint16 npage @18; markfollowright}
gistxlogPageSplit = struct.Struct("<I4xQBxH")
# gistxlogPageDelete {FullTransactionId deleteXid; OffsetNumber downlinkOffset}
gistxlogPageDelete = struct.Struct("<QH")

_NAMES = {
    XLOG_GIST_PAGE_UPDATE: "PAGE_UPDATE",
    XLOG_GIST_DELETE: "DELETE",
    XLOG_GIST_PAGE_REUSE: "PAGE_REUSE",
    XLOG_GIST_PAGE_SPLIT: "PAGE_SPLIT",
    XLOG_GIST_PAGE_DELETE: "PAGE_DELETE",
    XLOG_GIST_ASSIGN_LSN: "ASSIGN_LSN",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_GIST_PAGE_REUSE:
        spc, db, rel = RelFileLocator.unpack_from(rec)
        if major >= 16:
            block, fxid, is_catalog = gistxlogPageReuse_16.unpack_from(rec)
        else:
            block, fxid = gistxlogPageReuse.unpack_from(rec)
            is_catalog = 0
        label = "snapshotConflictHorizon" if major >= 16 else "latestRemovedXid"
        out = "rel %u/%u/%u; blk %u; %s %u:%u" % (spc, db, rel, block, label, fxid >> 32, fxid & 0xFFFFFFFF)
        if major >= 17:
            out += ", isCatalogRel %s" % ("T" if is_catalog else "F")
        return out
    if info == XLOG_GIST_DELETE:
        if major >= 16:
            xid, ntodelete, is_catalog = gistxlogDelete_16.unpack_from(rec)
        else:
            xid, ntodelete = gistxlogDelete.unpack_from(rec)
            is_catalog = 0
        label = "snapshotConflictHorizon" if major >= 16 else "latestRemovedXid"
        out = "delete: %s %u, nitems: %u" % (label, xid, ntodelete)
        if major >= 17:
            out += ", isCatalogRel %s" % ("T" if is_catalog else "F")
        return out
    if info == XLOG_GIST_PAGE_SPLIT:
        _origrlink, _orignsn, _origleaf, npage = gistxlogPageSplit.unpack_from(rec)
        return "page_split: splits to %d pages" % npage
    if info == XLOG_GIST_PAGE_DELETE:
        fxid, downlink = gistxlogPageDelete.unpack_from(rec)
        return "deleteXid %u:%u; downlink %u" % (fxid >> 32, fxid & 0xFFFFFFFF, downlink)
    return ""
