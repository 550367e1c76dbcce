# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""``waldecode inspect`` in one native loop over the segment bytes (pg_waldump's lines and --stats).

The Cython counterpart of ``waldecode.waldump.inspect``'s pure-Python loop, which stays the
reference.  ``Dump.run(reader)`` walks the segments ``XLogReader.segments_to_read`` hands out:
page headers, records on one page (read in place) or across pages and segments (assembled
in a C buffer), CRC-32C, the record's block headers (native/wd_xlogrecord.h ``wd_DecodeXLogRecord``), then
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
from libc.stdlib cimport calloc, free, realloc
from libc.string cimport memcpy

from waldecode import _impl, rmgr, waldump
from waldecode.wal import _pyframe
from waldecode.wal.xlogreader import decode_in

cdef extern from "wd_crc32c.h":
    void pg_crc32c_init() nogil
    unsigned int wd_record_crc(const unsigned char *r, unsigned int tot_len) nogil

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
    unsigned short wd_rd16(const unsigned char *p) nogil
    unsigned int wd_rd32(const unsigned char *p) nogil
    unsigned long long wd_rd64(const unsigned char *p) nogil
    int wd_block_refs(wd_buf *b, const WdDecodedXLogRecord *rec, int major, int detailed) nogil
    int wd_head(wd_buf *b, const WdDecodedXLogRecord *rec, const char *name, size_t name_len, const char *kind,
                size_t kind_len) nogil
    int wd_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major) nogil

pg_crc32c_init()

# PostgreSQL's constants as the pure-Python modules write them (native/pgconsts.py):
# waldecode/wal/xlogpage.py, waldecode/rmgr/__init__.py, waldecode/rmgr/xlog.py
from pgconsts cimport (MaxAllocSize, RM_XACT_ID, RM_XLOG_ID, SizeOfXLogLongPHD, SizeOfXLogShortPHD,
                       XLOG_SWITCH, XLP_FIRST_IS_CONTRECORD, XLP_FIRST_IS_OVERWRITE_CONTRECORD, XLP_LONG_HEADER)

MODE_STATS = 0
MODE_TEXT = 1
MODE_TEXT_DETAILED = 2


cdef extern from "wd_xlogpage.h":
    bint wd_rmid_valid(unsigned int rmid, unsigned int magic) nogil
    bint wd_page_ok(const unsigned char *p, long long page_off, unsigned long long seg_lsn, unsigned int magic,
                    unsigned int page_size, unsigned long long seg_size, unsigned long long sysid,
                    unsigned int latest_tli) nogil


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
    # framing state of the segment being read (FrameState is loaded at its start, saved at its end)
    cdef unsigned int latest_tli
    cdef unsigned long long prev_lsn
    cdef bint rand_access
    cdef unsigned char *scratch     # a record that crosses pages, being assembled
    cdef size_t scratch_cap
    cdef bint in_partial
    cdef size_t have
    cdef unsigned int partial_total
    cdef unsigned long long partial_lsn
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
        free(self.scratch)
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
                    tracker.lsn = self.partial_lsn if self.in_partial else st.next_lsn
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
        """frame_segment (waldecode/wal/_pyframe.py) with each record handed to ``_record``."""
        cdef const unsigned char[:] view = buf
        cdef const unsigned char *b = &view[0] if view.shape[0] else NULL
        cdef Py_ssize_t buflen = view.shape[0]
        cdef unsigned int page_size = st.page_size
        cdef unsigned long long seg_size = st.seg_size
        cdef unsigned int magic = st.magic
        cdef unsigned long long sysid = st.sysid
        cdef unsigned long long end_limit = st.end_lsn
        cdef Py_ssize_t pos = <Py_ssize_t>(<unsigned long long>st.next_lsn - seg_lsn)
        cdef Py_ssize_t cur_page = -1, page_off, hdr = 0, avail, take, at
        cdef unsigned long long skip, lsn, raw_end, prev
        cdef unsigned int info = 0, rem_len = 0, tot_len, need
        cdef bint fresh
        if st.stop_after_partial:
            raise ValueError("the native inspect walks whole ranges (stop_after_partial is not for it)")
        self.latest_tli = st.latest_tli
        self.prev_lsn = st.prev_lsn
        self.rand_access = st.rand_access
        self._load_partial(st)
        fresh = not self.in_partial and self.rand_access
        while True:
            if <unsigned long long>pos >= seg_size:
                return self._leave(st, seg_lsn + seg_size)
            page_off = pos - pos % page_size
            if page_off != cur_page:
                if page_off + page_size > buflen:
                    return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                if cur_page < 0 and page_off != 0:
                    if not wd_page_ok(b, 0, seg_lsn, magic, page_size, seg_size, sysid, 0):
                        return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                if not wd_page_ok(b + page_off, page_off, seg_lsn, magic, page_size, seg_size, sysid,
                                self.latest_tli):
                    return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                info = wd_rd16(b + page_off + 2)
                rem_len = wd_rd32(b + page_off + 16)
                hdr = SizeOfXLogLongPHD if info & XLP_LONG_HEADER else SizeOfXLogShortPHD
                self.latest_tli = wd_rd32(b + page_off + 4)
                cur_page = page_off
                if self.in_partial:
                    need = self.partial_total - <unsigned int>self.have
                    if (info & XLP_FIRST_IS_OVERWRITE_CONTRECORD or not info & XLP_FIRST_IS_CONTRECORD
                            or rem_len == 0 or rem_len != need):
                        return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                    take = min(<Py_ssize_t>rem_len, page_size - hdr)
                    if take < rem_len:
                        self._partial_add(b + page_off + hdr, take)
                        pos = page_off + page_size
                        continue
                    lsn = self.partial_lsn
                    raw_end = seg_lsn + page_off + hdr + rem_len
                    if end_limit and raw_end > end_limit:
                        return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                    self._partial_add(b + page_off + hdr, take)
                    if not self._record_ok(self.scratch, self.partial_total, lsn, magic):
                        self.have -= take
                        return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                    self.in_partial = False
                    self.prev_lsn = lsn
                    self.rand_access = False
                    pos = page_off + hdr + ((rem_len + 7) & ~7)
                    self._record(self.scratch, self.partial_total, lsn, raw_end, path)
                    if self.done:
                        return self._leave(st, seg_lsn + pos)
                    if self.scratch[17] == RM_XLOG_ID and self.scratch[16] & 0xF0 == XLOG_SWITCH:
                        st.switch_seen = True
                        return self._leave(st, seg_lsn + seg_size)
                    continue
                if pos == page_off:
                    if info & XLP_FIRST_IS_CONTRECORD:
                        if not fresh:
                            return self._fallback(buf, seg_lsn, st, path, seg_lsn + pos)
                        # XLogFindNextRecord: skip the tail of a record begun before this page
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
            # A record starts at pos, on the current page
            lsn = seg_lsn + pos
            if end_limit and lsn >= end_limit:
                return self._fallback(buf, seg_lsn, st, path, lsn)
            tot_len = wd_rd32(b + pos)
            if tot_len < 24 or tot_len > MaxAllocSize:
                return self._fallback(buf, seg_lsn, st, path, lsn)
            avail = page_off + page_size - pos
            if tot_len <= avail:
                if end_limit and lsn + tot_len > end_limit:
                    return self._fallback(buf, seg_lsn, st, path, lsn)
                if not self._record_ok(b + pos, tot_len, lsn, magic):
                    return self._fallback(buf, seg_lsn, st, path, lsn)
                self.prev_lsn = lsn
                self.rand_access = False
                at = pos
                pos += (tot_len + 7) & ~7
                self._record(b + at, tot_len, lsn, lsn + tot_len, path)
                if self.done:
                    return self._leave(st, seg_lsn + pos)
                if b[at + 17] == RM_XLOG_ID and b[at + 16] & 0xF0 == XLOG_SWITCH:
                    st.switch_seen = True
                    return self._leave(st, seg_lsn + seg_size)
                continue
            if avail >= 24:
                # Header on this page: check it before trusting the length (as xlogreader.c does)
                prev = wd_rd64(b + pos + 8)
                if not wd_rmid_valid(b[pos + 17], magic) or (
                        (prev >= lsn) if self.rand_access else (prev != self.prev_lsn)):
                    return self._fallback(buf, seg_lsn, st, path, lsn)
            self.have = 0
            self._partial_add(b + pos, avail)
            self.in_partial = True
            self.partial_lsn = lsn
            self.partial_total = tot_len
            pos = page_off + page_size

    cdef inline bint _record_ok(self, const unsigned char *r, unsigned int tot_len, unsigned long long lsn,
                                unsigned int magic):
        """ValidXLogRecordHeader + ValidXLogRecord passed (else the reference names the failure)."""
        cdef unsigned long long prev = wd_rd64(r + 8)
        if not wd_rmid_valid(r[17], magic):
            return False
        if self.rand_access:
            if prev >= lsn:
                return False
        elif prev != self.prev_lsn:
            return False
        return not self.verify_crc or wd_record_crc(r, tot_len) == wd_rd32(r + 20)

    cdef int _partial_add(self, const unsigned char *p, Py_ssize_t n) except -1:
        cdef size_t need = self.have + <size_t>n
        cdef size_t cap
        cdef unsigned char *grown
        if need > self.scratch_cap:
            cap = self.scratch_cap * 2 if self.scratch_cap else 65536
            while cap < need:
                cap *= 2
            grown = <unsigned char *>realloc(self.scratch, cap)
            if grown == NULL:
                raise MemoryError()
            self.scratch = grown
            self.scratch_cap = cap
        memcpy(self.scratch + self.have, p, n)
        self.have = need
        return 0

    cdef int _load_partial(self, st) except -1:
        cdef const unsigned char[:] pv
        partial = st.partial
        self.in_partial = partial is not None
        self.have = 0
        if partial is not None:
            self.partial_lsn = st.partial_lsn
            self.partial_total = st.partial_total
            if len(partial):
                pv = partial
                self._partial_add(&pv[0], pv.shape[0])
        return 0

    cdef object _leave(self, st, unsigned long long next_lsn, stop=None):
        """Hand the framing state back to ``st`` (for the next segment, or the reference)."""
        st.next_lsn = next_lsn
        st.latest_tli = self.latest_tli
        st.prev_lsn = self.prev_lsn
        st.rand_access = self.rand_access
        if self.in_partial:
            st.partial = bytearray(PyBytes_FromStringAndSize(<const char *>self.scratch, self.have))
            st.partial_lsn = self.partial_lsn
            st.partial_total = self.partial_total
        else:
            st.partial = None
        return stop

    cdef object _fallback(self, buf, unsigned long long seg_lsn, st, path, unsigned long long next_lsn):
        """The rest of the segment by the reference framer, from ``next_lsn``: it builds the stop."""
        cdef bytes rec
        self._leave(st, next_lsn)
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
