"""replica.scan_start: how the WAL's wal_level and a replica-level read's start are told, on WAL made by walgen.

The records that tell: a commit without invalidations names its database at logical level only
(xact.c XactLogCommitRecord), a parameter-change record sets the level, a 17+ checkpoint says it; a
commit with invalidations tells nothing.  Below logical, reading begins at the redo point of the first
checkpoint whose redo point is at or after the first record read.  A read whose first telling record
says logical goes on LOGICAL_LOOKAHEAD bytes for one that says replica (a restart at another level).
"""

from __future__ import annotations

import struct

import pytest
from walgen import Block, Record, write_wal

from waldecode.logical import replica
from waldecode.rmgr import RM_HEAP_ID, RM_XACT_ID, RM_XLOG_ID
from waldecode.rmgr import heap as rm_heap
from waldecode.rmgr import xact as rm_xact
from waldecode.rmgr.xlog import (WAL_LEVEL_LOGICAL, WAL_LEVEL_REPLICA, XLOG_CHECKPOINT_ONLINE, XLOG_NOOP,
                                 XLOG_PARAMETER_CHANGE, CheckPoint, xl_parameter_change)
from waldecode.wal.segments import discover

START = 0x1000000  # the records begin in the second 16 MB segment (before them: NOOPs)
REDO = START + 0x40  # a redo point after the first record (which follows the 40-byte long page header)


def commit(xid: int, *, dbinfo: bool, invals: int = 0) -> Record:
    """An XLOG_XACT_COMMIT as XactLogCommitRecord writes it: xact_time, then xinfo, dbinfo, invalidations."""
    xinfo = (rm_xact.XACT_XINFO_HAS_DBINFO if dbinfo else 0) | (rm_xact.XACT_XINFO_HAS_INVALS if invals else 0)
    main = struct.pack("<q", 0)
    if xinfo:
        main += struct.pack("<I", xinfo)
    if dbinfo:
        main += struct.pack("<II", 5, 1663)
    if invals:
        main += struct.pack("<i", invals) + bytes(16 * invals)
    return Record(RM_XACT_ID, rm_xact.XLOG_XACT_COMMIT | (rm_xact.XLOG_XACT_HAS_INFO if xinfo else 0), xid=xid,
                  main_data=main)


def parameter_change(level: int) -> Record:
    return Record(RM_XLOG_ID, XLOG_PARAMETER_CHANGE, main_data=xl_parameter_change.pack(100, 8, 10, 0, 64, level, 0, 0))


def checkpoint(redo: int, fpw: bool = True) -> Record:
    return Record(RM_XLOG_ID, XLOG_CHECKPOINT_ONLINE,
                  main_data=CheckPoint.pack(redo, 1, 1, fpw, 0, 740, 16384, 1, 0, 700, 1, 1, 1, 0, 0, 0, 0))


def scan(tmp_path, records, read_from=None):
    w = write_wal(tmp_path, [Record(RM_XLOG_ID, XLOG_NOOP, main_data=b"first"), *records], start_lsn=START)
    return replica.scan_start(discover([tmp_path]), read_from), w


def test_replica_commit_then_checkpoint(tmp_path):
    start, w = scan(tmp_path, [commit(740, dbinfo=False), checkpoint(REDO)])
    assert (start.wal_level, start.replica) == (WAL_LEVEL_REPLICA, True)
    assert "does not name its database" in start.evidence and start.evidence_lsn == w.records[1].lsn
    assert (start.redo_lsn, start.checkpoint_lsn, start.full_page_writes) == (REDO, w.records[2].lsn, True)


def test_commit_with_invalidations_tells_nothing(tmp_path):
    start, _w = scan(tmp_path, [commit(740, dbinfo=True, invals=2), checkpoint(REDO)])
    assert start.wal_level is None and not start.replica


def test_logical_commit(tmp_path):
    start, _w = scan(tmp_path, [commit(740, dbinfo=True), checkpoint(REDO), commit(741, dbinfo=True)])
    assert (start.wal_level, start.replica) == (WAL_LEVEL_LOGICAL, False)
    assert "names its database" in start.evidence


def test_any_replica_record_within_the_lookahead_wins(tmp_path):
    """A logical-level commit, then a replica-level one: the pages serve both, the logical decoder only one."""
    start, _w = scan(tmp_path, [commit(740, dbinfo=True), commit(741, dbinfo=False), checkpoint(REDO)])
    assert start.wal_level == WAL_LEVEL_REPLICA and start.redo_lsn == REDO


def test_logical_then_restart_at_replica_within_the_lookahead(tmp_path):
    start, w = scan(tmp_path, [commit(740, dbinfo=True), checkpoint(REDO, fpw=False),
                               parameter_change(WAL_LEVEL_REPLICA), commit(741, dbinfo=False)])
    assert start.wal_level == WAL_LEVEL_REPLICA and start.evidence_lsn == w.records[3].lsn
    assert start.full_page_writes is False


def test_logical_then_replica_past_the_lookahead(tmp_path, monkeypatch):
    """Past the lookahead the scan has stopped at logical (the logical decoder then stops at the change)."""
    monkeypatch.setattr(replica, "LOGICAL_LOOKAHEAD", 64)
    filler = [Record(RM_XLOG_ID, XLOG_NOOP, main_data=bytes(100))]
    start, _w = scan(tmp_path, [commit(740, dbinfo=True), *filler, parameter_change(WAL_LEVEL_REPLICA),
                                checkpoint(REDO)])
    assert start.wal_level == WAL_LEVEL_LOGICAL and not start.replica


def test_checkpoint_before_the_first_record_is_not_a_start(tmp_path):
    """A checkpoint whose redo point lies before the first record read: its pages are not all imaged after it."""
    start, w = scan(tmp_path, [commit(740, dbinfo=False), checkpoint(START - 8), checkpoint(REDO + 8)])
    assert start.redo_lsn == REDO + 8 and start.checkpoint_lsn == w.records[3].lsn


def test_replica_without_a_checkpoint(tmp_path):
    start, _w = scan(tmp_path, [commit(740, dbinfo=False)])
    assert start.replica and start.redo_lsn is None


@pytest.mark.parametrize("level", [WAL_LEVEL_REPLICA, WAL_LEVEL_LOGICAL])
def test_parameter_change_tells(tmp_path, level):
    start, _w = scan(tmp_path, [parameter_change(level), checkpoint(REDO)])
    assert start.wal_level == level


@pytest.mark.parametrize("flags,told", [(rm_heap.XLH_INSERT_CONTAINS_NEW_TUPLE, WAL_LEVEL_LOGICAL), (0, None)])
def test_a_logically_logged_insert_tells_logical(tmp_path, flags, told):
    """heapam.c heap_insert sets XLH_INSERT_CONTAINS_NEW_TUPLE only for a relation RelationIsLogicallyLogged
    (wal_level logical): the first insert of a transaction that commits far later tells it; an insert without
    it tells nothing (a catalog's never has it)."""
    insert = Record(RM_HEAP_ID, rm_heap.XLOG_HEAP_INSERT, xid=740, main_data=struct.pack("<HB", 1, flags),
                    blocks=[Block(0, data=bytes(5) + b"row")])
    start, w = scan(tmp_path, [insert, checkpoint(REDO)])
    assert start.wal_level == told
    if told is not None:
        assert "logically logged" in start.evidence and start.evidence_lsn == w.records[1].lsn
