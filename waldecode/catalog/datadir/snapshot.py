"""Catalog snapshot from a data directory (``waldecode catalog --datadir``), no server needed.

Owns reading a stopped cluster's data directory, or a base backup, as the
server itself would at startup, and building from its catalog heap files the
same ``catalog.Catalog`` that ``catalog_dsn`` builds from a live server:

* ``global/pg_control`` (``read_pg_control``): version, state, the last
  checkpoint, block and segment sizes, ``wal_level``; CRC-32C checked.
* the relation mapper files ``global/pg_filenode.map`` and
  ``base/<dboid>/pg_filenode.map`` (``read_relmap_file``): the relfilenodes
  of mapped catalogs (pg_class, pg_attribute, pg_type, pg_proc, pg_database…).
* heap pages of every segment of a relation (``read_heap_page``,
  ``HeapScan``): line pointers and tuple headers checked, tuples kept when
  visible (``tuple_is_visible``) as decided from their hint bits, else
  ``pg_xact/`` (CLOG) and, for an updating multixact ``xmax``,
  ``pg_multixact/`` (``TransactionStatus``).
* tuples deformed with the catalogs' own layouts: pg_attribute's fixed part is
  known per major version (``PG_ATTRIBUTE_FIXED``); the full layout of
  pg_attribute and of every other catalog is then read from pg_attribute's own
  rows; values go through ``heaptuple.deform_tuple`` and, when external, the
  catalog's TOAST table.
* the pages of the catalogs the catalog history tracks (``Catalog.catalog_pages``):
  their visible tuples by block, as stored, except pages written after the
  checkpoint the snapshot stands for.
* the settings output depends on (``read_settings``): ``postgresql.conf``
  (with its include directives), ``postgresql.auto.conf``, the command line
  recorded in ``postmaster.opts`` and ``ALTER DATABASE/ROLE … SET``
  (``pg_db_role_setting``), in the server's order of precedence.
* ``format_type`` (``FormatType``) and the search-path visibility it needs,
  ported from format_type.c and namespace.c; ``attmissingval`` rendered with
  ``types.output_text`` and those settings.

What the snapshot means: the catalog rows as the files hold them, taken as of
the last checkpoint recorded in ``pg_control``; ``Catalog.lsn`` is that
checkpoint record's location (``ControlFileData.checkPoint``).  After a clean
shutdown that is the shutdown checkpoint, whose redo pointer is the same LSN,
and the files hold exactly the catalog of that moment.  After a crash or an
immediate shutdown, and in a base backup, the files hold every change made
before the checkpoint's redo pointer, plus an arbitrary part of later ones
(pages written after it); changes that reached only the WAL are not seen —
recover the cluster (start and stop it) when the latest catalog is needed.
The checkpoint location rather than its redo pointer: the two are equal after
a clean shutdown, and otherwise the checkpoint record is the last point the
files are known to have caught up with (every page dirtied before the redo
pointer was written by then).  Transactions that were in progress at a crash
are not committed (their CLOG status stays "in progress"), so their catalog
rows are invisible and the rows they deleted still visible, as after recovery;
a multixact created after the checkpoint whose pages never reached the disk
counts as having no updater.  ``settings["wal_level"]`` is pg_control's (the
value of the last start), ``server_encoding`` the database's ``encoding``.

Checked field for field against ``catalog_dsn`` on live PostgreSQL 15, 16, 17
and 18 servers (``tests/test_catalog_datadir.py``; 17 in a one-off run); the 13
and 14 layouts (pg_attribute, relation mapper, no ``typsubscript`` and
``rngmultitypid`` in 13) come from reading their sources.

Differences from ``catalog_dsn`` a data directory cannot avoid:

* ``server_version`` is the major version only (``"15"``) and
  ``server_version_num`` is ``major * 10000``: the minor release is not
  recorded in a data directory.
* ``"$user"`` in ``search_path`` names the session user's schema; offline
  there is no session: pass ``role`` to resolve it (and to apply that role's
  ``ALTER ROLE … SET`` settings), else it is left out.  Schema USAGE
  privileges are not checked (as for a superuser).
* settings passed by the decoding client at connection time (libpq options,
  ``PGTZ``…) are unknown; ``lc_monetary`` and ``TimeZone`` not set anywhere
  take PostgreSQL's built-in defaults (``C``, ``GMT``), not the server
  environment's.
* data page checksums are not verified; ``HEAP_MOVED_OFF``/``HEAP_MOVED_IN``
  (pre-9.0 VACUUM FULL, only in clusters pg_upgraded from 8.4) are ignored.
"""

from __future__ import annotations

import os
import re
import struct
import sys
import warnings
from dataclasses import dataclass, replace
from typing import Callable, Iterator, NamedTuple

from crc32c import crc32c

from .catalog import (
    DEFAULT_SETTINGS,
    TRACKED_CATALOGS,
    AttributeRelationId,
    Attribute,
    Catalog,
    CatalogError,
    CatalogPages,
    EnumRelationId,
    IndexRelationId,
    NamespaceRelationId,
    ProcedureRelationId,
    RangeRelationId,
    Relation,
    RelationRelationId,
    TypeInfo,
    TypeRelationId,
    write_snapshot_file,
)
from .errors import CorruptRecordError, DecompressionError, format_lsn
from .heaptuple import (  # src/include/access/htup_details.h: t_infomask bits
    HEAP_LOCK_MASK,
    HEAP_NATTS_MASK,
    HEAP_XMAX_COMMITTED,
    HEAP_XMAX_EXCL_LOCK,
    HEAP_XMAX_INVALID,
    HEAP_XMAX_IS_MULTI,
    HEAP_XMAX_LOCK_ONLY,
    HEAP_XMIN_COMMITTED,
    HEAP_XMIN_INVALID,
    SizeofHeapTupleHeader,
    deform_tuple,
)
from .pg.encoding import python_codec
from .pg.quote import NAMEDATALEN, quote_identifier, split_identifier_string
from .pg.transam import (
    BootstrapTransactionId,
    FirstNormalTransactionId,
    FrozenTransactionId,
    InvalidTransactionId,
    multixact_precedes,
    xid_precedes,
)
from .varlena import ToastPointer, decompress_toast_value

__all__ = ["snapshot_from_datadir", "main_catalog_datadir", "read_pg_version", "read_pg_control",
           "read_relmap_file", "read_heap_page", "HeapScan", "TransactionStatus", "tuple_is_visible",
           "read_pg_database", "read_pg_authid", "read_pg_db_role_setting", "read_settings", "parse_config_file",
           "FormatType", "ControlFile", "CheckPoint", "DatadirWarning", "SUPPORTED_MAJORS"]

SUPPORTED_MAJORS = range(13, 19)

# -- constants, as PostgreSQL names them --------------------------------------------------------

# src/include/pg_config_manual.h / pg_config.h (the defaults; pg_control records the real ones)
BLCKSZ = 8192
MAXIMUM_ALIGNOF = 8

# src/include/catalog/pg_control.h
PG_CONTROL_FILE_SIZE = 8192
MOCK_AUTH_NONCE_LEN = 32
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

# src/include/catalog/catversion.h, src/include/common/relpath.h: TABLESPACE_VERSION_DIRECTORY
# "PG_<major>_<CATALOG_VERSION_NO>"

# src/backend/utils/cache/relmapper.c
RELMAPPER_FILENAME = "pg_filenode.map"
RELMAPPER_FILEMAGIC = 0x592717
# MAX_MAPPINGS: 62 in 13-15 (the struct padded to 512 bytes), 64 in 16+ (524 bytes, no pad)

# src/include/storage/bufpage.h, itemid.h
SizeOfPageHeaderData = 24
PD_VALID_FLAG_BITS = 0x0007
PG_PAGE_LAYOUT_VERSION = 4
LP_UNUSED = 0
LP_NORMAL = 1
LP_REDIRECT = 2
LP_DEAD = 3


# src/include/access/clog.h, src/backend/access/transam/clog.c
TRANSACTION_STATUS_IN_PROGRESS = 0x00
TRANSACTION_STATUS_COMMITTED = 0x01
TRANSACTION_STATUS_ABORTED = 0x02
TRANSACTION_STATUS_SUB_COMMITTED = 0x03
CLOG_BITS_PER_XACT = 2
CLOG_XACTS_PER_BYTE = 4
CLOG_XACTS_PER_PAGE = BLCKSZ * CLOG_XACTS_PER_BYTE
# src/include/access/slru.h
SLRU_PAGES_PER_SEGMENT = 32

# src/backend/access/transam/multixact.c (MultiXactOffset is 32 bits in 13-18)
MULTIXACT_OFFSETS_PER_PAGE = BLCKSZ // 4
MULTIXACT_FLAGBYTES_PER_GROUP = 4
MULTIXACT_MEMBERS_PER_MEMBERGROUP = MULTIXACT_FLAGBYTES_PER_GROUP
MULTIXACT_MEMBERGROUP_SIZE = 4 * MULTIXACT_MEMBERS_PER_MEMBERGROUP + MULTIXACT_FLAGBYTES_PER_GROUP
MULTIXACT_MEMBERGROUPS_PER_PAGE = BLCKSZ // MULTIXACT_MEMBERGROUP_SIZE
MULTIXACT_MEMBERS_PER_PAGE = MULTIXACT_MEMBERGROUPS_PER_PAGE * MULTIXACT_MEMBERS_PER_MEMBERGROUP
FirstMultiXactId = 1
# src/include/access/multixact.h: MultiXactStatus; above ForUpdate the member updated the tuple
MultiXactStatusForUpdate = 0x03

# src/include/catalog/pg_authid.h, pg_database.h, pg_db_role_setting.h: catalog OIDs (the tracked
# catalogs' are in catalog.py)
AuthIdRelationId = 1260
DatabaseRelationId = 1262
DbRoleSettingRelationId = 2964
Template1DbOid = 1
PG_CATALOG_NAMESPACE = 11
DEFAULTTABLESPACE_OID = 1663
GLOBALTABLESPACE_OID = 1664
# src/include/catalog/pg_database.h: datconnlimit of a database a DROP left half done (15.4+, 16+)
DATCONNLIMIT_INVALID_DB = -2
# src/include/catalog/pg_proc.dat: F_ARRAY_SUBSCRIPT_HANDLER (IsTrueArrayType, 14+)
F_ARRAY_SUBSCRIPT_HANDLER = 6179

# src/include/catalog/pg_type.dat: OIDs format_type special-cases (format_type.c)
BITOID, BOOLOID, BPCHAROID, FLOAT4OID, FLOAT8OID = 1560, 16, 1042, 700, 701
INT2OID, INT4OID, INT8OID, NUMERICOID, INTERVALOID = 21, 23, 20, 1700, 1186
TIMEOID, TIMETZOID, TIMESTAMPOID, TIMESTAMPTZOID = 1083, 1266, 1114, 1184
VARBITOID, VARCHAROID, JSONOID = 1562, 1043, 114
_FORMAT_TYPE_SPECIAL = {
    BITOID: "bit", BOOLOID: "boolean", BPCHAROID: "character", FLOAT4OID: "real",
    FLOAT8OID: "double precision", INT2OID: "smallint", INT4OID: "integer", INT8OID: "bigint",
    NUMERICOID: "numeric", INTERVALOID: "interval", TIMEOID: "time without time zone",
    TIMETZOID: "time with time zone", TIMESTAMPOID: "timestamp without time zone",
    TIMESTAMPTZOID: "timestamp with time zone", VARBITOID: "bit varying", VARCHAROID: "character varying",
}

# src/include/mb/pg_wchar.h: enum pg_enc (server encodings), names as encnames.c prints them
PG_ENCODING_NAMES = (
    "SQL_ASCII", "EUC_JP", "EUC_CN", "EUC_KR", "EUC_TW", "EUC_JIS_2004", "UTF8", "MULE_INTERNAL",
    "LATIN1", "LATIN2", "LATIN3", "LATIN4", "LATIN5", "LATIN6", "LATIN7", "LATIN8", "LATIN9", "LATIN10",
    "WIN1256", "WIN1258", "WIN866", "WIN874", "KOI8R", "WIN1251", "WIN1252", "ISO_8859_5", "ISO_8859_6",
    "ISO_8859_7", "ISO_8859_8", "WIN1250", "WIN1253", "WIN1254", "WIN1255", "WIN1257", "KOI8U",
)

#: pg_class relkinds in the snapshot, as catalog_dsn takes them; views only when a column needs their row type
_RELKINDS = frozenset("rtmpfSc")
_RELKIND_VIEW = "v"
#: relkinds with storage (RELKIND_HAS_STORAGE): only these can be mapped
_RELKINDS_WITH_STORAGE = frozenset("rtmSi")


class DatadirWarning(UserWarning):
    """Something about the data directory the user should know; the snapshot is still taken."""


# -- PG_VERSION and pg_control ------------------------------------------------------------------

def read_pg_version(pgdata: str) -> int:
    """The major version in ``PG_VERSION`` (written by initdb): the data directory's format."""
    path = os.path.join(pgdata, "PG_VERSION")
    if not os.path.isdir(pgdata):
        raise CatalogError(f"{pgdata}: not a directory")
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            text = f.read(64).strip()
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


class CheckPoint(NamedTuple):
    """src/include/catalog/pg_control.h: CheckPoint (the copy in pg_control)."""

    redo: int
    ThisTimeLineID: int
    PrevTimeLineID: int
    fullPageWrites: bool
    nextXid: int  # FullTransactionId: epoch << 32 | xid
    nextOid: int
    nextMulti: int
    nextMultiOffset: int
    oldestXid: int
    oldestXidDB: int
    oldestMulti: int
    oldestMultiDB: int
    time: int
    oldestCommitTsXid: int
    newestCommitTsXid: int
    oldestActiveXid: int


class ControlFile(NamedTuple):
    """The fields of src/include/catalog/pg_control.h ControlFileData used here."""

    system_identifier: int
    pg_control_version: int
    catalog_version_no: int
    state: int
    time: int
    checkPoint: int
    checkPointCopy: CheckPoint
    minRecoveryPoint: int
    backupStartPoint: int
    backupEndPoint: int
    wal_level: int
    maxAlign: int
    blcksz: int
    relseg_size: int
    xlog_blcksz: int
    xlog_seg_size: int
    nameDataLen: int
    toast_max_chunk_size: int
    data_checksum_version: int

    @property
    def state_name(self) -> str:
        return DB_STATE_NAMES.get(self.state, f"unknown state {self.state}")


# ControlFileData head, identical in 13-18: system_identifier @0, pg_control_version @8,
# catalog_version_no @12, state @16, time @24, checkPoint @32, checkPointCopy @40 (88 bytes;
# 17+ puts CheckPoint.wal_level in what was padding at @20 of it).
_control_head = struct.Struct("<QIIi4xqQ")
# CheckPoint: redo @0, ThisTimeLineID @8, PrevTimeLineID @12, fullPageWrites @16, (17+: wal_level @20),
# nextXid @24, nextOid @32, nextMulti @36, nextMultiOffset @40, oldestXid @44, oldestXidDB @48,
# oldestMulti @52, oldestMultiDB @56, time @64, oldestCommitTsXid @72, newestCommitTsXid @76,
# oldestActiveXid @80; sizeof 88.
_checkpoint = struct.Struct("<QII?7xQIIIIIIIxxxxqIII4x")
_CHECKPOINT_OFF = 40
# After checkPointCopy (@128): unloggedLSN @128, minRecoveryPoint @136, minRecoveryPointTLI @144,
# backupStartPoint @152, backupEndPoint @160, backupEndRequired @168, wal_level @172,
# wal_log_hints @176, MaxConnections @180, max_worker_processes @184, max_wal_senders @188,
# max_prepared_xacts @192, max_locks_per_xact @196, track_commit_timestamp @200, maxAlign @204,
# floatFormat @208, blcksz @216, relseg_size @220, xlog_blcksz @224, xlog_seg_size @228,
# nameDataLen @232, indexMaxKeys @236, toast_max_chunk_size @240, loblksize @244,
# float8ByVal @248, data_checksum_version @252; 18: default_char_signedness @256;
# mock_authentication_nonce[32] @256 (18: @257); crc @288 (18: @292).
_control_tail = struct.Struct("<QQI4xQQ?3xi?3xiiiii?3xIdIIIIIIIIb3xI")
_CONTROL_TAIL_OFF = 128


def _control_crc_offset(major: int) -> int:
    """offsetof(ControlFileData, crc): 288 in 13-17, 292 in 18 (default_char_signedness added)."""
    return 292 if major >= 18 else 288


def read_pg_control(pgdata: str, major: int) -> ControlFile:
    """``global/pg_control``: ControlFileData, its CRC-32C and sizes checked (xlog.c ReadControlFile)."""
    path = os.path.join(pgdata, "global", "pg_control")
    try:
        with open(path, "rb") as f:
            data = f.read(PG_CONTROL_FILE_SIZE)
    except FileNotFoundError:
        raise CatalogError(f"{pgdata}: not a PostgreSQL data directory (no global/pg_control)") from None
    except OSError as e:
        raise CatalogError(f"cannot read {path}: {e.strerror}") from None
    crc_off = _control_crc_offset(major)
    if len(data) < crc_off + 4:
        raise CatalogError(f"{path}: file is {len(data)} bytes, too short for a PostgreSQL {major} control file")
    sysid, version, catversion, state, ctime, checkpoint = _control_head.unpack_from(data, 0)
    expected = PG_CONTROL_VERSION[major]
    if version != expected:
        hint = " (the file looks byte-swapped: written on a big-endian machine?)" \
            if version % 65536 == 0 and version // 65536 != 0 else ""
        raise CatalogError(f"{path}: pg_control_version is {version}, but PG_VERSION says {major}, "
                           f"whose pg_control_version is {expected}{hint}")
    (stored_crc,) = struct.unpack_from("<I", data, crc_off)
    actual_crc = crc32c(data[:crc_off])
    if stored_crc != actual_crc:
        raise CatalogError(f"{path}: CRC mismatch in pg_control (stored {stored_crc:08X}, computed "
                           f"{actual_crc:08X}): the file is damaged")
    cp = CheckPoint(*_checkpoint.unpack_from(data, _CHECKPOINT_OFF))
    (_unlogged, min_recovery, _min_tli, backup_start, backup_end, _backup_end_req, wal_level, _hints,
     _maxconn, _workers, _senders, _prepared, _locks, _committs, max_align, float_format, blcksz, relseg_size,
     xlog_blcksz, xlog_seg_size, name_len, _index_keys, toast_chunk, _loblk, _f8byval,
     checksum_version) = _control_tail.unpack_from(data, _CONTROL_TAIL_OFF)
    ctl = ControlFile(sysid, version, catversion, state, ctime, checkpoint, cp, min_recovery, backup_start,
                      backup_end, wal_level, max_align, blcksz, relseg_size, xlog_blcksz, xlog_seg_size,
                      name_len, toast_chunk, checksum_version)
    if float_format != FLOATFORMAT_VALUE or max_align != MAXIMUM_ALIGNOF:
        raise CatalogError(f"{path}: the cluster was initialised on another architecture (maxAlign {max_align}, "
                           f"floatFormat {float_format}): only little-endian 64-bit data directories are read")
    if blcksz != BLCKSZ or name_len != NAMEDATALEN:
        raise CatalogError(f"{path}: the cluster uses BLCKSZ {blcksz} and NAMEDATALEN {name_len}; only the "
                           f"defaults ({BLCKSZ}, {NAMEDATALEN}) are supported")
    if relseg_size <= 0:
        raise CatalogError(f"{path}: impossible relseg_size {relseg_size}")
    return ctl


# -- relation mapper ----------------------------------------------------------------------------

def read_relmap_file(path: str, major: int) -> dict[int, int]:
    """A ``pg_filenode.map`` (relmapper.c RelMapFile): {catalog OID: relfilenode}, CRC-32C checked.

    RelMapFile: int32 magic, int32 num_mappings, RelMapping mappings[MAX_MAPPINGS]
    (Oid mapoid, RelFileNumber mapfilenumber), pg_crc32c crc (of all above);
    MAX_MAPPINGS 62 plus an int32 pad (512 bytes) in 13-15, 64 and no pad (524 bytes) in 16+.
    """
    max_mappings = 64 if major >= 16 else 62
    crc_off = 8 + 8 * max_mappings
    try:
        with open(path, "rb") as f:
            data = f.read(crc_off + 8)
    except FileNotFoundError:
        raise CatalogError(f"relation mapper file {path} is missing") from None
    except OSError as e:
        raise CatalogError(f"cannot read relation mapper file {path}: {e.strerror}") from None
    if len(data) < crc_off + 4:
        raise CatalogError(f"relation mapper file {path}: {len(data)} bytes, expected {crc_off + 4} or more")
    magic, num = struct.unpack_from("<ii", data, 0)
    if magic != RELMAPPER_FILEMAGIC or not 0 <= num <= max_mappings:
        raise CatalogError(f"relation mapper file {path} contains invalid data (magic {magic:#x}, "
                           f"{num} mappings)")
    (stored_crc,) = struct.unpack_from("<I", data, crc_off)
    if crc32c(data[:crc_off]) != stored_crc:
        raise CatalogError(f"relation mapper file {path}: CRC mismatch: the file is damaged")
    pairs = struct.unpack_from(f"<{2 * num}I", data, 8)
    return {pairs[i]: pairs[i + 1] for i in range(0, 2 * num, 2)}


# -- transaction status: pg_xact and pg_multixact -----------------------------------------------

class TransactionStatus:
    """Commit status of transaction IDs from ``pg_xact/`` (clog.c) and update xids of multixacts
    from ``pg_multixact/`` (multixact.c), as the files hold them.

    ``clog_lookups`` counts xids whose status had to be read from pg_xact (the tuple had no hint bit).
    """

    def __init__(self, pgdata: str, control: ControlFile):
        self.pgdata = pgdata
        self.control = control
        self._segments: dict[tuple[str, int], bytes | None] = {}
        self.clog_lookups = 0
        self.multixact_lookups = 0

    def _segment(self, subdir: str, segno: int) -> tuple[str, bytes | None]:
        path = os.path.join(self.pgdata, subdir, f"{segno:04X}")
        key = (subdir, segno)
        if key not in self._segments:
            try:
                with open(path, "rb") as f:
                    self._segments[key] = f.read()
            except FileNotFoundError:
                self._segments[key] = None
            except OSError as e:
                raise CatalogError(f"cannot read {path}: {e.strerror}") from None
        return path, self._segments[key]

    def xid_status(self, xid: int) -> int:
        """TransactionIdGetStatus: TRANSACTION_STATUS_* of ``xid`` in pg_xact (2 bits per xid).

        An xid whose CLOG page never reached the disk (at or after the checkpoint's nextXid)
        reads as in progress; a missing page for an older xid is an error naming the file.
        """
        self.clog_lookups += 1
        pageno = xid // CLOG_XACTS_PER_PAGE
        segno = pageno // SLRU_PAGES_PER_SEGMENT
        byte = (pageno % SLRU_PAGES_PER_SEGMENT) * BLCKSZ + (xid % CLOG_XACTS_PER_PAGE) // CLOG_XACTS_PER_BYTE
        path, data = self._segment("pg_xact", segno)
        if data is None or byte >= len(data):
            if self._after_checkpoint(xid):
                return TRANSACTION_STATUS_IN_PROGRESS
            what = "is missing" if data is None else f"has {len(data)} bytes, too few"
            raise CatalogError(f"{path} {what}: cannot read the status of transaction {xid}")
        return (data[byte] >> ((xid % CLOG_XACTS_PER_BYTE) * CLOG_BITS_PER_XACT)) & 0x03

    def did_commit(self, xid: int) -> bool:
        """TransactionIdDidCommit as of the files: in-progress and sub-committed count as not committed."""
        if xid == BootstrapTransactionId or xid == FrozenTransactionId:
            return True
        if xid < FirstNormalTransactionId:
            return False
        return self.xid_status(xid) == TRANSACTION_STATUS_COMMITTED

    def _after_checkpoint(self, xid: int) -> bool:
        next_xid = self.control.checkPointCopy.nextXid & 0xFFFFFFFF
        return not xid_precedes(xid, next_xid)

    def multixact_update_xid(self, multi: int) -> int:
        """MultiXactIdGetUpdateXid: the member that updated or deleted the tuple, or InvalidTransactionId.

        pg_multixact/offsets: one 32-bit MultiXactOffset per multixact; the members from that
        offset to the next multixact's (or the checkpoint's nextMultiOffset) are in
        pg_multixact/members, in groups of 4 flag bytes and 4 xids.  A multixact created after
        the checkpoint whose pages never reached the disk (a crash) counts as having no updater.
        """
        self.multixact_lookups += 1
        cp = self.control.checkPointCopy
        before_checkpoint = multixact_precedes(multi, cp.nextMulti)
        nxt = multi + 1 if multi < 0xFFFFFFFF else FirstMultiXactId
        start = self._multixact_offset(multi)
        end = cp.nextMultiOffset if nxt == cp.nextMulti else self._multixact_offset(nxt)
        if not start or not end:  # missing, or 0: not (yet) written
            if not before_checkpoint:
                return InvalidTransactionId
            raise CatalogError(f"{self.pgdata}/pg_multixact/offsets: the member offsets of multixact {multi} "
                               f"are missing (offsets {start}, {end})")
        count = (end - start) & 0xFFFFFFFF
        if count > 0x10000:
            raise CatalogError(f"{self.pgdata}/pg_multixact/offsets: impossible member range {start}..{end} "
                               f"for multixact {multi}")
        for i in range(count):
            offset = (start + i) & 0xFFFFFFFF
            if offset == 0:  # offset 0 is never used (wraparound skips it)
                continue
            pageno = offset // MULTIXACT_MEMBERS_PER_PAGE
            group = (offset // MULTIXACT_MEMBERS_PER_MEMBERGROUP) % MULTIXACT_MEMBERGROUPS_PER_PAGE
            in_group = offset % MULTIXACT_MEMBERS_PER_MEMBERGROUP
            pos = (pageno % SLRU_PAGES_PER_SEGMENT) * BLCKSZ + group * MULTIXACT_MEMBERGROUP_SIZE
            path, data = self._segment(os.path.join("pg_multixact", "members"), pageno // SLRU_PAGES_PER_SEGMENT)
            if data is None or pos + MULTIXACT_MEMBERGROUP_SIZE > len(data):
                if not before_checkpoint:
                    return InvalidTransactionId
                raise CatalogError(f"{path}: members of multixact {multi} are missing")
            status = data[pos + in_group]
            xid = struct.unpack_from("<I", data, pos + MULTIXACT_FLAGBYTES_PER_GROUP + 4 * in_group)[0]
            if status > MultiXactStatusForUpdate:
                return xid
        return InvalidTransactionId

    def _multixact_offset(self, multi: int) -> int | None:
        """pg_multixact/offsets entry of ``multi``; None when its page is not in the files."""
        pageno = multi // MULTIXACT_OFFSETS_PER_PAGE
        pos = (pageno % SLRU_PAGES_PER_SEGMENT) * BLCKSZ + (multi % MULTIXACT_OFFSETS_PER_PAGE) * 4
        _path, data = self._segment(os.path.join("pg_multixact", "offsets"), pageno // SLRU_PAGES_PER_SEGMENT)
        if data is None or pos + 4 > len(data):
            return None
        return struct.unpack_from("<I", data, pos)[0]


def tuple_is_visible(t_xmin: int, t_xmax: int, t_infomask: int, xact: TransactionStatus) -> bool:
    """Is a heap tuple visible to a snapshot taken after every transaction in the files ended?

    heapam_visibility.c HeapTupleSatisfiesMVCC reduced to that snapshot: xmin committed
    (hint bit HEAP_XMIN_COMMITTED, frozen, or CLOG) and xmax invalid, a locker only, or
    not committed; for a multixact xmax, its updating member decides.  Transactions still
    "in progress" in the files (a crash) are taken as not committed.
    """
    if not t_infomask & HEAP_XMIN_COMMITTED:  # HEAP_XMIN_FROZEN includes HEAP_XMIN_COMMITTED
        if t_infomask & HEAP_XMIN_INVALID:
            return False
        if not xact.did_commit(t_xmin):
            return False
    if t_infomask & HEAP_XMAX_INVALID:
        return True
    # HEAP_XMAX_IS_LOCKED_ONLY (covers HEAP_LOCKED_UPGRADED, which has HEAP_XMAX_LOCK_ONLY)
    if t_infomask & HEAP_XMAX_LOCK_ONLY or \
            (t_infomask & (HEAP_XMAX_IS_MULTI | HEAP_LOCK_MASK)) == HEAP_XMAX_EXCL_LOCK:
        return True
    if t_infomask & HEAP_XMAX_IS_MULTI:
        updater = xact.multixact_update_xid(t_xmax)
        return updater == InvalidTransactionId or not xact.did_commit(updater)
    if t_infomask & HEAP_XMAX_COMMITTED:
        return False
    if t_xmax == InvalidTransactionId:
        return True
    return not xact.did_commit(t_xmax)


# -- heap pages ---------------------------------------------------------------------------------

# src/include/storage/bufpage.h: PageHeaderData (pd_lsn, pd_checksum, pd_flags, pd_lower, pd_upper,
# pd_special, pd_pagesize_version, pd_prune_xid)
_page_header = struct.Struct("<QHHHHHHI")
# src/include/access/htup_details.h: HeapTupleHeaderData up to t_hoff (t_xmin, t_xmax, t_cid/t_xvac,
# t_ctid (6 bytes), t_infomask2, t_infomask, t_hoff)
_tuple_header = struct.Struct("<III6xHHB")
_ZERO_PAGE = bytes(BLCKSZ)


class HeapTuple(NamedTuple):
    """A visible tuple on a page: ``page[lp_off:lp_off + lp_len]`` is the whole HeapTupleHeader + data."""

    page: bytes
    lp_off: int
    lp_len: int
    t_infomask2: int
    t_infomask: int
    t_hoff: int
    blkno: int
    offnum: int


def read_heap_page(page: bytes, path: str, blkno: int) -> list[tuple[int, int, int]]:
    """PageIsVerified plus the line pointer array: [(offnum, lp_off, lp_len)] of LP_NORMAL items.

    A new (all-zero) page has none.  Raises ``CatalogError`` naming the file and block for a
    damaged page header (pd_lower/pd_upper/pd_special, flags, layout version) or line pointer.
    """
    (_lsn, _checksum, pd_flags, pd_lower, pd_upper, pd_special, pd_pagesize_version,
     _prune) = _page_header.unpack_from(page, 0)
    if pd_upper == 0:  # PageIsNew
        if page != _ZERO_PAGE:
            raise CatalogError(f"{path}: block {blkno}: page has pd_upper 0 but is not all zeros: damaged page")
        return []
    where = f"{path}: block {blkno}"
    if (pd_flags & ~PD_VALID_FLAG_BITS or pd_lower < SizeOfPageHeaderData or pd_lower > pd_upper
            or pd_upper > pd_special or pd_special > BLCKSZ or pd_special % MAXIMUM_ALIGNOF):
        raise CatalogError(f"{where}: damaged page header (pd_flags {pd_flags:#x}, pd_lower {pd_lower}, "
                           f"pd_upper {pd_upper}, pd_special {pd_special})")
    if pd_pagesize_version != BLCKSZ | PG_PAGE_LAYOUT_VERSION:
        raise CatalogError(f"{where}: page size/layout version {pd_pagesize_version:#x} is not "
                           f"{BLCKSZ | PG_PAGE_LAYOUT_VERSION:#x} (8 kB, layout 4)")
    nitems = (pd_lower - SizeOfPageHeaderData) // 4
    items = []
    for i, word in enumerate(struct.unpack_from(f"<{nitems}I", page, SizeOfPageHeaderData)):
        # ItemIdData: lp_off:15, lp_flags:2, lp_len:15 (little-endian bit fields)
        lp_flags = (word >> 15) & 0x03
        if lp_flags != LP_NORMAL:
            continue
        lp_off = word & 0x7FFF
        lp_len = word >> 17
        if (lp_off < pd_upper or lp_off + lp_len > pd_special or lp_off % MAXIMUM_ALIGNOF
                or lp_len < SizeofHeapTupleHeader):
            raise CatalogError(f"{where}: damaged line pointer {i + 1} (lp_off {lp_off}, lp_len {lp_len}; "
                               f"pd_upper {pd_upper}, pd_special {pd_special})")
        items.append((i + 1, lp_off, lp_len))
    return items


def relation_segments(base_path: str) -> Iterator[str]:
    """The main-fork segment files of a relation: ``base_path``, ``base_path.1``, … while they exist."""
    if not os.path.exists(base_path):
        raise CatalogError(f"relation file {base_path} is missing")
    yield base_path
    segno = 1
    while os.path.exists(f"{base_path}.{segno}"):
        yield f"{base_path}.{segno}"
        segno += 1


def heap_page_items(page: bytes, path: str, blkno: int) -> Iterator[tuple]:
    """``read_heap_page`` plus each tuple's header: (offnum, lp_off, lp_len, t_xmin, t_xmax,
    t_infomask2, t_infomask, t_hoff) of the LP_NORMAL items; an impossible t_hoff raises
    ``CatalogError`` naming the file (or image) and block."""
    for offnum, lp_off, lp_len in read_heap_page(page, path, blkno):
        t_xmin, t_xmax, _cid, infomask2, infomask, t_hoff = _tuple_header.unpack_from(page, lp_off)
        if t_hoff < SizeofHeapTupleHeader or t_hoff > lp_len or t_hoff % MAXIMUM_ALIGNOF:
            raise CatalogError(f"{path}: block {blkno}: tuple {offnum} has impossible t_hoff {t_hoff} "
                               f"(tuple length {lp_len})")
        yield offnum, lp_off, lp_len, t_xmin, t_xmax, infomask2, infomask, t_hoff


def heap_page_tuples(page: bytes, path: str, blkno: int) -> dict[int, bytes]:
    """The LP_NORMAL tuples of a heap page by offset number, each the whole on-page tuple
    (header and data), with ``heap_page_items``' checks."""
    return {item[0]: page[item[1]:item[1] + item[2]] for item in heap_page_items(page, path, blkno)}


def page_lsn(page: bytes) -> int:
    """PageGetLSN: pd_lsn, the LSN of the last WAL record that changed the page."""
    hi, lo = struct.unpack_from("<II", page, 0)  # PageXLogRecPtr {xlogid, xrecoff}
    return hi << 32 | lo


class HeapScan:
    """Sequential scan of a heap relation's files yielding the tuples visible per ``tuple_is_visible``."""

    def __init__(self, base_path: str, xact: TransactionStatus, relseg_size: int):
        self.base_path = base_path
        self.xact = xact
        self.relseg_size = relseg_size

    #: pages read from a segment file at a time
    CHUNK_PAGES = 256

    def __iter__(self) -> Iterator[HeapTuple]:
        for path, blkno, page in self.pages():
            yield from self.visible(page, path, blkno)

    def pages(self) -> Iterator[tuple[str, int, bytes]]:
        """(segment file, block number, page) of every block of the relation."""
        for segno, path in enumerate(relation_segments(self.base_path)):
            blkno = segno * self.relseg_size
            try:
                with open(path, "rb") as f:
                    while True:
                        data = f.read(BLCKSZ * self.CHUNK_PAGES)
                        if not data:
                            break
                        if len(data) % BLCKSZ:
                            raise CatalogError(f"{path}: block {blkno + len(data) // BLCKSZ} is truncated "
                                               f"(the file size is not a multiple of {BLCKSZ} bytes)")
                        for pos in range(0, len(data), BLCKSZ):
                            yield path, blkno, data[pos:pos + BLCKSZ]
                            blkno += 1
            except OSError as e:
                raise CatalogError(f"cannot read relation file {path}: {e.strerror}") from None

    def visible(self, page: bytes, path: str, blkno: int) -> Iterator[HeapTuple]:
        xact = self.xact
        for offnum, lp_off, lp_len, t_xmin, t_xmax, infomask2, infomask, t_hoff in heap_page_items(page, path, blkno):
            if tuple_is_visible(t_xmin, t_xmax, infomask, xact):
                yield HeapTuple(page, lp_off, lp_len, infomask2, infomask, t_hoff, blkno, offnum)


# -- deforming catalog tuples -------------------------------------------------------------------

@dataclass(frozen=True)
class _TypeShape:
    """What deforming and array parsing need of a type: pg_type typlen, typalign, typbyval."""

    typname: str
    typlen: int
    typalign: str
    typbyval: bool


# src/include/catalog/pg_type.dat: the types of pg_attribute's fixed columns
_SHAPES = {
    "oid": _TypeShape("oid", 4, "i", True), "name": _TypeShape("name", NAMEDATALEN, "c", False),
    "int4": _TypeShape("int4", 4, "i", True), "int2": _TypeShape("int2", 2, "s", True),
    "bool": _TypeShape("bool", 1, "c", True), "char": _TypeShape("char", 1, "c", True),
}

# src/include/catalog/pg_attribute.h @ REL_13 … REL_18: FormData_pg_attribute up to attcollation, the
# fixed-length part every row has (17+ moved attstattarget behind it, 18 dropped attcacheoff).
_ATT_13 = ("attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
           "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attstorage char, attalign char, "
           "attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, "
           "attisdropped bool, attislocal bool, attinhcount int4, attcollation oid")
_ATT_14 = ("attrelid oid, attname name, atttypid oid, attstattarget int4, attlen int2, attnum int2, "
           "attndims int4, attcacheoff int4, atttypmod int4, attbyval bool, attalign char, attstorage char, "
           "attcompression char, attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, "
           "attgenerated char, attisdropped bool, attislocal bool, attinhcount int4, attcollation oid")
_ATT_16 = ("attrelid oid, attname name, atttypid oid, attlen int2, attnum int2, attcacheoff int4, "
           "atttypmod int4, attndims int2, attbyval bool, attalign char, attstorage char, attcompression char, "
           "attnotnull bool, atthasdef bool, atthasmissing bool, attidentity char, attgenerated char, "
           "attisdropped bool, attislocal bool, attinhcount int2, attstattarget int2, attcollation oid")
_ATT_17 = _ATT_16.replace(" attstattarget int2,", "")
_ATT_18 = _ATT_17.replace(" attcacheoff int4,", "")
PG_ATTRIBUTE_FIXED = {13: _ATT_13, 14: _ATT_14, 15: _ATT_14, 16: _ATT_16, 17: _ATT_17, 18: _ATT_18}


def _layout_from_spec(spec: str) -> tuple[Attribute, ...]:
    out = []
    for attnum, item in enumerate(spec.split(","), 1):
        name, typ = item.split()
        s = _SHAPES[typ]
        out.append(Attribute(attnum=attnum, attname=name, atttypid=0, atttypmod=-1, attlen=s.typlen,
                             attbyval=s.typbyval, attalign=s.typalign, attstorage="p", attisdropped=False))
    return tuple(out)


class _ShapeContext:
    """The ``ctx.type(oid)`` that ``types.arrays.deconstruct`` asks for an element's typlen/typalign."""

    def __init__(self, shapes: dict[int, _TypeShape]):
        self.shapes = shapes

    def type(self, oid: int) -> _TypeShape:
        shape = self.shapes.get(oid)
        if shape is None:
            raise CatalogError(f"array element type {oid} is not in pg_type")
        return shape


# pg_type OIDs of the catalog column types converted to Python values here
_OIDOID, _NAMEOID, _TEXTOID, _CHAROID, _XIDOID, _REGPROCOID = 26, 19, 25, 18, 28, 24
_INT2VECTOROID, _OIDVECTOROID, _TEXTARRAYOID = 22, 30, 1009
_BUILTIN_SHAPES = {
    INT2OID: _TypeShape("int2", 2, "s", True), INT4OID: _TypeShape("int4", 4, "i", True),
    _OIDOID: _TypeShape("oid", 4, "i", True), _TEXTOID: _TypeShape("text", -1, "i", False),
}


class _Decoder:
    """Catalog values from deformed bytes: integers, booleans, "char", names, text, int2vector, text[]."""

    def __init__(self, encoding: str = "UTF8"):
        self.codec = python_codec(encoding)
        self.ctx = _ShapeContext(_BUILTIN_SHAPES)

    def text(self, raw: bytes) -> str:
        return raw.decode(self.codec, errors="surrogateescape")

    def name(self, raw: bytes) -> str:
        nul = raw.find(b"\x00")
        return self.text(raw if nul < 0 else raw[:nul])

    def convert(self, typid: int, raw):
        if raw is None or raw.__class__ is ToastPointer:
            return raw  # NULL, or a value in the catalog's TOAST table for the caller to fetch
        if typid == _NAMEOID:
            return self.name(raw)
        if typid in (_OIDOID, _XIDOID, _REGPROCOID):
            return struct.unpack("<I", raw)[0]
        if typid == INT4OID:
            return struct.unpack("<i", raw)[0]
        if typid == INT2OID:
            return struct.unpack("<h", raw)[0]
        if typid == BOOLOID:
            return raw != b"\x00"
        if typid == _CHAROID:
            return "" if raw == b"\x00" else raw.decode("latin-1")
        if typid == FLOAT4OID:
            return struct.unpack("<f", raw)[0]
        if typid == _TEXTOID:
            return self.text(raw)
        if typid in (_INT2VECTOROID, _OIDVECTOROID, _TEXTARRAYOID):
            from .types.arrays import deconstruct

            _elem, _dims, _lb, items = deconstruct(raw, self.ctx)
            if typid == _TEXTARRAYOID:
                return [None if v is None else self.text(v) for v in items]
            fmt = "<h" if typid == _INT2VECTOROID else "<I"
            return [struct.unpack(fmt, v)[0] for v in items]
        return raw  # anything else stays bytes (or a ToastPointer); NULL-ness is what callers use


class _CatalogTable:
    """One catalog's layout (its pg_attribute rows) and where its heap is."""

    def __init__(self, name: str, oid: int, layout: tuple[Attribute, ...], path: str):
        self.name = name
        self.oid = oid
        self.layout = layout
        self.path = path
        self.index = {a.attname: i for i, a in enumerate(layout)}


# -- the data directory -------------------------------------------------------------------------

class _DataDir:
    """Paths, pg_control, mapper files and catalog scans of one data directory."""

    def __init__(self, pgdata: str, warn: Callable[[str], None]):
        self.pgdata = pgdata
        self.warn = warn
        self.major = read_pg_version(pgdata)
        self.control = read_pg_control(pgdata, self.major)
        self.xact = TransactionStatus(pgdata, self.control)
        self.decoder = _Decoder()
        self.shared_map = read_relmap_file(os.path.join(pgdata, "global", RELMAPPER_FILENAME), self.major)
        self._att_fixed = _layout_from_spec(PG_ATTRIBUTE_FIXED[self.major])
        self.attribute_cache: dict[str, _AttributeRows] = {}  # database directory -> its pg_attribute

    # paths (src/common/relpath.c GetRelationPath / GetDatabasePath)
    def database_path(self, dboid: int, spcoid: int) -> str:
        if spcoid == GLOBALTABLESPACE_OID:
            return os.path.join(self.pgdata, "global")
        if spcoid == DEFAULTTABLESPACE_OID:
            return os.path.join(self.pgdata, "base", str(dboid))
        return os.path.join(self.pgdata, "pg_tblspc", str(spcoid),
                            f"PG_{self.major}_{self.control.catalog_version_no}", str(dboid))

    def scan(self, path: str) -> HeapScan:
        return HeapScan(path, self.xact, self.control.relseg_size)

    def rows(self, table: _CatalogTable, columns: tuple[str, ...]) -> Iterator[tuple]:
        """The visible rows of ``table`` as tuples of the named columns' values."""
        try:
            idx = [table.index[c] for c in columns]
        except KeyError as e:
            raise CatalogError(f"catalog {table.name} in {table.path} has no column {e.args[0]} "
                               f"(unexpected PostgreSQL {self.major} layout)") from None
        width = max(idx) + 1
        attrs = table.layout[:width]
        conv = [(i, attrs[i].atttypid) for i in idx]
        decode = self.decoder.convert
        for tup in self.scan(table.path):
            values = self._deform(tup, attrs, table)
            yield tuple(decode(typ, values[i]) for i, typ in conv)

    def _deform(self, tup: HeapTuple, attrs, table: _CatalogTable) -> list:
        natts = min(tup.t_infomask2 & HEAP_NATTS_MASK, len(attrs))
        try:
            return deform_tuple(tup.page, (tup.t_infomask2 & ~HEAP_NATTS_MASK) | natts, tup.t_infomask, tup.t_hoff,
                                attrs, start=tup.lp_off + SizeofHeapTupleHeader, end=tup.lp_off + tup.lp_len)
        except (CorruptRecordError, DecompressionError) as e:
            raise CatalogError(f"{table.path}: block {tup.blkno}: tuple {tup.offnum} of {table.name}: "
                               f"{getattr(e, 'reason', e)}") from None

    # pg_attribute: bootstrap from its known fixed part, then its own rows describe every catalog
    def read_pg_attribute(self, db_path: str, relmap: dict[int, int]) -> "_AttributeRows":
        if AttributeRelationId not in relmap:
            raise CatalogError(f"{db_path}/{RELMAPPER_FILENAME} has no entry for pg_attribute")
        path = os.path.join(db_path, str(relmap[AttributeRelationId]))
        fixed = self._att_fixed
        table = _CatalogTable("pg_attribute", AttributeRelationId, fixed, path)
        rows: dict[int, list] = {}
        for tup in self.scan(path):
            values = self._deform(tup, fixed, table)
            rows.setdefault(struct.unpack("<I", values[0])[0], []).append((values, tup))
        return _AttributeRows(self, table, rows)


class _AttributeRows:
    """pg_attribute's visible rows by attrelid, fixed part deformed; layouts of catalogs from them."""

    def __init__(self, datadir: _DataDir, table: _CatalogTable, rows: dict[int, list]):
        self.datadir = datadir
        self.table = table
        self.rows = rows
        fixed = table.layout
        self.col = {a.attname: i for i, a in enumerate(fixed)}
        # pg_attribute's own full layout (variable-length columns included), checked against the fixed part
        full = self.layout(AttributeRelationId, "pg_attribute")
        for known, found in zip(fixed, full):
            if (known.attname, known.attlen, known.attalign) != (found.attname, found.attlen, found.attalign):
                raise CatalogError(f"{table.path}: pg_attribute column {found.attnum} is {found.attname} "
                                   f"(attlen {found.attlen}, attalign {found.attalign!r}), expected "
                                   f"{known.attname} (attlen {known.attlen}, attalign {known.attalign!r}) "
                                   f"for PostgreSQL {datadir.major}")
        self.full_layout = full

    def value(self, values: list, name: str):
        """Column ``name`` of a row of the fixed part, as a Python value."""
        i = self.col[name]
        raw = values[i]
        a = self.table.layout[i]
        if raw is None:
            return None
        if a.attlen == NAMEDATALEN:
            return self.datadir.decoder.name(raw)
        if a.attlen == 4:
            return struct.unpack("<I" if name in ("attrelid", "atttypid", "attcollation") else "<i", raw)[0]
        if a.attlen == 2:
            return struct.unpack("<h", raw)[0]
        if name in ("attstorage", "attalign", "attcompression", "attidentity", "attgenerated"):
            return "" if raw == b"\x00" else raw.decode("latin-1")
        return raw != b"\x00"

    def layout(self, relid: int, what: str) -> tuple[Attribute, ...]:
        """The user columns (attnum > 0) of relation ``relid`` in attnum order, as deforming needs them."""
        out = []
        for values, _tup in self.rows.get(relid, ()):
            attnum = self.value(values, "attnum")
            if attnum <= 0:
                continue
            out.append(Attribute(
                attnum=attnum, attname=self.value(values, "attname"), atttypid=self.value(values, "atttypid"),
                atttypmod=self.value(values, "atttypmod"), attlen=self.value(values, "attlen"),
                attbyval=self.value(values, "attbyval"), attalign=self.value(values, "attalign"),
                attstorage=self.value(values, "attstorage"), attisdropped=self.value(values, "attisdropped"),
                attnotnull=self.value(values, "attnotnull"), atthasmissing=self.value(values, "atthasmissing"),
                attgenerated=self.value(values, "attgenerated")))
        out.sort(key=lambda a: a.attnum)
        if not out:
            raise CatalogError(f"{self.table.path}: no pg_attribute rows for {what} (OID {relid})")
        if [a.attnum for a in out] != list(range(1, len(out) + 1)):
            raise CatalogError(f"{self.table.path}: pg_attribute rows of {what} (OID {relid}) have attnums "
                               f"{[a.attnum for a in out]}, not 1..{len(out)}")
        return tuple(out)

    def missing_value_raw(self, values: list, tup: HeapTuple):
        """attmissingval (anyarray payload bytes, or None) of one pg_attribute row: a full deform."""
        full = self.datadir._deform(tup, self.full_layout, self.table)
        return full[[a.attname for a in self.full_layout].index("attmissingval")]


# -- settings -----------------------------------------------------------------------------------

# guc-file.l: name [=] value [# comment]; a value is a quoted string ('' and backslash escapes),
# or an unquoted token (identifier, number with unit, …)
_CONF_ID = r"[A-Za-z_\x80-\uffff][A-Za-z0-9_$\x80-\uffff]*"
_CONF_LINE = re.compile(rf"""\s*({_CONF_ID}(?:\.{_CONF_ID})?)
                            \s*=?\s*
                            ('(?:[^'\\\n]|\\.|'')*'|[^\s#']+)?
                            \s*(?:\#.*)?$""", re.X)
_ESCAPES = {"b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _deescape(quoted: str) -> str:
    """guc-file.l DeescapeQuotedString: strip the quotes, undo '' and backslash escapes."""
    s = quoted[1:-1]
    out = []
    i = 0
    while i < len(s):
        ch = s[i]
        if ch == "\\" and i + 1 < len(s):
            nxt = s[i + 1]
            if nxt in _ESCAPES:
                out.append(_ESCAPES[nxt])
                i += 2
            elif nxt in "01234567":
                m = re.match(r"[0-7]{1,3}", s[i + 1:])
                out.append(chr(int(m.group(0), 8)))
                i += 1 + len(m.group(0))
            else:
                out.append(nxt)
                i += 2
        elif ch == "'" and i + 1 < len(s) and s[i + 1] == "'":
            out.append("'")
            i += 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def parse_config_file(path: str, into: dict[str, tuple[str, str]], depth: int = 0, strict: bool = True) -> bool:
    """ParseConfigFile: ``name = value`` lines into ``into`` {lowercase name: (value, file)}, the
    last occurrence winning; ``include``, ``include_if_exists`` and ``include_dir`` followed
    (relative to the including file).  Returns False if the file does not exist and not ``strict``.
    """
    if depth > 10:
        raise CatalogError(f"{path}: configuration files nested too deeply (include loop?)")
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            lines = f.read().split("\n")
    except FileNotFoundError:
        if strict:
            raise CatalogError(f"configuration file {path} is missing") from None
        return False
    except OSError as e:
        raise CatalogError(f"cannot read configuration file {path}: {e.strerror}") from None
    here = os.path.dirname(path)
    for lineno, line in enumerate(lines, 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        m = _CONF_LINE.match(line)
        if not m or m.group(2) is None:
            raise CatalogError(f"{path}:{lineno}: syntax error in configuration file: {line.strip()!r}")
        name, value = m.group(1).lower(), m.group(2)
        if value.startswith("'"):
            value = _deescape(value)
        if name in ("include", "include_if_exists", "include_dir"):
            target = value if os.path.isabs(value) else os.path.join(here, value)
            if name == "include_dir":
                if os.path.isdir(target):
                    for entry in sorted(os.listdir(target)):
                        if entry.endswith(".conf") and not entry.startswith("."):
                            parse_config_file(os.path.join(target, entry), into, depth + 1)
            else:
                parse_config_file(target, into, depth + 1, strict=name == "include")
            continue
        into[name] = (value, path)
    return True


def _postmaster_opts(pgdata: str) -> list[tuple[str, str]]:
    """``-c name=value`` / ``--name=value`` options of the last start, from ``postmaster.opts``."""
    path = os.path.join(pgdata, "postmaster.opts")
    try:
        with open(path, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError:
        return []
    args = re.findall(r'"((?:[^"\\]|\\.)*)"|(\S+)', text)
    argv = [a or b for a, b in args][1:]
    out = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-c" and i + 1 < len(argv):
            a = "--" + argv[i + 1]
            i += 1
        if a.startswith("--") and "=" in a:
            name, _, value = a[2:].partition("=")
            out.append((name.replace("-", "_").lower(), value))
        i += 1
    return out


def _canonical_datestyle(value: str, base: str) -> str:
    """variable.c check_datestyle: the canonical "Style, Order" string (partial specs keep ``base``'s part)."""
    style, order = [p.strip() for p in base.split(",")]
    toks = split_identifier_string(value)
    if toks is None:
        return value
    for tok in toks:
        t = tok.lower()
        if t == "iso":
            style = "ISO"
        elif t == "sql":
            style = "SQL"
        elif t.startswith("postgres"):
            style = "Postgres"
        elif t == "german":
            style = "German"
            if not any(x.lower() in ("ymd", "dmy", "mdy", "us") or x.lower().startswith(("euro", "noneuro"))
                       for x in toks):
                order = "DMY"
        elif t == "ymd":
            order = "YMD"
        elif t == "dmy" or t.startswith("euro"):
            order = "DMY"
        elif t in ("mdy", "us") or t.startswith("noneuro"):
            order = "MDY"
        elif t == "default":
            style, order = "ISO", "MDY"
        else:
            return value  # the server would have rejected it
    return f"{style}, {order}"


_ENUM_SETTINGS = {
    "intervalstyle": ("postgres", "postgres_verbose", "sql_standard", "iso_8601"),
    "bytea_output": ("escape", "hex"),
}
_BOOL_TRUE = ("on", "true", "yes", "1")
_BOOL_FALSE = ("off", "false", "no", "0")

# catalog_dsn's setting names, with the names configuration files use (case-insensitive)
_SETTING_NAMES = {"timezone": "TimeZone", "datestyle": "DateStyle", "intervalstyle": "IntervalStyle",
                  "extra_float_digits": "extra_float_digits", "bytea_output": "bytea_output",
                  "lc_monetary": "lc_monetary", "search_path": "search_path",
                  "quote_all_identifiers": "quote_all_identifiers"}
# guc_tables.c boot values (what a setting is when nothing sets it)
_BOOT_VALUES = {"TimeZone": "GMT", "DateStyle": "ISO, MDY", "IntervalStyle": "postgres",
                "extra_float_digits": "1", "bytea_output": "hex", "lc_monetary": "C",
                "search_path": DEFAULT_SETTINGS["search_path"], "quote_all_identifiers": "off"}


def _normalise(name: str, value: str, previous: str) -> str:
    """The value as pg_settings.reset_val shows it (check hooks, enum and bool canonical names)."""
    key = name.lower()
    if key == "datestyle":
        return _canonical_datestyle(value, previous)
    if key in _ENUM_SETTINGS:
        v = value.strip().lower()
        return v if v in _ENUM_SETTINGS[key] else value
    if key == "extra_float_digits":
        try:
            return str(int(value.strip(), 0))
        except ValueError:
            return value
    if key == "quote_all_identifiers":
        v = value.strip().lower()
        if v and any(t.startswith(v) for t in _BOOL_TRUE) and v not in ("o",):
            return "on"
        if v and any(t.startswith(v) for t in _BOOL_FALSE) and v not in ("o",):
            return "off"
        return value
    return value


def read_settings(pgdata: str, db_settings: list[list[str]] = (), warn: Callable[[str], None] | None = None
                  ) -> dict[str, str]:
    """The settings output functions and format_type depend on, as a new session would start with them.

    Precedence, lowest first (guc.h GucSource): built-in defaults; ``postgresql.conf`` and
    ``postgresql.auto.conf`` (last occurrence wins, include directives followed); the command
    line of the last start (``postmaster.opts``, absent from base backups); then
    ``db_settings``: ``pg_db_role_setting.setconfig`` arrays in increasing precedence.
    """
    found: dict[str, tuple[str, str]] = {}
    conf = os.path.join(pgdata, "postgresql.conf")
    argv = _postmaster_opts(pgdata)
    for name, value in argv:
        if name == "config_file":
            conf = value
    if not parse_config_file(conf, found, strict=False) and warn is not None:
        warn(f"{conf} does not exist: settings take PostgreSQL's defaults unless set by ALTER SYSTEM, "
             "ALTER DATABASE or ALTER ROLE (was the configuration kept elsewhere, e.g. /etc/postgresql?)")
    parse_config_file(os.path.join(pgdata, "postgresql.auto.conf"), found, strict=False)
    layers = [[(name, value) for name, (value, _f) in found.items()], argv]
    for config in db_settings:
        layer = []
        for item in config or ():
            if item is None or "=" not in item:
                continue
            name, _, value = item.partition("=")
            layer.append((name.lower(), value))
        layers.append(layer)
    settings = dict(_BOOT_VALUES)
    for layer in layers:
        for name, value in layer:
            key = _SETTING_NAMES.get(name.lower())
            if key is not None:
                settings[key] = _normalise(key, value, settings[key])
    return settings


# -- format_type --------------------------------------------------------------------------------

class FormatType:
    """format_type(oid, NULL) as format_type.c format_type_extended prints it, with TypeIsVisible
    (namespace.c) over the search path the settings give."""

    def __init__(self, types: dict[int, dict], namespaces: dict[int, str], search_path: str, major: int,
                 quote_all: bool = False, user: str | None = None):
        self.types = types
        self.namespaces = namespaces
        self.major = major
        self.quote_all = quote_all
        by_name = {name: oid for oid, name in namespaces.items()}
        path = []
        for name in split_identifier_string(search_path) or []:
            if name == "$user":
                name = user
                if name is None:
                    continue
            elif name == "pg_temp":
                continue  # no temporary schema in a new session
            oid = by_name.get(name)
            if oid is not None and oid not in path:
                path.append(oid)
        if PG_CATALOG_NAMESPACE not in path:
            path.insert(0, PG_CATALOG_NAMESPACE)
        self.path = path
        self.type_names = {(t["typname"], t["typnamespace"]) for t in types.values()}

    def quote_identifier(self, ident: str) -> str:
        """ruleutils.c quote_identifier, honouring quote_all_identifiers."""
        return quote_identifier(ident, self.major, self.quote_all)

    def is_visible(self, typ: dict) -> bool:
        nsp = typ["typnamespace"]
        if nsp != PG_CATALOG_NAMESPACE and nsp not in self.path:
            return False
        for ns in self.path:
            if ns == nsp:
                return True
            if (typ["typname"], ns) in self.type_names:
                return False
        return False

    def __call__(self, oid: int) -> str:
        typ = self.types.get(oid)
        if typ is None:
            return "???" if oid else "-"
        is_array = False
        if self._is_true_array(typ) and typ["typstorage"] != "p":
            elem = self.types.get(typ["typelem"])
            if elem is None:
                return "???[]"
            typ, oid, is_array = elem, typ["typelem"], True
        buf = _FORMAT_TYPE_SPECIAL.get(oid)
        if buf is None and oid == JSONOID and self.major >= 17:
            buf = "json"
        if buf is None:
            name = self.quote_identifier(typ["typname"])
            if not self.is_visible(typ):
                name = self.quote_identifier(self.namespaces.get(typ["typnamespace"], "???")) + "." + name
            buf = name
        return buf + "[]" if is_array else buf

    def _is_true_array(self, typ: dict) -> bool:
        """IsTrueArrayType (14+: typsubscript is array_subscript_handler); 13: any typelem."""
        if not typ["typelem"]:
            return False
        if self.major >= 14:
            return typ.get("typsubscript") == F_ARRAY_SUBSCRIPT_HANDLER
        return True


# -- the snapshot -------------------------------------------------------------------------------

def _default_warn(message: str) -> None:
    warnings.warn(message, DatadirWarning, stacklevel=3)


def snapshot_from_datadir(pgdata, database: str | None = None, *, role: str | None = None,
                          warn: Callable[[str], None] | None = None) -> Catalog:
    """Build the catalog snapshot of ``database`` from the data directory ``pgdata``.

    ``database`` defaults to the only database that is neither a template nor ``postgres``.
    ``role`` names the session user: it resolves ``"$user"`` in search_path and adds that
    role's ``ALTER ROLE … SET`` settings (default: neither).  ``warn`` receives one-line
    warnings (a running server, an unclean state, a base backup, a missing postgresql.conf);
    by default they are issued as ``DatadirWarning``.  Raises ``CatalogError`` naming the
    file at fault.
    """
    pgdata = os.fspath(pgdata)
    warn = warn or _default_warn
    dd = _DataDir(pgdata, warn)
    _check_state(dd)
    major = dd.major

    datoid, datname, dattablespace, encoding = read_pg_database(dd, database)
    server_encoding = PG_ENCODING_NAMES[encoding] if 0 <= encoding < len(PG_ENCODING_NAMES) else str(encoding)
    dd.decoder = _Decoder(server_encoding)
    db = _Database(dd, datoid, datname, dattablespace)

    role_oid = read_pg_authid(dd, db.atts, role) if role is not None else None
    settings = read_settings(pgdata, read_pg_db_role_setting(dd, db.atts, datoid, role_oid), warn)
    settings["wal_level"] = WAL_LEVEL_NAMES.get(dd.control.wal_level, str(dd.control.wal_level))
    settings["server_encoding"] = server_encoding

    namespaces = dict(dd.rows(db.unmapped("pg_namespace", NamespaceRelationId), ("oid", "nspname")))
    type_rows = db.read_pg_type()
    fmt = FormatType(type_rows, namespaces, settings["search_path"], major,
                     settings["quote_all_identifiers"] == "on", role)
    types = db.type_infos(type_rows, namespaces, fmt)
    relations = db.relations(namespaces, fmt, types)

    def make(rels: dict) -> Catalog:
        return Catalog(server_version=str(major), server_version_num=major * 10000, major=major,
                       lsn=dd.control.checkPoint, database=datname, database_oid=datoid,
                       database_tablespace=dattablespace, settings=settings, relations=rels, types=types,
                       namespaces=dict(namespaces))

    if db.missing:
        relations = _with_missing_values(make(relations), db.missing, db.atts.table.path)
    catalog = make(relations)
    catalog.catalog_pages, catalog.catalog_pages_note = db.catalog_pages(dd.control.checkPoint)
    return catalog


def read_pg_database(dd: _DataDir, wanted: str | None) -> tuple[int, str, int, int]:
    """(oid, datname, dattablespace, encoding) of the chosen database, from the shared pg_database.

    pg_database's layout comes from the pg_attribute of template1 (or of any database).
    """
    boot_dir = _bootstrap_database_dir(dd)
    atts = dd.read_pg_attribute(boot_dir, read_relmap_file(os.path.join(boot_dir, RELMAPPER_FILENAME), dd.major))
    table = _shared_table(dd, atts, "pg_database", DatabaseRelationId)
    rows = list(dd.rows(table, ("oid", "datname", "dattablespace", "encoding", "datistemplate", "datconnlimit")))
    dd.attribute_cache[boot_dir] = atts
    return _choose_database(rows, wanted, dd.pgdata)[:4]


def read_pg_authid(dd: _DataDir, atts: _AttributeRows, role: str) -> int:
    """The OID of role ``role`` (shared pg_authid)."""
    table = _shared_table(dd, atts, "pg_authid", AuthIdRelationId)
    roles = {name: oid for oid, name in dd.rows(table, ("oid", "rolname"))}
    if role not in roles:
        raise CatalogError(f"role {role!r} does not exist in {table.path} (roles: {', '.join(sorted(roles))})")
    return roles[role]


class _Database:
    """The catalogs of one database: its mapper file, pg_attribute and pg_class, then the rest."""

    def __init__(self, dd: _DataDir, datoid: int, datname: str, dattablespace: int):
        self.dd = dd
        self.datoid = datoid
        self.dattablespace = dattablespace
        self.dir = dd.database_path(datoid, dattablespace)
        if not os.path.isdir(self.dir):
            raise CatalogError(f"{self.dir}: directory of database {datname!r} (OID {datoid}) is missing")
        self.local_map = read_relmap_file(os.path.join(self.dir, RELMAPPER_FILENAME), dd.major)
        self.atts = dd.attribute_cache.get(self.dir) or dd.read_pg_attribute(self.dir, self.local_map)
        self.pg_class = self.mapped("pg_class", RelationRelationId)
        self.classes = _unique(dd.rows(self.pg_class, _PG_CLASS_COLUMNS), self.pg_class)
        self.missing: list[tuple[int, int, object]] = []  # (relid, attnum, attmissingval array payload)

    def mapped(self, name: str, oid: int) -> _CatalogTable:
        """A catalog whose relfilenode is in the database's pg_filenode.map."""
        if oid not in self.local_map:
            raise CatalogError(f"{self.dir}/{RELMAPPER_FILENAME} has no entry for {name} (OID {oid})")
        return _CatalogTable(name, oid, self.atts.layout(oid, name), os.path.join(self.dir, str(self.local_map[oid])))

    def unmapped(self, name: str, oid: int) -> _CatalogTable:
        """A catalog whose relfilenode is in its pg_class row (pg_namespace, pg_index, pg_enum …)."""
        row = self.classes.get(oid)
        if row is None or not row[5]:
            raise CatalogError(f"{self.pg_class.path}: no pg_class row with a relfilenode for {name} (OID {oid})")
        spc = row[6] or self.dattablespace
        return _CatalogTable(name, oid, self.atts.layout(oid, name),
                             os.path.join(self.dd.database_path(self.datoid, spc), str(row[5])))

    def catalog_pages(self, checkpoint: int) -> tuple[dict[int, CatalogPages], str]:
        """The visible tuples of every tracked catalog by block (``Catalog.catalog_pages``), and a note
        on the pages left out.

        A page whose pd_lsn lies after the checkpoint the snapshot stands for (written after it,
        before a crash or while a base backup was copied) is left out: it may already hold
        changes of WAL records the decoder will read, which could not be redone on it.
        """
        out = {}
        notes = []
        for oid, name in TRACKED_CATALOGS.items():
            table = self.mapped(name, oid) if oid in self.local_map else self.unmapped(name, oid)
            scan = self.dd.scan(table.path)
            blocks = {}
            later = 0
            for path, blkno, page in scan.pages():
                if page_lsn(page) > checkpoint:
                    later += 1
                    continue
                blocks[blkno] = [(t.offnum, page[t.lp_off:t.lp_off + t.lp_len])
                                 for t in scan.visible(page, path, blkno)]
            out[oid] = CatalogPages(oid, int(os.path.basename(table.path)), "datadir", blocks)
            if later:
                notes.append(f"{later} pages of {name} in {table.path} were written after the checkpoint at "
                             f"{format_lsn(checkpoint)} and are left out")
        return out, "; ".join(notes)

    def read_pg_type(self) -> dict[int, dict]:
        """pg_type rows by OID, as dicts of the columns TypeInfo and format_type need."""
        cols = _PG_TYPE_COLUMNS + (("typsubscript",) if self.dd.major >= 14 else ())
        table = self.mapped("pg_type", TypeRelationId)
        return {oid: dict(zip(cols, r)) for oid, r in _unique(self.dd.rows(table, cols), table).items()}

    def read_pg_range(self) -> dict[int, int]:
        """{range type OID: rngsubtype}, and (14+) {multirange type OID: its range's rngsubtype}."""
        multirange = self.dd.major >= 14
        cols = ("rngtypid", "rngsubtype") + (("rngmultitypid",) if multirange else ())
        subtypes: dict[int, int] = {}
        for r in self.dd.rows(self.unmapped("pg_range", RangeRelationId), cols):
            subtypes.setdefault(r[0], r[1])
            if multirange and r[2]:
                subtypes.setdefault(r[2], r[1])
        return subtypes

    def read_pg_enum(self) -> dict[int, dict[int, str]]:
        """{enum type OID: {label OID: label}} in enumsortorder."""
        labels: dict[int, list] = {}
        for oid, typid, order, label in self.dd.rows(self.unmapped("pg_enum", EnumRelationId),
                                                     ("oid", "enumtypid", "enumsortorder", "enumlabel")):
            labels.setdefault(typid, []).append((order, oid, label))
        return {typid: {o: lbl for _order, o, lbl in sorted(items)} for typid, items in labels.items()}

    def read_pg_proc(self) -> dict[int, tuple[str, int]]:
        """{function OID: (proname, pronamespace)}."""
        table = self.mapped("pg_proc", ProcedureRelationId)
        return {oid: (name, nsp) for oid, name, nsp in self.dd.rows(table, ("oid", "proname", "pronamespace"))}

    def read_pg_index(self) -> dict[int, list[dict]]:
        """pg_index rows by indrelid, with what the replica identity rule looks at."""
        indexes: dict[int, list] = {}
        for r in self.dd.rows(self.unmapped("pg_index", IndexRelationId), _PG_INDEX_COLUMNS):
            indexes.setdefault(r[1], []).append(dict(zip(_PG_INDEX_COLUMNS, r)))
        return indexes

    def type_infos(self, type_rows: dict, namespaces: dict, fmt: FormatType) -> dict[int, TypeInfo]:
        """Every pg_type row as a TypeInfo (catalog_dsn's _Q_TYPES and _Q_ENUMS)."""
        procs = self.read_pg_proc()
        subtypes = self.read_pg_range()
        labels = self.read_pg_enum()
        types = {}
        for oid, t in type_rows.items():
            proc = procs.get(t["typoutput"])
            if proc is None:
                typoutput = ""
            elif proc[1] == PG_CATALOG_NAMESPACE:
                typoutput = proc[0]
            else:  # quote_ident(nspname) || '.' || quote_ident(proname)
                typoutput = fmt.quote_identifier(namespaces.get(proc[1], "???")) + "." + fmt.quote_identifier(proc[0])
            types[oid] = TypeInfo(
                oid=oid, typname=t["typname"], nspname=namespaces.get(t["typnamespace"], ""), typlen=t["typlen"],
                typbyval=t["typbyval"], typalign=t["typalign"], typstorage=t["typstorage"], typtype=t["typtype"],
                typcategory=t["typcategory"], typdelim=t["typdelim"], typelem=t["typelem"], typarray=t["typarray"],
                typbasetype=t["typbasetype"], typtypmod=t["typtypmod"], typrelid=t["typrelid"],
                typoutput=typoutput, format_type=fmt(oid), rngsubtype=subtypes.get(oid, 0),
                enum_labels=labels.get(oid, {}))
        return types

    def relations(self, namespaces: dict, fmt: FormatType, types: dict) -> dict[int, Relation]:
        """pg_class rows of the snapshot's relkinds, with their columns and replica identity key,
        plus the views whose row type a column needs (catalog_dsn's _Q_RELATIONS, _Q_ATTRIBUTES)."""
        indexes = self.read_pg_index()
        relations: dict[int, Relation] = {}
        views: dict[int, Relation] = {}
        for oid, row in self.classes.items():
            (_, relname, relnamespace, relkind, relpersistence, relfilenode, reltablespace, relreplident,
             reltoastrelid, relrewrite, relispartition, relisshared) = row
            if relkind not in _RELKINDS and relkind != _RELKIND_VIEW:
                continue
            if not relfilenode and relkind in _RELKINDS_WITH_STORAGE:  # pg_relation_filenode(): the mapper
                relfilenode = (self.dd.shared_map if relisshared else self.local_map).get(oid, 0)
            rel = Relation(
                oid=oid, relname=relname, nspname=namespaces.get(relnamespace, ""), relkind=relkind,
                relpersistence=relpersistence, relfilenode=relfilenode, reltablespace=reltablespace,
                relreplident=relreplident, reltoastrelid=reltoastrelid, relrewrite=relrewrite,
                replica_identity_key=_identity_key(relreplident, indexes.get(oid, ())),
                relispartition=relispartition, attributes=self.attributes(oid, fmt))
            (views if relkind == _RELKIND_VIEW else relations)[oid] = rel
        from .catalog_dsn import _views_needed  # the same rule as catalog_dsn

        for oid in _views_needed(relations, views, types):
            relations[oid] = views[oid]
        return relations

    def attributes(self, relid: int, fmt: FormatType) -> tuple[Attribute, ...]:
        """The user columns of a relation, dropped ones included; missing values noted for later."""
        atts = self.atts
        out = []
        for values, tup in atts.rows.get(relid, ()):
            attnum = atts.value(values, "attnum")
            if attnum <= 0:
                continue
            dropped = atts.value(values, "attisdropped")
            hasmissing = atts.value(values, "atthasmissing")
            typid = atts.value(values, "atttypid")
            out.append(Attribute(
                attnum=attnum, attname=atts.value(values, "attname"), atttypid=typid,
                atttypmod=atts.value(values, "atttypmod"), attlen=atts.value(values, "attlen"),
                attbyval=atts.value(values, "attbyval"), attalign=atts.value(values, "attalign"),
                attstorage=atts.value(values, "attstorage"), attisdropped=dropped,
                attnotnull=atts.value(values, "attnotnull"), atthasmissing=hasmissing, attmissingval=None,
                attgenerated=atts.value(values, "attgenerated"), type_name="" if dropped else fmt(typid)))
            if hasmissing and not dropped:
                self.missing.append((relid, attnum, atts.missing_value_raw(values, tup)))
        out.sort(key=lambda a: a.attnum)
        return tuple(out)


_PG_CLASS_COLUMNS = ("oid", "relname", "relnamespace", "relkind", "relpersistence", "relfilenode", "reltablespace",
                     "relreplident", "reltoastrelid", "relrewrite", "relispartition", "relisshared")
_PG_TYPE_COLUMNS = ("oid", "typname", "typnamespace", "typlen", "typbyval", "typalign", "typstorage", "typtype",
                    "typcategory", "typdelim", "typelem", "typarray", "typbasetype", "typtypmod", "typrelid",
                    "typoutput")
_PG_INDEX_COLUMNS = ("indexrelid", "indrelid", "indnkeyatts", "indisunique", "indisprimary", "indimmediate",
                     "indisvalid", "indislive", "indisreplident", "indkey", "indpred")


def _unique(rows: Iterator[tuple], table: _CatalogTable) -> dict:
    """{first column (the OID): row}; two visible rows with one OID mean visibility went wrong."""
    out = {}
    for r in rows:
        if r[0] in out:
            raise CatalogError(f"{table.path}: two visible versions of the {table.name} row with OID {r[0]}: "
                               "damaged hint bits, pg_xact or pg_multixact")
        out[r[0]] = r
    return out


def _check_state(dd: _DataDir) -> None:
    """Warnings, not errors: a running server (postmaster.pid), an unclean or backup state."""
    pid_file = os.path.join(dd.pgdata, "postmaster.pid")
    if os.path.exists(pid_file):
        dd.warn(f"{pid_file} exists: a server may be running on this data directory (or it crashed); "
                "files being written can be inconsistent; the snapshot holds what they hold now")
    ctl = dd.control
    where = f"{dd.pgdata}/global/pg_control"
    if os.path.exists(os.path.join(dd.pgdata, "backup_label")):
        dd.warn(f"{dd.pgdata} is a base backup (backup_label): catalog files are as copied, consistent only "
                f"up to the last checkpoint {format_lsn(ctl.checkPoint)} plus whatever was copied later")
    elif ctl.state not in (DB_SHUTDOWNED, DB_SHUTDOWNED_IN_RECOVERY):
        dd.warn(f"{where}: cluster state is {ctl.state_name!r}, not shut down cleanly: the snapshot is the "
                f"catalog files as of the last checkpoint ({format_lsn(ctl.checkPoint)}, redo "
                f"{format_lsn(ctl.checkPointCopy.redo)}); later catalog changes may sit only in WAL")


def _bootstrap_database_dir(dd: _DataDir) -> str:
    """A database directory whose pg_attribute describes the shared catalogs: template1's, else any."""
    base = os.path.join(dd.pgdata, "base")
    first = os.path.join(base, str(Template1DbOid))
    if os.path.exists(os.path.join(first, RELMAPPER_FILENAME)):
        return first
    try:
        entries = sorted((int(e) for e in os.listdir(base) if e.isdigit()))
    except OSError as e:
        raise CatalogError(f"cannot list {base}: {e.strerror}") from None
    for oid in entries:
        path = os.path.join(base, str(oid))
        if os.path.exists(os.path.join(path, RELMAPPER_FILENAME)):
            return path
    raise CatalogError(f"{base}: no database directory with a {RELMAPPER_FILENAME}")


def _shared_table(dd: _DataDir, atts: _AttributeRows, name: str, oid: int) -> _CatalogTable:
    path = os.path.join(dd.pgdata, "global")
    if oid not in dd.shared_map:
        raise CatalogError(f"{path}/{RELMAPPER_FILENAME} has no entry for {name} (OID {oid})")
    return _CatalogTable(name, oid, atts.layout(oid, name), os.path.join(path, str(dd.shared_map[oid])))


def _choose_database(databases: list[tuple], wanted: str | None, pgdata: str) -> tuple:
    usable = [d for d in databases if d[5] != DATCONNLIMIT_INVALID_DB]
    if wanted is not None:
        for d in usable:
            if d[1] == wanted:
                return d
        raise CatalogError(f"{pgdata}: no database {wanted!r} (databases: "
                           f"{', '.join(sorted(d[1] for d in usable))})")
    candidates = [d for d in usable if not d[4] and d[1] != "postgres"]
    if len(candidates) == 1:
        return candidates[0]
    names = ", ".join(sorted(d[1] for d in usable))
    if not candidates:
        raise CatalogError(f"{pgdata}: no database other than templates and postgres; name one with "
                           f"--database (databases: {names})")
    raise CatalogError(f"{pgdata}: {len(candidates)} user databases; name one with --database "
                       f"(databases: {names})")


def read_pg_db_role_setting(dd: _DataDir, atts: _AttributeRows, datoid: int, role_oid: int | None) -> list:
    """pg_db_role_setting.setconfig arrays in increasing precedence (postinit.c process_settings):
    (0, 0) ALTER ROLE ALL, (db, 0) ALTER DATABASE, (0, role), (db, role)."""
    if DbRoleSettingRelationId not in dd.shared_map:
        return []
    table = _shared_table(dd, atts, "pg_db_role_setting", DbRoleSettingRelationId)
    found = {}
    for setdatabase, setrole, raw in dd.rows(table, ("setdatabase", "setrole", "setconfig")):
        if isinstance(raw, ToastPointer):  # stored in pg_db_role_setting's TOAST table
            raw = dd.decoder.convert(_TEXTARRAYOID, fetch_toast_value(dd, raw, dd.shared_map,
                                                                      os.path.join(dd.pgdata, "global")))
        found[(setdatabase, setrole)] = raw
    order = [(0, 0), (datoid, 0)]
    if role_oid is not None:
        order += [(0, role_oid), (datoid, role_oid)]
    return [found[k] for k in order if k in found]


# TOAST tables (toasting.c create_toast_table): chunk_id oid, chunk_seq int4, chunk_data bytea
_TOAST_LAYOUT = (
    Attribute(attnum=1, attname="chunk_id", atttypid=_OIDOID, atttypmod=-1, attlen=4, attbyval=True,
              attalign="i", attstorage="p", attisdropped=False),
    Attribute(attnum=2, attname="chunk_seq", atttypid=INT4OID, atttypmod=-1, attlen=4, attbyval=True,
              attalign="i", attstorage="p", attisdropped=False),
    Attribute(attnum=3, attname="chunk_data", atttypid=17, atttypmod=-1, attlen=-1, attbyval=False,
              attalign="i", attstorage="p", attisdropped=False),
)


def fetch_toast_value(dd: _DataDir, pointer: ToastPointer, relmap: dict[int, int], directory: str) -> bytes:
    """detoast.c toast_fetch_datum for a catalog: the value's chunks from its (mapped) TOAST table."""
    if pointer.va_toastrelid not in relmap:
        raise CatalogError(f"{directory}/{RELMAPPER_FILENAME}: TOAST table {pointer.va_toastrelid} of a catalog "
                           "value is not mapped")
    table = _CatalogTable(f"pg_toast_{pointer.va_toastrelid}", pointer.va_toastrelid, _TOAST_LAYOUT,
                          os.path.join(directory, str(relmap[pointer.va_toastrelid])))
    chunks = {}
    for chunk_id, seq, data in dd.rows(table, ("chunk_id", "chunk_seq", "chunk_data")):
        if chunk_id == pointer.va_valueid:
            chunks[seq] = data
    if sorted(chunks) != list(range(len(chunks))):
        raise CatalogError(f"{table.path}: TOAST value {pointer.va_valueid} has chunks {sorted(chunks)}")
    try:
        return decompress_toast_value(b"".join(chunks[i] for i in range(len(chunks))), pointer)
    except (CorruptRecordError, DecompressionError) as e:
        raise CatalogError(f"{table.path}: {getattr(e, 'reason', e)}") from None


def _identity_key(relreplident: str, indexes: list[dict]) -> tuple:
    """catalog_dsn's rule (relcache.c RelationGetIndexList): the lowest-OID index that is live, valid,
    unique, immediate, non-partial and primary (DEFAULT) or indisreplident (USING INDEX)."""
    if relreplident == "d":
        flag = "indisprimary"
    elif relreplident == "i":
        flag = "indisreplident"
    else:
        return ()
    for ind in sorted(indexes, key=lambda i: i["indexrelid"]):
        if (ind["indislive"] and ind["indisvalid"] and ind["indisunique"] and ind["indimmediate"]
                and ind["indpred"] is None and ind[flag]):
            return tuple(ind["indkey"][:ind["indnkeyatts"]])
    return ()


def _with_missing_values(catalog: Catalog, missing: list, where: str) -> dict:
    """The relations with ``attmissingval`` filled in: the output text of the one element of the
    anyarray, printed with the snapshot's settings (and its types, for enums and records)."""
    from .types import TypeOutputError, output_text
    from .types.arrays import deconstruct

    class _Ctx:
        def type(self, oid):
            t = catalog.type(oid)
            if t is None:
                raise CatalogError(f"{where}: attmissingval element type {oid} is not in pg_type")
            return t

    texts: dict[int, dict[int, str | None]] = {}
    for relid, attnum, raw in missing:
        what = f"{where}: attmissingval of column {attnum} of relation {relid}"
        if raw is None:
            continue  # atthasmissing without a value: nothing to add (catalog_dsn reads NULL too)
        if isinstance(raw, ToastPointer):
            raise CatalogError(f"{what} is stored out of line, but pg_attribute has no TOAST table")
        try:
            elemtype, _dims, _lb, items = deconstruct(raw, _Ctx())
            if len(items) != 1:
                raise CatalogError(f"{what}: array of {len(items)} elements, expected 1")
            value = items[0]
            texts.setdefault(relid, {})[attnum] = None if value is None else \
                output_text(elemtype, value, catalog, catalog.settings)
        except (CorruptRecordError, DecompressionError, TypeOutputError) as e:
            raise CatalogError(f"{what}: {getattr(e, 'reason', e)}") from None
    relations = dict(catalog.relations)
    for relid, by_attnum in texts.items():
        rel = relations.get(relid)
        if rel is None:
            continue
        attrs = tuple(a if a.attnum not in by_attnum else replace(a, attmissingval=by_attnum[a.attnum])
                      for a in rel.attributes)
        relations[relid] = replace(rel, attributes=attrs)
    return relations


# -- command ------------------------------------------------------------------------------------

def main_catalog_datadir(pgdata, database: str | None, output_path: str | None, prog: str = "waldecode") -> int:
    """``waldecode catalog --datadir PGDATA [--database NAME] -o FILE``: write the snapshot; the exit code.

    Errors are one line on stderr naming the file (exit 1); warnings (a server may be running,
    the cluster was not shut down cleanly, a base backup) are one line each, and the snapshot
    is still written.  ``output_path`` None or ``-`` writes to stdout.
    """
    def warn(message: str) -> None:
        print(f"{prog}: warning: {message}", file=sys.stderr)

    try:
        cat = snapshot_from_datadir(pgdata, database, warn=warn)
    except CatalogError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 1
    return write_snapshot_file(cat, output_path, prog, f"the last start of {pgdata}")
