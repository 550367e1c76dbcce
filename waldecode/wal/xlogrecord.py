"""Record layouts: the XLogRecord header, block references and the decoded record.

Owns the on-disk shapes of src/include/access/xlogrecord.h and hands a
``DecodedRecord`` (header fields, block references, main data) to the resource
manager modules.  The parsing itself lives in the implementation modules
(``_py_impl`` and the Cython ``_native``), which share this definition.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

# src/include/access/xlogrecord.h
SizeOfXLogRecord = 24
# XLogRecord's xl_xid (after xl_tot_len): readable from a record's header alone,
# ``unpack_xl_xid(rec, XL_XID_OFFSET)[0]``
XL_XID_OFFSET = 4
unpack_xl_xid = struct.Struct("<I").unpack_from
XLR_INFO_MASK = 0x0F
XLR_RMGR_INFO_MASK = 0xF0
XLR_SPECIAL_REL_UPDATE = 0x01
XLR_CHECK_CONSISTENCY = 0x02
XLR_MAX_BLOCK_ID = 32
XLR_BLOCK_ID_DATA_SHORT = 255
XLR_BLOCK_ID_DATA_LONG = 254
XLR_BLOCK_ID_ORIGIN = 253
XLR_BLOCK_ID_TOPLEVEL_XID = 252

BKPBLOCK_FORK_MASK = 0x0F
BKPBLOCK_FLAG_MASK = 0xF0
BKPBLOCK_HAS_IMAGE = 0x10
BKPBLOCK_HAS_DATA = 0x20
BKPBLOCK_WILL_INIT = 0x40
BKPBLOCK_SAME_REL = 0x80

# bimg_info, PostgreSQL 15 and later
BKPIMAGE_HAS_HOLE = 0x01
BKPIMAGE_APPLY = 0x02
BKPIMAGE_COMPRESS_PGLZ = 0x04
BKPIMAGE_COMPRESS_LZ4 = 0x08
BKPIMAGE_COMPRESS_ZSTD = 0x10
# bimg_info, PostgreSQL 13 and 14
BKPIMAGE_IS_COMPRESSED_V13 = 0x02
BKPIMAGE_APPLY_V13 = 0x04

# src/include/common/relpath.h
FORK_NAMES = ("main", "fsm", "vm", "init")

# src/include/pg_config.h: BLCKSZ, the default (pg_control records a cluster's; the data-directory
# reader refuses another, and a page of another size fails the page checks)
BLCKSZ = 8192


class BlockRef(NamedTuple):
    """One block reference of a record (XLogRecordBlockHeader and what follows it)."""

    block_id: int
    forknum: int
    flags: int  # fork_flags & BKPBLOCK_FLAG_MASK
    spcOid: int
    dbOid: int
    relNumber: int
    blkno: int
    has_image: bool
    bimg_info: int
    hole_offset: int
    hole_length: int
    bimg_len: int  # bytes of the stored (possibly compressed) image
    image: bytes | None  # the stored image bytes, hole removed, maybe compressed
    data: bytes  # block data (empty when none)


class DecodedRecord(NamedTuple):
    """A complete, CRC-checked WAL record split into its parts."""

    lsn: int  # start of the record
    end_lsn: int  # first byte after the record (EndRecPtr, before alignment)
    xl_tot_len: int
    xl_xid: int
    xl_prev: int
    xl_info: int
    xl_rmid: int
    xl_crc: int
    blocks: tuple  # tuple[BlockRef, ...] in block id order
    main_data: bytes
    origin: int  # replication origin id, 0 when none
    toplevel_xid: int  # XLR_BLOCK_ID_TOPLEVEL_XID, 0 when none

    @property
    def fpi_len(self) -> int:
        return sum(b.bimg_len for b in self.blocks if b.has_image)

    @property
    def rec_len(self) -> int:
        """pg_waldump's 'rec' length: the total without full-page images."""
        return self.xl_tot_len - self.fpi_len

    def block(self, block_id: int) -> BlockRef | None:
        for b in self.blocks:
            if b.block_id == block_id:
                return b
        return None
