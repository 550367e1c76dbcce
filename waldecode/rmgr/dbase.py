"""Database resource manager (RM_DBASE_ID 4): pg_waldump's identify and desc.

Port of src/backend/access/rmgrdesc/dbasedesc.c; 15 split CREATE into
CREATE_FILE_COPY and CREATE_WAL_LOG and renumbered DROP.  Layouts from
src/include/commands/dbcommands_xlog.h.  Hands text to ``waldecode.rmgr``.
"""

from __future__ import annotations

import struct

# src/include/commands/dbcommands_xlog.h (15+)
XLOG_DBASE_CREATE_FILE_COPY = 0x00
XLOG_DBASE_CREATE_WAL_LOG = 0x10
XLOG_DBASE_DROP = 0x20
# 13/14
XLOG_DBASE_CREATE_13 = 0x00
XLOG_DBASE_DROP_13 = 0x10

# xl_dbase_create_file_copy_rec (xl_dbase_create_rec in 13/14) {db_id, tablespace_id, src_db_id, src_tablespace_id}
xl_dbase_create_file_copy_rec = struct.Struct("<IIII")
# xl_dbase_create_wal_log_rec {db_id, tablespace_id}
xl_dbase_create_wal_log_rec = struct.Struct("<II")
# xl_dbase_drop_rec {db_id, int ntablespaces, tablespace_ids[]}
xl_dbase_drop_rec = struct.Struct("<Ii")


def identify(info: int, major: int) -> str | None:
    info &= 0xF0
    if major <= 14:
        return {XLOG_DBASE_CREATE_13: "CREATE", XLOG_DBASE_DROP_13: "DROP"}.get(info)
    return {XLOG_DBASE_CREATE_FILE_COPY: "CREATE_FILE_COPY", XLOG_DBASE_CREATE_WAL_LOG: "CREATE_WAL_LOG",
            XLOG_DBASE_DROP: "DROP"}.get(info)


def desc(record, major: int) -> str:
    rec = record.main_data
    info = record.xl_info & 0xF0
    drop = XLOG_DBASE_DROP_13 if major <= 14 else XLOG_DBASE_DROP
    if info == XLOG_DBASE_CREATE_FILE_COPY:
        db_id, tablespace_id, src_db_id, src_tablespace_id = xl_dbase_create_file_copy_rec.unpack_from(rec)
        return "copy dir %u/%u to %u/%u" % (src_tablespace_id, src_db_id, tablespace_id, db_id)
    if info == XLOG_DBASE_CREATE_WAL_LOG and major >= 15:
        db_id, tablespace_id = xl_dbase_create_wal_log_rec.unpack_from(rec)
        return "create dir %u/%u" % (tablespace_id, db_id)
    if info == drop:
        db_id, ntablespaces = xl_dbase_drop_rec.unpack_from(rec)
        ids = struct.unpack_from("<%dI" % max(ntablespaces, 0), rec, xl_dbase_drop_rec.size)
        return "dir" + "".join(" %u/%u" % (ts, db_id) for ts in ids)
    return ""
