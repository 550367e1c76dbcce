"""A data directory's version and control file: ``PG_VERSION`` and ``global/pg_control``.

Owns src/include/catalog/pg_control.h's ControlFileData for 13-18, declared once with
``construct`` (a cold path: one file per snapshot), and xlog.c ReadControlFile's checks: the
version, the CRC-32C, the architecture and compile-time sizes only the defaults of which are
read.  Hands the parsed control file (PostgreSQL's field names) to the other readers: the
last checkpoint, the next xid and multixact, block and segment sizes, ``wal_level``.
"""

from __future__ import annotations

import os
import re

from construct import Bytes, Flag, Float64l, Int32sl, Int32ul, Int64sl, Int64ul, Padding, Struct, Tell
from crc32c import crc32c

from ...pg.bufpage import MAXIMUM_ALIGNOF
from ...pg.quote import NAMEDATALEN
from ...wal.xlogrecord import BLCKSZ
from ..model import CatalogError
from .files import LOCAL, DataFiles, data_files

SUPPORTED_MAJORS = range(13, 19)

# src/include/catalog/pg_control.h
PG_CONTROL_FILE_SIZE = 8192
FLOATFORMAT_VALUE = 1234567.0
# pg_control_version per major version (PG_CONTROL_VERSION)
PG_CONTROL_VERSION = {13: 1300, 14: 1300, 15: 1300, 16: 1300, 17: 1700, 18: 1800}
# DBState
DB_STARTUP = 0
DB_SHUTDOWNED = 1
DB_SHUTDOWNED_IN_RECOVERY = 2
DB_SHUTDOWNING = 3
DB_IN_CRASH_RECOVERY = 4
DB_IN_ARCHIVE_RECOVERY = 5
DB_IN_PRODUCTION = 6
DB_STATE_NAMES = {DB_STARTUP: "starting up", DB_SHUTDOWNED: "shut down",
                  DB_SHUTDOWNED_IN_RECOVERY: "shut down in recovery", DB_SHUTDOWNING: "shutting down",
                  DB_IN_CRASH_RECOVERY: "in crash recovery", DB_IN_ARCHIVE_RECOVERY: "in archive recovery",
                  DB_IN_PRODUCTION: "in production"}
# src/include/access/xlog.h: WalLevel
WAL_LEVEL_NAMES = {0: "minimal", 1: "replica", 2: "logical"}

# src/include/catalog/pg_control.h: CheckPoint, 88 bytes (17+ puts wal_level in what was padding at 20)
CheckPoint = Struct(
    "redo" / Int64ul,
    "ThisTimeLineID" / Int32ul,
    "PrevTimeLineID" / Int32ul,
    "fullPageWrites" / Flag,
    Padding(7),  # 17+: 3 bytes, then wal_level (int)
    "nextXid" / Int64ul,  # FullTransactionId: epoch << 32 | xid
    "nextOid" / Int32ul,
    "nextMulti" / Int32ul,
    "nextMultiOffset" / Int32ul,
    "oldestXid" / Int32ul,
    "oldestXidDB" / Int32ul,
    "oldestMulti" / Int32ul,
    "oldestMultiDB" / Int32ul,
    Padding(4),
    "time" / Int64sl,
    "oldestCommitTsXid" / Int32ul,
    "newestCommitTsXid" / Int32ul,
    "oldestActiveXid" / Int32ul,
    Padding(4),
)


def control_file_data(major: int) -> Struct:
    """src/include/catalog/pg_control.h: ControlFileData of ``major`` (18 added default_char_signedness
    before the nonce, which moves the CRC from 288 to 292)."""
    return Struct(
        "system_identifier" / Int64ul,
        "pg_control_version" / Int32ul,
        "catalog_version_no" / Int32ul,
        "state" / Int32sl,  # DBState
        Padding(4),
        "time" / Int64sl,
        "checkPoint" / Int64ul,  # the last checkpoint record's location
        "checkPointCopy" / CheckPoint,
        "unloggedLSN" / Int64ul,
        "minRecoveryPoint" / Int64ul,
        "minRecoveryPointTLI" / Int32ul,
        Padding(4),
        "backupStartPoint" / Int64ul,
        "backupEndPoint" / Int64ul,
        "backupEndRequired" / Flag,
        Padding(3),
        "wal_level" / Int32sl,
        "wal_log_hints" / Flag,
        Padding(3),
        "MaxConnections" / Int32sl,
        "max_worker_processes" / Int32sl,
        "max_wal_senders" / Int32sl,
        "max_prepared_xacts" / Int32sl,
        "max_locks_per_xact" / Int32sl,
        "track_commit_timestamp" / Flag,
        Padding(3),
        "maxAlign" / Int32ul,
        "floatFormat" / Float64l,
        "blcksz" / Int32ul,
        "relseg_size" / Int32ul,
        "xlog_blcksz" / Int32ul,
        "xlog_seg_size" / Int32ul,
        "nameDataLen" / Int32ul,
        "indexMaxKeys" / Int32ul,
        "toast_max_chunk_size" / Int32ul,
        "loblksize" / Int32ul,
        "float8ByVal" / Flag,
        Padding(3),
        "data_checksum_version" / Int32ul,
        *(("default_char_signedness" / Flag,) if major >= 18 else ()),
        "mock_authentication_nonce" / Bytes(32),
        *((Padding(3),) if major >= 18 else ()),
        "crc_offset" / Tell,
        "crc" / Int32ul,
    )


def read_head(path: str, size: int, missing: str, what: str = "", files: DataFiles = LOCAL) -> bytes:
    """The first ``size`` bytes of a file (of ``files``); ``CatalogError`` saying ``missing`` when it does
    not exist, and naming the file (``what`` first) when it cannot be read."""
    try:
        return files.read(path, size)
    except FileNotFoundError:
        raise CatalogError(missing) from None
    except OSError as e:
        raise CatalogError(f"cannot read {what}{path}: {e.strerror}") from None


def state_name(state: int) -> str:
    """DBState as pg_controldata names it."""
    return DB_STATE_NAMES.get(state, f"unknown state {state}")


def read_pg_version(pgdata) -> int:
    """The major version in ``PG_VERSION`` (written by initdb): the data directory's format (``pgdata``:
    a path or a ``DataFiles``)."""
    files = data_files(pgdata)
    pgdata = files.root
    path = os.path.join(pgdata, "PG_VERSION")
    if not files.isdir(pgdata):
        raise CatalogError(f"{pgdata}: not a directory")
    try:
        text = files.read(path, 64).decode("ascii", errors="replace").strip()
    except FileNotFoundError:
        raise CatalogError(f"{pgdata}: not a PostgreSQL data directory (no PG_VERSION file)") from None
    except OSError as e:
        raise CatalogError(f"cannot read {path}: {e.strerror}") from None
    m = re.fullmatch(r"(\d+)(?:\.\d+)?", text)
    if not m:
        raise CatalogError(f"{path}: unexpected content {text!r} (expected a major version such as 15)")
    major = int(m.group(1))
    if major not in SUPPORTED_MAJORS:
        raise CatalogError(f"{path}: PostgreSQL {text} is not supported (13 to 18 are)")
    return major


def read_pg_control(pgdata, major: int):
    """``global/pg_control``: ControlFileData (a ``construct`` container, PostgreSQL's field names), its
    CRC-32C and sizes checked (xlog.c ReadControlFile); ``pgdata``: a path or a ``DataFiles``."""
    files = data_files(pgdata)
    pgdata = files.root
    path = os.path.join(pgdata, "global", "pg_control")
    data = read_head(path, PG_CONTROL_FILE_SIZE, f"{pgdata}: not a PostgreSQL data directory (no global/pg_control)",
                     files=files)
    layout = control_file_data(major)
    if len(data) < layout.sizeof():
        raise CatalogError(f"{path}: file is {len(data)} bytes, too short for a PostgreSQL {major} control file")
    ctl = layout.parse(data)
    expected = PG_CONTROL_VERSION[major]
    if ctl.pg_control_version != expected:
        version = ctl.pg_control_version
        hint = " (the file looks byte-swapped: written on a big-endian machine?)" \
            if version % 65536 == 0 and version // 65536 != 0 else ""
        raise CatalogError(f"{path}: pg_control_version is {version}, but PG_VERSION says {major}, "
                           f"whose pg_control_version is {expected}{hint}")
    actual_crc = crc32c(data[:ctl.crc_offset])
    if ctl.crc != actual_crc:
        raise CatalogError(f"{path}: CRC mismatch in pg_control (stored {ctl.crc:08X}, computed "
                           f"{actual_crc:08X}): the file is damaged")
    if ctl.floatFormat != FLOATFORMAT_VALUE or ctl.maxAlign != MAXIMUM_ALIGNOF:
        raise CatalogError(f"{path}: the cluster was initialised on another architecture (maxAlign {ctl.maxAlign}, "
                           f"floatFormat {ctl.floatFormat}): only little-endian 64-bit data directories are read")
    if ctl.blcksz != BLCKSZ or ctl.nameDataLen != NAMEDATALEN:
        raise CatalogError(f"{path}: the cluster uses BLCKSZ {ctl.blcksz} and NAMEDATALEN {ctl.nameDataLen}; only "
                           f"the defaults ({BLCKSZ}, {NAMEDATALEN}) are supported")
    if ctl.relseg_size <= 0:
        raise CatalogError(f"{path}: impossible relseg_size {ctl.relseg_size}")
    return ctl
