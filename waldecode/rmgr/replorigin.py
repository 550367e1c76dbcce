"""Replication origin resource manager (RM_REPLORIGIN_ID 19): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/replorigindesc.c (13-18), layouts from
src/include/replication/origin.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import lsn_format

# src/include/replication/origin.h
XLOG_REPLORIGIN_SET = 0x00
XLOG_REPLORIGIN_DROP = 0x10

# xl_replorigin_set {XLogRecPtr remote_lsn; RepOriginId node_id; bool force}
xl_replorigin_set = struct.Struct("<QHB")
# xl_replorigin_drop {RepOriginId node_id}
xl_replorigin_drop = struct.Struct("<H")


def identify(info: int, major: int) -> str | None:
    # replorigin_identify switches on the unmasked info
    return {XLOG_REPLORIGIN_SET: "SET", XLOG_REPLORIGIN_DROP: "DROP"}.get(info)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    if info == XLOG_REPLORIGIN_SET:
        remote_lsn, node_id, force = xl_replorigin_set.unpack_from(rec)
        return "set %u; lsn %s; force: %d" % (node_id, lsn_format(remote_lsn), force)
    if info == XLOG_REPLORIGIN_DROP:
        return "drop %u" % xl_replorigin_drop.unpack_from(rec)[0]
    return ""
