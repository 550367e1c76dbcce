"""Pure-Python hot path: pages -> records -> block references.

The reference implementation of the API that ``native/_frame.pyx`` implements
again in Cython (``waldecode._impl`` picks one):

* ``frame_segment(buf, seg_lsn, st, verify_crc, path)`` walks the pages of one
  segment buffer from ``st.next_lsn`` and returns ``(records, stop)``, where
  records is a list of ``(lsn, raw_end_lsn, record_bytes)`` and stop a
  ``ReadStop`` or None (None: the segment was used up; a record that crosses
  into the next segment stays in ``st.partial``).
* ``decode_record(rec, lsn, end_lsn, major)`` splits one record into a
  ``DecodedRecord`` (xlogreader.c DecodeXLogRecord).

Both follow src/backend/access/transam/xlogreader.c: the checks, their order and
their messages are PostgreSQL's, so a stop reads like the server's own log.
Flat functions over bytes and offsets, few objects per record: this is the
shape Cython compiles well.
"""

from __future__ import annotations

import struct

from ..errors import CorruptRecordError, format_lsn
from .xlogpage import (
    MaxAllocSize,
    ReadStop,
    SizeOfXLogLongPHD,
    SizeOfXLogShortPHD,
    XLP_ALL_FLAGS,
    XLP_FIRST_IS_CONTRECORD,
    XLP_FIRST_IS_OVERWRITE_CONTRECORD,
    XLP_LONG_HEADER,
    XLogLongPageHeaderTail,
    XLogPageHeader,
)
from .xlogrecord import (
    BKPBLOCK_HAS_DATA,
    BKPBLOCK_HAS_IMAGE,
    BKPBLOCK_SAME_REL,
    BKPIMAGE_HAS_HOLE,
    BLCKSZ,
    XLR_BLOCK_ID_DATA_LONG,
    XLR_BLOCK_ID_DATA_SHORT,
    XLR_BLOCK_ID_ORIGIN,
    XLR_BLOCK_ID_TOPLEVEL_XID,
    XLR_MAX_BLOCK_ID,
    BlockRef,
    DecodedRecord,
)

# src/include/access/xlogrecord.h: XLogRecord
_XLogRecord = struct.Struct("<IIQBBxxI")
_u16 = struct.Struct("<H")
_u32 = struct.Struct("<I")
_RelFileLocator_blkno = struct.Struct("<IIII")
_BlockImageHeader = struct.Struct("<HHB")

# src/include/access/rmgrlist.h (``waldecode.rmgr``'s table, not imported here: it loads every rmgr module)
RM_XLOG_ID = 0
RM_XACT_ID = 1
RM_RELMAP_ID = 7
RM_STANDBY_ID = 8
RM_HEAP2_ID = 9
RM_HEAP_ID = 10
XLOG_SWITCH = 0x40
RM_MAX_BUILTIN_ID = 21
RM_MIN_CUSTOM_ID = 128

# BKPIMAGE_COMPRESSED(info): pglz|lz4|zstd bits from 15, the single pglz bit before
BKPIMAGE_COMPRESSED_MASK_V15 = 0x04 | 0x08 | 0x10
BKPIMAGE_COMPRESSED_MASK_V13 = 0x02


def bkpimage_compressed_mask(major: int) -> int:
    """The bits of bimg_info that say a block image is compressed, in WAL of PostgreSQL ``major``."""
    return BKPIMAGE_COMPRESSED_MASK_V15 if major >= 15 else BKPIMAGE_COMPRESSED_MASK_V13


def crc32c(data, value: int = 0) -> int:
    """crc32c.crc32c, imported on first use: the package loads importlib.metadata, 25 ms of
    start-up that the Cython implementation (its own CRC in C) never needs."""
    global crc32c
    from crc32c import crc32c  # lazy: 25 ms (importlib.metadata), see the docstring
    return crc32c(data, value)


def _rmid_valid(rmid: int, magic: int) -> bool:
    # 15 (magic 0xD110) added custom resource managers 128..255 (RmgrIdIsValid)
    return rmid <= RM_MAX_BUILTIN_ID or (rmid >= RM_MIN_CUSTOM_ID and magic >= 0xD110)


def _check_page(buf, page_off: int, seg_lsn: int, st, path, sequential: bool = True):
    """XLogReaderValidatePageHeader.  Returns (hdr_size, xlp_info, xlp_rem_len) or a ReadStop.

    ``sequential`` is False for the re-check of a segment's first page when reading starts
    later in it: the timeline order applies only to pages read one after the other.
    """
    magic, info, tli, pageaddr, rem_len = XLogPageHeader.unpack_from(buf, page_off)
    page_lsn = seg_lsn + page_off
    if magic != st.magic:
        if magic == 0 and not any(buf[page_off:page_off + SizeOfXLogShortPHD]):
            return ReadStop(page_lsn, "end", f"zeroed page at offset {page_off} (end of WAL)", path)
        return ReadStop(page_lsn, "invalid",
                        f"invalid magic number {magic:04X} in log segment, offset {page_off}", path)
    if info & ~XLP_ALL_FLAGS:
        return ReadStop(page_lsn, "invalid", f"invalid info bits {info:04X} in log segment, offset {page_off}", path)
    if info & XLP_LONG_HEADER:
        sysid, seg_size, blcksz = XLogLongPageHeaderTail.unpack_from(buf, page_off + 24)
        if st.sysid and sysid != st.sysid:
            return ReadStop(page_lsn, "invalid",
                            "WAL file is from different database system: WAL file database system "
                            f"identifier is {sysid}, expected {st.sysid}", path)
        if seg_size != st.seg_size:
            return ReadStop(page_lsn, "invalid", "WAL file is from different database system: "
                            "incorrect segment size in page header", path)
        if blcksz != st.page_size:
            return ReadStop(page_lsn, "invalid", "WAL file is from different database system: "
                            "incorrect XLOG_BLCKSZ in page header", path)
        hdr = SizeOfXLogLongPHD
    elif page_off == 0:
        return ReadStop(page_lsn, "invalid", f"invalid info bits {info:04X} in log segment, offset 0", path)
    else:
        hdr = SizeOfXLogShortPHD
    if pageaddr != page_lsn:
        # A recycled segment still holds pages from its previous life
        return ReadStop(page_lsn, "end",
                        f"unexpected pageaddr {format_lsn(pageaddr)} in log segment, offset {page_off}", path)
    if not sequential:
        return hdr, info, rem_len
    if tli < st.latest_tli:
        return ReadStop(page_lsn, "invalid",
                        f"out-of-sequence timeline ID {tli} (after {st.latest_tli}) in log segment, "
                        f"offset {page_off}", path)
    st.latest_tli = tli
    return hdr, info, rem_len


def _check_record(rec, lsn: int, st, verify_crc: bool, path):
    """ValidXLogRecordHeader + ValidXLogRecord: None if valid, else a ReadStop."""
    tot_len, _xid, prev, _info, rmid, crc = _XLogRecord.unpack_from(rec, 0)
    if not _rmid_valid(rmid, st.magic):
        return ReadStop(lsn, "invalid", f"invalid resource manager ID {rmid} at {format_lsn(lsn)}", path)
    if st.rand_access:
        if prev >= lsn:
            return ReadStop(lsn, "invalid", f"record with incorrect prev-link {format_lsn(prev)} "
                            f"at {format_lsn(lsn)}", path)
    elif prev != st.prev_lsn:
        return ReadStop(lsn, "invalid", f"record with incorrect prev-link {format_lsn(prev)} "
                        f"at {format_lsn(lsn)}", path)
    if verify_crc and crc32c(memoryview(rec)[:20], crc32c(memoryview(rec)[24:tot_len])) != crc:
        return ReadStop(lsn, "invalid",
                        f"incorrect resource manager data checksum in record at {format_lsn(lsn)}", path)
    return None


def frame_segment(buf, seg_lsn: int, st, verify_crc: bool = True, path=None):
    records = []
    page_size = st.page_size
    seg_size = st.seg_size
    buflen = len(buf)
    pos = st.next_lsn - seg_lsn
    cur_page = -1
    hdr = info = rem_len = 0
    end_limit = st.end_lsn
    fresh = st.partial is None and st.rand_access  # may be mid-record: skip continuation data
    while True:
        if pos >= seg_size:
            st.next_lsn = seg_lsn + seg_size
            return records, None
        page_off = pos - pos % page_size
        if page_off != cur_page:
            if page_off + page_size > buflen:
                st.next_lsn = seg_lsn + pos
                reason = f"end of available data: file holds {buflen} of {seg_size} bytes"
                if st.partial is not None:
                    return records, ReadStop(st.partial_lsn, "end", f"record at {format_lsn(st.partial_lsn)} "
                                             f"is incomplete: {reason}", path)
                return records, ReadStop(seg_lsn + pos, "end", reason, path)
            if cur_page < 0 and page_off != 0:
                # Validate the segment's long header too, as xlogreader does on opening a segment
                checked = _check_page(buf, 0, seg_lsn, st, path, sequential=False)
                if isinstance(checked, ReadStop):
                    return records, checked
            checked = _check_page(buf, page_off, seg_lsn, st, path)
            if isinstance(checked, ReadStop):
                if st.partial is not None and checked.kind == "end":
                    checked = ReadStop(st.partial_lsn, "end",
                                       f"record at {format_lsn(st.partial_lsn)} is incomplete: "
                                       + checked.reason, path)
                return records, checked
            hdr, info, rem_len = checked
            cur_page = page_off
            if st.partial is not None:
                partial = st.partial
                if info & XLP_FIRST_IS_OVERWRITE_CONTRECORD:
                    # The record being assembled was abandoned; reading restarts on this page
                    st.partial = None
                    pos = page_off + hdr
                    continue
                if not info & XLP_FIRST_IS_CONTRECORD:
                    return records, ReadStop(seg_lsn + page_off, "invalid",
                                             f"there is no contrecord flag at {format_lsn(seg_lsn + page_off)}",
                                             path)
                need = st.partial_total - len(partial)
                if rem_len == 0 or rem_len != need:
                    return records, ReadStop(seg_lsn + page_off, "invalid",
                                             f"invalid contrecord length {rem_len} (expected {need}) at "
                                             f"{format_lsn(seg_lsn + page_off)}", path)
                take = min(rem_len, page_size - hdr)
                if _partial_header_only(st):
                    st.partial_total -= take
                else:
                    partial += buf[page_off + hdr:page_off + hdr + take]
                if take < rem_len:
                    pos = page_off + page_size
                    continue
                lsn = st.partial_lsn
                raw_end = seg_lsn + page_off + hdr + rem_len
                header_only = _partial_header_only(st)
                st.partial = None
                if end_limit and raw_end > end_limit:
                    st.next_lsn = lsn
                    return records, ReadStop(lsn, "limit", "end of requested range", path)
                rec = bytes(partial)
                bad = _check_record(rec, lsn, st, verify_crc and not header_only, path)
                if bad is not None:
                    st.next_lsn = lsn
                    return records, bad
                if header_only:
                    _note_first(st.firsts, rec, lsn)
                else:
                    records.append((lsn, raw_end, rec))
                st.prev_lsn = lsn
                st.rand_access = False
                pos = page_off + hdr + ((rem_len + 7) & ~7)
                if st.stop_after_partial:
                    st.next_lsn = seg_lsn + pos
                    return records, None
                if rec[17] == RM_XLOG_ID and rec[16] & 0xF0 == XLOG_SWITCH:
                    st.next_lsn = seg_lsn + seg_size
                    st.switch_seen = True
                    return records, None
                continue
            if pos == page_off:
                if info & XLP_FIRST_IS_CONTRECORD:
                    if not fresh:
                        return records, ReadStop(seg_lsn + pos, "invalid",
                                                 f"contrecord is requested by {format_lsn(seg_lsn + pos)}", path)
                    # XLogFindNextRecord: skip the tail of a record begun before this page
                    skip = (rem_len + 7) & ~7
                    if hdr + skip >= page_size:
                        pos = page_off + page_size
                        continue
                    pos = page_off + hdr + skip
                else:
                    pos = page_off + hdr
            elif pos < page_off + hdr:
                pos = page_off + hdr
            fresh = False
        # A record starts at pos, on the current page
        lsn = seg_lsn + pos
        if end_limit and lsn >= end_limit:
            st.next_lsn = lsn
            return records, ReadStop(lsn, "limit", "end of requested range", path)
        tot_len = _u32.unpack_from(buf, pos)[0]
        if tot_len < 24:
            st.next_lsn = lsn
            kind = "end" if tot_len == 0 else "invalid"
            return records, ReadStop(lsn, kind, f"invalid record length at {format_lsn(lsn)}: "
                                     f"expected at least 24, got {tot_len}", path)
        if tot_len > MaxAllocSize:
            st.next_lsn = lsn
            return records, ReadStop(lsn, "invalid", f"record length {tot_len} at {format_lsn(lsn)} too long", path)
        avail = page_off + page_size - pos
        if tot_len <= avail:
            if end_limit and lsn + tot_len > end_limit:
                st.next_lsn = lsn
                return records, ReadStop(lsn, "limit", "end of requested range", path)
            header_only = _header_only(st, buf, pos, tot_len)
            rec = bytes(buf[pos:pos + (24 if header_only else tot_len)])
            bad = _check_record(rec, lsn, st, verify_crc and not header_only, path)
            if bad is not None:
                st.next_lsn = lsn
                return records, bad
            if header_only:
                _note_first(st.firsts, rec, lsn)
            else:
                records.append((lsn, lsn + tot_len, rec))
            st.prev_lsn = lsn
            st.rand_access = False
            pos += (tot_len + 7) & ~7
            if rec[17] == RM_XLOG_ID and rec[16] & 0xF0 == XLOG_SWITCH:
                st.next_lsn = seg_lsn + seg_size
                st.switch_seen = True
                return records, None
            continue
        if avail >= 24:
            # Header on this page: check it before trusting the length (xlogreader.c does the same)
            _t, _x, prev, _i, rmid, _c = _XLogRecord.unpack_from(buf, pos)
            if not _rmid_valid(rmid, st.magic):
                st.next_lsn = lsn
                return records, ReadStop(lsn, "invalid", f"invalid resource manager ID {rmid} at {format_lsn(lsn)}",
                                         path)
            if (prev >= lsn) if st.rand_access else (prev != st.prev_lsn):
                st.next_lsn = lsn
                return records, ReadStop(lsn, "invalid", f"record with incorrect prev-link {format_lsn(prev)} "
                                         f"at {format_lsn(lsn)}", path)
        st.partial = bytearray(buf[pos:page_off + page_size])
        st.partial_lsn = lsn
        st.partial_total = tot_len
        st.partial_header_only = _header_only(st, buf, pos, avail) if avail >= 24 else None
        if st.partial_header_only:
            del st.partial[24:]
            st.partial_total = tot_len - (avail - 24)
        pos = page_off + page_size


def _header_only(st, buf, pos: int, avail: int) -> bool:
    """Whether framing keeps only the header of the record at ``buf[pos:]`` (``FrameState.firsts``), of
    which ``avail`` bytes (at least its 24-byte header) are on this page: every record but RM_XACT's,
    and, with ``FrameState.catalog``, but those the catalog history may need (``catalog_wanted``)."""
    if st.firsts is None or buf[pos + 17] == RM_XACT_ID:
        return False
    return st.catalog is None or not catalog_wanted(buf, pos, avail, st.catalog)


def _partial_header_only(st) -> bool:
    """``_header_only`` of the record being assembled in ``st.partial``: decided when it began, or, when its
    header was split by a page boundary, once the header is whole (``st.partial_header_only`` None until
    then)."""
    if st.partial_header_only is None and len(st.partial) >= 24:
        st.partial_header_only = _header_only(st, st.partial, 0, len(st.partial))
    return bool(st.partial_header_only)


def catalog_wanted(buf, pos: int, avail: int, catalog: tuple) -> bool:
    """Whether the record at ``buf[pos:]`` (``avail`` of its bytes at hand) may be one the catalog history
    needs (``spark.ranges.catalog_records`` chooses among those kept): standby and relation-map records;
    heap, heap2 and XLOG records whose first block is of a relfilenode in ``catalog[0]`` (the tracked
    catalogs'; ``catalog[1]``: the BKPIMAGE_COMPRESSED mask of the WAL's version), or without blocks
    (XLOG_HEAP2_NEW_CID, checkpoints, parameter changes), and XLOG records with an xid.  Read from the
    first block header (XLogRecordBlockHeader, its image header, RelFileLocator) as DecodeXLogRecord
    reads it; a record whose bytes at hand do not show its first block's relation is kept."""
    rmid = buf[pos + 17]
    if rmid == RM_STANDBY_ID or rmid == RM_RELMAP_ID:
        return True
    if rmid != RM_HEAP_ID and rmid != RM_HEAP2_ID and rmid != RM_XLOG_ID:
        return False
    if rmid == RM_XLOG_ID and _u32.unpack_from(buf, pos + 4)[0]:
        return True
    if avail < 28 or buf[pos + 24] > XLR_MAX_BLOCK_ID:
        return True  # too short to tell, or no block (the main data or the origin follow the header)
    fork_flags = buf[pos + 25]
    off = 28  # XLogRecord, then the block id, fork_flags and data_length
    if fork_flags & BKPBLOCK_HAS_IMAGE:
        if avail < off + _BlockImageHeader.size:
            return True
        bimg_info = buf[pos + off + 4]
        off += _BlockImageHeader.size
        if bimg_info & BKPIMAGE_HAS_HOLE and bimg_info & catalog[1]:
            off += 2  # XLogRecordBlockCompressHeader
    if fork_flags & BKPBLOCK_SAME_REL or avail < off + 12:
        return True  # the first block cannot name "the same relation": left to the decoder
    return _u32.unpack_from(buf, pos + off + 8)[0] in catalog[0]


def _note_first(firsts: dict, rec, lsn: int) -> None:
    """``FrameState.firsts``: the record's xid with its LSN, unless the xid is 0 or already there."""
    xid = _u32.unpack_from(rec, 4)[0]
    if xid and xid not in firsts:
        firsts[xid] = lsn


def _corrupt(lsn: int, message: str) -> CorruptRecordError:
    """A CorruptRecordError whose message already names the LSN, with ``.lsn`` set as well."""
    err = CorruptRecordError(message)
    err.lsn = lsn
    return err


def decode_record(rec, lsn: int, end_lsn: int, major: int) -> DecodedRecord:
    """DecodeXLogRecord: split a complete record into header, block references and main data."""
    tot_len, xid, prev, info, rmid, crc = _XLogRecord.unpack_from(rec, 0)
    compressed_mask = bkpimage_compressed_mask(major)
    pos = 24
    remaining = tot_len - 24
    datatotal = 0
    origin = 0
    toplevel = 0
    main_len = 0
    max_block_id = -1
    heads = []  # (block_id, fork_flags, data_len, has_image, bimg_len, hole_offset, bimg_info, hole_length, rel, blkno)
    last_rel = None
    try:
        while remaining > datatotal:
            block_id = rec[pos]
            pos += 1
            remaining -= 1
            if block_id == XLR_BLOCK_ID_DATA_SHORT:
                main_len = rec[pos]
                pos += 1
                remaining -= 1
                datatotal += main_len
                break
            if block_id == XLR_BLOCK_ID_DATA_LONG:
                if remaining < 4:
                    raise IndexError
                main_len = _u32.unpack_from(rec, pos)[0]
                pos += 4
                remaining -= 4
                datatotal += main_len
                break
            if block_id == XLR_BLOCK_ID_ORIGIN:
                if remaining < 2:
                    raise IndexError
                origin = _u16.unpack_from(rec, pos)[0]
                pos += 2
                remaining -= 2
                continue
            if block_id == XLR_BLOCK_ID_TOPLEVEL_XID and major >= 14:
                if remaining < 4:
                    raise IndexError
                toplevel = _u32.unpack_from(rec, pos)[0]
                pos += 4
                remaining -= 4
                continue
            if block_id > XLR_MAX_BLOCK_ID:
                raise _corrupt(lsn, f"invalid block_id {block_id} at {format_lsn(lsn)}")
            if block_id <= max_block_id:
                raise _corrupt(lsn, f"out-of-order block_id {block_id} at {format_lsn(lsn)}")
            max_block_id = block_id
            if remaining < 3:
                raise IndexError
            fork_flags = rec[pos]
            data_len = _u16.unpack_from(rec, pos + 1)[0]
            pos += 3
            remaining -= 3
            has_image = bool(fork_flags & BKPBLOCK_HAS_IMAGE)
            if fork_flags & BKPBLOCK_HAS_DATA:
                if data_len == 0:
                    raise _corrupt(lsn, f"BKPBLOCK_HAS_DATA set, but no data included at {format_lsn(lsn)}")
            elif data_len != 0:
                raise _corrupt(lsn, f"BKPBLOCK_HAS_DATA not set, but data length is {data_len} at "
                                         f"{format_lsn(lsn)}")
            datatotal += data_len
            bimg_len = hole_offset = bimg_info = hole_length = 0
            if has_image:
                if remaining < 5:
                    raise IndexError
                bimg_len, hole_offset, bimg_info = _BlockImageHeader.unpack_from(rec, pos)
                pos += 5
                remaining -= 5
                is_compressed = bimg_info & compressed_mask
                if is_compressed:
                    if bimg_info & BKPIMAGE_HAS_HOLE:
                        if remaining < 2:
                            raise IndexError
                        hole_length = _u16.unpack_from(rec, pos)[0]
                        pos += 2
                        remaining -= 2
                else:
                    hole_length = BLCKSZ - bimg_len
                datatotal += bimg_len
                if bimg_info & BKPIMAGE_HAS_HOLE:
                    if hole_offset == 0 or hole_length == 0 or bimg_len == BLCKSZ:
                        raise _corrupt(lsn, 
                            f"BKPIMAGE_HAS_HOLE set, but hole offset {hole_offset} length {hole_length} "
                            f"block image length {bimg_len} at {format_lsn(lsn)}")
                elif hole_offset != 0 or hole_length != 0:
                    raise _corrupt(lsn, 
                        f"BKPIMAGE_HAS_HOLE not set, but hole offset {hole_offset} length {hole_length} at "
                        f"{format_lsn(lsn)}")
                if is_compressed and bimg_len == BLCKSZ:
                    raise _corrupt(lsn, f"BKPIMAGE_COMPRESSED set, but block image length {bimg_len} at "
                                             f"{format_lsn(lsn)}")
                if not bimg_info & BKPIMAGE_HAS_HOLE and not is_compressed and bimg_len != BLCKSZ:
                    raise _corrupt(lsn, 
                        "neither BKPIMAGE_HAS_HOLE nor BKPIMAGE_COMPRESSED set, but block image length is "
                        f"{bimg_len} at {format_lsn(lsn)}")
            if not fork_flags & BKPBLOCK_SAME_REL:
                if remaining < 16:
                    raise IndexError
                spc, db, relnum, blkno = _RelFileLocator_blkno.unpack_from(rec, pos)
                last_rel = (spc, db, relnum)
                pos += 16
                remaining -= 16
            else:
                if last_rel is None:
                    raise _corrupt(lsn, f"BKPBLOCK_SAME_REL set but no previous rel at {format_lsn(lsn)}")
                if remaining < 4:
                    raise IndexError
                spc, db, relnum = last_rel
                blkno = _u32.unpack_from(rec, pos)[0]
                pos += 4
                remaining -= 4
            heads.append((block_id, fork_flags, data_len, has_image, bimg_len, hole_offset, bimg_info,
                          hole_length, spc, db, relnum, blkno))
    except IndexError:
        raise _corrupt(lsn, f"record with invalid length at {format_lsn(lsn)}") from None
    if remaining != datatotal:
        raise _corrupt(lsn, f"record with invalid length at {format_lsn(lsn)}")
    blocks = []
    for (block_id, fork_flags, data_len, has_image, bimg_len, hole_offset, bimg_info, hole_length,
         spc, db, relnum, blkno) in heads:
        image = None
        if has_image:
            image = rec[pos:pos + bimg_len]
            pos += bimg_len
        data = rec[pos:pos + data_len]
        pos += data_len
        blocks.append(BlockRef(block_id, fork_flags & 0x0F, fork_flags & 0xF0, spc, db, relnum, blkno,
                               has_image, bimg_info, hole_offset, hole_length, bimg_len, image, data))
    main_data = rec[pos:pos + main_len]
    return DecodedRecord(lsn, end_lsn, tot_len, xid, prev, info, rmid, crc, tuple(blocks), main_data,
                         origin, toplevel)
from ..pg.pglz import pglz_decompress  # noqa: F401  (the reference; _native has its own)
