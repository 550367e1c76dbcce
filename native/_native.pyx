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
from libc.stdlib cimport free
from libc.string cimport memset


import array

from waldecode.wal import _pyframe
from waldecode.wal.xlogrecord import BlockRef, DecodedRecord

# A NamedTuple's own __new__ is Python code (a frame per call): build the tuples with
# tuple.__new__ straight away, as that __new__ itself does.
cdef object _tuple_new = tuple.__new__

# CRC-32C as src/port/pg_crc32c_sse42.c / _sb8.c compute it (native/wd_crc32c.h): a record's CRC in one C
# call, where the crc32c package costs two calls and two memoryview slices per record
cdef extern from "wd_crc32c.h":
    void pg_crc32c_init() nogil

pg_crc32c_init()


# xlogrecord.h, generated from the Python modules (native/pgconsts.py)
from pgconsts cimport BKPBLOCK_FLAG_MASK


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


# The page walker, the one of both framers (native/wd_xlogframe.h)
from wd_xlogframe cimport *


def frame_segment(buf, unsigned long long seg_lsn, st, bint verify_crc=True, path=None):
    """_pyframe.frame_segment by native/wd_xlogframe.h: the records it frames, until the walker hands
    the rest of the segment to the reference (a check failed, or a stop is to be made)."""
    cdef const unsigned char[:] view = buf
    cdef WdXLogFrame f
    cdef WdFrameEvent ev
    cdef list records = []
    # FrameState.firsts: the first LSN of each xid whose records are read up to their header only;
    # FrameState.catalog: the records the catalog history may need are read whole (its relfilenodes sorted)
    cdef dict firsts = st.firsts
    cdef bytes cat_nodes
    cdef unsigned int last_xid = 0  # the xid noted last: a transaction's records mostly come together
    memset(&f, 0, sizeof(f))
    try:
        wd_frame_load(&f, buf, view, seg_lsn, st, verify_crc)
        if f.by_catalog:
            cat_nodes = array.array("I", sorted(st.catalog[0])).tobytes()
            f.cat_nodes = <const unsigned int *>PyBytes_AS_STRING(cat_nodes)
            f.cat_n = len(cat_nodes) // 4
            f.cat_mask = st.catalog[1]
        while True:
            ev = wd_frame_next(&f)
            if ev == WD_FRAME_RECORD:
                _append_record(records, f.lsn, f.raw_end, PyBytes_FromStringAndSize(<const char *>f.rec, f.rec_len))
            elif ev == WD_FRAME_FIRST:
                if f.xid != 0 and f.xid != last_xid:
                    last_xid = f.xid
                    if f.xid not in firsts:
                        firsts[f.xid] = f.lsn
            elif ev == WD_FRAME_DONE:
                wd_frame_store(&f, st)
                return records, None
            elif ev == WD_FRAME_REFERENCE:
                # the reference frames the rest from where the walker stopped, and names the failure
                wd_frame_store(&f, st)
                records2, stop = _pyframe.frame_segment(buf, seg_lsn, st, verify_crc, path)
                return records + records2, stop
            else:
                raise MemoryError()
    finally:
        free(f.partial)


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
