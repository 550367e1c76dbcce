"""Commit log resource manager (RM_CLOG_ID 3): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/clogdesc.c; page numbers became int64 in 17.
Layout from src/include/access/clog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/access/clog.h
CLOG_ZEROPAGE = 0x00
CLOG_TRUNCATE = 0x10

# xl_clog_truncate {int pageno (int64 in 17+); TransactionId oldestXact; Oid oldestXactDb}
xl_clog_truncate = struct.Struct("<iII")
xl_clog_truncate_17 = struct.Struct("<qII")
int32 = struct.Struct("<i")
int64 = struct.Struct("<q")

_NAMES = {CLOG_ZEROPAGE: "ZEROPAGE", CLOG_TRUNCATE: "TRUNCATE"}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == CLOG_ZEROPAGE:
        return "page %d" % (int64 if major >= 17 else int32).unpack_from(rec)[0]
    if info == CLOG_TRUNCATE:
        pageno, oldestXact, _db = (xl_clog_truncate_17 if major >= 17 else xl_clog_truncate).unpack_from(rec)
        return "page %d; oldestXact %u" % (pageno, oldestXact)
    return ""
