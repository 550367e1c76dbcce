"""Heap pages and sequential scans of a relation's files, as the server's own checks see them.

Owns PageIsVerified's checks of a heap page's header and line pointers (``read_heap_page``; their
layout is ``pg.bufpage``'s), each tuple's header checked (``heap_page_items``),
and ``HeapScan``: every block of a relation's segment files, yielding the tuples
``clog.tuple_is_visible`` keeps.  The one reader of heap pages for the data directory, the
catalog history's full-page images and a live server's catalog pages; damage raises
``CatalogError`` naming the file (or image) and block.
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from ...heap.heaptuple import HeapTupleHeaderData, SizeofHeapTupleHeader
from ...pg.bufpage import (LP_NORMAL, MAXIMUM_ALIGNOF, PD_VALID_FLAG_BITS, PG_PAGE_LAYOUT_VERSION, PageHeaderData,
                           SizeOfItemIdData, SizeOfPageHeaderData, item_id_fields)
from ..model import CatalogError
from .clog import TransactionStatus, tuple_is_visible
from .control import BLCKSZ
from .files import LOCAL, DataFiles

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
    (_xlogid, _xrecoff, _checksum, pd_flags, pd_lower, pd_upper, pd_special, pd_pagesize_version,
     _prune) = PageHeaderData.unpack_from(page, 0)
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
    nitems = (pd_lower - SizeOfPageHeaderData) // SizeOfItemIdData
    items = []
    for i, word in enumerate(struct.unpack_from(f"<{nitems}I", page, SizeOfPageHeaderData)):
        lp_off, lp_flags, lp_len = item_id_fields(word)
        if lp_flags != LP_NORMAL:
            continue
        if (lp_off < pd_upper or lp_off + lp_len > pd_special or lp_off % MAXIMUM_ALIGNOF
                or lp_len < SizeofHeapTupleHeader):
            raise CatalogError(f"{where}: damaged line pointer {i + 1} (lp_off {lp_off}, lp_len {lp_len}; "
                               f"pd_upper {pd_upper}, pd_special {pd_special})")
        items.append((i + 1, lp_off, lp_len))
    return items


def relation_segments(base_path: str, files: DataFiles = LOCAL) -> Iterator[str]:
    """The main-fork segment files of a relation: ``base_path``, ``base_path.1``, … while they exist."""
    if not files.exists(base_path):
        raise CatalogError(f"relation file {base_path} is missing")
    yield base_path
    segno = 1
    while files.exists(f"{base_path}.{segno}"):
        yield f"{base_path}.{segno}"
        segno += 1


def heap_page_items(page: bytes, path: str, blkno: int) -> Iterator[tuple]:
    """``read_heap_page`` plus each tuple's header: (offnum, lp_off, lp_len, t_xmin, t_xmax,
    t_infomask2, t_infomask, t_hoff) of the LP_NORMAL items; an impossible t_hoff raises
    ``CatalogError`` naming the file (or image) and block."""
    for offnum, lp_off, lp_len in read_heap_page(page, path, blkno):
        t_xmin, t_xmax, _cid, _bi_hi, _bi_lo, _posid, infomask2, infomask, t_hoff = \
            HeapTupleHeaderData.unpack_from(page, lp_off)
        if t_hoff < SizeofHeapTupleHeader or t_hoff > lp_len or t_hoff % MAXIMUM_ALIGNOF:
            raise CatalogError(f"{path}: block {blkno}: tuple {offnum} has impossible t_hoff {t_hoff} "
                               f"(tuple length {lp_len})")
        yield offnum, lp_off, lp_len, t_xmin, t_xmax, infomask2, infomask, t_hoff


def heap_page_tuples(page: bytes, path: str, blkno: int) -> dict[int, bytes]:
    """The LP_NORMAL tuples of a heap page by offset number, each the whole on-page tuple
    (header and data), with ``heap_page_items``' checks."""
    return {item[0]: page[item[1]:item[1] + item[2]] for item in heap_page_items(page, path, blkno)}


class HeapScan:
    """Sequential scan of a heap relation's files (of ``files``) yielding the tuples visible per
    ``tuple_is_visible``."""

    def __init__(self, base_path: str, xact: TransactionStatus, relseg_size: int, files: DataFiles = LOCAL):
        self.base_path = base_path
        self.xact = xact
        self.relseg_size = relseg_size
        self.files = files

    #: pages read from a segment file at a time
    CHUNK_PAGES = 256

    def __iter__(self) -> Iterator[HeapTuple]:
        for path, blkno, page in self.pages():
            yield from self.visible(page, path, blkno)

    def pages(self) -> Iterator[tuple[str, int, bytes]]:
        """(segment file, block number, page) of every block of the relation."""
        for segno, path in enumerate(relation_segments(self.base_path, self.files)):
            blkno = segno * self.relseg_size
            try:
                with self.files.open(path) as f:
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
