"""MultiXact resource manager (RM_MULTIXACT_ID 6): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/mxactdesc.c; page numbers became int64 in 17.
Layouts from src/include/access/multixact.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/access/multixact.h
XLOG_MULTIXACT_ZERO_OFF_PAGE = 0x00
XLOG_MULTIXACT_ZERO_MEM_PAGE = 0x10
XLOG_MULTIXACT_CREATE_ID = 0x20
XLOG_MULTIXACT_TRUNCATE_ID = 0x30

# MultiXactStatus
MultiXactStatusForKeyShare = 0x00
MultiXactStatusForShare = 0x01
MultiXactStatusForNoKeyUpdate = 0x02
MultiXactStatusForUpdate = 0x03
MultiXactStatusNoKeyUpdate = 0x04
MultiXactStatusUpdate = 0x05

# xl_multixact_create {mid, moff, int32 nmembers, MultiXactMember members[] {xid, status}}
xl_multixact_create = struct.Struct("<IIi")
MultiXactMember = struct.Struct("<Ii")
# xl_multixact_truncate {oldestMultiDB, startTruncOff, endTruncOff, startTruncMemb, endTruncMemb}
xl_multixact_truncate = struct.Struct("<IIIII")
int32 = struct.Struct("<i")
int64 = struct.Struct("<q")

_NAMES = {
    XLOG_MULTIXACT_ZERO_OFF_PAGE: "ZERO_OFF_PAGE",
    XLOG_MULTIXACT_ZERO_MEM_PAGE: "ZERO_MEM_PAGE",
    XLOG_MULTIXACT_CREATE_ID: "CREATE_ID",
    XLOG_MULTIXACT_TRUNCATE_ID: "TRUNCATE_ID",
}
_STATUS = {
    MultiXactStatusForKeyShare: "(keysh) ",
    MultiXactStatusForShare: "(sh) ",
    MultiXactStatusForNoKeyUpdate: "(fornokeyupd) ",
    MultiXactStatusForUpdate: "(forupd) ",
    MultiXactStatusNoKeyUpdate: "(nokeyupd) ",
    MultiXactStatusUpdate: "(upd) ",
}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info in (XLOG_MULTIXACT_ZERO_OFF_PAGE, XLOG_MULTIXACT_ZERO_MEM_PAGE):
        return "%d" % (int64 if major >= 17 else int32).unpack_from(rec)[0]
    if info == XLOG_MULTIXACT_CREATE_ID:
        mid, moff, nmembers = xl_multixact_create.unpack_from(rec)
        out = ["%u offset %u nmembers %d: " % (mid, moff, nmembers)]
        for i in range(nmembers):
            xid, status = MultiXactMember.unpack_from(rec, xl_multixact_create.size + MultiXactMember.size * i)
            out.append("%u " % xid + _STATUS.get(status, "(unk) "))
        return "".join(out)
    if info == XLOG_MULTIXACT_TRUNCATE_ID:
        _db, start_off, end_off, start_memb, end_memb = xl_multixact_truncate.unpack_from(rec)
        return "offsets [%u, %u), members [%u, %u)" % (start_off, end_off, start_memb, end_memb)
    return ""
