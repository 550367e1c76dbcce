"""Applying records to the page store, and checking replayed pages as wal_consistency_checking does.

Owns the part of src/backend/access/transam/xlogrecovery.c's ApplyWalRecord that heap redo needs:
which records change heap pages and through which routine (``HeapRedo.redo``: heap_redo,
heap2_redo, xlog_redo's XLOG_FPI and XLOG_FPI_FOR_HINT, which only restore images, and
smgr_redo's XLOG_SMGR_TRUNCATE of the main fork and the visibility map), and verifyBackupPageConsistency
(``verify_backup_page_consistency``): after a record logged with XLR_CHECK_CONSISTENCY, each of its
blocks whose image is not to be applied is the page as it must be after the record; the replayed
page, masked with the resource manager's mask (``heap_mask``), must equal the masked image.
Takes ``DecodedRecord``s from ``waldecode.wal.xlogreader``; hands pages to the ``PageStore``.
"""

from __future__ import annotations

from collections import Counter
from typing import NamedTuple

from ..rmgr import RM_HEAP2_ID, RM_HEAP_ID, RM_SMGR_ID, RM_XLOG_ID
from ..rmgr import heap as rm_heap
from ..rmgr.smgr import SMGR_TRUNCATE_HEAP, SMGR_TRUNCATE_VM, XLOG_SMGR_TRUNCATE, xl_smgr_truncate
from ..rmgr.xlog import XLOG_FPI, XLOG_FPI_FOR_HINT
from ..wal.fpi import image_is_applied, restore_block_image
from ..wal.xlogrecord import XLR_CHECK_CONSISTENCY, XLR_INFO_MASK, DecodedRecord
from .bufpage import PD_ALL_VISIBLE, page_get_lsn, pd_flags
from .heapam_xlog import heap2_redo, heap_mask, heap_redo
from .pagestore import PageStore
from .visibilitymap import VISIBILITYMAP_FORKNUM, visibilitymap_prepare_truncate
from .xlogutils import ACTION_NAMES, BLK_INITIALIZED, BLK_NOTFOUND, BLK_RESTORED, RedoRecord

MAIN_FORKNUM = 0


class HeapRedo:
    """Replays the records that change heap pages onto a ``PageStore``, one record at a time.

    ``wanted(locator)`` limits redo to some relations; ``hint_bits_logged`` says whether the
    cluster WAL-logs hint bits (data checksums or wal_log_hints), which decides whether
    XLOG_HEAP2_VISIBLE moves the heap page's LSN.  ``records`` counts the records replayed by
    (rmgr, identify name); ``blocks`` the block actions (``needs_redo``, ``done``, ``restored``,
    ``notfound``, ``initialized``).
    """

    def __init__(self, store: PageStore, major: int, wanted=None, hint_bits_logged: bool = False):
        self.store = store
        self.major = major
        self.wanted = wanted
        self.hint_bits_logged = hint_bits_logged
        self.records: Counter = Counter()
        self.blocks: Counter = Counter()

    def redo(self, record: DecodedRecord) -> RedoRecord | None:
        """Replay one record if it changes heap pages; the ``RedoRecord`` (what happened to each
        block), or None for a record of another kind."""
        rmid = record.xl_rmid
        info = record.xl_info & ~XLR_INFO_MASK
        if rmid == RM_HEAP_ID:
            rr = RedoRecord(record, self.store, self.major, self.wanted)
            heap_redo(rr)
            name = rm_heap.heap_identify(info, self.major)
        elif rmid == RM_HEAP2_ID:
            rr = RedoRecord(record, self.store, self.major, self.wanted)
            heap2_redo(rr, self.hint_bits_logged)
            name = rm_heap.heap2_identify(info, self.major)
        elif rmid == RM_XLOG_ID and info in (XLOG_FPI, XLOG_FPI_FOR_HINT):
            rr = RedoRecord(record, self.store, self.major, self.wanted)
            for block in record.blocks:
                if not block.has_image:
                    if info == XLOG_FPI:
                        raise rr.error("XLOG_FPI record did not contain a full-page image")
                    continue
                action, _buf = rr.read_buffer_for_redo(block.block_id)
                if action not in (BLK_RESTORED, BLK_NOTFOUND):  # not found: a relation not wanted
                    raise rr.error("unexpected XLogReadBufferForRedo result when restoring backup block")
            name = "FPI" if info == XLOG_FPI else "FPI_FOR_HINT"
        elif rmid == RM_SMGR_ID and info == XLOG_SMGR_TRUNCATE:
            blkno, spc, db, rel, flags = xl_smgr_truncate.unpack_from(record.main_data)
            locator = (spc, db, rel)
            if self.wanted is None or self.wanted(locator):
                # smgr_redo: the map's last page kept loses the bits past the end, then the forks are cut
                if flags & SMGR_TRUNCATE_VM:
                    nblocks = visibilitymap_prepare_truncate(self.store, locator, blkno)
                    if nblocks is not None:
                        self.store.truncate(locator, VISIBILITYMAP_FORKNUM, nblocks)
                if flags & SMGR_TRUNCATE_HEAP:
                    self.store.truncate(locator, MAIN_FORKNUM, blkno)
            self.records[("Storage", "TRUNCATE")] += 1
            return None
        else:
            return None
        rmname = {RM_HEAP_ID: "Heap", RM_HEAP2_ID: "Heap2", RM_XLOG_ID: "XLOG"}[rmid]
        self.records[(rmname, name or "UNKNOWN (%x)" % info)] += 1
        for action in rr.actions.values():
            self.blocks["initialized" if action == BLK_INITIALIZED else ACTION_NAMES[action]] += 1
        return rr


class BlockCheck(NamedTuple):
    """One block of a consistency check: ``status`` is ``match``, ``mismatch``, ``applied`` (the
    image was restored, nothing to compare), ``notfound`` (the store has no such page), ``newer``
    (the replayed page's LSN is past the record: it cannot be expected to match) or ``other_fork``
    (a visibility map or free space map page, not replayed).  ``replay`` and ``primary`` are the
    masked pages when compared; ``all_visible`` whether the unmasked PD_ALL_VISIBLE bits agree
    (PostgreSQL masks it; a linear replay from images should get it right too)."""

    block_id: int
    locator: tuple
    forknum: int
    blkno: int
    status: str
    replay: bytes | None = None
    primary: bytes | None = None
    all_visible: bool | None = None


def verify_backup_page_consistency(rr: RedoRecord) -> list[BlockCheck]:
    """verifyBackupPageConsistency after ``rr`` was replayed: one ``BlockCheck`` per block reference
    (none unless the record was logged with XLR_CHECK_CONSISTENCY)."""
    record = rr.record
    out: list[BlockCheck] = []
    if not record.xl_info & XLR_CHECK_CONSISTENCY:
        return out
    for block in record.blocks:
        locator = (block.spcOid, block.dbOid, block.relNumber)
        key = (block.block_id, locator, block.forknum, block.blkno)
        if not block.has_image:
            raise rr.error(f"block {block.block_id} of a record logged for consistency checking has no image")
        if image_is_applied(block, rr.major):
            out.append(BlockCheck(*key, "applied"))
            continue
        if block.forknum != MAIN_FORKNUM:
            out.append(BlockCheck(*key, "other_fork"))
            continue
        replay = rr.store.read(locator, block.forknum, block.blkno)
        if replay is None:
            out.append(BlockCheck(*key, "notfound"))
            continue
        if page_get_lsn(replay) > rr.lsn:
            out.append(BlockCheck(*key, "newer"))
            continue
        primary = bytearray(restore_block_image(block, rr.major, record.lsn))
        all_visible = (pd_flags(replay) & PD_ALL_VISIBLE) == (pd_flags(primary) & PD_ALL_VISIBLE)
        try:
            heap_mask(replay, block.blkno)
            heap_mask(primary, block.blkno)
        except Exception as e:  # a CorruptRecordError without the record's LSN
            raise rr.error(f"cannot mask block {block.blkno} of {locator}: {e}") from None
        status = "match" if replay == primary else "mismatch"
        out.append(BlockCheck(*key, status, bytes(replay), bytes(primary), all_visible))
    return out
