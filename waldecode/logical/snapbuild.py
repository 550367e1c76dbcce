"""Snapshot builder: when decoding may begin, as for a slot created at the start LSN.

Owns the consistent-point state machine of src/backend/replication/logical/snapbuild.c
(SnapBuildFindSnapshot, SnapBuildProcessChange, SnapBuildXactNeedsSkip): decoding
reads XLOG_RUNNING_XACTS records until every transaction it could see only in part
has ended.  Until then changes are not collected (or, in FULL_SNAPSHOT, only those
of transactions that began after the FULL point), and every transaction that commits
before the consistent point is skipped, exactly as a logical slot created at the
start LSN would skip it.  The catalog itself comes from the snapshot file, so no
historic catalog snapshots are built here.
"""

from __future__ import annotations

from ..pg.transam import xid_precedes

# src/include/replication/snapbuild.h: SnapBuildState
SNAPBUILD_START = -1
SNAPBUILD_BUILDING_SNAPSHOT = 0
SNAPBUILD_FULL_SNAPSHOT = 1
SNAPBUILD_CONSISTENT = 2

STATE_NAMES = {SNAPBUILD_START: "START", SNAPBUILD_BUILDING_SNAPSHOT: "BUILDING_SNAPSHOT",
               SNAPBUILD_FULL_SNAPSHOT: "FULL_SNAPSHOT", SNAPBUILD_CONSISTENT: "CONSISTENT"}


class SnapBuilder:
    def __init__(self, start_decoding_at: int = 0, assume_consistent: bool = False):
        self.state = SNAPBUILD_CONSISTENT if assume_consistent else SNAPBUILD_START
        self.next_phase_at = 0
        self.start_decoding_at = start_decoding_at
        self.consistent_lsn: int | None = 0 if assume_consistent else None  # LSN of the consistent point
        self.consistent_end_lsn: int | None = start_decoding_at if assume_consistent else None

    def process_running_xacts(self, lsn: int, end_lsn: int, nextXid: int, oldestRunningXid: int) -> None:
        """SnapBuildFindSnapshot's transitions (case b, a serialized snapshot, does not exist offline)."""
        if self.state == SNAPBUILD_CONSISTENT:
            return
        if oldestRunningXid == nextXid:
            if self.start_decoding_at == 0 or self.start_decoding_at <= lsn:
                self.start_decoding_at = lsn + 1
            self._consistent(lsn, end_lsn)
        elif self.state == SNAPBUILD_START:
            self.state = SNAPBUILD_BUILDING_SNAPSHOT
            self.next_phase_at = nextXid
        elif self.state == SNAPBUILD_BUILDING_SNAPSHOT and not xid_precedes(oldestRunningXid, self.next_phase_at):
            self.state = SNAPBUILD_FULL_SNAPSHOT
            self.next_phase_at = nextXid
        elif self.state == SNAPBUILD_FULL_SNAPSHOT and not xid_precedes(oldestRunningXid, self.next_phase_at):
            self._consistent(lsn, end_lsn)

    def _consistent(self, lsn: int, end_lsn: int) -> None:
        self.state = SNAPBUILD_CONSISTENT
        self.next_phase_at = 0
        self.consistent_lsn = lsn
        self.consistent_end_lsn = end_lsn
        # A slot created here confirms up to the end of this record (DecodingContextFindStartpoint):
        # transactions committing before it are not decoded.
        if self.start_decoding_at < end_lsn:
            self.start_decoding_at = end_lsn

    def commit_txn(self, lsn: int, xid: int) -> None:
        """SnapBuildCommitTxn: commits before the initial snapshot move the decoding start past them."""
        if self.state == SNAPBUILD_START or (self.state == SNAPBUILD_BUILDING_SNAPSHOT
                                             and xid_precedes(xid, self.next_phase_at)):
            if self.start_decoding_at <= lsn:
                self.start_decoding_at = lsn + 1

    def process_change(self, xid: int) -> bool:
        """SnapBuildProcessChange: may changes of this xid be collected (and a base snapshot set)?"""
        if self.state < SNAPBUILD_FULL_SNAPSHOT:
            return False
        if self.state < SNAPBUILD_CONSISTENT and xid_precedes(xid, self.next_phase_at):
            return False
        return True

    def xact_needs_skip(self, lsn: int) -> bool:
        """SnapBuildXactNeedsSkip: a commit at ``lsn`` lies before the decoding start."""
        return lsn < self.start_decoding_at or self.state < SNAPBUILD_CONSISTENT
