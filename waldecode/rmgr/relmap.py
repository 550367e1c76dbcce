"""Relation mapper resource manager (RM_RELMAP_ID 7): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/relmapdesc.c (13-18), layout from
src/include/utils/relmapper.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/utils/relmapper.h
XLOG_RELMAP_UPDATE = 0x00

# xl_relmap_update {Oid dbid; Oid tsid; int32 nbytes; data[]}
xl_relmap_update = struct.Struct("<IIi")


def identify(info: int, major: int) -> str | None:
    return "UPDATE" if info & 0xF0 == XLOG_RELMAP_UPDATE else None


def desc(record, major: int) -> str:
    if record.xl_info & 0xF0 != XLOG_RELMAP_UPDATE:
        return ""
    dbid, tsid, nbytes = xl_relmap_update.unpack_from(record.main_data)
    if major <= 14:
        nbytes &= 0xFFFFFFFF  # printed with %u before 15
    return "database %u tablespace %u size %d" % (dbid, tsid, nbytes)
