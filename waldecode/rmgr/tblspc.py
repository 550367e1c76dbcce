"""Tablespace resource manager (RM_TBLSPC_ID 5): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/tblspcdesc.c (13-18), layouts from
src/include/commands/tablespace.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import c_string

# src/include/commands/tablespace.h
XLOG_TBLSPC_CREATE = 0x00
XLOG_TBLSPC_DROP = 0x10

# xl_tblspc_create_rec {Oid ts_id; char ts_path[]}; xl_tblspc_drop_rec {Oid ts_id}
uint32 = struct.Struct("<I")

_NAMES = {XLOG_TBLSPC_CREATE: "CREATE", XLOG_TBLSPC_DROP: "DROP"}


def identify(info: int, major: int) -> str | None:
    return _NAMES.get(info & 0xF0)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_TBLSPC_CREATE:
        return "%u \"%s\"" % (uint32.unpack_from(rec)[0], c_string(rec, 4))
    if info == XLOG_TBLSPC_DROP:
        return "%u" % uint32.unpack_from(rec)[0]
    return ""
