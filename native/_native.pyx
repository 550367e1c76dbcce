# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Cython hot path: the same API as waldecode/_pyframe.py, compiled.

``frame_segment`` and ``decode_record`` run their common case in C over the
segment buffer.  Whenever a check fails, they hand the same input to the
pure-Python reference (``waldecode.wal._pyframe``), which builds the ReadStop or
raises the error: both implementations therefore report bad input with the very
same messages, and the rare path stays in one place.
"""

from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.list cimport PyList_Append
from libc.string cimport memcpy


import array

from waldecode.wal import _pyframe
from waldecode.errors import format_lsn
from waldecode.wal.xlogpage import ReadStop
from waldecode.wal.xlogrecord import BlockRef, DecodedRecord

# A NamedTuple's own __new__ is Python code (a frame per call): build the tuples with
# tuple.__new__ straight away, as that __new__ itself does.
cdef object _tuple_new = tuple.__new__

from pgdefs cimport pg_u16, pg_u32, pg_u64

# CRC-32C as src/port/pg_crc32c_sse42.c / _sb8.c compute it (native/wd_crc32c.h): a record's CRC in one C
# call, where the crc32c package costs two calls and two memoryview slices per record
cdef extern from "wd_crc32c.h":
    const unsigned int INIT_CRC32C
    const unsigned int FIN_CRC32C
    void pg_crc32c_init() nogil
    unsigned int wd_record_crc(const unsigned char *r, unsigned int tot_len) nogil

pg_crc32c_init()


# xlog_internal.h / xlogrecord.h / memutils.h, generated from the Python modules (native/pgconsts.py)
from pgconsts cimport RM_HEAP2_ID, RM_HEAP_ID, RM_RELMAP_ID, RM_STANDBY_ID, RM_XACT_ID, RM_XLOG_ID
from pgconsts cimport BKPBLOCK_FLAG_MASK, BKPBLOCK_HAS_IMAGE, BKPBLOCK_SAME_REL, BKPIMAGE_HAS_HOLE, XLR_MAX_BLOCK_ID
from pgconsts cimport (BLCKSZ, MaxAllocSize, SizeOfXLogLongPHD, SizeOfXLogShortPHD, XLP_ALL_FLAGS,
                       XLP_FIRST_IS_CONTRECORD, XLP_FIRST_IS_OVERWRITE_CONTRECORD, XLP_LONG_HEADER)


cdef extern from "Python.h":
    void PyObject_GC_UnTrack(void *op)


cdef inline int _append_record(list records, unsigned long long lsn, unsigned long long raw_end, bytes rec) except -1:
    """records.append((lsn, raw_end, rec)), the tuple left out of garbage collection: it holds no
    container (what the collector finds out about such a tuple itself, _PyTuple_MaybeUntrack, after
    traversing it once) — a segment's records are tens of thousands of them."""
    cdef tuple t = (lsn, raw_end, rec)
    PyObject_GC_UnTrack(<void *>t)
    return PyList_Append(records, t)


# DecodeXLogRecord, the one of every extension (native/wd_xlogrecord.h)
from wd_xlogrecord cimport *


cdef extern from "wd_xlogpage.h":
    bint wd_rmid_valid(unsigned int rmid, unsigned int magic) nogil
    bint wd_page_ok(const unsigned char *p, long long page_off, unsigned long long seg_lsn, unsigned int magic,
                    unsigned int page_size, unsigned long long seg_size, unsigned long long sysid,
                    unsigned int latest_tli) nogil


cdef inline bint _record_ok(const unsigned char *r, Py_ssize_t n, unsigned long long lsn, unsigned int magic,
                            unsigned long long prev_lsn, bint rand_access, bint verify_crc) noexcept nogil:
    """_pyframe._check_record's checks, on the state ``frame_segment`` keeps in C while it runs:
    False sends the record to it for the ReadStop."""
    cdef unsigned int tot_len = pg_u32(r)
    cdef unsigned long long prev = pg_u64(r + 8)
    if not wd_rmid_valid(r[17], magic):
        return False
    if (prev >= lsn) if rand_access else (prev != prev_lsn):
        return False
    return not verify_crc or (tot_len <= n and wd_record_crc(r, tot_len) == pg_u32(r + 20))


cdef inline bint _catalog_wanted(const unsigned char *r, Py_ssize_t avail, const unsigned int *nodes, Py_ssize_t n,
                                 unsigned int compressed_mask) noexcept nogil:
    """_pyframe.catalog_wanted (its docstring says which records), on the ``avail`` bytes of the record at
    ``r``; ``nodes``: the relfilenodes, sorted."""
    cdef unsigned int rmid = r[17], rel, fork_flags, bimg_info
    cdef Py_ssize_t off = 28, lo = 0, hi = n, mid
    if rmid == RM_STANDBY_ID or rmid == RM_RELMAP_ID:
        return True
    if rmid != RM_HEAP_ID and rmid != RM_HEAP2_ID and rmid != RM_XLOG_ID:
        return False
    if rmid == RM_XLOG_ID and pg_u32(r + 4) != 0:
        return True
    if avail < 28 or r[24] > XLR_MAX_BLOCK_ID:
        return True
    fork_flags = r[25]
    if fork_flags & BKPBLOCK_HAS_IMAGE:
        if avail < off + 5:
            return True
        bimg_info = r[off + 4]
        off += 5  # SizeOfXLogRecordBlockImageHeader
        if bimg_info & BKPIMAGE_HAS_HOLE and bimg_info & compressed_mask:
            off += 2  # SizeOfXLogRecordBlockCompressHeader
    if fork_flags & BKPBLOCK_SAME_REL or avail < off + 12:
        return True
    rel = pg_u32(r + off + 8)
    while lo < hi:
        mid = (lo + hi) >> 1
        if nodes[mid] < rel:
            lo = mid + 1
        else:
            hi = mid
    return lo < n and nodes[lo] == rel


def frame_segment(buf, unsigned long long seg_lsn, st, bint verify_crc=True, path=None):
    cdef const unsigned char[:] view = buf
    cdef const unsigned char *b = &view[0] if view.shape[0] else NULL
    cdef Py_ssize_t buflen = view.shape[0]
    # st.prev_lsn and st.rand_access, kept here while records are taken (``dirty``: not yet written
    # back), written back before the reference is asked anything and on return
    cdef unsigned long long prev_lsn = st.prev_lsn
    cdef bint rand_access = st.rand_access, dirty = False
    try:
        return _frame_loop(buf, view, b, buflen, seg_lsn, st, verify_crc, path, &prev_lsn, &rand_access, &dirty)
    finally:
        if dirty:
            st.prev_lsn = prev_lsn
            st.rand_access = rand_access


cdef inline int _sync(st, unsigned long long *prev_lsn, bint *rand_access, bint *dirty) except -1:
    """Write the state ``frame_segment`` keeps in C back, for the reference to read."""
    if dirty[0]:
        st.prev_lsn = prev_lsn[0]
        st.rand_access = rand_access[0]
        dirty[0] = False
    return 0


cdef tuple _frame_loop(buf, const unsigned char[:] view, const unsigned char *b, Py_ssize_t buflen,
                       unsigned long long seg_lsn, st, bint verify_crc, path, unsigned long long *prev_lsn,
                       bint *rand_access, bint *dirty):
    cdef unsigned int page_size = st.page_size
    cdef unsigned long long seg_size = st.seg_size
    cdef unsigned int magic = st.magic
    cdef unsigned long long sysid = st.sysid
    cdef unsigned long long end_limit = st.end_lsn
    cdef Py_ssize_t pos = <Py_ssize_t>(st.next_lsn - seg_lsn)
    cdef Py_ssize_t cur_page = -1, page_off, hdr = 0, avail, take, need
    cdef unsigned long long skip
    cdef unsigned int info = 0, rem_len = 0, tot_len
    cdef unsigned long long lsn, raw_end, prev
    cdef bint fresh = st.partial is None and rand_access[0]
    cdef list records = []
    cdef bytes rec
    # FrameState.firsts: records other than RM_XACT's read up to their header only, their xids noted there;
    # FrameState.catalog: but those the catalog history may need (``_catalog_wanted``), its relfilenodes sorted
    cdef dict firsts = st.firsts
    cdef bint header_only
    cdef bint by_catalog = firsts is not None and st.catalog is not None
    cdef bytes cat_nodes = array.array("I", sorted(st.catalog[0])).tobytes() if by_catalog else b""
    cdef const unsigned int *cat_ptr = <const unsigned int *>PyBytes_AS_STRING(cat_nodes)
    cdef Py_ssize_t cat_n = len(cat_nodes) // 4
    cdef unsigned int cat_mask = st.catalog[1] if by_catalog else 0
    cdef unsigned int xid, last_xid = 0  # the xid noted last: a transaction's records mostly come together
    while True:
        if <unsigned long long>pos >= seg_size:
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
                if not wd_page_ok(b, 0, seg_lsn, magic, page_size, seg_size, sysid, 0):
                    _sync(st, prev_lsn, rand_access, dirty)
                    checked = _pyframe._check_page(buf, 0, seg_lsn, st, path, sequential=False)
                    if isinstance(checked, ReadStop):
                        return records, checked
            if not wd_page_ok(b + page_off, page_off, seg_lsn, magic, page_size, seg_size, sysid, st.latest_tli):
                # The slow path names the failure exactly as the reference does
                st.next_lsn = seg_lsn + pos
                _sync(st, prev_lsn, rand_access, dirty)
                records2, stop = _pyframe.frame_segment(buf, seg_lsn, st, verify_crc, path)
                return records + records2, stop
            info = pg_u16(b + page_off + 2)
            rem_len = pg_u32(b + page_off + 16)
            hdr = SizeOfXLogLongPHD if info & XLP_LONG_HEADER else SizeOfXLogShortPHD
            st.latest_tli = pg_u32(b + page_off + 4)
            cur_page = page_off
            if st.partial is not None:
                partial = st.partial
                need = st.partial_total - len(partial)
                if (info & XLP_FIRST_IS_OVERWRITE_CONTRECORD or not info & XLP_FIRST_IS_CONTRECORD
                        or rem_len == 0 or rem_len != need):
                    st.next_lsn = seg_lsn + pos
                    _sync(st, prev_lsn, rand_access, dirty)
                    records2, stop = _pyframe.frame_segment(buf, seg_lsn, st, verify_crc, path)
                    return records + records2, stop
                take = min(<Py_ssize_t>rem_len, page_size - hdr)
                if _pyframe._partial_header_only(st):
                    st.partial_total -= take
                else:
                    partial += view[page_off + hdr:page_off + hdr + take]
                if take < rem_len:
                    pos = page_off + page_size
                    continue
                lsn = st.partial_lsn
                raw_end = seg_lsn + page_off + hdr + rem_len
                header_only = _pyframe._partial_header_only(st)
                st.partial = None
                if end_limit and raw_end > end_limit:
                    st.next_lsn = lsn
                    return records, ReadStop(lsn, "limit", "end of requested range", path)
                rec = bytes(partial)
                if not _record_ok(rec, len(rec), lsn, magic, prev_lsn[0], rand_access[0],
                                  verify_crc and not header_only):
                    _sync(st, prev_lsn, rand_access, dirty)
                    bad = _pyframe._check_record(rec, lsn, st, verify_crc and not header_only, path)
                    if bad is not None:
                        st.next_lsn = lsn
                        return records, bad
                if header_only:
                    xid = pg_u32(<const unsigned char *>PyBytes_AS_STRING(rec) + 4)
                    if xid != 0 and xid not in firsts:
                        firsts[xid] = lsn
                else:
                    _append_record(records, lsn, raw_end, rec)
                prev_lsn[0] = lsn
                rand_access[0] = False
                dirty[0] = True
                pos = page_off + hdr + ((rem_len + 7) & ~7)
                if st.stop_after_partial:
                    st.next_lsn = seg_lsn + pos
                    return records, None
                if rec[17] == 0 and rec[16] & 0xF0 == 0x40:
                    st.next_lsn = seg_lsn + seg_size
                    st.switch_seen = True
                    return records, None
                continue
            if pos == page_off:
                if info & XLP_FIRST_IS_CONTRECORD:
                    if not fresh:
                        st.next_lsn = seg_lsn + pos
                        _sync(st, prev_lsn, rand_access, dirty)
                        records2, stop = _pyframe.frame_segment(buf, seg_lsn, st, verify_crc, path)
                        return records + records2, stop
                    skip = (<unsigned long long>rem_len + 7) & ~(<unsigned long long>7)
                    if hdr + skip >= page_size:
                        pos = page_off + page_size
                        continue
                    pos = page_off + hdr + skip
                else:
                    pos = page_off + hdr
            elif pos < page_off + hdr:
                pos = page_off + hdr
            fresh = False
        lsn = seg_lsn + pos
        if end_limit and lsn >= end_limit:
            st.next_lsn = lsn
            return records, ReadStop(lsn, "limit", "end of requested range", path)
        tot_len = pg_u32(b + pos)
        if tot_len < 24 or tot_len > MaxAllocSize:
            st.next_lsn = lsn
            _sync(st, prev_lsn, rand_access, dirty)
            records2, stop = _pyframe.frame_segment(buf, seg_lsn, st, verify_crc, path)
            return records + records2, stop
        avail = page_off + page_size - pos
        if tot_len <= avail:
            if end_limit and lsn + tot_len > end_limit:
                st.next_lsn = lsn
                return records, ReadStop(lsn, "limit", "end of requested range", path)
            if firsts is not None and b[pos + 17] != RM_XACT_ID and not (
                    by_catalog and _catalog_wanted(b + pos, tot_len, cat_ptr, cat_n, cat_mask)):
                if not _record_ok(b + pos, tot_len, lsn, magic, prev_lsn[0], rand_access[0], False):
                    _sync(st, prev_lsn, rand_access, dirty)
                    bad = _pyframe._check_record(PyBytes_FromStringAndSize(<const char *>b + pos, 24), lsn, st,
                                                 False, path)
                    if bad is not None:
                        st.next_lsn = lsn
                        return records, bad
                xid = pg_u32(b + pos + 4)
                if xid != 0 and xid != last_xid:
                    last_xid = xid
                    if xid not in firsts:
                        firsts[xid] = lsn
            else:
                rec = PyBytes_FromStringAndSize(<const char *>b + pos, tot_len)
                if not _record_ok(b + pos, tot_len, lsn, magic, prev_lsn[0], rand_access[0], verify_crc):
                    _sync(st, prev_lsn, rand_access, dirty)
                    bad = _pyframe._check_record(rec, lsn, st, verify_crc, path)
                    if bad is not None:
                        st.next_lsn = lsn
                        return records, bad
                _append_record(records, lsn, lsn + tot_len, rec)
            prev_lsn[0] = lsn
            rand_access[0] = False
            dirty[0] = True
            pos += (tot_len + 7) & ~7
            if b[pos - ((tot_len + 7) & ~7) + 17] == 0 and b[pos - ((tot_len + 7) & ~7) + 16] & 0xF0 == 0x40:
                st.next_lsn = seg_lsn + seg_size
                st.switch_seen = True
                return records, None
            continue
        if avail >= 24:
            prev = pg_u64(b + pos + 8)
            if not wd_rmid_valid(b[pos + 17], magic) or (
                    (prev >= lsn) if rand_access[0] else (prev != prev_lsn[0])):
                st.next_lsn = lsn
                _sync(st, prev_lsn, rand_access, dirty)
                records2, stop = _pyframe.frame_segment(buf, seg_lsn, st, verify_crc, path)
                return records + records2, stop
        if firsts is not None and avail >= 24 and b[pos + 17] != RM_XACT_ID and not (
                by_catalog and _catalog_wanted(b + pos, avail, cat_ptr, cat_n, cat_mask)):
            st.partial = bytearray(view[pos:pos + 24])  # _pyframe._header_only
            st.partial_total = tot_len - (avail - 24)
            st.partial_header_only = True
        else:
            st.partial = bytearray(view[pos:page_off + page_size])
            st.partial_total = tot_len
            st.partial_header_only = False if avail >= 24 else None
        st.partial_lsn = lsn
        pos = page_off + page_size


def decode_record(bytes rec, unsigned long long lsn, unsigned long long end_lsn, int major):
    """_pyframe.decode_record by native/wd_xlogrecord.h: a record any of whose checks fails goes to the
    reference, which raises the error."""
    cdef const unsigned char *r = rec
    cdef WdDecodedXLogRecord d
    cdef const WdDecodedBkpBlock *blk
    cdef list blocks = []
    cdef int i
    if wd_DecodeXLogRecord(r, len(rec), major, &d) != WD_DECODE_OK:
        return _pyframe.decode_record(rec, lsn, end_lsn, major)
    for i in range(d.nblocks):
        blk = &d.blocks[i]
        image = None
        if blk.has_image:
            image = rec[blk.bkp_image - r:blk.bkp_image - r + blk.bimg_len]
        data = rec[blk.data - r:blk.data - r + blk.data_len]
        blocks.append(_tuple_new(BlockRef, (blk.block_id, blk.forknum, blk.flags & BKPBLOCK_FLAG_MASK,
                                            blk.rlocator.spcOid, blk.rlocator.dbOid, blk.rlocator.relNumber,
                                            blk.blkno, blk.has_image != 0, blk.bimg_info, blk.hole_offset,
                                            blk.hole_length, blk.bimg_len, image, data)))
    return _tuple_new(DecodedRecord, (lsn, end_lsn, d.xl_tot_len, d.xl_xid, d.xl_prev, d.xl_info, d.xl_rmid,
                                      d.xl_crc, tuple(blocks), rec[d.main_data - r:d.main_data - r + d.main_data_len],
                                      d.record_origin, d.toplevel_xid))


# WdDecodeError's names, for decoded_xlogrecord
_DECODE_ERRORS = {WD_DECODE_OK: "WD_DECODE_OK", WD_DECODE_INVALID_LENGTH: "WD_DECODE_INVALID_LENGTH",
                  WD_DECODE_INVALID_BLOCK_ID: "WD_DECODE_INVALID_BLOCK_ID",
                  WD_DECODE_OUT_OF_ORDER_BLOCK_ID: "WD_DECODE_OUT_OF_ORDER_BLOCK_ID",
                  WD_DECODE_HAS_DATA_NO_DATA: "WD_DECODE_HAS_DATA_NO_DATA",
                  WD_DECODE_NO_HAS_DATA_BUT_DATA: "WD_DECODE_NO_HAS_DATA_BUT_DATA",
                  WD_DECODE_HOLE_INVALID: "WD_DECODE_HOLE_INVALID",
                  WD_DECODE_NO_HOLE_BUT_HOLE: "WD_DECODE_NO_HOLE_BUT_HOLE",
                  WD_DECODE_COMPRESSED_FULL_IMAGE: "WD_DECODE_COMPRESSED_FULL_IMAGE",
                  WD_DECODE_SAME_REL_NO_PREVIOUS: "WD_DECODE_SAME_REL_NO_PREVIOUS"}


def decoded_xlogrecord(bytes rec, int major):
    """What native/wd_xlogrecord.h makes of ``rec``, for the tests that hold it to the reference: the
    name of its WdDecodeError, and the WdDecodedXLogRecord as a dict (None unless WD_DECODE_OK), its
    pointers as offsets in ``rec``."""
    cdef const unsigned char *r = rec
    cdef WdDecodedXLogRecord d
    cdef const WdDecodedBkpBlock *blk
    cdef int i
    cdef WdDecodeError err = wd_DecodeXLogRecord(r, len(rec), major, &d)
    if err != WD_DECODE_OK:
        return _DECODE_ERRORS[err], None
    blocks = []
    for i in range(d.nblocks):
        blk = &d.blocks[i]
        blocks.append(dict(block_id=blk.block_id, forknum=blk.forknum, flags=blk.flags, has_image=blk.has_image,
                           apply_image=blk.apply_image, has_data=blk.has_data,
                           rlocator=(blk.rlocator.spcOid, blk.rlocator.dbOid, blk.rlocator.relNumber),
                           blkno=blk.blkno, bimg_len=blk.bimg_len, hole_offset=blk.hole_offset,
                           hole_length=blk.hole_length, bimg_info=blk.bimg_info,
                           bkp_image=blk.bkp_image - r if blk.bkp_image != NULL else None,
                           data=blk.data - r, data_len=blk.data_len))
    return _DECODE_ERRORS[err], dict(xl_tot_len=d.xl_tot_len, xl_xid=d.xl_xid, xl_prev=d.xl_prev, xl_info=d.xl_info,
                              xl_rmid=d.xl_rmid, xl_crc=d.xl_crc, record_origin=d.record_origin,
                              toplevel_xid=d.toplevel_xid, main_data=d.main_data - r,
                              main_data_len=d.main_data_len, max_block_id=d.max_block_id, blocks=blocks)


def pglz_decompress(src, Py_ssize_t rawsize, bint check_complete=True):
    """pg_lzcompress.c pglz_decompress; errors are re-raised by the reference implementation."""
    cdef const unsigned char[:] sv = src
    cdef Py_ssize_t srclen = sv.shape[0], sp = 0, dp = 0, length, off, k
    cdef unsigned char ctrl
    cdef int bit
    out = bytearray(rawsize)
    cdef unsigned char[:] ov = out
    if rawsize == 0 or srclen == 0:
        if check_complete and (rawsize != 0 or srclen != 0):
            from waldecode.pg.pglz import pglz_decompress as ref
            return ref(src, rawsize, check_complete)
        return bytes(out)
    while sp < srclen and dp < rawsize:
        ctrl = sv[sp]
        sp += 1
        for bit in range(8):
            if sp >= srclen or dp >= rawsize:
                break
            if ctrl & 1:
                if sp + 1 >= srclen:
                    from waldecode.pg.pglz import pglz_decompress as ref
                    return ref(src, rawsize, check_complete)
                length = (sv[sp] & 0x0F) + 3
                off = ((sv[sp] & 0xF0) << 4) | sv[sp + 1]
                sp += 2
                if length == 18:
                    if sp >= srclen:
                        from waldecode.pg.pglz import pglz_decompress as ref
                        return ref(src, rawsize, check_complete)
                    length += sv[sp]
                    sp += 1
                if off == 0 or off > dp:
                    from waldecode.pg.pglz import pglz_decompress as ref
                    return ref(src, rawsize, check_complete)
                if length > rawsize - dp:
                    length = rawsize - dp
                for k in range(length):
                    ov[dp] = ov[dp - off]
                    dp += 1
            else:
                ov[dp] = sv[sp]
                dp += 1
                sp += 1
            ctrl >>= 1
    if check_complete and (dp != rawsize or sp != srclen):
        from waldecode.pg.pglz import pglz_decompress as ref
        return ref(src, rawsize, check_complete)
    return bytes(out[:dp])
