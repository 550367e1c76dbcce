# _logical: phase 1 of Spark's range path (xact_spans, catalog_records, XactEnds).
# Included by native/_logical.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- phase 1 of Spark's range path ------------------------------------------------------------------

cdef bint _slow_end(slow, tuple t, int major, XactEnds ended, bint commit_record) except -1:
    """An end ``xact_spans`` leaves to ``slow`` (``ranges.xact_end``): its xids into ``ended``; whether it is a
    commit (``commit_record``: COMMIT or COMMIT PREPARED) with invalidations."""
    key, subs, commit, xinfo = slow(t[2], t[0], t[1], major, True)
    cdef unsigned long long lsn = t[0]
    ended.push(key, lsn, 1 if commit else 0)
    for sub in subs:
        ended.push(sub, lsn, 1 if commit else 0)
    return commit_record and (xinfo & XACT_XINFO_HAS_INVALS) != 0


def xact_spans(list records, int major, dict firsts, XactEnds ended, slow=None, dict prepared=None):
    """``spark.ranges.xact_spans`` (its docstring says what): over framed records
    ``(lsn, raw end, bytes)``, each xid's first record into ``firsts`` (the lowest LSN there), each xid a
    COMMIT or ABORT record ends into ``ended`` (an ``XactEnds``: that record's LSN, 1 for a commit, 0 for
    an abort), each
    PREPARE into ``prepared``; True when a catalog change is among them.  The commit or abort record's
    xinfo, dbinfo and subxacts are read here as ParseCommitRecord / ParseAbortRecord do
    (``rmgr.xact.parse_commit_or_abort``) when the record's layout is sound and its main data holds what
    xinfo announces; any other one — relation locators, dropped stats, invalidations of a commit or a
    two-phase part to step over, main data too short — and COMMIT/ROLLBACK PREPARED go to
    ``slow(rec, lsn, raw end, major, True)`` (``ranges.xact_end``), which gives (xid, subxacts, is_commit,
    xinfo) the exact way or raises the decoder's error."""
    cdef Py_ssize_t i, n = len(records), pos, nsub, k
    cdef tuple t
    cdef bytes rec
    cdef const unsigned char *r
    cdef const unsigned char *m
    cdef unsigned int info, xid, xinfo, last_xid = 0
    cdef unsigned int slow_bits
    cdef bint catalog = False, is_commit, have_last = False
    cdef WdDecodedXLogRecord h
    cdef object lsn, key
    cdef unsigned long long end_lsn
    cdef PyObject *found
    if slow is None:
        from waldecode.spark.ranges import xact_end as slow
    for i in range(n):
        t = <tuple>records[i]
        rec = <bytes>t[2]
        r = <const unsigned char *>PyBytes_AS_STRING(rec)
        xid = pg_u32(r + 4)
        if r[17] == RM_XACT_ID:
            info = r[16] & XLOG_XACT_OPMASK
            if info == XLOG_XACT_COMMIT or info == XLOG_XACT_ABORT:
                is_commit = info == XLOG_XACT_COMMIT
                # the parts parse_commit_or_abort reads after the subxacts, which may fail there
                slow_bits = XACT_XINFO_HAS_RELFILELOCATORS | XACT_XINFO_HAS_TWOPHASE
                if major >= 15:
                    slow_bits |= XACT_XINFO_HAS_DROPPED_STATS
                if is_commit:
                    slow_bits |= XACT_XINFO_HAS_INVALS
                nsub = -1
                if (wd_DecodeXLogRecord(r, PyBytes_GET_SIZE(rec), major, &h) == WD_DECODE_OK
                        and h.main_data_len >= MinSizeOfXactCommit):
                    m = h.main_data
                    pos = MinSizeOfXactCommit
                    xinfo = 0
                    nsub = 0
                    if r[16] & XLOG_XACT_HAS_INFO:
                        if h.main_data_len < pos + SizeOfXactXinfo:
                            nsub = -1
                        else:
                            xinfo = pg_u32(m + pos)
                            pos += SizeOfXactXinfo
                            if is_commit and xinfo & XACT_XINFO_HAS_INVALS:
                                catalog = True
                    if nsub == 0 and xinfo & slow_bits:
                        nsub = -1
                    if nsub == 0 and xinfo & XACT_XINFO_HAS_DBINFO:
                        pos += SizeOfXactDbinfo
                        if h.main_data_len < pos:
                            nsub = -1
                    if nsub == 0 and xinfo & XACT_XINFO_HAS_SUBXACTS:
                        if h.main_data_len < pos + MinSizeOfXactSubxacts:
                            nsub = -1
                        else:
                            nsub = pg_i32(m + pos)
                            pos += MinSizeOfXactSubxacts
                            if nsub < 0 or h.main_data_len < pos + 4 * nsub:
                                nsub = -1
                    if nsub >= 0 and xinfo & XACT_XINFO_HAS_ORIGIN and h.main_data_len < pos + 4 * nsub + 16:
                        nsub = -1  # xl_xact_origin
                if nsub < 0:
                    catalog = _slow_end(slow, t, major, ended, is_commit) or catalog
                    continue
                end_lsn = t[0]
                ended.push(xid, end_lsn, is_commit)
                for k in range(nsub):
                    ended.push(pg_u32(m + pos + 4 * k), end_lsn, is_commit)
                continue
            if info == XLOG_XACT_COMMIT_PREPARED or info == XLOG_XACT_ABORT_PREPARED:
                # the prepared transaction's end, read by the reference (its xid is in the record's body)
                catalog = _slow_end(slow, t, major, ended, info == XLOG_XACT_COMMIT_PREPARED) or catalog
                continue
            if info == XLOG_XACT_PREPARE:
                if prepared is not None and xid:
                    prepared[xid] = t[0]
            elif info == XLOG_XACT_INVALIDATIONS:
                catalog = True
        if xid == 0 or (have_last and xid == last_xid):
            continue  # the same transaction as the record before: already in firsts
        key = xid
        found = PyDict_GetItem(firsts, key)
        if found == NULL or t[0] < <object>found:
            PyDict_SetItem(firsts, key, t[0])
        last_xid = xid
        have_last = True
    return catalog


def catalog_records(list records, int major, nodes, list out, bint xlog_xid):
    """``spark.ranges.catalog_records`` (its docstring says what) over framed records ``(lsn, raw end,
    bytes)``: the ones the catalog history needs appended to ``out``; returns whether ``xlog_xid`` is still
    wanted (the first XLOG record with blocks and an xid, taken once)."""
    cdef Py_ssize_t i, n = len(records)
    cdef tuple t
    cdef bytes rec
    cdef const unsigned char *r
    cdef unsigned int rmid, info
    cdef WdDecodedXLogRecord h
    cdef bint take
    for i in range(n):
        t = <tuple>records[i]
        rec = <bytes>t[2]
        r = <const unsigned char *>PyBytes_AS_STRING(rec)
        rmid = r[17]
        info = r[16]
        take = False
        if rmid == RM_XACT_ID:
            take = True
            if (info & XLOG_XACT_OPMASK) == XLOG_XACT_COMMIT:
                # a commit without invalidations changed no catalog (the history checks its own rows' ends)
                take = False
                if info & XLOG_XACT_HAS_INFO:
                    if (wd_DecodeXLogRecord(r, PyBytes_GET_SIZE(rec), major, &h) != WD_DECODE_OK
                            or h.main_data_len < MinSizeOfXactCommit + SizeOfXactXinfo):
                        take = True  # left to the decoder, which reads it or says why not
                    else:
                        take = (pg_u32(h.main_data + MinSizeOfXactCommit) & XACT_XINFO_HAS_INVALS) != 0
        elif rmid == RM_STANDBY_ID or rmid == RM_RELMAP_ID:
            take = True
        elif rmid == RM_HEAP_ID or rmid == RM_HEAP2_ID or rmid == RM_XLOG_ID:
            if wd_DecodeXLogRecord(r, PyBytes_GET_SIZE(rec), major, &h) != WD_DECODE_OK:
                take = True
            elif rmid == RM_XLOG_ID and (info & 0xF0) == XLOG_PARAMETER_CHANGE:
                take = True
            elif h.nblocks:
                take = PySet_Contains(nodes, h.blocks[0].rlocator.relNumber) == 1
                if not take and rmid == RM_XLOG_ID and xlog_xid and h.xl_xid:
                    take = True
                    xlog_xid = False
            elif rmid == RM_HEAP2_ID and (info & XLOG_HEAP_OPMASK) == XLOG_HEAP2_NEW_CID:
                take = True
        if take:
            out.append(t)
    return xlog_xid


cdef struct _End:
    unsigned int xid
    unsigned int commit
    unsigned long long lsn


cdef class XactEnds:
    """``spark.ranges.XactEnds`` (its docstring says what) in C: an array of ends, sorted by xid when read.
    A GiB of pgbench WAL ends half a million xids; as a dictionary of (LSN, commit) tuples they, their
    sort into ``RunSpans``' columns and the open xids' filter were a third of phase 1's CPU."""

    cdef _End *ends
    cdef Py_ssize_t n, cap
    cdef bint settled  # sorted by xid, each xid once (its last end)

    def __dealloc__(self):
        PyMem_Free(self.ends)

    cdef int push(self, unsigned int xid, unsigned long long lsn, unsigned int commit) except -1:
        cdef Py_ssize_t cap
        cdef _End *grown
        if self.n == self.cap:
            cap = max(1024, 2 * self.cap)
            grown = <_End *>PyMem_Realloc(self.ends, cap * sizeof(_End))
            if grown == NULL:
                raise MemoryError()
            self.ends, self.cap = grown, cap
        self.ends[self.n].xid = xid
        self.ends[self.n].lsn = lsn
        self.ends[self.n].commit = commit
        self.n += 1
        self.settled = False
        return 0

    def add(self, unsigned int xid, unsigned long long lsn, commit):
        self.push(xid, lsn, 1 if commit else 0)

    cdef int settle(self) except -1:
        """Sort by xid, stably (a radix sort: the ends come nearly in xid order, which no comparison sort
        here exploits), and keep each xid's last end."""
        cdef Py_ssize_t i, j, n = self.n
        cdef Py_ssize_t count[256]
        cdef int shift
        cdef _End *tmp
        cdef _End *src
        cdef _End *dst
        if self.settled:
            return 0
        for i in range(1, n):
            if self.ends[i].xid < self.ends[i - 1].xid:
                break
        else:
            i = n
        if i < n:
            tmp = <_End *>PyMem_Malloc(n * sizeof(_End))
            if tmp == NULL:
                raise MemoryError()
            src, dst = self.ends, tmp
            for shift in range(0, 32, 8):
                memset(count, 0, sizeof(count))
                for i in range(n):
                    count[(src[i].xid >> shift) & 0xFF] += 1
                j = 0
                for i in range(256):
                    j, count[i] = j + count[i], j
                for i in range(n):
                    dst[count[(src[i].xid >> shift) & 0xFF]] = src[i]
                    count[(src[i].xid >> shift) & 0xFF] += 1
                src, dst = dst, src
            PyMem_Free(tmp)  # four passes: the sorted ends are back in self.ends
        j = 0
        for i in range(n):
            if j and self.ends[j - 1].xid == self.ends[i].xid:
                j -= 1
            self.ends[j] = self.ends[i]
            j += 1
        self.n = j
        self.settled = True
        return 0

    def __len__(self):
        self.settle()
        return self.n

    def columns(self):
        """``RunSpans``' columns: array("Q") of the xids, sorted, array("Q") of the LSNs of the records
        ending them, and bytes of 1 for a commit, 0 for an abort."""
        self.settle()
        cdef Py_ssize_t i, n = self.n
        cdef array.array xids = array.clone(_Q, n, zero=False)
        cdef array.array lsns = array.clone(_Q, n, zero=False)
        cdef bytearray commit = bytearray(n)
        cdef unsigned char *c = commit
        for i in range(n):
            xids.data.as_ulonglongs[i] = self.ends[i].xid
            lsns.data.as_ulonglongs[i] = self.ends[i].lsn
            c[i] = self.ends[i].commit
        return xids, lsns, bytes(commit)

    def open_of(self, dict firsts):
        """Of ``firsts`` (xid -> LSN), those not ended here, in ``firsts``' order."""
        self.settle()
        cdef dict out = {}
        cdef Py_ssize_t pos = 0, lo, hi, mid
        cdef PyObject *key
        cdef PyObject *value
        cdef unsigned long long x
        while PyDict_Next(firsts, &pos, &key, &value):
            x = <object>key
            lo, hi = 0, self.n
            while lo < hi:
                mid = (lo + hi) >> 1
                if self.ends[mid].xid < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == self.n or self.ends[lo].xid != x:
                PyDict_SetItem(out, <object>key, <object>value)
        return out
