# _logical: the reorder buffer's change store (ChangeBuffer, merge_buffers, ChangeIter, from_batch).
# Included by native/_logical.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- the change store ------------------------------------------------------------------------------

cdef class ChangeBuffer:
    """A transaction's queued changes as bytes (see the module docstring).

    ``append(change)`` takes a ``reorderbuffer.Change``; iterating gives them back as
    Change tuples in queue order; ``batches(segment_size)`` gives the spill batches,
    ``(segno, count, bytes)`` per WAL segment of the changes' LSNs in the order first
    queued; ``nbytes`` is what the memory budget counts."""

    cdef unsigned char *data
    cdef Py_ssize_t used
    cdef Py_ssize_t cap
    cdef Py_ssize_t count

    def __dealloc__(self):
        PyMem_Free(self.data)

    def __len__(self):
        return self.count

    @property
    def nbytes(self):
        return self.used

    cdef unsigned char *put(self, unsigned long long lsn, int action, unsigned int spc, unsigned int rel,
                            unsigned int origin, bint clear, Py_ssize_t ln, Py_ssize_t lo,
                            Py_ssize_t le) except NULL:
        """Room for one change: its header written, a pointer to where its ln + lo + le bytes go
        (a length of -1: no such part)."""
        cdef Py_ssize_t need = SizeOfQueuedChange + (ln if ln > 0 else 0) + (lo if lo > 0 else 0) \
            + (le if le > 0 else 0)
        cdef Py_ssize_t cap
        cdef unsigned char *p
        cdef unsigned short origin16 = <unsigned short>origin
        if self.used + need > self.cap:
            cap = self.cap * 2 if self.cap else 256  # many transactions hold a change or two
            while cap < self.used + need:
                cap *= 2
            p = <unsigned char *>PyMem_Realloc(self.data, cap)
            if p == NULL:
                raise MemoryError()
            self.data = p
            self.cap = cap
        p = self.data + self.used
        memcpy(p, &lsn, 8)
        p[8] = <unsigned char>action
        _put_u32(p + 9, spc)
        _put_u32(p + 13, rel)
        memcpy(p + 17, &origin16, 2)
        p[19] = 1 if clear else 0
        _put_u32(p + 20, <unsigned int>ln)
        _put_u32(p + 24, <unsigned int>lo)
        _put_u32(p + 28, <unsigned int>le)
        self.used += need
        self.count += 1
        return p + SizeOfQueuedChange

    def append(self, change):
        """Queue a ``Change`` (its tuples are copied in)."""
        cdef tuple c = <tuple>change
        cdef object n = c[6], o = c[7], e = c[8]
        if (n is not None and type(n) is not bytes) or (o is not None and type(o) is not bytes) \
                or (e is not None and type(e) is not bytes):
            n, o, e = [None if x is None else bytes(x) for x in (n, o, e)]
        cdef Py_ssize_t ln = -1 if n is None else PyBytes_GET_SIZE(n)
        cdef Py_ssize_t lo = -1 if o is None else PyBytes_GET_SIZE(o)
        cdef Py_ssize_t le = -1 if e is None else PyBytes_GET_SIZE(e)
        cdef unsigned char *p = self.put(c[0], c[1], c[2], c[3], c[4], c[5], ln, lo, le)
        if ln > 0:
            memcpy(p, PyBytes_AS_STRING(n), ln)
            p += ln
        if lo > 0:
            memcpy(p, PyBytes_AS_STRING(o), lo)
            p += lo
        if le > 0:
            memcpy(p, PyBytes_AS_STRING(e), le)

    def clear(self):
        """Forget every change (the arena is kept for the next ones, up to 1 MiB)."""
        self.used = 0
        self.count = 0
        if self.cap > (1 << 20):
            PyMem_Free(self.data)
            self.data = NULL
            self.cap = 0

    def getvalue(self):
        """The changes' bytes, as a spill batch holds them."""
        return PyBytes_FromStringAndSize(<char *>self.data, self.used)

    def batches(self, unsigned long long segment_size):
        """The spill batches: (segno, count, bytes) per WAL segment of the changes' LSNs."""
        cdef Py_ssize_t pos = 0, start = 0, n = 0, size
        cdef unsigned long long segno, cur = 0
        cdef list out = []
        cdef set seen = set()
        while pos < self.used:
            segno = pg_u64(self.data + pos) // segment_size
            size = _change_size(self.data + pos)
            if n and segno != cur:
                out.append((cur, n, PyBytes_FromStringAndSize(<char *>self.data + start, pos - start)))
                seen.add(cur)
                start = pos
                n = 0
            if not n:
                if segno in seen:
                    # changes out of LSN order across segments (never from the decoder): group them
                    # as the reference does, in the order each segment first appears
                    from waldecode.logical.reorderbuffer import ChangeList
                    ref = ChangeList()
                    for c in self:
                        ref.append(c)
                    return ref.batches(segment_size)
                cur = segno
            n += 1
            pos += size
        if n:
            out.append((cur, n, PyBytes_FromStringAndSize(<char *>self.data + start, pos - start)))
        return out

    def __iter__(self):
        return ChangeIter(self)


cdef inline Py_ssize_t _part(const unsigned char *p, int k) noexcept nogil:
    cdef int v = <int>pg_u32(p + 20 + 4 * k)
    return v if v > 0 else 0


cdef inline Py_ssize_t _change_size(const unsigned char *p) noexcept nogil:
    return SizeOfQueuedChange + _part(p, 0) + _part(p, 1) + _part(p, 2)


cdef struct _Run:
    unsigned long long lsn
    Py_ssize_t buf      # which buffer
    Py_ssize_t pos      # where in it
    Py_ssize_t size


cdef int _run_cmp(const void *a, const void *b) noexcept nogil:
    cdef const _Run *x = <const _Run *>a
    cdef const _Run *y = <const _Run *>b
    if x.lsn != y.lsn:
        return -1 if x.lsn < y.lsn else 1
    if x.buf != y.buf:
        return -1 if x.buf < y.buf else 1
    return -1 if x.pos < y.pos else (1 if x.pos > y.pos else 0)


def merge_buffers(list bufs):
    """One ChangeBuffer holding the changes of ``bufs`` (a transaction's and its subtransactions',
    in that order) in LSN order — ``ReorderBuffer.iter_changes``'s ``heapq.merge`` by LSN, which keeps
    the changes of one LSN (a multi-insert's) in their buffer's order — so that ``replay`` reads a
    transaction with subtransactions as one run."""
    cdef Py_ssize_t k, nbufs = len(bufs), n = 0, total = 0, pos, i
    cdef ChangeBuffer b, out = ChangeBuffer()
    cdef const unsigned char *p
    cdef _Run *runs
    for k in range(nbufs):
        b = <ChangeBuffer>bufs[k]
        n += b.count
        total += b.used
    runs = <_Run *>PyMem_Malloc(max(n, 1) * sizeof(_Run))
    if runs == NULL:
        raise MemoryError()
    try:
        i = 0
        for k in range(nbufs):
            b = <ChangeBuffer>bufs[k]
            pos = 0
            while pos < b.used and i < n:
                p = b.data + pos
                runs[i].lsn = pg_u64(p)
                runs[i].buf = k
                runs[i].pos = pos
                runs[i].size = _change_size(p)
                pos += runs[i].size
                i += 1
        qsort(runs, i, sizeof(_Run), _run_cmp)
        out.data = <unsigned char *>PyMem_Malloc(max(total, 1))
        if out.data == NULL:
            raise MemoryError()
        out.cap = max(total, 1)
        for k in range(i):
            b = <ChangeBuffer>bufs[runs[k].buf]
            memcpy(out.data + out.used, b.data + runs[k].pos, runs[k].size)
            out.used += runs[k].size
        out.count = i
    finally:
        PyMem_Free(runs)
    return out


cdef class ChangeIter:
    """The changes of a ChangeBuffer as Change tuples, in queue order."""

    cdef ChangeBuffer buf
    cdef Py_ssize_t pos

    def __cinit__(self, ChangeBuffer buf):
        self.buf = buf
        self.pos = 0

    def __iter__(self):
        return self

    def __next__(self):
        cdef ChangeBuffer b = self.buf
        if self.pos >= b.used:
            raise StopIteration
        cdef const unsigned char *p = b.data + self.pos
        self.pos += _change_size(p)
        return _change_at(p)


cdef inline object _part_bytes(const unsigned char *p, int k, Py_ssize_t q):
    cdef int length = <int>pg_u32(p + 20 + 4 * k)
    return None if length < 0 else PyBytes_FromStringAndSize(<const char *>p + q, length)


cdef inline int _append_row(desc, out, head, const unsigned char *p, toast) except -1:
    """The line of the row change held at ``p``, with its newline, by the plugin's row writer
    (``Replayer.row_target``'s ``(RelDesc, buffer, head, block size)``): its tuples read in place."""
    return append_change_at(desc, out, head, p[8], p + SizeOfQueuedChange, <int>pg_u32(p + 20),
                            p + SizeOfQueuedChange + _part(p, 0), <int>pg_u32(p + 24), toast, True)


cdef object _change_at(const unsigned char *p):
    """The Change tuple of the change held at ``p``."""
    cdef Py_ssize_t q0 = SizeOfQueuedChange, q1 = q0 + _part(p, 0), q2 = q1 + _part(p, 1)
    return _tuple_new(Change, (pg_u64(p), p[8], pg_u32(p + 9), pg_u32(p + 13), pg_u16(p + 17), p[19] != 0,
                               _part_bytes(p, 0, q0), _part_bytes(p, 1, q1), _part_bytes(p, 2, q2)))


def from_batch(bytes batch, Py_ssize_t count):
    """A spill batch read back (``count`` changes): a ChangeBuffer holding them, or — for bytes that
    do not hold ``count`` sound changes — what the reference makes of them (``_deserialize``)."""
    cdef const unsigned char *b = <const unsigned char *>PyBytes_AS_STRING(batch)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(batch), pos = 0, i, size
    cdef int k
    cdef ChangeBuffer buf
    for i in range(count):
        if pos + SizeOfQueuedChange > n:
            break
        for k in range(3):
            if <int>pg_u32(b + pos + 20 + 4 * k) < -1:
                pos = n + 1
        if pos > n:
            break
        size = _change_size(b + pos)
        if pos + size > n:
            break
        pos += size
    else:
        if pos == n:
            buf = ChangeBuffer()
            if n:
                buf.data = <unsigned char *>PyMem_Malloc(n)
                if buf.data == NULL:
                    raise MemoryError()
                memcpy(buf.data, b, n)
            buf.cap = buf.used = n
            buf.count = count
            return buf
    from waldecode.logical.reorderbuffer import _deserialize
    return _deserialize(batch, count)
