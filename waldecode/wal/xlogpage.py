"""WAL page headers, version detection, and the state a reader carries between segments.

Owns the layouts of src/include/access/xlog_internal.h (XLogPageHeaderData and
XLogLongPageHeaderData) and the ``FrameState`` that the framing functions of both
implementations read and update: where the next record starts, the LSN of the
previous record, and a record begun on one page (or segment) and not yet finished.
Keeping that state in one plain object, returned at a segment's end, is what lets a
segment be framed on its own and stitched to its neighbour later.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

# src/include/access/xlog_internal.h
XLP_FIRST_IS_CONTRECORD = 0x0001
XLP_LONG_HEADER = 0x0002
XLP_BKP_REMOVABLE = 0x0004
XLP_FIRST_IS_OVERWRITE_CONTRECORD = 0x0008
XLP_ALL_FLAGS = 0x000F
SizeOfXLogShortPHD = 24
SizeOfXLogLongPHD = 40

# XLOG_PAGE_MAGIC of each major version (src/include/access/xlog_internal.h @ REL_13..18)
XLOG_PAGE_MAGIC_BY_MAJOR = {13: 0xD106, 14: 0xD10D, 15: 0xD110, 16: 0xD113, 17: 0xD116, 18: 0xD118}
MAJOR_BY_XLOG_PAGE_MAGIC = {v: k for k, v in XLOG_PAGE_MAGIC_BY_MAJOR.items()}

# XLogPageHeaderData: xlp_magic, xlp_info, xlp_tli, xlp_pageaddr, xlp_rem_len
XLogPageHeader = struct.Struct("<HHIQI")
# XLogLongPageHeaderData adds: xlp_sysid, xlp_seg_size, xlp_xlog_blcksz (at offset 24)
XLogLongPageHeaderTail = struct.Struct("<QII")

# Largest record PostgreSQL will allocate for (xlogreader.c: AllocSizeIsValid)
MaxAllocSize = 0x3FFFFFFF


class LongPageHeader(NamedTuple):
    xlp_magic: int
    xlp_info: int
    xlp_tli: int
    xlp_pageaddr: int
    xlp_rem_len: int
    xlp_sysid: int
    xlp_seg_size: int
    xlp_xlog_blcksz: int


def parse_long_header(buf) -> LongPageHeader | None:
    """The long header at the start of a segment, or None if the buffer is too short."""
    if len(buf) < SizeOfXLogLongPHD:
        return None
    return LongPageHeader(*XLogPageHeader.unpack_from(buf, 0), *XLogLongPageHeaderTail.unpack_from(buf, 24))


class ReadStop(NamedTuple):
    """Why and where framing stopped.

    ``kind`` is ``"end"`` for what PostgreSQL itself treats as the normal end of WAL
    (zeroed space, a recycled segment, end of the available bytes) and ``"invalid"``
    for anything else (bad CRC, bad header, broken prev-link).  Both stop reading;
    the difference matters only for how loudly the caller reports it.
    """

    lsn: int
    kind: str
    reason: str
    path: str | None = None


class FrameState:
    """Framing state between calls (one call frames one segment buffer).

    The segment-level context (page size, segment size, magic, system identifier)
    is fixed after the first segment; the rest moves with the reader.
    """

    __slots__ = (
        "page_size", "seg_size", "magic", "sysid", "latest_tli",
        "next_lsn", "prev_lsn", "rand_access",
        "partial", "partial_lsn", "partial_total",
        "end_lsn", "switch_seen", "stop_after_partial", "firsts", "catalog", "partial_header_only",
    )

    def __init__(self, page_size: int, seg_size: int, magic: int, sysid: int, next_lsn: int,
                 prev_lsn: int = 0, end_lsn: int = 0):
        self.page_size = page_size
        self.seg_size = seg_size
        self.magic = magic
        self.sysid = sysid
        self.latest_tli = 0
        self.next_lsn = next_lsn  # where the next record starts (or the partial continues)
        self.prev_lsn = prev_lsn  # LSN of the last record returned, for the xl_prev check
        # First record after a jump: only "xl_prev < own LSN" can be checked (xlogreader.c randAccess)
        self.rand_access = prev_lsn == 0
        self.partial = None  # bytearray of a record still being assembled
        self.partial_lsn = 0
        self.partial_total = 0
        self.end_lsn = end_lsn  # 0: no limit; else stop before a record that ends past it
        self.switch_seen = False
        # Frame only the record carried in from the previous segment, then return
        self.stop_after_partial = False
        # None, or a dict: then only RM_XACT's records are returned, and every other record, read up to its
        # header only (neither copied nor checked past it: no CRC), puts its xid (when not 0) in the dict
        # with its LSN unless there already; a record crossing pages keeps only its header in ``partial``
        # (``partial_total`` shrinks instead, so that ``partial_total - len(partial)`` is still what is
        # left).  Phase 1 of the Spark range path wants no more of most records than that.
        self.firsts = None
        # With ``firsts``: None, or (relfilenodes, the BKPIMAGE_COMPRESSED mask): the records the catalog
        # history may need are returned whole too (``_pyframe.catalog_wanted``), so that phase 1 of the
        # range path collects them in the same read
        self.catalog = None
        # ``partial`` holds only a header: decided when it began, None while its header is not whole
        # (``_pyframe._partial_header_only``)
        self.partial_header_only = None
