# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""``waldecode inspect`` in one native loop over the segment bytes (pg_waldump's lines and --stats).

The Cython counterpart of ``waldecode.waldump.inspect``'s pure-Python loop, which stays the
reference.  ``Dump.run(reader)`` walks the segments ``XLogReader.segments_to_read`` hands out
with the framers' one page walker (native/wd_xlogframe.h): page headers, records on one page
(read in place) or across pages and segments (assembled in its buffer), CRC-32C, the record's block headers (native/wd_xlogrecord.h ``wd_DecodeXLogRecord``), then
either the --stats counters per (rmid, record type) or the text line written into a C
buffer that goes out in large blocks — no Python object per record.

Anything out of the common case goes to the reference: a page or record check that fails
hands the segment from that point to ``waldecode.wal._pyframe.frame_segment`` (which builds
the ReadStop, so the messages are the reference's own), a record whose block headers do not
decode is decoded by the reference (which raises its error), and a record whose description
is not written natively (rare records, short main data) is described by ``waldecode.rmgr``.
"""

from cpython.buffer cimport PyBUF_READ
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from cpython.memoryview cimport PyMemoryView_FromMemory
from libc.stdlib cimport calloc, free

from waldecode import _impl, rmgr, waldump
from waldecode.wal import _pyframe
from waldecode.wal.xlogreader import decode_in

cdef extern from "wd_crc32c.h":
    void pg_crc32c_init() nogil

# DecodeXLogRecord, the one of every extension (native/wd_xlogrecord.h)
from wd_xlogrecord cimport WD_DECODE_OK, WdDecodedXLogRecord, wd_DecodeXLogRecord, wd_XLogRecFPILen

cdef extern from "wd_waldump.h":
    ctypedef struct wd_buf:
        char *data
        size_t len
        size_t cap
    int wd_buf_reserve(wd_buf *b, size_t extra) nogil
    int wd_put(wd_buf *b, const char *s, size_t n) nogil
    int wd_printf(wd_buf *b, const char *fmt, ...) nogil
    int wd_block_refs(wd_buf *b, const WdDecodedXLogRecord *rec, int major, int detailed) nogil
    int wd_head(wd_buf *b, const WdDecodedXLogRecord *rec, const char *name, size_t name_len, const char *kind,
                size_t kind_len) nogil
    int wd_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major) nogil

pg_crc32c_init()

# PostgreSQL's constants as the pure-Python modules write them (native/pgconsts.py):
# waldecode/rmgr/__init__.py, waldecode/rmgr/xlog.py
from pgconsts cimport RM_XACT_ID, RM_XLOG_ID, XLOG_SWITCH

MODE_STATS = 0
MODE_TEXT = 1
MODE_TEXT_DETAILED = 2


# The page walker, the one of both framers (native/wd_xlogframe.h)
from wd_xlogframe cimport WD_FRAME_DONE, WD_FRAME_RECORD, WD_FRAME_REFERENCE, WdFrameEvent, WdXLogFrame
from wd_xlogframe cimport wd_frame_load, wd_frame_next, wd_frame_store


cdef class Dump:
    """One ``inspect`` run: ``Dump(major, mode, ...)``, then ``run(reader)``; the lines go to
    ``write`` (a bytes-like view of ``block_size`` bytes or more, valid during the call), the
    --stats counters to ``fill_stats(...)``."""

    cdef int major
    cdef int mode
    cdef bint verify_crc
    cdef unsigned long long seg_size
    cdef unsigned long long read_from
    # filters of pg_waldump's --rmgr, --xid, --limit
    cdef bint filter_rmid
    cdef unsigned char wanted[256]
    cdef bint filter_xid
    cdef unsigned int xid
    cdef long long limit
    cdef readonly long long shown
    cdef readonly long long py_descs    # lines whose description came from waldecode.rmgr (not native)
    cdef readonly bint done
    # records read (all) and shown: first LSN and EndRecPtr
    cdef bint any_read, any_shown
    cdef unsigned long long first_lsn, last_end, shown_first, shown_end
    # --stats: per (rmid, record type)
    cdef unsigned long long *counts
    cdef unsigned long long *rec_lens
    cdef unsigned long long *fpi_lens
    # the walk of the segment being read (FrameState is loaded at its start, saved at its end); its
    # buffer of a record that crosses pages is kept from one segment to the next
    cdef WdXLogFrame frame
    # text
    cdef wd_buf out
    cdef size_t block_size
    cdef object write
    cdef object tracker
    cdef const char **kinds         # "desc: TYPE " per rmid << 8 | info, filled on first use
    cdef size_t *kind_lens
    cdef const char **names         # "rmgr: %-11s len (rec/tot): " per rmid
    cdef size_t *name_lens
    cdef list keep                  # the bytes the pointers above point into
    cdef WdDecodedXLogRecord rec

    def __cinit__(self):
        self.counts = <unsigned long long *>calloc(256 * 16, sizeof(unsigned long long))
        self.rec_lens = <unsigned long long *>calloc(256 * 16, sizeof(unsigned long long))
        self.fpi_lens = <unsigned long long *>calloc(256 * 16, sizeof(unsigned long long))
        self.kinds = <const char **>calloc(65536, sizeof(char *))
        self.names = <const char **>calloc(256, sizeof(char *))
        self.kind_lens = <size_t *>calloc(65536, sizeof(size_t))
        self.name_lens = <size_t *>calloc(256, sizeof(size_t))
        if (self.kind_lens == NULL or self.name_lens == NULL or self.counts == NULL or self.rec_lens == NULL or self.fpi_lens == NULL or self.kinds == NULL
                or self.names == NULL):
            raise MemoryError()

    def __dealloc__(self):
        free(self.counts)
        free(self.rec_lens)
        free(self.fpi_lens)
        free(self.kinds)
        free(self.names)
        free(self.kind_lens)
        free(self.name_lens)
        free(self.frame.partial)
        free(self.out.data)

    def __init__(self, int major, int mode, *, bint verify_crc=True, rmids=None, xid=None, limit=None,
                 write=None, Py_ssize_t block_size=1 << 20, tracker=None):
        self.major = major
        self.mode = mode
        self.verify_crc = verify_crc
        self.filter_rmid = rmids is not None
        if rmids is not None:
            for r in rmids:
                self.wanted[<int>r & 0xFF] = 1
        self.filter_xid = xid is not None
        self.xid = xid if xid is not None else 0
        self.limit = limit if limit is not None else -1
        self.write = write
        self.block_size = block_size
        self.tracker = tracker
        self.keep = []
        if wd_buf_reserve(&self.out, block_size + (block_size >> 2)) < 0:
            raise MemoryError()

    # -- the walk ---------------------------------------------------------------------------------

    def run(self, reader):
        """Read ``reader``'s range; sets ``reader.stop`` (unless --limit ended the run first)."""
        tracker = self.tracker
        self.seg_size = reader.seg_size
        try:
            for seg_lsn, buf, path, st in reader.segments_to_read(mapped=True):
                self.read_from = reader.read_from
                stop = self._segment(buf, seg_lsn, st, path)
                if tracker is not None:
                    tracker.lsn = self.frame.partial_lsn if self.frame.in_partial else st.next_lsn
                    tracker.records = self.shown
                if self.done:
                    break
                if stop is not None:
                    reader.stop = stop
                    break
        finally:
            if self.any_read:
                reader.first_lsn = self.first_lsn
                reader.last_end_lsn = self.last_end
            self.flush()

    def flush(self):
        """``write`` the lines so far: a view of the buffer, released when ``write`` returns (a file's
        write copies or writes it at once; a copy per block would cost more than the syscall)."""
        if self.out.len and self.write is not None:
            view = PyMemoryView_FromMemory(self.out.data, self.out.len, PyBUF_READ)
            try:
                self.write(view)
            finally:
                view.release()
                self.out.len = 0

    cdef object _segment(self, buf, unsigned long long seg_lsn, st, path):
        """frame_segment (waldecode/wal/_pyframe.py) by native/wd_xlogframe.h, each record handed to
        ``_record`` where it lies (on its page, or assembled in the walker's buffer)."""
        cdef const unsigned char[:] view = buf
        cdef WdXLogFrame *f = &self.frame
        cdef WdFrameEvent ev
        if st.stop_after_partial or st.firsts is not None:
            raise ValueError("the native inspect walks whole ranges of whole records "
                             "(stop_after_partial and firsts are not for it)")
        wd_frame_load(f, buf, view, seg_lsn, st, self.verify_crc)
        while True:
            ev = wd_frame_next(f)
            if ev == WD_FRAME_RECORD:
                self._record(f.rec, f.rec_len, f.lsn, f.raw_end, path)
                if self.done:
                    f.next_lsn = seg_lsn + <unsigned long long>f.pos
                    wd_frame_store(f, st)
                    return None
            elif ev == WD_FRAME_DONE:
                wd_frame_store(f, st)
                return None
            elif ev == WD_FRAME_REFERENCE:
                return self._fallback(buf, seg_lsn, st, path)
            else:
                raise MemoryError()

    cdef object _fallback(self, buf, unsigned long long seg_lsn, st, path):
        """The rest of the segment by the reference framer, from where the walker stopped: it builds
        the stop."""
        cdef bytes rec
        wd_frame_store(&self.frame, st)
        records, stop = _pyframe.frame_segment(buf, seg_lsn, st, self.verify_crc, path)
        for lsn, raw_end, rec in records:
            self._record(<const unsigned char *>PyBytes_AS_STRING(rec), len(rec), lsn, raw_end, path)
            if self.done:
                return None
        # the next segment starts from what the reference left in st
        return stop

    # -- one record -------------------------------------------------------------------------------

    cdef int _record(self, const unsigned char *r, unsigned int n, unsigned long long lsn,
                     unsigned long long raw_end, path) except -1:
        cdef unsigned long long end
        cdef unsigned int recid, rmid, fpi_len
        cdef Py_ssize_t k
        if lsn < self.read_from:
            return 0
        # EndRecPtr: the aligned end, or the segment's end after XLOG_SWITCH (xlogreader._end_lsn)
        end = (raw_end + 7) & ~(<unsigned long long>7)
        if r[17] == RM_XLOG_ID and r[16] & 0xF0 == XLOG_SWITCH:
            end = (end + self.seg_size - 1) // self.seg_size * self.seg_size
        if wd_DecodeXLogRecord(r, n, self.major, &self.rec) != WD_DECODE_OK:
            # the reference raises the error (naming the file); if it accepts the record, use it
            obj = decode_in(_pyframe.decode_record, PyBytes_FromStringAndSize(<const char *>r, n), lsn, end,
                            self.major, path)
            return self._record_obj(obj)
        self.rec.lsn = lsn
        self.rec.end_lsn = end
        if not self.any_read:
            self.any_read = True
            self.first_lsn = lsn
        self.last_end = end
        rmid = self.rec.xl_rmid
        if self.filter_rmid and not self.wanted[rmid]:
            return 0
        if self.filter_xid and self.rec.xl_xid != self.xid:
            return 0
        if not self.any_shown:
            self.any_shown = True
            self.shown_first = lsn
        self.shown_end = end
        if self.mode == MODE_STATS:
            recid = (self.rec.xl_info >> 4) & 0x0F
            # XACT records use the first of the four bits as a flag (14+ filter it out)
            if rmid == RM_XACT_ID and self.major >= 14:
                recid &= 0x07
            k = rmid * 16 + recid
            self.counts[k] += 1
            fpi_len = wd_XLogRecFPILen(&self.rec)
            self.rec_lens[k] += self.rec.xl_tot_len - fpi_len
            self.fpi_lens[k] += fpi_len
        else:
            self._line(r, n, path)
        self.shown += 1
        if self.limit >= 0 and self.shown >= self.limit:
            self.done = True
        return 0

    cdef int _line(self, const unsigned char *r, unsigned int n, path) except -1:
        """XLogDumpDisplayRecord's line (waldump.format_record / format_record_bkp_details)."""
        cdef WdDecodedXLogRecord *rec = &self.rec
        cdef unsigned int key = rec.xl_rmid << 8 | rec.xl_info
        cdef size_t mark = self.out.len
        cdef bytes text
        if self.kinds[key] == NULL:
            self._head_parts(rec.xl_rmid, rec.xl_info)
        if wd_head(&self.out, rec, self.names[rec.xl_rmid], self.name_lens[rec.xl_rmid], self.kinds[key],
                   self.kind_lens[key]) < 0:
            raise MemoryError()
        if not wd_desc(&self.out, rec, self.major):
            try:
                obj = decode_in(_impl.decode_record, PyBytes_FromStringAndSize(<const char *>r, n), rec.lsn,
                                rec.end_lsn, self.major, path)
                text = rmgr.desc(obj, self.major).encode("utf-8", "surrogateescape")
            except BaseException:
                self.out.len = mark  # the reference writes no part of the line
                raise
            wd_put(&self.out, PyBytes_AS_STRING(text), len(text))
            self.py_descs += 1
        wd_block_refs(&self.out, rec, self.major, self.mode == MODE_TEXT_DETAILED)
        if wd_put(&self.out, b"\n", 1) < 0:
            raise MemoryError()
        if self.out.len >= self.block_size:
            self.flush()
        return 0

    cdef int _head_parts(self, unsigned int rmid, unsigned int info) except -1:
        name, kind = waldump._head_parts(self.major, rmid, info)
        name_b = ("rmgr: %s len (rec/tot): " % name).encode()
        kind_b = kind.encode("utf-8", "surrogateescape")
        self.keep.append(name_b)
        self.keep.append(kind_b)
        self.names[rmid] = PyBytes_AS_STRING(name_b)
        self.name_lens[rmid] = len(name_b)
        self.kinds[rmid << 8 | info] = PyBytes_AS_STRING(kind_b)
        self.kind_lens[rmid << 8 | info] = len(kind_b)
        return 0

    cdef int _record_obj(self, rec) except -1:
        """A record only the reference could decode: the same steps on its DecodedRecord."""
        cdef unsigned int recid, rmid = rec.xl_rmid
        cdef Py_ssize_t k
        if not self.any_read:
            self.any_read = True
            self.first_lsn = rec.lsn
        self.last_end = rec.end_lsn
        if self.filter_rmid and not self.wanted[rmid]:
            return 0
        if self.filter_xid and rec.xl_xid != self.xid:
            return 0
        if not self.any_shown:
            self.any_shown = True
            self.shown_first = rec.lsn
        self.shown_end = rec.end_lsn
        if self.mode == MODE_STATS:
            rec_len, fpi_len = waldump.record_lengths(rec)
            recid = (rec.xl_info >> 4) & 0x0F
            if rmid == RM_XACT_ID and self.major >= 14:
                recid &= 0x07
            k = rmid * 16 + recid
            self.counts[k] += 1
            self.rec_lens[k] += rec_len
            self.fpi_lens[k] += fpi_len
        else:
            fmt = waldump.format_record_bkp_details if self.mode == MODE_TEXT_DETAILED else waldump.format_record
            text = (fmt(rec, self.major) + "\n").encode("utf-8", "surrogateescape")
            wd_put(&self.out, PyBytes_AS_STRING(text), len(text))
            self.py_descs += 1
            if self.out.len >= self.block_size:
                self.flush()
        self.shown += 1
        if self.limit >= 0 and self.shown >= self.limit:
            self.done = True
        return 0

    # -- --stats ----------------------------------------------------------------------------------

    def fill_stats(self, stats):
        """Put the counters into a ``waldump.WaldumpStats`` (which formats the tables)."""
        cdef int rmid, recid
        cdef Py_ssize_t k
        stats.count = self.shown
        if self.any_shown:
            stats.startptr = self.shown_first
            stats.endptr = self.shown_end
        for rmid in range(256):
            for recid in range(16):
                k = rmid * 16 + recid
                if self.counts[k] == 0:
                    continue
                c = stats.record_stats.setdefault((rmid, recid), waldump._Counts())
                c.count += self.counts[k]
                c.rec_len += self.rec_lens[k]
                c.fpi_len += self.fpi_lens[k]
                c = stats.rmgr_stats.setdefault(rmid, waldump._Counts())
                c.count += self.counts[k]
                c.rec_len += self.rec_lens[k]
                c.fpi_len += self.fpi_lens[k]
        return stats
