"""Commit timestamp resource manager (RM_COMMIT_TS_ID 18): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/committsdesc.c (13 also had SETTS; page
numbers became int64 in 17).  Layouts from src/include/access/commit_ts.h.
Note that commit_ts_identify switches on the unmasked info.  Hands text to
``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import timestamptz_to_str

# src/include/access/commit_ts.h
COMMIT_TS_ZEROPAGE = 0x00
COMMIT_TS_TRUNCATE = 0x10
COMMIT_TS_SETTS = 0x20  # 13 only

# xl_commit_ts_truncate {int pageno (int64 in 17+); TransactionId oldestXid}
xl_commit_ts_truncate = struct.Struct("<iI")
xl_commit_ts_truncate_17 = struct.Struct("<qI")
# 13: xl_commit_ts_set {TimestampTz timestamp; RepOriginId nodeid; TransactionId mainxid}
xl_commit_ts_set = struct.Struct("<qH2xI")
SizeOfCommitTsSet = 16
int32 = struct.Struct("<i")
int64 = struct.Struct("<q")


def identify(info: int, major: int) -> str | None:
    if info == COMMIT_TS_ZEROPAGE:
        return "ZEROPAGE"
    if info == COMMIT_TS_TRUNCATE:
        return "TRUNCATE"
    if info == COMMIT_TS_SETTS and major <= 13:
        return "SETTS"
    return None


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == COMMIT_TS_ZEROPAGE:
        return "%d" % (int64 if major >= 17 else int32).unpack_from(rec)[0]
    if info == COMMIT_TS_TRUNCATE:
        pageno, oldestXid = (xl_commit_ts_truncate_17 if major >= 17 else xl_commit_ts_truncate).unpack_from(rec)
        return "pageno %d, oldestXid %u" % (pageno, oldestXid)
    if info == COMMIT_TS_SETTS and major <= 13:
        timestamp, nodeid, mainxid = xl_commit_ts_set.unpack_from(rec)
        out = "set %s/%d for: %u" % (timestamptz_to_str(timestamp), nodeid, mainxid)
        nsubxids = (len(rec) - SizeOfCommitTsSet) // 4
        if nsubxids > 0:
            out += "".join(", %u" % x for x in struct.unpack_from("<%dI" % nsubxids, rec, SizeOfCommitTsSet))
        return out
    return ""
