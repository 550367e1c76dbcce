"""Where redo of a base backup starts and what the transaction counters were there: ``backup_label``.

Owns xlogrecovery.c read_backup_label's reading of the file a base backup carries (xlogbackup.c
build_backup_content writes it: ``START WAL LOCATION``, ``CHECKPOINT LOCATION``, ``BACKUP METHOD``,
``BACKUP FROM``, ``START TIME``, ``LABEL``, ``START TIMELINE``, and in 17+ ``INCREMENTAL FROM LSN`` /
``INCREMENTAL FROM TLI``), the checkpoint record it points at (pg_control.h CheckPoint: the
nextXid, nextMulti, nextMultiOffset, oldestXid and oldestMulti that were in force at the redo point),
and the XLOG_BACKUP_END record whose replay makes the backup consistent (xlogrecovery.c
xlogrecovery_redo / xlog_redo: its startpoint is the label's START WAL LOCATION).  Hands the redo
start and those counters to the transaction-status readers (``clog``, ``multixact``) and the redo.

A backup's ``global/pg_control`` is copied last (basebackup.c), so its checkpoint may be later than
the label's; recovery, and this module, take the label's.
"""

from __future__ import annotations

import re
from typing import Iterable, NamedTuple

from ..catalog.datadir.files import data_files
from ..errors import CatalogError, CorruptRecordError, WALError, format_lsn
from ..pg.lsn import parse_lsn
from ..rmgr import RM_XLOG_ID
from ..rmgr.xlog import XLOG_BACKUP_END, XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN, CheckPoint, uint64

__all__ = ["BackupLabel", "RedoCheckpoint", "backup_end_lsn", "read_backup_label", "redo_checkpoint"]

# src/include/access/xlog.h: BACKUP_LABEL_FILE
BACKUP_LABEL_FILE = "backup_label"

# xlogrecovery.c read_backup_label: "START WAL LOCATION: %X/%X (file %08X%16s)%c" and so on
_START_RE = re.compile(r"^START WAL LOCATION: ([0-9A-F]+/[0-9A-F]+) \(file ([0-9A-F]{24})\)$", re.M)
_CHECKPOINT_RE = re.compile(r"^CHECKPOINT LOCATION: ([0-9A-F]+/[0-9A-F]+)$", re.M)
_FIELD_RE = re.compile(r"^(BACKUP METHOD|BACKUP FROM|START TIME|LABEL|START TIMELINE|INCREMENTAL FROM LSN|"
                       r"INCREMENTAL FROM TLI): (.*)$", re.M)


class BackupLabel(NamedTuple):
    """A base backup's ``backup_label``; LSNs as integers, the rest as the file writes them."""

    path: str
    start_lsn: int  # START WAL LOCATION: where redo starts (the checkpoint's redo point)
    start_wal_file: str  # the segment holding it
    checkpoint_lsn: int  # CHECKPOINT LOCATION: the checkpoint record
    backup_method: str  # "streamed" or "pg_start_backup"
    backup_from: str  # "primary" or "standby"
    start_time: str
    label: str
    start_timeline: int  # 0 when the file does not say (written by 11+)
    incremental: bool  # 17+: an incremental backup, which needs pg_combinebackup first


class RedoCheckpoint(NamedTuple):
    """The counters of the checkpoint a backup's redo starts from (pg_control.h CheckPoint)."""

    lsn: int  # the checkpoint record
    redo: int
    timeline: int
    next_xid: int  # FullTransactionId: epoch << 32 | xid
    next_multi: int
    next_multi_offset: int
    oldest_xid: int
    oldest_multi: int
    oldest_active_xid: int

    @property
    def next_xid32(self) -> int:
        return self.next_xid & 0xFFFFFFFF


def read_backup_label(pgdata) -> BackupLabel:
    """``backup_label`` of a base backup (``pgdata``: a path or a ``DataFiles``); ``CatalogError`` naming
    the file when it is missing (a data directory, not a backup) or does not read as PostgreSQL writes it."""
    files = data_files(pgdata)
    path = files.path(BACKUP_LABEL_FILE)
    try:
        text = files.read(path).decode("utf-8", errors="replace")
    except FileNotFoundError:
        raise CatalogError(f"{files.root}: no {BACKUP_LABEL_FILE}: not a base backup (a stopped data "
                           f"directory needs no redo from a backup's start)") from None
    except OSError as e:
        raise CatalogError(f"cannot read {path}: {e.strerror}") from None
    start = _START_RE.search(text)
    checkpoint = _CHECKPOINT_RE.search(text)
    if start is None or checkpoint is None:
        # xlogrecovery.c: "invalid data in file \"%s\""
        missing = "START WAL LOCATION" if start is None else "CHECKPOINT LOCATION"
        raise CatalogError(f"invalid data in file {path}: no {missing} line")
    fields = {k: v.strip() for k, v in _FIELD_RE.findall(text)}
    timeline = fields.get("START TIMELINE", "0")
    if not timeline.isdigit():
        raise CatalogError(f"invalid data in file {path}: START TIMELINE {timeline!r}")
    label = BackupLabel(path, parse_lsn(start.group(1)), start.group(2), parse_lsn(checkpoint.group(1)),
                        fields.get("BACKUP METHOD", "pg_start_backup"), fields.get("BACKUP FROM", "primary"),
                        fields.get("START TIME", ""), fields.get("LABEL", ""), int(timeline),
                        "INCREMENTAL FROM LSN" in fields)
    if label.start_timeline and int(label.start_wal_file[:8], 16) != label.start_timeline:
        raise CatalogError(f"invalid data in file {path}: START WAL LOCATION's file {label.start_wal_file} is not "
                           f"on START TIMELINE {label.start_timeline}")
    return label


def redo_checkpoint(label: BackupLabel, records: Iterable) -> RedoCheckpoint:
    """The checkpoint record at the label's CHECKPOINT LOCATION among ``records`` (decoded records in
    LSN order, e.g. an ``XLogReader`` from the label's start): its counters, checked to have its redo
    point at the label's START WAL LOCATION (xlogrecovery.c InitWalRecovery: "could not locate required
    checkpoint record" when it is not there)."""
    for rec in records:
        if rec.lsn < label.checkpoint_lsn:
            continue
        if rec.lsn != label.checkpoint_lsn:
            break
        info = rec.xl_info & 0xF0
        if rec.xl_rmid != RM_XLOG_ID or info not in (XLOG_CHECKPOINT_ONLINE, XLOG_CHECKPOINT_SHUTDOWN):
            raise CorruptRecordError(f"the record at {label.path}'s CHECKPOINT LOCATION is not a checkpoint "
                                     f"(rmgr {rec.xl_rmid}, info 0x{rec.xl_info:02X})", lsn=rec.lsn)
        if len(rec.main_data) < CheckPoint.size:
            raise CorruptRecordError(f"checkpoint record of {len(rec.main_data)} bytes, fewer than "
                                     f"{CheckPoint.size}", lsn=rec.lsn)
        (redo, tli, _prev_tli, _fpw, _wal_level, next_xid, _next_oid, next_multi, next_multi_offset, oldest_xid,
         _oldest_xid_db, oldest_multi, _oldest_multi_db, _time, _oldest_cts, _newest_cts,
         oldest_active_xid) = CheckPoint.unpack_from(rec.main_data)
        if redo != label.start_lsn:
            raise CorruptRecordError(f"the checkpoint at {label.path}'s CHECKPOINT LOCATION has its redo point "
                                     f"at {format_lsn(redo)}, not at START WAL LOCATION "
                                     f"{format_lsn(label.start_lsn)}", lsn=rec.lsn)
        return RedoCheckpoint(rec.lsn, redo, tli, next_xid, next_multi, next_multi_offset, oldest_xid,
                              oldest_multi, oldest_active_xid)
    raise WALError(f"could not locate required checkpoint record at {format_lsn(label.checkpoint_lsn)} "
                   f"({label.path}'s CHECKPOINT LOCATION) in the WAL given")


def backup_end_lsn(label: BackupLabel, rec) -> int | None:
    """The end of ``rec`` when it is the XLOG_BACKUP_END record of this backup (its startpoint is the
    label's START WAL LOCATION): replaying it makes the backup consistent.  None for any other record."""
    if rec.xl_rmid != RM_XLOG_ID or rec.xl_info & 0xF0 != XLOG_BACKUP_END or len(rec.main_data) < uint64.size:
        return None
    return rec.end_lsn if uint64.unpack_from(rec.main_data)[0] == label.start_lsn else None
