# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""Native type output and test_decoding column lists: from tuple bytes to output bytes in C.

The compiled counterpart of ``types/*.py`` (output functions), ``heaptuple.deform_tuple``
(the column walk) and test_decoding's column formatting (``output/test_decoding.py``
``TestDecoding._tuple`` with ``types.test_decoding_value``).  Three pieces:

``OutBuf``
    a growable byte buffer.  Output functions append a value's text (UTF-8, exactly the
    bytes ``text.encode("utf-8", "surrogateescape")`` of the Python output) straight into
    it; the caller writes it out in large blocks (``flush_to``).
``TypeOut``
    the settings output depends on (TimeZone, DateStyle, IntervalStyle,
    extra_float_digits, bytea_output, lc_monetary), read once from a
    ``types.OutputContext``, and the output functions: C code per *output kind*
    (``KIND_*``), chosen by the same output function the Python ``OutputContext``
    resolves for a type OID, so domains behave as their base types.
``RelDesc``
    a relation's columns (attlen, attalign, dropped, type, missing value, test_decoding
    prefix and quoting), the tuple deformer, and the column list formatter: the piece
    the decoder calls per change (``append_wal_tuple``).

How the decoder uses it (replay.py + output/test_decoding.py, per change)::

    typeout = _typeout.TypeOut(plugin.ctx)        # per OutputContext (a new one when the catalog view changes)
    desc = typeout.relation(rel.attributes)       # per relation, cached like TestDecoding._columns
    out.write("table public.t: INSERT:")          # out = _typeout.OutBuf(), one per output file
    desc.append_wal_tuple(out, change.newtuple, False, toast)   # toast(pointer) -> payload or None
    out.write("\\n")
    if len(out) > 1 << 20:
        out.flush_to(f)

No Python object is created per column for the types with a native kind.  The rest is
explicit and cheap to detect (``TypeOut.is_native``, ``RelDesc.python_columns``; counted in
``TypeOut.python_values`` / ``declined_values`` and ``RelDesc.python_tuples``):

* a type without a native kind (xml, records, ranges, enums, geometric types, tsvector,
  hstore, int2vector/oidvector, ...) has ``KIND_PYTHON``: its values go through the
  Python output function (``OutputContext.output``), one call per value;
* a value the C code cannot print -- a length that is impossible for its type, a corrupt
  numeric, array or jsonb -- is handed to the Python output function too, which raises
  the reference's error (or prints it, if it can);
* a tuple whose walk fails a check is formatted by the pure-Python path as a whole
  (``heaptuple.deform_tuple``), which raises the reference's ``CorruptRecordError``;
* inline-compressed values are decompressed by ``varlena.decompress`` (which uses the
  Cython pglz of ``waldecode._native`` when it is active): one bytes object per
  compressed value, which is at least a couple of kilobytes;
* external TOAST pointers are handed to the caller's ``toast`` callback.
"""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE
from cpython.mem cimport PyMem_Free, PyMem_Malloc, PyMem_Realloc
from libc.stdio cimport snprintf
from libc.string cimport memchr, memcpy, memset, strlen

from pgconsts cimport *
from pgdefs cimport *

from waldecode.heap import heaptuple as _heaptuple
from waldecode import types as _types
from waldecode.heap import varlena as _varlena
from waldecode.errors import WALError
from waldecode.output.quote import quote_identifier as _quote_identifier
from waldecode.types import arrays as _arrays
from waldecode.types import datetime as _datetime
from waldecode.types import float as _float
from waldecode.types import jsonb as _jsonb
from waldecode.types import misc as _misc
from waldecode.types import network as _network
from waldecode.types import numeric as _numeric

cdef extern from "wd_shortest.h":
    void wd_shortest_digits(unsigned long long ieee_mantissa, int ieee_exponent, int mantissa_bits, int bias,
                            unsigned long long *output, int *exp10) nogil


# -- C structures ------------------------------------------------------------------------------

# One hour of the session TimeZone: its UTC offset and abbreviation (types/datetime.py
# TimeZone.localtime's per-hour cache, kept in C).
ctypedef struct TzHour:
    long long hour          # utime // 3600; TZ_EMPTY when unused
    int gmtoff              # seconds east of Greenwich
    int abbrev_len          # 0: no abbreviation (the numeric offset is printed)
    char abbrev[48]         # the abbreviation (UTF-8), already cut to MAXTZLEN characters


# What array_out needs about an element type, cached per type OID.
ctypedef struct ElemInfo:
    unsigned int oid        # 0: unused slot
    int kind                # the element type's output kind (KIND_PYTHON: the array falls back)
    int typlen
    int typalign            # in bytes
    char typdelim


# One column of a relation as the deformer and the line formatter need it.
ctypedef struct ColDesc:
    int attlen
    int attalign            # in bytes
    bint dropped
    unsigned int typoid
    int kind                # output kind of the column's type
    int quote               # test_decoding print_literal: QUOTE_*
    bint has_missing        # attnum > natts of a tuple: attmissingval
    const char *prefix      # ' name[type]:' (UTF-8), owned by RelDesc._keep
    Py_ssize_t prefix_len
    const char *missing     # attmissingval text (UTF-8), owned by RelDesc._keep
    Py_ssize_t missing_len


# Where one column of the current tuple is (filled by the deformer).
ctypedef struct ColVal:
    int state               # VAL_*
    Py_ssize_t off          # VAL_INLINE: payload offset; VAL_EXTERNAL: offset of the varatt_external
    Py_ssize_t len
    const unsigned char *ext    # VAL_DETOASTED: the payload's bytes (held in RelDesc._held)


# -- output kinds --------------------------------------------------------------------------------

# What the C code prints for a type: one kind per output function (types/*.py OUTPUT_FUNCTIONS).
cdef enum:
    KIND_PYTHON = 0         # no C code: the Python output function, per value
    KIND_INT2
    KIND_INT4
    KIND_INT8
    KIND_OID                # oidout, xidout, cidout
    KIND_XID8
    KIND_BOOL
    KIND_CHAR               # "char"
    KIND_NAME
    KIND_TEXT               # textout, varcharout, bpcharout, json_out, citextout, cstring_out, unknownout
    KIND_BYTEA
    KIND_UUID
    KIND_FLOAT4
    KIND_FLOAT8
    KIND_NUMERIC
    KIND_DATE
    KIND_TIME
    KIND_TIMETZ
    KIND_TIMESTAMP
    KIND_TIMESTAMPTZ
    KIND_INTERVAL
    KIND_JSONB
    KIND_INET
    KIND_CIDR
    KIND_MACADDR
    KIND_MACADDR8
    KIND_MONEY
    KIND_PG_LSN
    KIND_TID
    KIND_VARBIT             # bit_out, varbit_out
    KIND_ARRAY

# Keyed by the Python output function itself, so that the kind of a type is exactly the
# function OutputContext.function() resolves for it (domains, qualified names and all).
_KIND_OF_FUNCTION = {
    _numeric.int2out: KIND_INT2,
    _numeric.int4out: KIND_INT4,
    _numeric.int8out: KIND_INT8,
    _numeric.numeric_out: KIND_NUMERIC,
    _misc.oidout: KIND_OID,
    _misc.xid8out: KIND_XID8,
    _misc.boolout: KIND_BOOL,
    _misc.charout: KIND_CHAR,
    _misc.nameout: KIND_NAME,
    _misc.textout: KIND_TEXT,
    _misc.byteaout: KIND_BYTEA,
    _misc.uuid_out: KIND_UUID,
    _misc.cash_out: KIND_MONEY,
    _misc.pg_lsn_out: KIND_PG_LSN,
    _misc.tidout: KIND_TID,
    _misc.varbit_out: KIND_VARBIT,
    _float.float4out: KIND_FLOAT4,
    _float.float8out: KIND_FLOAT8,
    _datetime.date_out: KIND_DATE,
    _datetime.time_out: KIND_TIME,
    _datetime.timetz_out: KIND_TIMETZ,
    _datetime.timestamp_out: KIND_TIMESTAMP,
    _datetime.timestamptz_out: KIND_TIMESTAMPTZ,
    _datetime.interval_out: KIND_INTERVAL,
    _jsonb.jsonb_out: KIND_JSONB,
    _network.inet_out: KIND_INET,
    _network.cidr_out: KIND_CIDR,
    _network.macaddr_out: KIND_MACADDR,
    _network.macaddr8_out: KIND_MACADDR8,
    _arrays.array_out: KIND_ARRAY,
}

# A C writer's verdict on one value
cdef enum:
    W_OK = 0
    W_FALLBACK = 1          # not printed (nothing left in the buffer): use the Python output function

# test_decoding print_literal, decided by the column's type OID
cdef enum:
    QUOTE_LITERAL = 0       # '...' with '' doubled
    QUOTE_RAW = 1           # int2/4/8, oid, float4/8, numeric
    QUOTE_BIT = 2           # B'...'
    QUOTE_BOOL = 3          # true / false

# Where a column of the current tuple is
cdef enum:
    VAL_NULL = 0
    VAL_INLINE = 1          # bytes in the tuple: fixed-length, varlena payload or cstring
    VAL_DETOASTED = 2       # inline-compressed varlena, decompressed into RelDesc._held
    VAL_EXTERNAL = 3        # a varatt_external TOAST pointer in the tuple
    VAL_MISSING = 4         # attnum > natts with attmissingval

cdef enum:
    TZ_CACHE_SIZE = 4096    # hours of the TimeZone cache (direct-mapped; a power of two)
    ELEM_CACHE_SIZE = 64    # array element types cached (direct-mapped by OID; a power of two)
    MONEY_SYMBOL_MAX = 16   # longer lc_monetary symbols take the Python path
    FLOAT_TEXT_MAX = 64     # room for any float text: %.32g or shortest digits with an exponent

cdef long long TZ_EMPTY = DT_NOBEGIN    # no hour of any instant is that far back
cdef const char *HEX_DIGITS = b"0123456789abcdef"
cdef const char *HEX_UPPER = b"0123456789ABCDEF"
cdef const char *MONTH_NAMES = b"JanFebMarAprMayJunJulAugSepOctNovDec"
cdef const char *DAY_NAMES = b"SunMonTueWedThuFriSat"


# -- the output buffer ---------------------------------------------------------------------------

@cython.final
cdef class OutBuf:
    """A growable byte buffer: output lines are built in it and written out in large blocks.

    ``write(text)`` appends str (UTF-8, surrogate escapes kept as the bytes they stand for)
    or bytes; ``getvalue()`` / ``take()`` return the contents; ``flush_to(f)`` writes them
    to a binary file and empties the buffer.
    """

    cdef char *data
    cdef Py_ssize_t size
    cdef Py_ssize_t cap

    def __cinit__(self, Py_ssize_t capacity=65536):
        if capacity < 64:
            capacity = 64
        self.data = <char *>PyMem_Malloc(capacity)
        if self.data == NULL:
            raise MemoryError()
        self.cap = capacity
        self.size = 0

    def __dealloc__(self):
        PyMem_Free(self.data)

    cdef int _grow(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t need = self.size + extra
        cdef Py_ssize_t cap = self.cap * 2
        cdef char *p
        if cap < need:
            cap = need
        p = <char *>PyMem_Realloc(self.data, cap)
        if p == NULL:
            raise MemoryError()
        self.data = p
        self.cap = cap
        return 0

    def __len__(self):
        return self.size

    def write(self, data):
        """Append ``data`` (str or a bytes-like object)."""
        cdef Py_buffer view
        if isinstance(data, str):
            data = (<str>data).encode("utf-8", "surrogateescape")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            ob_put(self, <const char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    def getvalue(self):
        return PyBytes_FromStringAndSize(self.data, self.size)

    def take(self):
        """The contents, and an empty buffer."""
        b = PyBytes_FromStringAndSize(self.data, self.size)
        self.size = 0
        return b

    def clear(self):
        self.size = 0

    def truncate(self, Py_ssize_t size):
        """Cut the contents back to ``size`` bytes (e.g. a line abandoned half-way)."""
        if 0 <= size < self.size:
            self.size = size

    def flush_to(self, f):
        """``f.write`` the contents in one block, then empty the buffer.

        A bytes copy, not a view of the buffer: a writer that keeps what it is given must not
        see it change (one copy per block costs far less than formatting its lines)."""
        if self.size:
            f.write(PyBytes_FromStringAndSize(self.data, self.size))
            self.size = 0


# Appending to an OutBuf: inline, so that a value's bytes go straight into the buffer.
cdef inline int ob_reserve(OutBuf o, Py_ssize_t extra) except -1:
    if o.size + extra > o.cap:
        return o._grow(extra)
    return 0


cdef inline int ob_put(OutBuf o, const char *s, Py_ssize_t n) except -1:
    if o.size + n > o.cap:
        o._grow(n)
    memcpy(o.data + o.size, s, n)
    o.size += n
    return 0


cdef inline int ob_putc(OutBuf o, char c) except -1:
    if o.size + 1 > o.cap:
        o._grow(1)
    o.data[o.size] = c
    o.size += 1
    return 0


# -- a transaction's ends ------------------------------------------------------------------------

@cython.final
cdef class TxnLines:
    """test_decoding's lines at a transaction's ends (pg_decode_begin_txn, pg_decode_commit_txn) for the
    decoder's native commit path, which writes a plain committed transaction whole and calls, as the
    plugin callbacks are called: ``begin(xid)`` at its start, ``rows_begin()`` before its first row line,
    ``commit()`` at its end.  A line is the word, `` <xid>`` with include-xids, a newline; with
    skip-empty-xacts the BEGIN waits for the first row, and a transaction without one writes nothing.
    The decoder never spells a line: the plugin gives this object (``TestDecoding.txn_lines``)."""

    cdef OutBuf out
    cdef bytes begin_word, commit_word
    cdef bint with_xids, skip_empty, begun
    cdef unsigned int xid

    def __init__(self, OutBuf out, bytes begin_word, bytes commit_word, bint with_xids, bint skip_empty):
        if len(begin_word) > 16 or len(commit_word) > 16:
            raise ValueError("a transaction's words are at most 16 bytes")
        self.out, self.begin_word, self.commit_word = out, begin_word, commit_word
        self.with_xids, self.skip_empty = with_xids, skip_empty
        self.begun = False

    cdef int line(self, bytes word) except -1:
        cdef char buf[32]
        cdef Py_ssize_t n = PyBytes_GET_SIZE(word)
        memcpy(buf, PyBytes_AS_STRING(word), n)
        if self.with_xids:
            n += snprintf(buf + n, 12, " %u", self.xid)
        buf[n] = b'\n'
        return ob_put(self.out, buf, n + 1)

    def begin(self, unsigned int xid):
        self.xid = xid
        self.begun = not self.skip_empty
        if self.begun:
            self.line(self.begin_word)

    def rows_begin(self):
        if not self.begun:
            self.begun = True
            self.line(self.begin_word)

    def commit(self):
        if self.begun:
            self.line(self.commit_word)


# -- numbers as text -----------------------------------------------------------------------------

cdef inline int put_lit(OutBuf o, const char *s) except -1:
    return ob_put(o, s, strlen(s))


cdef inline int put_u64(OutBuf o, unsigned long long v) except -1:
    cdef char tmp[20]
    cdef int i = 20
    while True:
        i -= 1
        tmp[i] = <char>(c'0' + v % 10)
        v //= 10
        if v == 0:
            break
    return ob_put(o, tmp + i, 20 - i)


cdef inline int put_i64(OutBuf o, long long v) except -1:
    if v < 0:
        ob_putc(o, c'-')
        return put_u64(o, <unsigned long long>0 - <unsigned long long>v)
    return put_u64(o, <unsigned long long>v)


cdef int put_pad(OutBuf o, long long v, int width) except -1:
    """printf's %0*d: at least ``width`` characters, sign included, zero-padded."""
    cdef char tmp[20]
    cdef int i = 20
    cdef unsigned long long u
    if v < 0:
        ob_putc(o, c'-')
        width -= 1
        u = <unsigned long long>0 - <unsigned long long>v
    else:
        u = <unsigned long long>v
    while True:
        i -= 1
        tmp[i] = <char>(c'0' + u % 10)
        u //= 10
        if u == 0:
            break
    while 20 - i < width:
        ob_putc(o, c'0')
        width -= 1
    return ob_put(o, tmp + i, 20 - i)


cdef inline int put2(OutBuf o, long long v) except -1:
    """%02d of 0 <= v < 100 (calendar fields): two digits."""
    if 0 <= v < 100:
        ob_reserve(o, 2)
        o.data[o.size] = <char>(c'0' + v // 10)
        o.data[o.size + 1] = <char>(c'0' + v % 10)
        o.size += 2
        return 0
    return put_pad(o, v, 2)


cdef inline long long fdiv(long long a, long long b) noexcept nogil:
    """Python's a // b (floor), as the reference computes calendar fields."""
    cdef long long q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef inline long long fmod(long long a, long long b) noexcept nogil:
    """Python's a % b (the sign of b)."""
    cdef long long r = a % b
    if r != 0 and ((r < 0) != (b < 0)):
        r += b
    return r


cdef inline long long labs64(long long v) noexcept nogil:
    return -v if v < 0 else v


# -- the types' output functions, a file each as waldecode/types/ has them -------------------------

include "typeout/float.pxi"
include "typeout/numeric.pxi"
include "typeout/datetime.pxi"
include "typeout/misc.pxi"
include "typeout/jsonb.pxi"
include "typeout/arrays.pxi"
include "typeout/money.pxi"


# -- the settings and the dispatch -----------------------------------------------------------------

_ALIGNMENT = _heaptuple.ALIGNMENT


@cython.final
cdef class TypeOut:
    """The output functions of one ``types.OutputContext`` (catalog + settings), in C.

    ``value_text(typeoid, value)`` is ``OutputContext.output(typeoid, value)`` as UTF-8
    bytes; ``is_native(typeoid)`` says whether the type has C code (else each value goes
    through the Python output function).  ``relation(attributes)`` builds a ``RelDesc``.
    """

    cdef readonly object ctx            # the types.OutputContext the settings come from
    cdef readonly int major
    cdef int extra_float_digits
    cdef bint bytea_hex
    cdef int datestyle
    cdef int dateorder
    cdef int intervalstyle
    # TimeZone: fixed offset, or the zone's per-hour cache (filled from types.datetime.TimeZone)
    cdef object _tz
    cdef bint _tz_fixed
    cdef TzHour _tz_fixed_hour
    cdef TzHour _tz_scratch             # an hour holding a transition: never cached
    cdef TzHour *_tz_cache
    # lc_monetary, as cash_out reads struct lconv
    cdef int m_points
    cdef int m_group
    cdef bytes m_dsymbol
    cdef bytes m_ssymbol
    cdef bytes m_csymbol
    cdef bytes m_psign
    cdef bytes m_nsign
    cdef bytes m_p_layout  # types.misc.cash_layout's, for positive and negative amounts
    cdef int m_p_sep_by_space
    cdef bytes m_n_layout
    cdef int m_n_sep_by_space
    cdef dict _kinds                    # type OID -> output kind
    cdef ElemInfo *_elems               # array element types, direct-mapped by OID
    # how many values went through the Python output function: of KIND_PYTHON types, and of
    # native kinds whose C code declined the value (impossible or unusual data)
    cdef readonly unsigned long long python_values
    cdef readonly unsigned long long declined_values

    def __cinit__(self):
        self._tz_cache = NULL
        self._elems = NULL

    def __init__(self, ctx):
        self.ctx = ctx
        self.major = ctx.major
        self.extra_float_digits = ctx.extra_float_digits
        self.bytea_hex = ctx.bytea_hex
        self.datestyle = ctx.datestyle
        self.dateorder = ctx.dateorder
        self.intervalstyle = ctx.intervalstyle
        self._tz = None
        self._kinds = {}
        self._elems = <ElemInfo *>PyMem_Malloc(ELEM_CACHE_SIZE * sizeof(ElemInfo))
        if self._elems == NULL:
            raise MemoryError()
        memset(self._elems, 0, ELEM_CACHE_SIZE * sizeof(ElemInfo))
        self._setup_money(ctx.monetary)

    def __dealloc__(self):
        PyMem_Free(self._tz_cache)
        PyMem_Free(self._elems)

    cdef _setup_money(self, lc):
        """misc.cash_conventions, read once."""
        c = _misc.cash_conventions(lc)
        self.m_points = c.points
        self.m_group = c.mon_group
        self.m_dsymbol = _utf8(c.dsymbol)
        self.m_ssymbol = _utf8(c.ssymbol)
        self.m_csymbol = _utf8(c.csymbol)
        self.m_psign = _utf8(c.psign)
        self.m_nsign = _utf8(c.nsign)
        self.m_p_layout = c.p_layout.encode()
        self.m_p_sep_by_space = c.p_sep_by_space
        self.m_n_layout = c.n_layout.encode()
        self.m_n_sep_by_space = c.n_sep_by_space

    cdef int kind_of(self, unsigned int typeoid) except -1:
        """The output kind of type ``typeoid``; raises what OutputContext.function raises
        (UnsupportedTypeError) for a type without an output function."""
        kind = self._kinds.get(typeoid)
        if kind is None:
            fn, _typ = self.ctx.function(typeoid)
            kind = self._kinds[typeoid] = _KIND_OF_FUNCTION.get(fn, KIND_PYTHON)
            if kind == KIND_MONEY and (len(self.m_dsymbol) > MONEY_SYMBOL_MAX
                                       or len(self.m_ssymbol) > MONEY_SYMBOL_MAX):
                kind = self._kinds[typeoid] = KIND_PYTHON
        return kind

    cdef ElemInfo *_elem(self, unsigned int typeoid) except? NULL:
        """What array_out needs about element type ``typeoid``; NULL when the reference
        would fail on it (it is then the Python path that raises)."""
        cdef ElemInfo *e = &self._elems[typeoid & (ELEM_CACHE_SIZE - 1)]
        if e.oid == typeoid and typeoid != 0:
            return e
        try:
            typ = self.ctx.type(typeoid)
            kind = self.kind_of(typeoid)
        except _types.TypeOutputError:
            return NULL
        delim = typ.typdelim
        ascii_delim = len(delim) == 1 and delim.isascii()
        if not ascii_delim or typ.typalign not in _ALIGNMENT:
            kind = KIND_PYTHON      # array_quote compares bytes: a multibyte delimiter goes the Python way
        e.oid = typeoid
        e.kind = kind
        e.typlen = typ.typlen
        e.typalign = _ALIGNMENT.get(typ.typalign, 1)
        e.typdelim = ord(delim) if ascii_delim else c','
        return e

    cdef _load_tz(self):
        tz = self.ctx.timezone
        fixed = tz.fixed_offset
        if fixed is not None:
            self._tz_fixed = True
            _fill_hour(&self._tz_fixed_hour, fixed[0], fixed[1])
        else:
            self._tz_fixed = False
            self._tz_cache = <TzHour *>PyMem_Malloc(TZ_CACHE_SIZE * sizeof(TzHour))
            if self._tz_cache == NULL:
                raise MemoryError()
            for i in range(TZ_CACHE_SIZE):
                self._tz_cache[i].hour = TZ_EMPTY
        self._tz = tz

    cdef TzHour *_tz_at(self, long long utime) except NULL:
        """TimeZone.localtime(utime) (offset and abbreviation), from a per-hour cache in C.

        As the reference caches: an hour whose first and last second have the same offset
        and abbreviation is cached whole; a transition hour is asked per value."""
        cdef long long hour
        cdef TzHour *e
        if self._tz is None:
            self._load_tz()
        if self._tz_fixed:
            return &self._tz_fixed_hour
        hour = fdiv(utime, SECS_PER_HOUR)
        e = &self._tz_cache[hour & (TZ_CACHE_SIZE - 1)]
        if e.hour == hour:
            return e
        tz = self._tz
        res = tz.localtime(utime)
        first = tz.localtime(hour * SECS_PER_HOUR)
        last = tz.localtime(hour * SECS_PER_HOUR + SECS_PER_HOUR - 1)
        if first == last and res == first:
            _fill_hour(e, first[0], first[1])
            e.hour = hour
            return e
        _fill_hour(&self._tz_scratch, res[0], res[1])
        return &self._tz_scratch

    cdef int write(self, OutBuf o, int kind, const unsigned char *p, Py_ssize_t n) except -1:
        """Append the text of a value of output kind ``kind`` (payload ``p[:n]``): W_OK, or
        W_FALLBACK with nothing appended when the Python output function must do it."""
        cdef long long ts, utime, fsec, days, secs, y
        cdef int mo, d
        cdef TzHour *h
        cdef const unsigned char *nul
        if kind == KIND_INT4:
            if n != 4:
                return W_FALLBACK
            return put_i64(o, pg_i32(p))
        if kind == KIND_TEXT:
            return ob_put(o, <const char *>p, n)
        if kind == KIND_INT8:
            if n != 8:
                return W_FALLBACK
            return put_i64(o, pg_i64(p))
        if kind == KIND_INT2:
            if n != 2:
                return W_FALLBACK
            return put_i64(o, pg_i16(p))
        if kind == KIND_NUMERIC:
            return put_numeric(o, p, n)
        if kind == KIND_TIMESTAMPTZ:
            if n != 8:
                return W_FALLBACK
            ts = pg_i64(p)
            if ts == DT_NOBEGIN:
                return put_lit(o, b"-infinity")
            if ts == DT_NOEND:
                return put_lit(o, b"infinity")
            # floor division: (ts - fsec) // USECS_PER_SEC without overflowing near the int64 ends
            fsec = fmod(ts, USECS_PER_SEC)
            utime = fdiv(ts, USECS_PER_SEC) + <long long>(POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * SECS_PER_DAY
            h = self._tz_at(utime)
            days = fdiv(utime + h.gmtoff, SECS_PER_DAY)
            secs = utime + h.gmtoff - days * SECS_PER_DAY
            j2date(days + UNIX_EPOCH_JDATE, &y, &mo, &d)
            return put_date_time(o, y, mo, d, secs // SECS_PER_HOUR, secs % SECS_PER_HOUR // SECS_PER_MINUTE,
                                 secs % SECS_PER_MINUTE, fsec, True, -h.gmtoff, h.abbrev, h.abbrev_len,
                                 self.datestyle, self.dateorder)
        if kind == KIND_TIMESTAMP:
            if n != 8:
                return W_FALLBACK
            return put_timestamp(o, pg_i64(p), self.datestyle, self.dateorder)
        if kind == KIND_DATE:
            if n != 4:
                return W_FALLBACK
            return put_date(o, pg_i32(p), self.datestyle, self.dateorder)
        if kind == KIND_FLOAT8:
            if n != 8:
                return W_FALLBACK
            return put_float8(o, pg_u64(p), self.extra_float_digits)
        if kind == KIND_FLOAT4:
            if n != 4:
                return W_FALLBACK
            return put_float4(o, pg_u32(p), self.extra_float_digits)
        if kind == KIND_BOOL:
            if n != 1:
                return W_FALLBACK
            return ob_putc(o, c't' if p[0] else c'f')
        if kind == KIND_OID:
            if n != 4:
                return W_FALLBACK
            return put_u64(o, pg_u32(p))
        if kind == KIND_NAME:
            nul = <const unsigned char *>memchr(p, 0, n)
            return ob_put(o, <const char *>p, (nul - p) if nul != NULL else n)
        if kind == KIND_BYTEA:
            return put_bytea(o, p, n, self.bytea_hex)
        if kind == KIND_UUID:
            if n != 16:
                return W_FALLBACK
            return put_uuid(o, p)
        if kind == KIND_JSONB:
            return put_jsonb_container(o, p, 0, n, n)
        if kind == KIND_ARRAY:
            return put_array(self, o, p, n)
        if kind == KIND_INTERVAL:
            if n != 16:
                return W_FALLBACK
            return put_interval(o, pg_i64(p), pg_i32(p + 8), pg_i32(p + 12), self.intervalstyle, self.major)
        if kind == KIND_TIME:
            if n != 8 or pg_i64(p) < 0:
                return W_FALLBACK
            return put_time(o, pg_i64(p))
        if kind == KIND_TIMETZ:
            if n != 12 or pg_i64(p) < 0:
                return W_FALLBACK
            put_time(o, pg_i64(p))
            return put_timezone(o, pg_i32(p + 8), self.datestyle)
        if kind == KIND_INET:
            return put_network(o, p, n, False)
        if kind == KIND_CIDR:
            return put_network(o, p, n, True)
        if kind == KIND_MONEY:
            if n != 8:
                return W_FALLBACK
            return put_money(self, o, pg_i64(p))
        if kind == KIND_CHAR:
            if n != 1:
                return W_FALLBACK
            if IS_HIGHBIT_SET(p[0]) and self.major >= 15:      # char.c charout: \\ooo since 15
                ob_putc(o, c'\\')
                ob_putc(o, <char>(c'0' + (p[0] >> 6)))
                ob_putc(o, <char>(c'0' + ((p[0] >> 3) & 7)))
                return ob_putc(o, <char>(c'0' + (p[0] & 7)))
            if p[0] == 0:
                return W_OK
            return ob_putc(o, <char>p[0])
        if kind == KIND_XID8:
            if n != 8:
                return W_FALLBACK
            return put_u64(o, pg_u64(p))
        if kind == KIND_PG_LSN:
            if n != 8:
                return W_FALLBACK
            put_hex_upper(o, pg_u64(p) >> 32)
            ob_putc(o, c'/')
            return put_hex_upper(o, pg_u64(p) & 0xFFFFFFFF)
        if kind == KIND_TID:
            if n != 6:
                return W_FALLBACK
            ob_putc(o, c'(')
            put_u64(o, (<unsigned long long>pg_u16(p) << 16) | pg_u16(p + 2))
            ob_putc(o, c',')
            put_u64(o, pg_u16(p + 4))
            return ob_putc(o, c')')
        if kind == KIND_MACADDR:
            if n != 6:
                return W_FALLBACK
            return put_macaddr(o, p, 6)
        if kind == KIND_MACADDR8:
            if n != 8:
                return W_FALLBACK
            return put_macaddr(o, p, 8)
        if kind == KIND_VARBIT:
            return put_varbit(o, p, n)
        return W_FALLBACK

    cdef int write_value(self, OutBuf o, unsigned int typeoid, int kind, const unsigned char *p,
                         Py_ssize_t n) except -1:
        """Append the output text of a value of type ``typeoid``: in C, or (KIND_PYTHON, or a
        value the C code declines) through the Python output function."""
        cdef Py_ssize_t mark = o.size
        if kind != KIND_PYTHON:
            if self.write(o, kind, p, n) == W_OK:
                return 0
            o.size = mark
            self.declined_values += 1
        self.python_values += 1
        text = self.ctx.output(typeoid, PyBytes_FromStringAndSize(<const char *>p, n))
        return _put_bytes(o, _utf8(text))

    # -- Python API --------------------------------------------------------------------------------

    def is_native(self, typeoid):
        """Whether values of type ``typeoid`` are printed in C (else per value in Python); an
        array type is native when its element type is."""
        cdef ElemInfo *e
        kind = self.kind_of(typeoid)
        if kind == KIND_ARRAY:
            typ = self.ctx.type(typeoid)
            while typ.typtype == "d" and typ.typbasetype:
                typ = self.ctx.type(typ.typbasetype)
            e = self._elem(typ.typelem)
            return e != NULL and e.kind != KIND_PYTHON
        return kind != KIND_PYTHON

    def kind_name(self, typeoid):
        """The output kind of ``typeoid``, by name (``"python"`` for the fallback)."""
        return KIND_NAMES[self.kind_of(typeoid)]

    def value_text(self, typeoid, value):
        """``OutputContext.output(typeoid, value)`` as UTF-8 bytes, printed in C when it can be."""
        cdef OutBuf o
        cdef Py_buffer view
        if value.__class__ is _heaptuple.MissingValue or value.__class__ is _varlena.ToastPointer or value is None:
            return _utf8(self.ctx.output(typeoid, value))
        kind = self.kind_of(typeoid)
        o = OutBuf(256)
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        try:
            self.write_value(o, typeoid, kind, <const unsigned char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        return o.getvalue()

    def append_value(self, OutBuf out, typeoid, value):
        """Append ``value_text(typeoid, value)`` to ``out``."""
        cdef Py_buffer view
        kind = self.kind_of(typeoid)
        PyObject_GetBuffer(value, &view, PyBUF_SIMPLE)
        try:
            self.write_value(out, typeoid, kind, <const unsigned char *>view.buf, view.len)
        finally:
            PyBuffer_Release(&view)

    def relation(self, attributes):
        """A ``RelDesc`` for a relation's ``catalog.Attribute`` rows (attnum order)."""
        return RelDesc(self, attributes)


cdef void _fill_hour(TzHour *e, gmtoff, abbrev):
    """A TimeZone.localtime result into a cache entry (abbreviation cut to MAXTZLEN characters)."""
    cdef bytes b = _utf8(abbrev[:MAXTZLEN]) if abbrev else b""
    e.gmtoff = gmtoff
    e.abbrev_len = len(b) if len(b) < <Py_ssize_t>sizeof(e.abbrev) else 0
    memcpy(e.abbrev, PyBytes_AS_STRING(b), e.abbrev_len)


KIND_NAMES = {
    KIND_PYTHON: "python", KIND_INT2: "int2", KIND_INT4: "int4", KIND_INT8: "int8", KIND_OID: "oid",
    KIND_XID8: "xid8", KIND_BOOL: "bool", KIND_CHAR: "char", KIND_NAME: "name", KIND_TEXT: "text",
    KIND_BYTEA: "bytea", KIND_UUID: "uuid", KIND_FLOAT4: "float4", KIND_FLOAT8: "float8",
    KIND_NUMERIC: "numeric", KIND_DATE: "date", KIND_TIME: "time", KIND_TIMETZ: "timetz",
    KIND_TIMESTAMP: "timestamp", KIND_TIMESTAMPTZ: "timestamptz", KIND_INTERVAL: "interval",
    KIND_JSONB: "jsonb", KIND_INET: "inet", KIND_CIDR: "cidr", KIND_MACADDR: "macaddr",
    KIND_MACADDR8: "macaddr8", KIND_MONEY: "money", KIND_PG_LSN: "pg_lsn", KIND_TID: "tid",
    KIND_VARBIT: "varbit", KIND_ARRAY: "array",
}


# -- test_decoding's quoting -----------------------------------------------------------------------

cdef int double_quotes(OutBuf o, Py_ssize_t mark) except -1:
    """test_decoding print_literal: every ' in o.data[mark:] doubled, in place."""
    cdef Py_ssize_t n = o.size - mark, cnt = 0, total, src, dst
    cdef const char *q = <const char *>memchr(o.data + mark, c"'", n)
    cdef char *s
    cdef char c
    while q != NULL:
        cnt += 1
        q = <const char *>memchr(q + 1, c"'", o.data + o.size - (q + 1))
    if cnt == 0:
        return 0
    total = cnt
    ob_reserve(o, cnt)
    s = o.data + mark
    # from the end: each character moves right by the number of quotes before it
    src = n - 1
    dst = n + cnt - 1
    while cnt:
        c = s[src]
        s[dst] = c
        dst -= 1
        if c == c"'":
            s[dst] = c"'"
            dst -= 1
            cnt -= 1
        src -= 1
    o.size += total
    return 0


# -- relations: the deformer and the column list (typeout/relations.pxi) ---------------------------

include "typeout/relations.pxi"
