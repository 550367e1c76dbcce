"""Reading blocks for redo: the page-LSN rule and full-page images (src/backend/access/transam/xlogutils.c).

Owns what XLogReadBufferForRedoExtended and XLogInitBufferForRedo decide for one block reference
of a record, over a ``PageStore`` instead of shared buffers:

* a block whose image is to be applied (BKPIMAGE_APPLY; BKPIMAGE_APPLY_V13 before 15) is restored
  from the image (RestoreBlockImage, ``waldecode.wal.fpi``), its LSN set to the record's end unless
  the page is new: BLK_RESTORED;
* otherwise the page is read from the store: absent (never seen, or a new page of zeros, which
  XLogReadBufferExtended treats as missing in RBM_NORMAL mode) is BLK_NOTFOUND; a page whose LSN
  is at or past the record's end (``record->EndRecPtr``, the LSN ``PageSetLSN`` writes) already has
  the change, BLK_DONE; else BLK_NEEDS_REDO;
* XLogInitBufferForRedo hands out a zeroed page whatever the store holds (the redo routine runs
  PageInit on it): XLOG_HEAP_INIT_PAGE and BKPBLOCK_WILL_INIT.

An image that is not to be applied is there for wal_consistency_checking only (the page as it must
be after the record); redo leaves it alone.  Hands ``Buffer``s to the redo routines
(``heapam_xlog``) and writes them back to the store when they are marked dirty.
"""

from __future__ import annotations

from ..errors import CorruptRecordError
from ..pg.relpath import fork_name
from ..wal.fpi import image_is_applied, restore_block_image
from ..wal.xlogrecord import BKPBLOCK_WILL_INIT, BlockRef, DecodedRecord
from .bufpage import new_page, page_get_lsn, page_is_new, page_set_lsn

# src/include/access/xlogutils.h: XLogRedoAction
BLK_NEEDS_REDO = 0  # changes from the WAL record need to be applied
BLK_DONE = 1  # the block is already up to date
BLK_RESTORED = 2  # the block was restored from a full-page image
BLK_NOTFOUND = 3  # the block was not found (and hence does not need to be replayed)
ACTION_NAMES = ("needs_redo", "done", "restored", "notfound")
# The init action is counted apart: XLogInitBufferForRedo
BLK_INITIALIZED = 4

# src/include/storage/bufmgr.h: ReadBufferMode (the ones redo asks for)
RBM_NORMAL = 0
RBM_ZERO_AND_LOCK = 1
RBM_ZERO_AND_CLEANUP_LOCK = 2
RBM_ZERO_ON_ERROR = 3


class Buffer:
    """A page read for redo and where it belongs (a buffer tag)."""

    __slots__ = ("locator", "forknum", "blkno", "page")

    def __init__(self, locator: tuple, forknum: int, blkno: int, page: bytearray):
        self.locator = locator
        self.forknum = forknum
        self.blkno = blkno
        self.page = page


def block_locator(block: BlockRef) -> tuple:
    return (block.spcOid, block.dbOid, block.relNumber)


class RedoRecord:
    """One record being replayed: its block references, the store and what happened to each block.

    ``wanted(locator)``, when given, limits redo to some relations: the blocks of the others are
    left alone (BLK_NOTFOUND, nothing stored).
    """

    __slots__ = ("record", "store", "major", "lsn", "actions", "wanted")

    def __init__(self, record: DecodedRecord, store, major: int, wanted=None):
        self.record = record
        self.store = store
        self.major = major
        self.lsn = record.end_lsn  # record->EndRecPtr: what PageSetLSN writes and the LSN rule compares
        self.actions: dict[int, int] = {}
        self.wanted = wanted

    def error(self, message: str) -> CorruptRecordError:
        """The error for a record that does not fit its pages, naming its blocks and LSN."""
        blocks = ", ".join("rel %u/%u/%u %s block %u" % (b.spcOid, b.dbOid, b.relNumber, fork_name(b.forknum), b.blkno)
                           for b in self.record.blocks)
        return CorruptRecordError(f"{message} ({blocks})" if blocks else message, lsn=self.record.lsn)

    def block(self, block_id: int) -> BlockRef:
        b = self.record.block(block_id)
        if b is None:
            raise self.error(f"failed to locate backup block with ID {block_id} in WAL record")
        return b

    def has_block(self, block_id: int) -> bool:
        """XLogRecGetBlockTagExtended's answer: does the record reference this block id?"""
        return self.record.block(block_id) is not None

    def block_data(self, block_id: int) -> bytes:
        """XLogRecGetBlockData (empty when the block carries no data)."""
        return self.block(block_id).data

    @property
    def xid(self) -> int:
        """XLogRecGetXid."""
        return self.record.xl_xid

    @property
    def info(self) -> int:
        return self.record.xl_info

    def mark_dirty(self, buf: Buffer) -> None:
        """MarkBufferDirty: the page goes back to the store (unless its relation is not wanted)."""
        if self.wanted is not None and not self.wanted(buf.locator):
            return
        self.store.write(buf.locator, buf.forknum, buf.blkno, buf.page)

    def read_buffer_for_redo(self, block_id: int) -> tuple[int, Buffer | None]:
        """XLogReadBufferForRedo."""
        return self.read_buffer_for_redo_extended(block_id, RBM_NORMAL, False)

    def read_buffer_for_redo_extended(self, block_id: int, mode: int, get_cleanup_lock: bool
                                      ) -> tuple[int, Buffer | None]:
        """XLogReadBufferForRedoExtended (a cleanup lock means nothing here: nobody else reads the store)."""
        block = self.block(block_id)
        if block.flags & BKPBLOCK_WILL_INIT and mode not in (RBM_ZERO_AND_LOCK, RBM_ZERO_AND_CLEANUP_LOCK):
            raise self.error(f"block with WILL_INIT flag in WAL record must be zeroed by redo routine "
                             f"(block {block_id})")
        locator = block_locator(block)
        if self.wanted is not None and not self.wanted(locator):
            self.actions[block_id] = BLK_NOTFOUND
            return BLK_NOTFOUND, None
        if block.has_image and image_is_applied(block, self.major):
            page = bytearray(restore_block_image(block, self.major, self.record.lsn))
            if not page_is_new(page):
                page_set_lsn(page, self.lsn)
            buf = Buffer(locator, block.forknum, block.blkno, page)
            self.mark_dirty(buf)
            self.actions[block_id] = BLK_RESTORED
            return BLK_RESTORED, buf
        if mode in (RBM_ZERO_AND_LOCK, RBM_ZERO_AND_CLEANUP_LOCK):
            buf = Buffer(locator, block.forknum, block.blkno, new_page())
            self.actions[block_id] = BLK_NEEDS_REDO
            return BLK_NEEDS_REDO, buf
        page = self.store.read(locator, block.forknum, block.blkno)
        if page is None and mode == RBM_ZERO_ON_ERROR:
            page = new_page()  # past the end: XLogReadBufferExtended extends the fork with zeros
        if page is None or (mode == RBM_NORMAL and page_is_new(page)):
            self.actions[block_id] = BLK_NOTFOUND
            return BLK_NOTFOUND, None
        buf = Buffer(locator, block.forknum, block.blkno, page)
        action = BLK_DONE if self.lsn <= page_get_lsn(page) else BLK_NEEDS_REDO
        self.actions[block_id] = action
        return action, buf

    def init_buffer_for_redo(self, block_id: int) -> Buffer:
        """XLogInitBufferForRedo: a zeroed page, whatever was there; the caller initializes it."""
        block = self.block(block_id)
        locator = block_locator(block)
        self.actions[block_id] = BLK_INITIALIZED
        return Buffer(locator, block.forknum, block.blkno, new_page())
