"""XLOG resource manager (RM_XLOG_ID 0): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/xlogdesc.c (xlog_identify, xlog_desc) for
13-18; record layouts from src/include/catalog/pg_control.h and
src/include/access/xlog_internal.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

from .rmgrdesc_utils import c_string, lsn_format, timestamptz_to_str

# src/include/catalog/pg_control.h
XLOG_CHECKPOINT_SHUTDOWN = 0x00
XLOG_CHECKPOINT_ONLINE = 0x10
XLOG_NOOP = 0x20
XLOG_NEXTOID = 0x30
XLOG_SWITCH = 0x40
XLOG_BACKUP_END = 0x50
XLOG_PARAMETER_CHANGE = 0x60
XLOG_RESTORE_POINT = 0x70
XLOG_FPW_CHANGE = 0x80
XLOG_END_OF_RECOVERY = 0x90
XLOG_FPI_FOR_HINT = 0xA0
XLOG_FPI = 0xB0
XLOG_OVERWRITE_CONTRECORD = 0xD0  # 14+, and 13.x minors from late 2021
XLOG_CHECKPOINT_REDO = 0xE0  # 17+

# src/include/access/xlog.h: WalLevel
WAL_LEVEL_MINIMAL = 0
WAL_LEVEL_REPLICA = 1
WAL_LEVEL_LOGICAL = 2

# src/backend/access/rmgrdesc/xlogdesc.c: wal_level_options (first match wins)
wal_level_options = (("minimal", WAL_LEVEL_MINIMAL), ("replica", WAL_LEVEL_REPLICA),
                     ("archive", WAL_LEVEL_REPLICA), ("hot_standby", WAL_LEVEL_REPLICA),
                     ("logical", WAL_LEVEL_LOGICAL))

# src/include/catalog/pg_control.h: CheckPoint (88 bytes): redo, ThisTimeLineID,
# PrevTimeLineID, fullPageWrites, [17+: wal_level @20], nextXid (FullTransactionId,
# nextFullXid in 13), nextOid, nextMulti, nextMultiOffset, oldestXid, oldestXidDB,
# oldestMulti, oldestMultiDB, time (pg_time_t @64), oldestCommitTsXid,
# newestCommitTsXid, oldestActiveXid
CheckPoint = struct.Struct("<QIIB3xi Q IIIIIII 4x q III")
# src/include/access/xlog_internal.h: xl_parameter_change (MaxConnections, max_worker_processes,
# max_wal_senders, max_prepared_xacts, max_locks_per_xact, wal_level, wal_log_hints, track_commit_timestamp)
xl_parameter_change = struct.Struct("<iiiiiiBB")


def parameter_change_wal_level(main_data: bytes) -> int:
    """The wal_level an XLOG_PARAMETER_CHANGE record sets."""
    return xl_parameter_change.unpack_from(main_data)[5]

# xl_end_of_recovery: end_time, ThisTimeLineID, PrevTimeLineID, [17+: wal_level]
xl_end_of_recovery = struct.Struct("<qII")
xl_end_of_recovery_17 = struct.Struct("<qIIi")
# xl_overwrite_contrecord: overwritten_lsn, overwrite_time
xl_overwrite_contrecord = struct.Struct("<Qq")
# xl_restore_point: rp_time, rp_name[MAXFNAMELEN = 64]
xl_restore_point_rp_name_offset = 8
uint32 = struct.Struct("<I")
uint64 = struct.Struct("<Q")
int32 = struct.Struct("<i")

_NAMES = {
    XLOG_CHECKPOINT_SHUTDOWN: "CHECKPOINT_SHUTDOWN",
    XLOG_CHECKPOINT_ONLINE: "CHECKPOINT_ONLINE",
    XLOG_NOOP: "NOOP",
    XLOG_NEXTOID: "NEXTOID",
    XLOG_SWITCH: "SWITCH",
    XLOG_BACKUP_END: "BACKUP_END",
    XLOG_PARAMETER_CHANGE: "PARAMETER_CHANGE",
    XLOG_RESTORE_POINT: "RESTORE_POINT",
    XLOG_FPW_CHANGE: "FPW_CHANGE",
    XLOG_END_OF_RECOVERY: "END_OF_RECOVERY",
    XLOG_OVERWRITE_CONTRECORD: "OVERWRITE_CONTRECORD",
    XLOG_FPI: "FPI",
    XLOG_FPI_FOR_HINT: "FPI_FOR_HINT",
}


def get_wal_level_string(wal_level: int) -> str:
    for name, val in wal_level_options:
        if val == wal_level:
            return name
    return "?"


def identify(info: int, major: int) -> str | None:
    info &= 0xF0
    if info == XLOG_CHECKPOINT_REDO:
        return "CHECKPOINT_REDO" if major >= 17 else None
    return _NAMES.get(info)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0

    if info in (XLOG_CHECKPOINT_SHUTDOWN, XLOG_CHECKPOINT_ONLINE):
        (redo, tli, prev_tli, fpw, wal_level, next_xid, next_oid, next_multi, next_multi_offset,
         oldest_xid, oldest_xid_db, oldest_multi, oldest_multi_db, _time, oldest_cts_xid,
         newest_cts_xid, oldest_active_xid) = CheckPoint.unpack_from(rec)
        wal_level_part = "wal_level %s; " % get_wal_level_string(wal_level) if major >= 17 else ""
        return ("redo %s; tli %u; prev tli %u; fpw %s; %sxid %u:%u; oid %u; multi %u; offset %u; "
                "oldest xid %u in DB %u; oldest multi %u in DB %u; "
                "oldest/newest commit timestamp xid: %u/%u; "
                "oldest running xid %u; %s"
                % (lsn_format(redo), tli, prev_tli, "true" if fpw else "false", wal_level_part,
                   next_xid >> 32, next_xid & 0xFFFFFFFF, next_oid, next_multi, next_multi_offset,
                   oldest_xid, oldest_xid_db, oldest_multi, oldest_multi_db,
                   oldest_cts_xid, newest_cts_xid, oldest_active_xid,
                   "shutdown" if info == XLOG_CHECKPOINT_SHUTDOWN else "online"))
    if info == XLOG_NEXTOID:
        return "%u" % uint32.unpack_from(rec)[0]
    if info == XLOG_RESTORE_POINT:
        return c_string(rec, xl_restore_point_rp_name_offset)
    if info in (XLOG_FPI, XLOG_FPI_FOR_HINT):
        return ""
    if info == XLOG_BACKUP_END:
        return lsn_format(uint64.unpack_from(rec)[0])
    if info == XLOG_PARAMETER_CHANGE:
        (max_connections, max_worker_processes, max_wal_senders, max_prepared_xacts,
         max_locks_per_xact, wal_level, wal_log_hints, track_commit_timestamp) = \
            xl_parameter_change.unpack_from(rec)
        return ("max_connections=%d max_worker_processes=%d "
                "max_wal_senders=%d max_prepared_xacts=%d "
                "max_locks_per_xact=%d wal_level=%s "
                "wal_log_hints=%s track_commit_timestamp=%s"
                % (max_connections, max_worker_processes, max_wal_senders, max_prepared_xacts,
                   max_locks_per_xact, get_wal_level_string(wal_level),
                   "on" if wal_log_hints else "off", "on" if track_commit_timestamp else "off"))
    if info == XLOG_FPW_CHANGE:
        return "true" if rec[0] else "false"
    if info == XLOG_END_OF_RECOVERY:
        if major >= 17:
            end_time, tli, prev_tli, wal_level = xl_end_of_recovery_17.unpack_from(rec)
            return "tli %u; prev tli %u; time %s; wal_level %s" % (
                tli, prev_tli, timestamptz_to_str(end_time), get_wal_level_string(wal_level))
        end_time, tli, prev_tli = xl_end_of_recovery.unpack_from(rec)
        return "tli %u; prev tli %u; time %s" % (tli, prev_tli, timestamptz_to_str(end_time))
    if info == XLOG_OVERWRITE_CONTRECORD:
        overwritten_lsn, overwrite_time = xl_overwrite_contrecord.unpack_from(rec)
        return "lsn %s; time %s" % (lsn_format(overwritten_lsn), timestamptz_to_str(overwrite_time))
    if info == XLOG_CHECKPOINT_REDO and major >= 17:
        return "wal_level %s" % get_wal_level_string(int32.unpack_from(rec)[0])
    return ""
