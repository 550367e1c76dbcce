"""A small WAL writer for tests: records in, segment files out.

Writes what a PostgreSQL 13–18 server would write for a given list of records,
byte for byte in everything the reader looks at, so tests can make WAL of any
shape (sizes, block references, images, page and segment crossings, start
positions, versions, segment sizes) and damage it on purpose:

* ``assemble`` builds one record as src/backend/access/transam/xloginsert.c
  ``XLogRecordAssemble`` does: block headers in block id order (image header,
  compress header when a compressed image has a hole, ``BKPBLOCK_SAME_REL``
  when the relation equals the previous block's), then ``XLR_BLOCK_ID_ORIGIN``
  (253), ``XLR_BLOCK_ID_TOPLEVEL_XID`` (252, 14+), the main-data header (255
  short when ≤ 255 bytes, 254 long, none when there is no main data), then per
  block its image and data, then the main data; CRC-32C over the body and then
  the header up to ``xl_crc`` (``XLogInsertRecord``).
* ``WALWriter`` places records on pages as xlog.c ``ReserveXLogInsertLocation``
  and ``CopyXLogRecordToWAL`` do: each record starts at a MAXALIGN'd LSN (after
  the page header when that is a page start), is split at any byte, header
  included, and each page it continues onto gets ``XLP_FIRST_IS_CONTRECORD``
  and ``xlp_rem_len`` (record bytes still to come).  The first page of every
  segment has the long header (system identifier, segment size, page size).
  ``XLOG_SWITCH`` (rmid 0, info 0x40) ends the segment it ends in (which is
  the next one when it starts 8 or 16 bytes before a segment's end): the rest
  stays zero and the next record starts on the following segment.  Everything
  not written is zero, as in a pre-allocated segment.  The space before the
  first record is taken by XLOG NOOP records (``fill_to``), so that reading
  can start at the segment's first page, as PostgreSQL's readers do.
* ``WALWriter.write`` writes the segments as files named ``XLogFileName``
  (``TTTTTTTTLLLLLLLLSSSSSSSS``) into a directory; ``segment_bytes`` gives them
  in memory, ``record_bytes_at`` the LSN of any byte of a record (for damage).
* ``Image.from_page`` removes a page's hole and compresses it (pglz with the
  small compressor below, lz4 as a raw block, zstd as a frame), as
  ``XLogCompressBackupBlock`` stores it; ``noop(n)`` is a NOOP of ``n`` bytes.

Example::

    w = WALWriter(major=15, seg_size=1 << 20, start_lsn=0x100000)
    w.append(Record(RM_XLOG_ID, XLOG_NOOP, main_data=b"hello"))
    w.append(Record(RM_HEAP_ID, 0x00, xid=740, main_data=bytes(3),
                    blocks=(Block(0, rel=(1663, 5, 16384), blkno=0, data=b"tuple"),)))
    paths = w.write(tmp_path)
    for r in w.written:
        print(hex(r.lsn), hex(r.end))

Checked against PostgreSQL 15's pg_waldump in tests/test_walgen.py.  This module
does not import waldecode: it is an independent second reading of the format.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from crc32c import crc32c

from waldecode.testing.datums import pglz_compress  # noqa: F401  (walgen.pglz_compress for the tests)

BLCKSZ = 8192
XLOG_BLCKSZ = 8192
MB = 1024 * 1024

# src/include/access/xlog_internal.h: XLOG_PAGE_MAGIC of each major version
XLOG_PAGE_MAGIC = {13: 0xD106, 14: 0xD10D, 15: 0xD110, 16: 0xD113, 17: 0xD116, 18: 0xD118}
XLP_FIRST_IS_CONTRECORD = 0x0001
XLP_LONG_HEADER = 0x0002
XLP_BKP_REMOVABLE = 0x0004
SizeOfXLogShortPHD = 24
SizeOfXLogLongPHD = 40
SizeOfXLogRecord = 24

# src/include/access/xlogrecord.h
XLR_MAX_BLOCK_ID = 32
XLR_BLOCK_ID_DATA_SHORT = 255
XLR_BLOCK_ID_DATA_LONG = 254
XLR_BLOCK_ID_ORIGIN = 253
XLR_BLOCK_ID_TOPLEVEL_XID = 252
BKPBLOCK_HAS_IMAGE = 0x10
BKPBLOCK_HAS_DATA = 0x20
BKPBLOCK_WILL_INIT = 0x40
BKPBLOCK_SAME_REL = 0x80
BKPIMAGE_HAS_HOLE = 0x01
# 13, 14
BKPIMAGE_IS_COMPRESSED_V13 = 0x02
BKPIMAGE_APPLY_V13 = 0x04
# 15 and later
BKPIMAGE_APPLY = 0x02
BKPIMAGE_COMPRESS_PGLZ = 0x04
BKPIMAGE_COMPRESS_LZ4 = 0x08
BKPIMAGE_COMPRESS_ZSTD = 0x10

# src/include/access/rmgrlist.h, xlog record types used by tests
RM_XLOG_ID = 0
RM_XACT_ID = 1
RM_STANDBY_ID = 8
RM_HEAP2_ID = 9
RM_HEAP_ID = 10
XLOG_NOOP = 0x20
XLOG_SWITCH = 0x40
XLOG_FPI = 0xA0

DEFAULT_SYSID = 7310000000000000001

_XLogPageHeader = struct.Struct("<HHIQI4x")  # XLogPageHeaderData, 24 bytes
_XLogLongTail = struct.Struct("<QII")  # xlp_sysid, xlp_seg_size, xlp_xlog_blcksz
_XLogRecord = struct.Struct("<IIQBBxx")  # XLogRecord without xl_crc
_BlockHeader = struct.Struct("<BBH")  # XLogRecordBlockHeader
_BlockImageHeader = struct.Struct("<HHB")  # XLogRecordBlockImageHeader


def MAXALIGN(n: int) -> int:
    return (n + 7) & ~7


def format_lsn(lsn: int) -> str:
    return f"{lsn >> 32:X}/{lsn & 0xFFFFFFFF:X}"


def segment_file_name(tli: int, segno: int, seg_size: int) -> str:
    """XLogFileName."""
    per = 0x100000000 // seg_size
    return f"{tli:08X}{segno // per:08X}{segno % per:08X}"


# ---------------------------------------------------------------------------------------------
# Full-page images


# pglz_compress lives with the other on-disk encoders (waldecode/testing/datums.py)


def _compress(data: bytes, method: str) -> bytes:
    if method == "pglz":
        return pglz_compress(data)
    if method == "lz4":
        import lz4.block

        return lz4.block.compress(data, store_size=False)  # LZ4_compress_default: a raw block
    if method == "zstd":
        import zstandard

        return zstandard.ZstdCompressor().compress(data)  # ZSTD_compress: one frame
    raise ValueError(f"unknown image compression {method!r}")


@dataclass(frozen=True)
class Image:
    """A full-page image as stored in a record: ``data`` is the page without its hole, maybe compressed.

    ``compression`` is None, "pglz", "lz4" or "zstd" (13 and 14 know only pglz).
    ``bimg_info``, when given, is written as is instead of the flags computed from
    the other fields (for damaged images).
    """

    data: bytes
    hole_offset: int = 0
    hole_length: int = 0
    compression: str | None = None
    apply: bool = True
    bimg_info: int | None = None

    @classmethod
    def from_page(cls, page: bytes, hole_offset: int = 0, hole_length: int = 0, compression: str | None = None,
                  apply: bool = True) -> "Image":
        """The stored form of an 8 kB page: hole removed, then compressed (XLogRecordAssemble)."""
        if len(page) != BLCKSZ:
            raise ValueError(f"a page has {BLCKSZ} bytes, not {len(page)}")
        if (hole_length == 0) != (hole_offset == 0) or hole_offset + hole_length > BLCKSZ:
            raise ValueError(f"impossible hole: offset {hole_offset}, length {hole_length}")
        stored = page[:hole_offset] + page[hole_offset + hole_length:]
        if compression is not None:
            stored = _compress(stored, compression)
        return cls(stored, hole_offset, hole_length, compression, apply)

    def info(self, major: int) -> int:
        """bimg_info for a version (xlogrecord.h: the flag values changed in 15)."""
        if self.bimg_info is not None:
            return self.bimg_info
        info = BKPIMAGE_HAS_HOLE if self.hole_length else 0
        if major >= 15:
            if self.apply:
                info |= BKPIMAGE_APPLY
            info |= {None: 0, "pglz": BKPIMAGE_COMPRESS_PGLZ, "lz4": BKPIMAGE_COMPRESS_LZ4,
                     "zstd": BKPIMAGE_COMPRESS_ZSTD}[self.compression]
        else:
            if self.compression not in (None, "pglz"):
                raise ValueError(f"PostgreSQL {major} compresses images only with pglz, not {self.compression}")
            if self.apply:
                info |= BKPIMAGE_APPLY_V13
            if self.compression:
                info |= BKPIMAGE_IS_COMPRESSED_V13
        return info

    def header(self, major: int) -> bytes:
        """XLogRecordBlockImageHeader, and XLogRecordBlockCompressHeader when compressed with a hole."""
        if self.bimg_info is None:
            if self.compression is None and len(self.data) != BLCKSZ - self.hole_length:
                raise ValueError(f"an uncompressed image with a {self.hole_length}-byte hole has "
                                 f"{BLCKSZ - self.hole_length} bytes, not {len(self.data)}")
            if self.compression is not None and len(self.data) == BLCKSZ:
                raise ValueError(f"a compressed image cannot be {BLCKSZ} bytes long")
        if len(self.data) > 0xFFFF:
            raise ValueError(f"image of {len(self.data)} bytes does not fit in a uint16 length")
        out = _BlockImageHeader.pack(len(self.data), self.hole_offset, self.info(major))
        if self.compression is not None and self.hole_length:
            out += struct.pack("<H", self.hole_length)
        return out


@dataclass(frozen=True)
class Block:
    """A block reference (XLogRegisterBuffer + XLogRegisterBufData)."""

    id: int
    rel: tuple[int, int, int] = (1663, 5, 16384)  # spcOid, dbOid, relNumber
    blkno: int = 0
    fork: int = 0
    data: bytes = b""
    image: Image | None = None
    will_init: bool = False


@dataclass(frozen=True)
class Record:
    """One WAL record to write.

    ``body``, when given, replaces everything after the 24-byte header (blocks,
    main data, origin, toplevel xid are then ignored): for records that no server
    would write.
    """

    rmid: int
    info: int
    xid: int = 0
    blocks: tuple[Block, ...] = ()
    main_data: bytes = b""
    origin: int | None = None
    toplevel_xid: int | None = None
    body: bytes | None = None

    @property
    def is_switch(self) -> bool:
        return self.rmid == RM_XLOG_ID and self.info & 0xF0 == XLOG_SWITCH


def block_fork_flags(record: Record) -> list[int]:
    """fork_flags of each block, in block id order, as XLogRecordAssemble sets them."""
    out = []
    prev_rel = None
    for b in sorted(record.blocks, key=lambda b: b.id):
        flags = b.fork
        if b.will_init:
            flags |= BKPBLOCK_WILL_INIT
        if b.image is not None:
            flags |= BKPBLOCK_HAS_IMAGE
        if b.data:
            flags |= BKPBLOCK_HAS_DATA
        if prev_rel is not None and b.rel == prev_rel:
            flags |= BKPBLOCK_SAME_REL
        prev_rel = b.rel
        out.append(flags)
    return out


def assemble_body(record: Record, major: int) -> bytes:
    """Everything after the 24-byte XLogRecord header: fragment headers, then payload."""
    if record.body is not None:
        return bytes(record.body)
    blocks = sorted(record.blocks, key=lambda b: b.id)
    ids = [b.id for b in blocks]
    if len(set(ids)) != len(ids):
        raise ValueError(f"duplicate block ids {ids}")
    if any(not 0 <= i <= XLR_MAX_BLOCK_ID for i in ids):
        raise ValueError(f"block ids must be 0..{XLR_MAX_BLOCK_ID}, not {ids}")
    heads = bytearray()
    payload = bytearray()
    for b, flags in zip(blocks, block_fork_flags(record)):
        if len(b.data) > 0xFFFF:
            raise ValueError(f"block data of {len(b.data)} bytes does not fit in a uint16 length")
        heads += _BlockHeader.pack(b.id, flags, len(b.data))
        if b.image is not None:
            heads += b.image.header(major)
            payload += b.image.data
        if not flags & BKPBLOCK_SAME_REL:
            heads += struct.pack("<III", *b.rel)
        heads += struct.pack("<I", b.blkno)
        payload += b.data
    if record.origin is not None:
        heads += struct.pack("<BH", XLR_BLOCK_ID_ORIGIN, record.origin)
    if record.toplevel_xid is not None:
        if major < 14:
            raise ValueError("PostgreSQL 13 has no XLR_BLOCK_ID_TOPLEVEL_XID")
        heads += struct.pack("<BI", XLR_BLOCK_ID_TOPLEVEL_XID, record.toplevel_xid)
    main = bytes(record.main_data)
    if len(main) > 255:
        heads += struct.pack("<BI", XLR_BLOCK_ID_DATA_LONG, len(main))
    elif main:
        heads += struct.pack("<BB", XLR_BLOCK_ID_DATA_SHORT, len(main))
    return bytes(heads + payload) + main


def assemble(record: Record, prev: int, major: int) -> bytes:
    """The complete record: XLogRecord header with xl_prev and xl_crc, then the body."""
    body = assemble_body(record, major)
    hdr = _XLogRecord.pack(SizeOfXLogRecord + len(body), record.xid, prev, record.info, record.rmid)
    crc = crc32c(hdr, crc32c(body))
    return hdr + struct.pack("<I", crc) + body


def noop(total_len: int, fill: int = 0x5A) -> Record:
    """An XLOG NOOP record of exactly ``total_len`` bytes (24, 27..281, or ≥ 285)."""
    if total_len == SizeOfXLogRecord:
        return Record(RM_XLOG_ID, XLOG_NOOP)
    n = total_len - SizeOfXLogRecord - 2
    if 1 <= n <= 255:
        return Record(RM_XLOG_ID, XLOG_NOOP, main_data=bytes([fill]) * n)
    n = total_len - SizeOfXLogRecord - 5
    if n > 255:
        return Record(RM_XLOG_ID, XLOG_NOOP, main_data=bytes([fill]) * n)
    raise ValueError(f"no NOOP record is {total_len} bytes long")


# ---------------------------------------------------------------------------------------------
# Placing records on pages


class Written(NamedTuple):
    """Where a record went."""

    lsn: int  # start (ReadRecPtr)
    end: int  # EndRecPtr: MAXALIGN(raw_end); for XLOG_SWITCH rounded up to a segment start
    raw_end: int  # just past the record's last byte
    prev: int  # xl_prev
    record: Record
    raw: bytes  # the assembled record

    @property
    def tot_len(self) -> int:
        return len(self.raw)

    @property
    def crc(self) -> int:
        return struct.unpack_from("<I", self.raw, 20)[0]


class WALWriter:
    """Places records on pages and segments; see the module docstring.

    ``start_lsn`` is where the first record goes (rounded up to MAXALIGN, and past
    the page header if it falls inside one); default: the start of segment 1, as
    after initdb.  With ``fill`` (the default) the space from the start of that
    segment up to it is taken by XLOG NOOP records (``fill_to``), so the segment
    reads from its first page as a server's would; ``n_filler`` says how many, and
    ``start_lsn`` may move up to 16 bytes so that they fit.  Without ``fill`` the
    pages before it get headers and no records (reading must then start on the
    first record's page).  ``prev_lsn`` is the first record's xl_prev.
    ``bkp_removable`` sets XLP_BKP_REMOVABLE on every page, as a server not taking a
    backup does.
    """

    def __init__(self, *, major: int = 15, seg_size: int = 16 * MB, tli: int = 1, sysid: int = DEFAULT_SYSID,
                 start_lsn: int | None = None, prev_lsn: int = 0, fill: bool = True, bkp_removable: bool = False):
        if major not in XLOG_PAGE_MAGIC:
            raise ValueError(f"major version must be 13..18, not {major}")
        if seg_size < MB or seg_size > 1024 * MB or seg_size & (seg_size - 1):
            raise ValueError(f"segment size must be a power of two from 1 MB to 1 GB, not {seg_size}")
        self.major = major
        self.magic = XLOG_PAGE_MAGIC[major]
        self.seg_size = seg_size
        self.tli = tli
        self.sysid = sysid
        self.bkp_removable = bkp_removable
        self.prev = prev_lsn
        self.written: list[Written] = []
        self._segs: dict[int, bytearray] = {}
        start = self._record_pos(seg_size if start_lsn is None else MAXALIGN(start_lsn))
        seg_start = start - start % seg_size
        if fill:
            self.insert_lsn = seg_start
            start = self.fill_to(start)
        else:
            # Pages before the start in its segment exist (with headers) but hold no records
            for p in range(seg_start, start - start % XLOG_BLCKSZ + 1, XLOG_BLCKSZ):
                self._init_page(p, 0)
            self.insert_lsn = start
        self.n_filler = len(self.written)
        self.start_lsn = start  # the first record after the filler starts here

    @property
    def records(self) -> list[Written]:
        """The records appended after the filler."""
        return self.written[self.n_filler:]

    # -- bytes --------------------------------------------------------------------------------

    def _hdr_size(self, page_lsn: int) -> int:
        return SizeOfXLogLongPHD if page_lsn % self.seg_size == 0 else SizeOfXLogShortPHD

    def _seg(self, segno: int) -> bytearray:
        seg = self._segs.get(segno)
        if seg is None:
            seg = self._segs[segno] = bytearray(self.seg_size)
        return seg

    def _put(self, lsn: int, data) -> None:
        off = lsn % self.seg_size
        self._seg(lsn // self.seg_size)[off:off + len(data)] = data

    def _init_page(self, page_lsn: int, rem_len: int) -> None:
        """AdvanceXLInsertBuffer's page header (plus CopyXLogRecordToWAL's contrecord fields)."""
        info = XLP_BKP_REMOVABLE if self.bkp_removable else 0
        if rem_len:
            info |= XLP_FIRST_IS_CONTRECORD
        if page_lsn % self.seg_size == 0:
            info |= XLP_LONG_HEADER
        hdr = _XLogPageHeader.pack(self.magic, info, self.tli, page_lsn, rem_len)
        if info & XLP_LONG_HEADER:
            hdr += _XLogLongTail.pack(self.sysid, self.seg_size, XLOG_BLCKSZ)
        self._put(page_lsn, hdr)

    def _record_pos(self, lsn: int) -> int:
        """Where a record placed at ``lsn`` really starts: past the page header if ``lsn`` is in one."""
        page = lsn - lsn % XLOG_BLCKSZ
        return max(lsn, page + self._hdr_size(page))

    def _usable(self, pos: int, target: int) -> int:
        """Record bytes between two record starts (page headers in between do not count)."""
        first = pos - pos % XLOG_BLCKSZ + XLOG_BLCKSZ
        return target - pos - sum(self._hdr_size(p) for p in range(first, target, XLOG_BLCKSZ))

    # -- records ------------------------------------------------------------------------------

    def append(self, record: Record) -> Written:
        raw = assemble(record, self.prev, self.major)
        pos = self.insert_lsn
        if pos % XLOG_BLCKSZ == 0:
            self._init_page(pos, 0)
            pos += self._hdr_size(pos)
        lsn = pos
        data = memoryview(raw)
        while True:
            free = XLOG_BLCKSZ - pos % XLOG_BLCKSZ
            if len(data) <= free:
                self._put(pos, data)
                pos += len(data)
                break
            self._put(pos, data[:free])
            data = data[free:]
            pos += free
            self._init_page(pos, len(data))
            pos += self._hdr_size(pos)
        raw_end = pos
        end = MAXALIGN(raw_end)
        if record.is_switch and end % self.seg_size:
            # ReserveXLogSwitch: the rest of the segment the record ends in is consumed (and
            # CopyXLogRecordToWAL zeroes it): the next record starts on the next segment
            end += self.seg_size - end % self.seg_size
        self.insert_lsn = end
        w = Written(lsn, end, raw_end, self.prev, record, raw)
        self.prev = lsn
        self.written.append(w)
        return w

    def fill_to(self, target: int, chunk: int = 32768) -> int:
        """Append XLOG NOOP records until the next record starts at ``target``; returns that LSN.

        ``target`` moves forward by 8 or 16 bytes when the gap before it could not
        be filled exactly (no record is 8 or 16 bytes long).
        """
        target = self._record_pos(MAXALIGN(target))
        while True:
            pos = self._record_pos(self.insert_lsn)
            if pos > target:
                raise ValueError(f"cannot fill to {format_lsn(target)}: the next record starts at {format_lsn(pos)}")
            gap = self._usable(pos, target)
            if gap == 0:
                return target
            if gap in (8, 16):
                target = self._record_pos(target + 24 - gap)
                continue
            self.append(noop(chunk if gap > chunk + 512 else gap, fill=0))

    def extend(self, records) -> list[Written]:
        return [self.append(r) for r in records]

    # -- files --------------------------------------------------------------------------------

    @property
    def first_segno(self) -> int:
        return min(self._segs)

    @property
    def last_segno(self) -> int:
        """The segment of the next insert position: written too (zero-filled if nothing is in it)."""
        return max(max(self._segs), self.insert_lsn // self.seg_size)

    def segment_name(self, segno: int) -> str:
        return segment_file_name(self.tli, segno, self.seg_size)

    def segno_of(self, lsn: int) -> int:
        return lsn // self.seg_size

    def segment_bytes(self, segno: int) -> bytes:
        seg = self._segs.get(segno)
        return bytes(seg) if seg is not None else bytes(self.seg_size)

    def write(self, directory, *, segnos=None) -> list[Path]:
        """Write segment files (default: every segment from the first to ``last_segno``)."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        if segnos is None:
            segnos = range(self.first_segno, self.last_segno + 1)
        paths = []
        for segno in segnos:
            p = directory / self.segment_name(segno)
            p.write_bytes(self.segment_bytes(segno))
            paths.append(p)
        return paths

    def path_of(self, directory, lsn: int) -> Path:
        """The file that holds ``lsn`` once written to ``directory``."""
        return Path(directory) / self.segment_name(lsn // self.seg_size)

    def file_offset(self, lsn: int) -> int:
        return lsn % self.seg_size


def write_wal(directory, records, **kw) -> WALWriter:
    """Write ``records`` with a new ``WALWriter(**kw)`` into ``directory``; the writer knows where each went."""
    w = WALWriter(**kw)
    w.extend(records)
    w.write(directory)
    return w


def record_bytes_at(writer: WALWriter, w: Written, index: int) -> int:
    """The LSN of byte ``index`` of record ``w`` (skipping page headers it crosses)."""
    pos = w.lsn
    left = index
    while True:
        free = XLOG_BLCKSZ - pos % XLOG_BLCKSZ
        if left < free:
            return pos + left
        left -= free
        pos += free
        pos += writer._hdr_size(pos)
