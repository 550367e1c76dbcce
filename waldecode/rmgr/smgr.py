"""Storage manager resource manager (RM_SMGR_ID 2): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/smgrdesc.c (13-18), layouts from
src/include/catalog/storage_xlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from ..pg.relpath import MAIN_FORKNUM
from .rmgrdesc_utils import relpathperm

# src/include/catalog/storage_xlog.h
XLOG_SMGR_CREATE = 0x10
XLOG_SMGR_TRUNCATE = 0x20

SMGR_TRUNCATE_HEAP = 0x0001
SMGR_TRUNCATE_VM = 0x0002
SMGR_TRUNCATE_FSM = 0x0004

# xl_smgr_create {RelFileNode rnode (rlocator in 16+); ForkNumber forkNum}
xl_smgr_create = struct.Struct("<IIIi")
# xl_smgr_truncate {BlockNumber blkno; RelFileNode rnode; int flags}
xl_smgr_truncate = struct.Struct("<IIIIi")

_NAMES = {XLOG_SMGR_CREATE: "CREATE", XLOG_SMGR_TRUNCATE: "TRUNCATE"}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_SMGR_CREATE:
        spc, db, rel, forkNum = xl_smgr_create.unpack_from(rec)
        return relpathperm(spc, db, rel, forkNum, major)
    if info == XLOG_SMGR_TRUNCATE:
        blkno, spc, db, rel, flags = xl_smgr_truncate.unpack_from(rec)
        return "%s to %u blocks flags %d" % (relpathperm(spc, db, rel, MAIN_FORKNUM, major), blkno, flags)
    return ""
