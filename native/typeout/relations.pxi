# _typeout: relations, their deformer and test_decoding's column list.
# Included by native/_typeout.pyx at this point of the module (Cython include: one
# module, one namespace; the order of the sections is the order of the includes).

# -- relations: the deformer and the column list ----------------------------------------------------

@cython.final
cdef class RelDesc:
    """A relation's columns, for the tuple deformer and test_decoding's column list.

    ``append_wal_tuple(out, tup, skip_nulls, toast)`` appends what test_decoding prints
    for a WAL tuple (xl_heap_header + tuple body): `` name[type]:value`` per column that
    is not dropped.  ``deform_values(...)`` returns what ``heaptuple.deform_tuple`` returns.
    Build one per relation and TypeOut (``TypeOut.relation``) and reuse it; like
    TestDecoding's per-relation column formatters, building it raises UnsupportedTypeError
    for a column whose type has no output function.
    """

    cdef readonly TypeOut typeout
    cdef readonly object attributes
    cdef Py_ssize_t ncols
    cdef ColDesc *cols
    cdef ColVal *vals
    cdef list _keep                     # bytes objects the ColDesc pointers point into
    cdef list _held                     # per column: decompressed payloads of the current tuple
    cdef bint _holding
    cdef readonly unsigned long long python_tuples  # tuples a check sent the Python way (corrupt data)

    def __cinit__(self):
        self.cols = NULL
        self.vals = NULL

    def __init__(self, TypeOut typeout, attributes):
        cdef Py_ssize_t i
        cdef ColDesc *c
        attributes = tuple(attributes)
        self.typeout = typeout
        self.attributes = attributes
        self.ncols = len(attributes)
        self._keep = []
        self._held = [None] * self.ncols
        self._holding = False
        self.cols = <ColDesc *>PyMem_Malloc((self.ncols or 1) * sizeof(ColDesc))
        self.vals = <ColVal *>PyMem_Malloc((self.ncols or 1) * sizeof(ColVal))
        if self.cols == NULL or self.vals == NULL:
            raise MemoryError()
        memset(self.cols, 0, (self.ncols or 1) * sizeof(ColDesc))
        major = typeout.major
        for i in range(self.ncols):
            att = attributes[i]
            c = &self.cols[i]
            c.attlen = att.attlen
            c.attalign = _ALIGNMENT.get(att.attalign, 0)
            c.dropped = att.attisdropped
            c.typoid = att.atttypid
            c.has_missing = (att.atthasmissing and not att.attisdropped and att.attmissingval is not None)
            if c.has_missing:
                missing = _utf8(att.attmissingval)
                self._keep.append(missing)
                c.missing = PyBytes_AS_STRING(missing)
                c.missing_len = len(missing)
            if c.dropped:
                continue
            # test_decoding: ' name[type]:' (TestDecoding._columns), print_literal by type OID
            prefix = _utf8(f" {_quote_identifier(att.attname, major)}[{att.type_name}]:")
            self._keep.append(prefix)
            c.prefix = PyBytes_AS_STRING(prefix)
            c.prefix_len = len(prefix)
            c.kind = typeout.kind_of(att.atttypid)
            c.quote = _quote_mode(att.atttypid)

    def __dealloc__(self):
        PyMem_Free(self.cols)
        PyMem_Free(self.vals)

    @property
    def python_columns(self):
        """attnums of the (not dropped) columns whose values go through Python output functions."""
        return [att.attnum for att in self.attributes
                if not att.attisdropped and not self.typeout.is_native(att.atttypid)]

    cdef int deform(self, object bufobj, const unsigned char *buf, Py_ssize_t bits_off, Py_ssize_t data_off,
                    Py_ssize_t end, int natts, bint hasnull) except -1:
        """heaptuple._deform into self.vals: 0, or 1 when a check fails (the Python path then
        raises the reference's error)."""
        cdef Py_ssize_t i, off = data_off, size, pad
        cdef ColDesc *c
        cdef ColVal *v
        cdef unsigned char b0, tag
        cdef unsigned int tcinfo
        cdef const unsigned char *nul
        if self._holding:
            for i in range(self.ncols):
                self._held[i] = None
            self._holding = False
        if natts > self.ncols:
            return 1
        if hasnull and bits_off + ((natts + 7) >> 3) > data_off:
            return 1
        for i in range(natts):
            v = &self.vals[i]
            if hasnull and not (buf[bits_off + (i >> 3)] >> (i & 7)) & 1:
                v.state = VAL_NULL
                continue
            c = &self.cols[i]
            if c.attlen > 0:
                if c.attalign == 0:
                    return 1
                pad = (off - data_off) % c.attalign
                if pad:
                    off += c.attalign - pad
                if off + c.attlen > end:
                    return 1
                v.state = VAL_NULL if c.dropped else VAL_INLINE
                v.off = off
                v.len = c.attlen
                off += c.attlen
            elif c.attlen == -1:
                if off >= end:
                    return 1
                if buf[off] == 0:
                    # att_align_pointer: a zero byte is padding before a 4-byte header
                    if c.attalign == 0:
                        return 1
                    pad = (off - data_off) % c.attalign
                    if pad:
                        off += c.attalign - pad
                if off >= end:
                    return 1
                b0 = buf[off]
                if VARATT_IS_1B_E(b0):
                    # varattrib_1b_e: a TOAST pointer (on disk) or an in-memory one (never valid)
                    if off + 1 >= end:
                        return 1
                    tag = buf[off + 1]
                    if tag == VARTAG_ONDISK:
                        size = VARHDRSZ_EXTERNAL + SIZEOF_VARATT_EXTERNAL
                    elif tag == VARTAG_INDIRECT or tag == VARTAG_EXPANDED_RO or tag == VARTAG_EXPANDED_RW:
                        size = VARHDRSZ_EXTERNAL + SIZEOF_VARATT_POINTER
                    else:
                        return 1
                    if off + size > end or (tag != VARTAG_ONDISK and not c.dropped):
                        return 1
                    v.state = VAL_NULL if c.dropped else VAL_EXTERNAL
                    v.off = off + VARHDRSZ_EXTERNAL
                    v.len = SIZEOF_VARATT_EXTERNAL
                elif VARATT_IS_1B(b0):
                    # varattrib_1b: a short header
                    size = VARSIZE_1B(b0)
                    if off + size > end:
                        return 1
                    v.state = VAL_NULL if c.dropped else VAL_INLINE
                    v.off = off + 1
                    v.len = size - 1
                else:
                    # varattrib_4b: plain or (VARATT_IS_4B_C) compressed inline
                    if off + VARHDRSZ > end:
                        return 1
                    size = VARSIZE_4B(buf + off)
                    if size < VARHDRSZ or off + size > end:
                        return 1
                    if c.dropped:
                        v.state = VAL_NULL
                    elif VARATT_IS_4B_C(b0):
                        if size < VARHDRSZ_COMPRESSED:
                            return 1
                        tcinfo = pg_u32(buf + off + VARHDRSZ)
                        # a view that keeps the tuple's owner alive (one per compressed value); a copy of
                        # the stream when the tuple came as a pointer (``append_change_at``)
                        if bufobj is None:
                            stream = PyBytes_FromStringAndSize(<const char *>buf + off + VARHDRSZ_COMPRESSED,
                                                               size - VARHDRSZ_COMPRESSED)
                        else:
                            stream = memoryview(bufobj)[off + VARHDRSZ_COMPRESSED:off + size]
                        try:
                            value = _varlena.decompress(stream, tcinfo & VARLENA_EXTSIZE_MASK,
                                                        tcinfo >> VARLENA_EXTSIZE_BITS)
                        except WALError:
                            return 1
                        value = bytes(value)
                        self._held[i] = value
                        self._holding = True
                        v.state = VAL_DETOASTED
                        v.ext = <const unsigned char *>PyBytes_AS_STRING(value)
                        v.len = PyBytes_GET_SIZE(value)
                    else:
                        v.state = VAL_INLINE
                        v.off = off + VARHDRSZ
                        v.len = size - VARHDRSZ
                off += size
            elif c.attlen == -2:
                nul = <const unsigned char *>memchr(buf + off, 0, end - off) if off < end else NULL
                if nul == NULL:
                    return 1
                v.state = VAL_NULL if c.dropped else VAL_INLINE
                v.off = off
                v.len = (nul - buf) - off
                off = (nul - buf) + 1
            else:
                return 1
        for i in range(natts, self.ncols):
            self.vals[i].state = VAL_MISSING if self.cols[i].has_missing else VAL_NULL
        return 0

    cdef int append_columns(self, OutBuf o, const unsigned char *buf, bint skip_nulls, object toast) except -1:
        """test_decoding's column list of the deformed tuple (TestDecoding._tuple)."""
        cdef Py_ssize_t i
        cdef ColDesc *c
        cdef ColVal *v
        for i in range(self.ncols):
            c = &self.cols[i]
            if c.dropped:
                continue
            v = &self.vals[i]
            if v.state == VAL_NULL:
                if skip_nulls:
                    continue
                ob_put(o, c.prefix, c.prefix_len)
                ob_put(o, b"null", 4)
            elif v.state == VAL_INLINE:
                ob_put(o, c.prefix, c.prefix_len)
                _put_literal(self.typeout, o, c, buf + v.off, v.len, False)
            elif v.state == VAL_DETOASTED:
                ob_put(o, c.prefix, c.prefix_len)
                _put_literal(self.typeout, o, c, v.ext, v.len, False)
            elif v.state == VAL_MISSING:
                ob_put(o, c.prefix, c.prefix_len)
                _put_literal(self.typeout, o, c, <const unsigned char *>c.missing, c.missing_len, True)
            else:
                self._append_external(o, c, buf + v.off, toast)
        return 0

    cdef int _append_external(self, OutBuf o, ColDesc *c, const unsigned char *p, object toast) except -1:
        """A TOAST pointer: ``toast(pointer)`` gives the payload, or None for an unchanged value."""
        cdef Py_buffer view
        pointer = _varlena.ToastPointer(pg_i32(p), pg_u32(p + 4), pg_u32(p + 8), pg_u32(p + 12))
        if toast is None:
            self.typeout.ctx.output(c.typoid, pointer)   # raises the reference's TypeOutputError
            raise AssertionError("OutputContext.output printed a TOAST pointer")
        value = toast(pointer)
        ob_put(o, c.prefix, c.prefix_len)
        if value is None:
            return put_lit(o, b"unchanged-toast-datum")
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        try:
            _put_literal(self.typeout, o, c, <const unsigned char *>view.buf, view.len, False)
        finally:
            PyBuffer_Release(&view)
        return 0

    # -- Python API --------------------------------------------------------------------------------

    def append_wal_tuple(self, OutBuf out, tup, bint skip_nulls=False, toast=None):
        """Append test_decoding's column list of a WAL tuple (xl_heap_header, then the tuple
        body, as decode.py keeps ``Change.newtuple`` / ``oldtuple``).

        ``skip_nulls``: old-key tuples leave NULL columns out.  ``toast(pointer)``: for an
        external TOAST pointer (``varlena.ToastPointer``), the value's payload bytes or None
        (printed ``unchanged-toast-datum``); without it a pointer raises as the Python path does.
        """
        cdef Py_buffer view
        PyObject_GetBuffer(tup, &view, PyBUF_SIMPLE)
        try:
            self._wal_tuple(out, tup, <const unsigned char *>view.buf, view.len, skip_nulls, toast)
        finally:
            PyBuffer_Release(&view)

    cdef int _wal_tuple(self, OutBuf out, object bufobj, const unsigned char *p, Py_ssize_t n, bint skip_nulls,
                        object toast) except -1:
        """``append_wal_tuple`` of the ``n`` bytes at ``p`` (``bufobj``: their owner, or None, when the
        rare paths that need an object copy them)."""
        if n < SizeOfHeapHeader:
            from waldecode.errors import CorruptRecordError
            raise CorruptRecordError(f"WAL tuple of {n} bytes is shorter than its "
                                     f"{SizeOfHeapHeader}-byte xl_heap_header")
        return self._append(out, bufobj, p, n, SizeOfHeapHeader, n, pg_u16(p), pg_u16(p + 2), p[4], skip_nulls,
                            toast, True)

    def append_change(self, OutBuf out, head, int action, newtuple, oldtuple, toast=None, bint newline=False):
        """Append test_decoding's line for one change of this relation, and ``newline`` a newline
        (pg_decode_change, as ``TestDecoding.change`` prints it): ``head`` (bytes, ``table
        schema.name:``), the action, then the column lists of the WAL tuples (None where the
        change carries none): the old key (NULL columns left out) and the new tuple of an
        UPDATE, the new tuple of an INSERT, the old key of a DELETE.  ``toast`` goes with the
        new tuple only, as the replayer substitutes TOAST values into new tuples only.  On an
        error nothing of the line is left in ``out``.  ``append_change_at`` is the same for C
        callers, with the tuples as pointers."""
        cdef Py_buffer nv, ov
        cdef bint has_new = False, has_old = False
        # the tuples the action prints, as the line reads them
        if newtuple is not None and (action == REORDER_BUFFER_CHANGE_INSERT or action == REORDER_BUFFER_CHANGE_UPDATE):
            PyObject_GetBuffer(newtuple, &nv, PyBUF_SIMPLE)
            has_new = True
        try:
            if oldtuple is not None and (action == REORDER_BUFFER_CHANGE_UPDATE
                                         or action == REORDER_BUFFER_CHANGE_DELETE):
                PyObject_GetBuffer(oldtuple, &ov, PyBUF_SIMPLE)
                has_old = True
            try:
                self.change(out, head, action, <const unsigned char *>nv.buf if has_new else NULL,
                            nv.len if has_new else -1, newtuple, <const unsigned char *>ov.buf if has_old else NULL,
                            ov.len if has_old else -1, oldtuple, toast, newline)
            finally:
                if has_old:
                    PyBuffer_Release(&ov)
        finally:
            if has_new:
                PyBuffer_Release(&nv)

    cdef int change(self, OutBuf out, bytes head, int action, const unsigned char *newp, Py_ssize_t newlen,
                    object newobj, const unsigned char *oldp, Py_ssize_t oldlen, object oldobj, object toast,
                    bint newline) except -1:
        """``append_change``'s line, the tuples as pointers and lengths (-1: no tuple) with their owners
        (or None)."""
        cdef Py_ssize_t mark = out.size
        try:
            _put_bytes(out, head)
            if action == REORDER_BUFFER_CHANGE_INSERT:
                put_lit(out, b" INSERT:")
                self._append_opt(out, newp, newlen, newobj, False, toast)
            elif action == REORDER_BUFFER_CHANGE_UPDATE:
                put_lit(out, b" UPDATE:")
                if oldlen >= 0:
                    put_lit(out, b" old-key:")
                    self._wal_tuple(out, oldobj, oldp, oldlen, True, None)
                    put_lit(out, b" new-tuple:")
                self._append_opt(out, newp, newlen, newobj, False, toast)
            elif action == REORDER_BUFFER_CHANGE_DELETE:
                put_lit(out, b" DELETE:")
                self._append_opt(out, oldp, oldlen, oldobj, True, None)
            else:
                raise ValueError(f"not a row change: action {action}")
            if newline:
                ob_putc(out, c"\n")
        except BaseException:
            out.size = mark
            raise
        return 0

    cdef int _append_opt(self, OutBuf out, const unsigned char *p, Py_ssize_t n, object bufobj, bint skip_nulls,
                         toast) except -1:
        if n < 0:
            return put_lit(out, b" (no-tuple-data)")
        return self._wal_tuple(out, bufobj, p, n, skip_nulls, toast)

    def append_tuple(self, OutBuf out, body, int t_infomask2, int t_infomask, int t_hoff, bint skip_nulls=False,
                     toast=None, Py_ssize_t start=0, end=None):
        """``append_wal_tuple`` for a tuple body as ``heaptuple.deform_tuple`` takes it."""
        cdef Py_buffer view
        PyObject_GetBuffer(body, &view, PyBUF_SIMPLE)
        try:
            self._append(out, body, <const unsigned char *>view.buf, view.len, start,
                         view.len if end is None else end, t_infomask2, t_infomask, t_hoff, skip_nulls, toast, False)
        finally:
            PyBuffer_Release(&view)

    cdef int _append(self, OutBuf out, object bufobj, const unsigned char *p, Py_ssize_t buflen, Py_ssize_t start,
                     Py_ssize_t end, int t_infomask2, int t_infomask, int t_hoff, bint skip_nulls, object toast,
                     bint wal) except -1:
        """Deform in C and format; a tuple that fails a check goes the Python way as a whole."""
        cdef Py_ssize_t mark = out.size
        cdef Py_ssize_t data_off = start + t_hoff - SizeofHeapTupleHeader
        cdef int r = 1
        if t_hoff >= SizeofHeapTupleHeader and 0 <= start <= data_off <= end <= buflen:
            r = self.deform(bufobj, p, start, data_off, end, t_infomask2 & HEAP_NATTS_MASK,
                            (t_infomask & HEAP_HASNULL) != 0)
        try:
            if r == 0:
                self.append_columns(out, p, skip_nulls, toast)
            else:
                self.python_tuples += 1
                if bufobj is None:
                    bufobj = PyBytes_FromStringAndSize(<const char *>p, buflen)
                self._append_python(out, bufobj, start, end, t_infomask2, t_infomask, t_hoff, skip_nulls, toast,
                                    wal)
        except BaseException:
            out.size = mark
            raise
        return 0

    def _append_python(self, OutBuf out, bufobj, start, end, t_infomask2, t_infomask, t_hoff, skip_nulls, toast,
                       wal):
        """The pure-Python path for one tuple (heaptuple.deform_tuple, OutputContext.output,
        types.test_decoding_value): raises the reference's error for a corrupt tuple."""
        if wal:
            # as replay.py hands it over: the body after xl_heap_header, offsets from there
            values = _heaptuple.deform_tuple(memoryview(bufobj)[SizeOfHeapHeader:], t_infomask2, t_infomask,
                                             t_hoff, self.attributes, 0, end - SizeOfHeapHeader)
        else:
            values = _heaptuple.deform_tuple(bufobj, t_infomask2, t_infomask, t_hoff, self.attributes, start, end)
        ctx = self.typeout.ctx
        for att, value in zip(self.attributes, values):
            if att.attisdropped:
                continue
            if value is None:
                if skip_nulls:
                    continue
                text = "null"
            else:
                if value.__class__ is _varlena.ToastPointer and toast is not None:
                    value = toast(value)
                    if value is None:
                        out.write(f" {_quote_identifier(att.attname, self.typeout.major)}[{att.type_name}]:"
                                  f"unchanged-toast-datum")
                        continue
                text = _types.test_decoding_value(att.atttypid, ctx.output(att.atttypid, value))
            out.write(f" {_quote_identifier(att.attname, self.typeout.major)}[{att.type_name}]:{text}")

    def deform_values(self, body, int t_infomask2, int t_infomask, int t_hoff, Py_ssize_t start=0, end=None):
        """What ``heaptuple.deform_tuple`` returns for the same arguments (the parity tests compare)."""
        cdef Py_buffer view
        cdef Py_ssize_t e, data_off
        cdef int r = 1
        PyObject_GetBuffer(body, &view, PyBUF_SIMPLE)
        try:
            e = view.len if end is None else end
            data_off = start + t_hoff - SizeofHeapTupleHeader
            if t_hoff >= SizeofHeapTupleHeader and 0 <= start <= data_off <= e <= view.len:
                r = self.deform(body, <const unsigned char *>view.buf, start, data_off, e,
                                t_infomask2 & HEAP_NATTS_MASK, (t_infomask & HEAP_HASNULL) != 0)
            if r:
                self.python_tuples += 1
                return _heaptuple.deform_tuple(body, t_infomask2, t_infomask, t_hoff, self.attributes, start, end)
            return self._values(<const unsigned char *>view.buf)
        finally:
            PyBuffer_Release(&view)

    cdef list _values(self, const unsigned char *buf):
        cdef Py_ssize_t i
        cdef ColVal *v
        cdef const unsigned char *p
        out = [None] * self.ncols
        for i in range(self.ncols):
            v = &self.vals[i]
            if v.state == VAL_INLINE:
                out[i] = PyBytes_FromStringAndSize(<const char *>buf + v.off, v.len)
            elif v.state == VAL_DETOASTED:
                out[i] = self._held[i]
            elif v.state == VAL_EXTERNAL:
                p = buf + v.off
                out[i] = _varlena.ToastPointer(pg_i32(p), pg_u32(p + 4), pg_u32(p + 8), pg_u32(p + 12))
            elif v.state == VAL_MISSING:
                out[i] = _heaptuple.MissingValue(self.attributes[i].attmissingval)
        return out


cdef int append_change_at(object desc, object out, bytes head, int action, const unsigned char *newp,
                          Py_ssize_t newlen, const unsigned char *oldp, Py_ssize_t oldlen, object toast,
                          bint newline) except -1:
    """``desc.append_change(out, head, action, newtuple, oldtuple, toast, newline)`` for C callers
    (declared in native/waldecode/_typeout.pxd: ``waldecode._logical`` writes a row from its change arena),
    the tuples as pointers and lengths, -1 for none: no bytes object per tuple.  ``desc`` is the
    plugin's RelDesc, ``out`` its OutBuf."""
    return (<RelDesc?>desc).change(<OutBuf?>out, head, action, newp, newlen, None, oldp, oldlen, None, toast,
                                   newline)


cdef int _quote_mode(unsigned int typoid):
    """types.test_decoding_value: print_literal's choice by the column's own type OID."""
    if (typoid == INT2OID or typoid == INT4OID or typoid == INT8OID or typoid == OIDOID or typoid == FLOAT4OID
            or typoid == FLOAT8OID or typoid == NUMERICOID):
        return QUOTE_RAW
    if typoid == BITOID or typoid == VARBITOID:
        return QUOTE_BIT
    if typoid == BOOLOID:
        return QUOTE_BOOL
    return QUOTE_LITERAL


cdef int _put_literal(TypeOut t, OutBuf o, ColDesc *c, const unsigned char *p, Py_ssize_t n,
                      bint is_text) except -1:
    """One column value as test_decoding prints it: the output text, quoted by print_literal.
    ``is_text``: ``p`` is already output text (a missing value's attmissingval)."""
    cdef Py_ssize_t mark
    if c.quote == QUOTE_LITERAL:
        ob_putc(o, c"'")
        mark = o.size
        if is_text:
            ob_put(o, <const char *>p, n)
        else:
            t.write_value(o, c.typoid, c.kind, p, n)
        double_quotes(o, mark)
        return ob_putc(o, c"'")
    if c.quote == QUOTE_RAW:
        if is_text:
            return ob_put(o, <const char *>p, n)
        return t.write_value(o, c.typoid, c.kind, p, n)
    if c.quote == QUOTE_BIT:
        put_lit(o, b"B'")
        if is_text:
            ob_put(o, <const char *>p, n)
        else:
            t.write_value(o, c.typoid, c.kind, p, n)
        return ob_putc(o, c"'")
    # QUOTE_BOOL: 'true' for the text "t", 'false' for anything else
    mark = o.size
    if is_text:
        ob_put(o, <const char *>p, n)
    else:
        t.write_value(o, c.typoid, c.kind, p, n)
    if o.size - mark == 1 and o.data[mark] == c't':
        o.size = mark
        return put_lit(o, b"true")
    o.size = mark
    return put_lit(o, b"false")
