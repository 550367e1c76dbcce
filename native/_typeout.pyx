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


# -- float4 / float8 (float.py) ------------------------------------------------------------------

cdef int put_float_special(OutBuf o, double x) except -1:
    if x != x:
        put_lit(o, b"NaN")
        return 1
    if x > 1.7976931348623157e308:
        put_lit(o, b"Infinity")
        return 1
    if x < -1.7976931348623157e308:
        put_lit(o, b"-Infinity")
        return 1
    return 0


cdef int put_strfromd(OutBuf o, double x, int precision) except -1:
    """src/port/snprintf.c pg_strfromd: '%.*g', precision clamped to 1..32 (float.py _strfromd)."""
    cdef char tmp[FLOAT_TEXT_MAX]
    cdef int n
    if put_float_special(o, x):
        return 0
    if precision < 1:
        precision = 1
    elif precision > 32:
        precision = 32
    n = snprintf(tmp, FLOAT_TEXT_MAX, b"%.*g", precision, x)
    return ob_put(o, tmp, n)


cdef int put_shortest(OutBuf o, bint negative, unsigned long long mantissa, int exponent, int mbits, int bias,
                      int maxexp, int fixed_limit) except -1:
    """float.py _shortest_text and _format: Ryu's digits, fixed notation for -4 <= exp < fixed_limit."""
    cdef unsigned long long output
    cdef int exp10, olength, exp, i
    cdef char digits[24]
    if exponent == maxexp:
        if mantissa:
            return put_lit(o, b"NaN")
        return put_lit(o, b"-Infinity" if negative else b"Infinity")
    if exponent == 0 and mantissa == 0:
        return put_lit(o, b"-0" if negative else b"0")
    wd_shortest_digits(mantissa, exponent, mbits, bias, &output, &exp10)
    # digits without trailing zeros (moved into the exponent)
    i = 24
    while True:
        i -= 1
        digits[i] = <char>(c'0' + output % 10)
        output //= 10
        if output == 0:
            break
    olength = 24 - i
    while olength > 1 and digits[i + olength - 1] == c'0':
        olength -= 1
        exp10 += 1
    exp = exp10 + olength - 1      # exponent of the first digit
    if negative:
        ob_putc(o, c'-')
    if -4 <= exp < fixed_limit:
        if exp10 >= 0:
            ob_put(o, digits + i, olength)
            ob_reserve(o, exp10)
            memset(o.data + o.size, c'0', exp10)
            o.size += exp10
        elif exp >= 0:
            ob_put(o, digits + i, exp + 1)
            ob_putc(o, c'.')
            ob_put(o, digits + i + exp + 1, olength - exp - 1)
        else:
            put_lit(o, b"0.")
            ob_reserve(o, -exp - 1)
            memset(o.data + o.size, c'0', -exp - 1)
            o.size += -exp - 1
            ob_put(o, digits + i, olength)
        return 0
    ob_putc(o, digits[i])
    if olength > 1:
        ob_putc(o, c'.')
        ob_put(o, digits + i + 1, olength - 1)
    if exp < 0:
        put_lit(o, b"e-")
        return put_pad(o, -exp, 2)
    put_lit(o, b"e+")
    return put_pad(o, exp, 2)


cdef int put_float4(OutBuf o, unsigned int bits, int extra_float_digits) except -1:
    """float4out_internal."""
    if extra_float_digits <= 0:
        return put_strfromd(o, <double>pg_f4(bits), FLT_DIG + extra_float_digits)
    return put_shortest(o, bits >> 31, bits & ((1u << FLOAT_MANTISSA_BITS) - 1),
                        (bits >> FLOAT_MANTISSA_BITS) & FLOAT_MAX_EXPONENT, FLOAT_MANTISSA_BITS, FLOAT_BIAS,
                        FLOAT_MAX_EXPONENT, FLOAT_FIXED_LIMIT)


cdef int put_float8(OutBuf o, unsigned long long bits, int extra_float_digits) except -1:
    """float8out_internal."""
    if extra_float_digits <= 0:
        return put_strfromd(o, pg_f8(bits), DBL_DIG + extra_float_digits)
    return put_shortest(o, bits >> 63, bits & ((<unsigned long long>1 << DOUBLE_MANTISSA_BITS) - 1),
                        (bits >> DOUBLE_MANTISSA_BITS) & DOUBLE_MAX_EXPONENT, DOUBLE_MANTISSA_BITS, DOUBLE_BIAS,
                        DOUBLE_MAX_EXPONENT, DOUBLE_FIXED_LIMIT)


# -- numeric (numeric.py numeric_text / _var_text) -------------------------------------------------

cdef int put_numeric(OutBuf o, const unsigned char *p, Py_ssize_t n) except -1:
    """numeric_out of a numeric varlena payload: get_str_from_var."""
    cdef unsigned int header, flags, special
    cdef bint negative
    cdef long long dscale, weight, d, top, k, ngroups, i
    cdef Py_ssize_t pos, ndigits, frac_start
    if n < 2:
        return W_FALLBACK
    header = pg_u16(p)
    flags = header & NUMERIC_SIGN_MASK
    if flags == NUMERIC_SPECIAL:
        special = header & NUMERIC_EXT_SIGN_MASK
        if special == NUMERIC_NAN:
            put_lit(o, b"NaN")
        elif special == NUMERIC_PINF:
            put_lit(o, b"Infinity")
        elif special == NUMERIC_NINF:
            put_lit(o, b"-Infinity")
        else:
            return W_FALLBACK
        return W_OK
    if flags == NUMERIC_SHORT:
        negative = (header & NUMERIC_SHORT_SIGN_MASK) != 0
        dscale = (header & NUMERIC_SHORT_DSCALE_MASK) >> NUMERIC_SHORT_DSCALE_SHIFT
        weight = header & NUMERIC_SHORT_WEIGHT_MASK
        if header & NUMERIC_SHORT_WEIGHT_SIGN_MASK:
            weight -= NUMERIC_SHORT_WEIGHT_RANGE
        pos = 2
    else:
        if n < 4 or (flags != NUMERIC_POS and flags != NUMERIC_NEG):
            return W_FALLBACK
        negative = flags == NUMERIC_NEG
        dscale = header & NUMERIC_DSCALE_MASK
        weight = pg_i16(p + 2)
        pos = 4
    if (n - pos) & 1:
        return W_FALLBACK
    ndigits = (n - pos) >> 1
    p += pos
    if negative:
        ob_putc(o, c'-')
    if weight < 0:
        ob_putc(o, c'0')
    else:
        put_u64(o, pg_u16(p) if ndigits else 0)
        if weight > 0:
            top = weight + 1 if weight + 1 < ndigits else ndigits
            for k in range(1, top):
                put_pad(o, pg_u16(p + 2 * k), DEC_DIGITS)
            if weight + 1 > top:
                k = (weight + 1 - (top if top > 1 else 1)) * DEC_DIGITS
                ob_reserve(o, k)
                memset(o.data + o.size, c'0', k)
                o.size += k
    d = weight + 1
    if dscale > 0:
        ob_putc(o, c'.')
        frac_start = o.size
        ngroups = (dscale + DEC_DIGITS - 1) // DEC_DIGITS
        for i in range(d, d + ngroups):
            if 0 <= i < ndigits:
                put_pad(o, pg_u16(p + 2 * i), DEC_DIGITS)
            else:
                put_lit(o, b"0000")
        o.size = frac_start + dscale   # exactly dscale fraction digits
    return W_OK


# -- dates and times (datetime.py) -----------------------------------------------------------------

cdef void j2date(long long jd, long long *year, int *month, int *day) noexcept nogil:
    """datetime.c j2date (with the reference's floor division for any Julian day)."""
    cdef long long julian = jd + 32044
    cdef long long quad = fdiv(julian, 146097)
    cdef long long extra = (julian - quad * 146097) * 4 + 3
    cdef long long y
    julian += 60 + quad * 3 + fdiv(extra, 146097)
    quad = fdiv(julian, 1461)
    julian -= quad * 1461
    y = fdiv(julian * 4, 1461)
    if y != 0:
        julian = fmod(julian + 305, 365) + 123
    else:
        julian = fmod(julian + 306, 366) + 123
    y += quad * 4
    quad = fdiv(julian * 2141, 65536)
    year[0] = y - 4800
    month[0] = <int>(fmod(quad + 10, MONTHS_PER_YEAR) + 1)
    day[0] = <int>(julian - fdiv(7834 * quad, 256))


cdef long long date2j(long long year, long long month, long long day) noexcept nogil:
    cdef long long century, julian
    if month > 2:
        month += 1
        year += 4800
    else:
        month += 13
        year += 4799
    century = fdiv(year, 100)
    julian = year * 365 - 32167
    julian += fdiv(year, 4) - century + fdiv(century, 4)
    return julian + fdiv(7834 * month, 256) + day


cdef inline int put_year(OutBuf o, long long year) except -1:
    """Years BC print as 1 - year (the ' BC' comes at the end)."""
    return put_pad(o, year if year > 0 else -(year - 1), 4)


cdef int put_seconds(OutBuf o, long long sec, long long fsec, int precision, bint fillzeros) except -1:
    """AppendSeconds: seconds, then the fraction without trailing zeros."""
    cdef long long v, limit = 1
    cdef char tmp[24]
    cdef int i, k
    if fillzeros:
        put_pad(o, labs64(sec), 2)
    else:
        put_i64(o, labs64(sec))
    if fsec == 0:
        return 0
    v = labs64(fsec)
    for k in range(precision):
        limit *= 10
    ob_putc(o, c'.')
    if v >= limit:
        return put_i64(o, v)
    i = precision
    for k in range(precision - 1, -1, -1):
        tmp[k] = <char>(c'0' + v % 10)
        v //= 10
    while i > 0 and tmp[i - 1] == c'0':
        i -= 1
    return ob_put(o, tmp, i)


cdef int put_timezone(OutBuf o, long long tz, int style) except -1:
    """EncodeTimezone: ``tz`` is seconds west of Greenwich."""
    cdef long long sec = labs64(tz)
    cdef long long mins = sec // 60
    cdef long long hour
    sec = sec % 60
    hour = mins // 60
    mins = mins % 60
    ob_putc(o, c'+' if tz <= 0 else c'-')
    put2(o, hour)
    if sec != 0:
        ob_putc(o, c':')
        put2(o, mins)
        ob_putc(o, c':')
        return put2(o, sec)
    if mins != 0 or style == USE_XSD_DATES:
        ob_putc(o, c':')
        return put2(o, mins)
    return 0


cdef int put_date_only(OutBuf o, long long year, int mon, int mday, int style, int order) except -1:
    """EncodeDateOnly."""
    if style == USE_ISO_DATES or style == USE_XSD_DATES:
        put_year(o, year)
        ob_putc(o, c'-')
        put2(o, mon)
        ob_putc(o, c'-')
        put2(o, mday)
    elif style == USE_SQL_DATES:
        if order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c'/')
            put2(o, mon)
        else:
            put2(o, mon)
            ob_putc(o, c'/')
            put2(o, mday)
        ob_putc(o, c'/')
        put_year(o, year)
    elif style == USE_GERMAN_DATES:
        put2(o, mday)
        ob_putc(o, c'.')
        put2(o, mon)
        ob_putc(o, c'.')
        put_year(o, year)
    else:
        if order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c'-')
            put2(o, mon)
        else:
            put2(o, mon)
            ob_putc(o, c'-')
            put2(o, mday)
        ob_putc(o, c'-')
        put_year(o, year)
    if year <= 0:
        put_lit(o, b" BC")
    return 0


cdef int put_time_of_day(OutBuf o, long long hour, long long minute, long long sec, long long fsec,
                         int precision) except -1:
    put2(o, hour)
    ob_putc(o, c':')
    put2(o, minute)
    ob_putc(o, c':')
    return put_seconds(o, sec, fsec, precision, True)


cdef int put_date_time(OutBuf o, long long year, int mon, int mday, long long hour, long long minute,
                       long long sec, long long fsec, bint has_tz, long long tz, const char *tzn, int tzn_len,
                       int style, int order) except -1:
    """EncodeDateTime (``has_tz`` False: no zone printed; ``tzn_len`` 0: no abbreviation)."""
    cdef long long wday
    if style == USE_ISO_DATES or style == USE_XSD_DATES:
        put_year(o, year)
        ob_putc(o, c'-')
        put2(o, mon)
        ob_putc(o, c'-')
        put2(o, mday)
        ob_putc(o, c' ' if style == USE_ISO_DATES else c'T')
        put_time_of_day(o, hour, minute, sec, fsec, MAX_TIMESTAMP_PRECISION)
        if has_tz:
            put_timezone(o, tz, style)
    elif style == USE_SQL_DATES or style == USE_GERMAN_DATES:
        if style == USE_GERMAN_DATES:
            put2(o, mday)
            ob_putc(o, c'.')
            put2(o, mon)
            ob_putc(o, c'.')
        elif order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c'/')
            put2(o, mon)
            ob_putc(o, c'/')
        else:
            put2(o, mon)
            ob_putc(o, c'/')
            put2(o, mday)
            ob_putc(o, c'/')
        put_year(o, year)
        ob_putc(o, c' ')
        put_time_of_day(o, hour, minute, sec, fsec, MAX_TIMESTAMP_PRECISION)
        if has_tz:
            if tzn_len:
                ob_putc(o, c' ')
                ob_put(o, tzn, tzn_len)
            else:
                put_timezone(o, tz, style)
    else:
        wday = fmod(date2j(year, mon, mday) + 1, 7)
        ob_put(o, DAY_NAMES + 3 * wday, 3)
        ob_putc(o, c' ')
        if order == DATEORDER_DMY:
            put2(o, mday)
            ob_putc(o, c' ')
            ob_put(o, MONTH_NAMES + 3 * (mon - 1), 3)
        else:
            ob_put(o, MONTH_NAMES + 3 * (mon - 1), 3)
            ob_putc(o, c' ')
            put2(o, mday)
        ob_putc(o, c' ')
        put_time_of_day(o, hour, minute, sec, fsec, MAX_TIMESTAMP_PRECISION)
        ob_putc(o, c' ')
        put_year(o, year)
        if has_tz:
            ob_putc(o, c' ')
            if tzn_len:
                ob_put(o, tzn, tzn_len)
            else:
                put_timezone(o, tz, style)
    if year <= 0:
        put_lit(o, b" BC")
    return 0


cdef int put_date(OutBuf o, int days, int style, int order) except -1:
    """date_out."""
    cdef long long y
    cdef int m, d
    if days == DATEVAL_NOBEGIN:
        return put_lit(o, b"-infinity")
    if days == DATEVAL_NOEND:
        return put_lit(o, b"infinity")
    j2date(<long long>days + POSTGRES_EPOCH_JDATE, &y, &m, &d)
    return put_date_only(o, y, m, d, style, order)


cdef int put_time(OutBuf o, long long t) except -1:
    """time_out's EncodeTimeOnly without a zone (``t`` >= 0 microseconds)."""
    cdef long long hour = t // USECS_PER_HOUR
    t -= hour * USECS_PER_HOUR
    cdef long long minute = t // USECS_PER_MINUTE
    t -= minute * USECS_PER_MINUTE
    return put_time_of_day(o, hour, minute, t // USECS_PER_SEC, t % USECS_PER_SEC, MAX_TIME_PRECISION)


cdef int put_timestamp(OutBuf o, long long ts, int style, int order) except -1:
    """timestamp_out."""
    cdef long long date, t, y, hour, minute
    cdef int mo, d
    if ts == DT_NOBEGIN:
        return put_lit(o, b"-infinity")
    if ts == DT_NOEND:
        return put_lit(o, b"infinity")
    date = fdiv(ts, USECS_PER_DAY)
    t = fmod(ts, USECS_PER_DAY)
    j2date(date + POSTGRES_EPOCH_JDATE, &y, &mo, &d)
    hour = t // USECS_PER_HOUR
    t -= hour * USECS_PER_HOUR
    minute = t // USECS_PER_MINUTE
    t -= minute * USECS_PER_MINUTE
    return put_date_time(o, y, mo, d, hour, minute, t // USECS_PER_SEC, t % USECS_PER_SEC, False, 0, NULL, 0,
                         style, order)


# -- interval (datetime.py encode_interval) --------------------------------------------------------

cdef int put_postgres_int_part(OutBuf o, long long value, const char *units, bint *is_zero,
                               bint *is_before) except -1:
    """AddPostgresIntPart."""
    if value == 0:
        return 0
    if not is_zero[0]:
        ob_putc(o, c' ')
    if is_before[0] and value > 0:
        ob_putc(o, c'+')
    put_i64(o, value)
    ob_putc(o, c' ')
    put_lit(o, units)
    if value != 1:
        ob_putc(o, c's')
    is_before[0] = value < 0
    is_zero[0] = False
    return 0


cdef int put_verbose_int_part(OutBuf o, long long value, const char *units, bint *is_zero,
                              bint *is_before) except -1:
    """AddVerboseIntPart."""
    if value == 0:
        return 0
    if is_zero[0]:
        is_before[0] = value < 0
        value = labs64(value)
    elif is_before[0]:
        value = -value
    ob_putc(o, c' ')
    put_i64(o, value)
    ob_putc(o, c' ')
    put_lit(o, units)
    if value != 1:
        ob_putc(o, c's')
    is_zero[0] = False
    return 0


cdef int put_iso8601_part(OutBuf o, long long value, char unit) except -1:
    if value:
        put_i64(o, value)
        ob_putc(o, unit)
    return 0


cdef int put_interval(OutBuf o, long long time, int day, int month, int style, int major) except -1:
    """interval_out: interval2itm, then EncodeInterval."""
    cdef long long year, mon, mday, hour, minute, sec, fsec
    cdef bint has_negative, has_positive, has_year_month, has_day_time, sql_standard_value
    cdef bint is_zero = True, is_before = False, minus
    if major >= 17:
        # INTERVAL_NOBEGIN / INTERVAL_NOEND (17+)
        if time == DT_NOBEGIN and day == DATEVAL_NOBEGIN and month == DATEVAL_NOBEGIN:
            return put_lit(o, b"-infinity")
        if time == DT_NOEND and day == DATEVAL_NOEND and month == DATEVAL_NOEND:
            return put_lit(o, b"infinity")
    # C division truncates toward zero, as interval2itm's does
    year = month // MONTHS_PER_YEAR
    mon = month - year * MONTHS_PER_YEAR
    mday = day
    hour = time // USECS_PER_HOUR
    time -= hour * USECS_PER_HOUR
    minute = time // USECS_PER_MINUTE
    time -= minute * USECS_PER_MINUTE
    sec = time // USECS_PER_SEC
    fsec = time - sec * USECS_PER_SEC

    if style == INTSTYLE_SQL_STANDARD:
        has_negative = year < 0 or mon < 0 or mday < 0 or hour < 0 or minute < 0 or sec < 0 or fsec < 0
        has_positive = year > 0 or mon > 0 or mday > 0 or hour > 0 or minute > 0 or sec > 0 or fsec > 0
        has_year_month = year != 0 or mon != 0
        has_day_time = mday != 0 or hour != 0 or minute != 0 or sec != 0 or fsec != 0
        sql_standard_value = not (has_negative and has_positive) and not (has_year_month and has_day_time)
        if has_negative and sql_standard_value:
            ob_putc(o, c'-')
            year = -year
            mon = -mon
            mday = -mday
            hour = -hour
            minute = -minute
            sec = -sec
            fsec = -fsec
        if not has_negative and not has_positive:
            return ob_putc(o, c'0')
        if not sql_standard_value:
            ob_putc(o, c'-' if (year < 0 or mon < 0) else c'+')
            put_i64(o, labs64(year))
            ob_putc(o, c'-')
            put_i64(o, labs64(mon))
            ob_putc(o, c' ')
            ob_putc(o, c'-' if mday < 0 else c'+')
            put_i64(o, labs64(mday))
            ob_putc(o, c' ')
            ob_putc(o, c'-' if (hour < 0 or minute < 0 or sec < 0 or fsec < 0) else c'+')
            put_i64(o, labs64(hour))
            ob_putc(o, c':')
            put_pad(o, labs64(minute), 2)
            ob_putc(o, c':')
            return put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, True)
        if has_year_month:
            put_i64(o, year)
            ob_putc(o, c'-')
            return put_i64(o, mon)
        if mday != 0:
            put_i64(o, mday)
            ob_putc(o, c' ')
        put_i64(o, hour)
        ob_putc(o, c':')
        put_pad(o, minute, 2)
        ob_putc(o, c':')
        return put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, True)

    if style == INTSTYLE_ISO_8601:
        if year == 0 and mon == 0 and mday == 0 and hour == 0 and minute == 0 and sec == 0 and fsec == 0:
            return put_lit(o, b"PT0S")
        ob_putc(o, c'P')
        put_iso8601_part(o, year, c'Y')
        put_iso8601_part(o, mon, c'M')
        put_iso8601_part(o, mday, c'D')
        if hour != 0 or minute != 0 or sec != 0 or fsec != 0:
            ob_putc(o, c'T')
        put_iso8601_part(o, hour, c'H')
        put_iso8601_part(o, minute, c'M')
        if sec != 0 or fsec != 0:
            if sec < 0 or fsec < 0:
                ob_putc(o, c'-')
            put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, False)
            ob_putc(o, c'S')
        return 0

    if style == INTSTYLE_POSTGRES:
        put_postgres_int_part(o, year, b"year", &is_zero, &is_before)
        put_postgres_int_part(o, mon, b"mon", &is_zero, &is_before)
        put_postgres_int_part(o, mday, b"day", &is_zero, &is_before)
        if is_zero or hour != 0 or minute != 0 or sec != 0 or fsec != 0:
            minus = hour < 0 or minute < 0 or sec < 0 or fsec < 0
            if not is_zero:
                ob_putc(o, c' ')
            if minus:
                ob_putc(o, c'-')
            elif is_before:
                ob_putc(o, c'+')
            put2(o, labs64(hour))
            ob_putc(o, c':')
            put2(o, labs64(minute))
            ob_putc(o, c':')
            put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, True)
        return 0

    # INTSTYLE_POSTGRES_VERBOSE
    ob_putc(o, c'@')
    put_verbose_int_part(o, year, b"year", &is_zero, &is_before)
    put_verbose_int_part(o, mon, b"mon", &is_zero, &is_before)
    put_verbose_int_part(o, mday, b"day", &is_zero, &is_before)
    put_verbose_int_part(o, hour, b"hour", &is_zero, &is_before)
    put_verbose_int_part(o, minute, b"min", &is_zero, &is_before)
    if sec != 0 or fsec != 0:
        ob_putc(o, c' ')
        if sec < 0 or (sec == 0 and fsec < 0):
            if is_zero:
                is_before = True
            elif not is_before:
                ob_putc(o, c'-')
        elif is_before:
            ob_putc(o, c'-')
        put_seconds(o, sec, fsec, MAX_INTERVAL_PRECISION, False)
        put_lit(o, b" sec")
        if labs64(sec) != 1 or fsec != 0:
            ob_putc(o, c's')
        is_zero = False
    if is_zero:
        put_lit(o, b" 0")
    if is_before:
        put_lit(o, b" ago")
    return 0


# -- the small types (misc.py, network.py) ---------------------------------------------------------

cdef int put_hex_byte(OutBuf o, unsigned char b) except -1:
    ob_reserve(o, 2)
    o.data[o.size] = HEX_DIGITS[b >> 4]
    o.data[o.size + 1] = HEX_DIGITS[b & 15]
    o.size += 2
    return 0


cdef int put_bytea(OutBuf o, const unsigned char *p, Py_ssize_t n, bint hex_output) except -1:
    """byteaout: \\x and lower-case hex, or the escape format (\\\\ and \\ooo for non-printables)."""
    cdef Py_ssize_t i
    cdef unsigned char b
    cdef char *w
    if hex_output:
        ob_reserve(o, 2 + 2 * n)
        w = o.data + o.size
        w[0] = c'\\'
        w[1] = c'x'
        w += 2
        for i in range(n):
            b = p[i]
            w[0] = HEX_DIGITS[b >> 4]
            w[1] = HEX_DIGITS[b & 15]
            w += 2
        o.size += 2 + 2 * n
        return 0
    ob_reserve(o, 4 * n)
    w = o.data + o.size
    for i in range(n):
        b = p[i]
        if b == c'\\':
            w[0] = c'\\'
            w[1] = c'\\'
            w += 2
        elif b < c' ' or b > c'~':      # not printable ASCII
            w[0] = c'\\'
            w[1] = <char>(c'0' + (b >> 6))
            w[2] = <char>(c'0' + ((b >> 3) & 7))
            w[3] = <char>(c'0' + (b & 7))
            w += 4
        else:
            w[0] = <char>b
            w += 1
    o.size = w - o.data
    return 0


cdef int put_uuid(OutBuf o, const unsigned char *p) except -1:
    cdef int i
    for i in range(16):
        if i == 4 or i == 6 or i == 8 or i == 10:
            ob_putc(o, c'-')
        put_hex_byte(o, p[i])
    return 0


cdef int put_macaddr(OutBuf o, const unsigned char *p, int n) except -1:
    cdef int i
    for i in range(n):
        if i:
            ob_putc(o, c':')
        put_hex_byte(o, p[i])
    return 0


cdef int put_hex(OutBuf o, unsigned long long v, const char *digits) except -1:
    """%X or %x (by ``digits``)"""
    cdef char tmp[16]
    cdef int i = 16
    while True:
        i -= 1
        tmp[i] = digits[v & 15]
        v >>= 4
        if v == 0:
            break
    return ob_put(o, tmp + i, 16 - i)


cdef inline int put_hex_upper(OutBuf o, unsigned long long v) except -1:
    return put_hex(o, v, HEX_UPPER)


cdef int put_varbit(OutBuf o, const unsigned char *p, Py_ssize_t n) except -1:
    """varbit_out: int32 bit_len, then the bits, most significant first."""
    cdef long long nbits, nbytes, i
    if n < 4:
        return W_FALLBACK
    nbits = pg_i32(p)
    nbytes = (nbits + 7) >> 3
    if nbits < 0 or n - 4 != nbytes:
        return W_FALLBACK
    ob_reserve(o, nbits)
    for i in range(nbits):
        o.data[o.size + i] = c'1' if (p[4 + (i >> 3)] >> (7 - (i & 7))) & 1 else c'0'
    o.size += nbits
    return W_OK


cdef int put_ipv6(OutBuf o, const unsigned char *addr, int bits) except -1:
    """inet_net_ntop_ipv6 (network.py _ipv6_text)."""
    cdef unsigned int words[8]
    cdef int i, best_base = -1, best_len = 0, cur_base = -1, cur_len = 0
    for i in range(8):
        words[i] = (addr[2 * i] << 8) | addr[2 * i + 1]
    for i in range(8):
        if words[i] == 0:
            if cur_base == -1:
                cur_base = i
                cur_len = 1
            else:
                cur_len += 1
        elif cur_base != -1:
            if best_base == -1 or cur_len > best_len:
                best_base = cur_base
                best_len = cur_len
            cur_base = -1
    if cur_base != -1 and (best_base == -1 or cur_len > best_len):
        best_base = cur_base
        best_len = cur_len
    if best_base != -1 and best_len < 2:
        best_base = -1
    for i in range(8):
        if best_base != -1 and best_base <= i < best_base + best_len:
            if i == best_base:
                ob_putc(o, c':')
            continue
        if i != 0:
            ob_putc(o, c':')
        if i == 6 and best_base == 0 and (best_len == 6 or (best_len == 7 and words[7] != 0x0001)
                                          or (best_len == 5 and words[5] == 0xFFFF)):
            put_u64(o, addr[12])
            ob_putc(o, c'.')
            put_u64(o, addr[13])
            ob_putc(o, c'.')
            put_u64(o, addr[14])
            ob_putc(o, c'.')
            put_u64(o, addr[15])
            break
        put_hex_lower(o, words[i])
    if best_base != -1 and best_base + best_len == 8:
        ob_putc(o, c':')
    if bits != 128:
        ob_putc(o, c'/')
        put_u64(o, bits)
    return 0


cdef inline int put_hex_lower(OutBuf o, unsigned int v) except -1:
    return put_hex(o, v, HEX_DIGITS)


cdef int put_network(OutBuf o, const unsigned char *p, Py_ssize_t n, bint is_cidr) except -1:
    """network_out (inet_out, cidr_out): cidr always shows its netmask."""
    cdef int family, bits
    if n < 2:
        return W_FALLBACK
    family = p[0]
    bits = p[1]
    if family == PGSQL_AF_INET:
        if n != 6 or bits > 32:
            return W_FALLBACK
        put_u64(o, p[2])
        ob_putc(o, c'.')
        put_u64(o, p[3])
        ob_putc(o, c'.')
        put_u64(o, p[4])
        ob_putc(o, c'.')
        put_u64(o, p[5])
        if bits != 32 or is_cidr:
            ob_putc(o, c'/')
            put_u64(o, bits)
        return W_OK
    if family == PGSQL_AF_INET6:
        if n != 18 or bits > 128:
            return W_FALLBACK
        put_ipv6(o, p + 2, bits)
        if bits == 128 and is_cidr:
            put_lit(o, b"/128")
        return W_OK
    return W_FALLBACK


# -- jsonb (jsonb.py) ------------------------------------------------------------------------------

cdef int put_json_string(OutBuf o, const unsigned char *s, Py_ssize_t n) except -1:
    """json.c escape_json."""
    cdef Py_ssize_t i
    cdef unsigned char c
    ob_putc(o, c'"')
    for i in range(n):
        c = s[i]
        if c >= c' ' and c != c'"' and c != c'\\':
            ob_putc(o, <char>c)
        elif c == c'"':
            put_lit(o, b"\\\"")
        elif c == c'\\':
            put_lit(o, b"\\\\")
        elif c == 0x08:
            put_lit(o, b"\\b")
        elif c == 0x0C:
            put_lit(o, b"\\f")
        elif c == 0x0A:
            put_lit(o, b"\\n")
        elif c == 0x0D:
            put_lit(o, b"\\r")
        elif c == 0x09:
            put_lit(o, b"\\t")
        else:
            put_lit(o, b"\\u00")
            put_hex_byte(o, c)
    return ob_putc(o, c'"')


cdef int varlena_payload(const unsigned char *buf, Py_ssize_t off, Py_ssize_t end, Py_ssize_t *pstart,
                         Py_ssize_t *plen) noexcept nogil:
    """An uncompressed inline varlena inside a container (array element, jsonb numeric):
    its payload, as varlena.read_varlena finds it.  W_FALLBACK for anything else (a TOAST
    pointer, which the reference rejects; a compressed datum, which it decompresses)."""
    cdef unsigned char b0
    cdef Py_ssize_t size
    if off >= end:
        return W_FALLBACK
    b0 = buf[off]
    if VARATT_IS_1B_E(b0):
        return W_FALLBACK
    if VARATT_IS_1B(b0):
        size = VARSIZE_1B(b0)
        if off + size > end or size < 1:
            return W_FALLBACK
        pstart[0] = off + 1
        plen[0] = size - 1
        return W_OK
    if off + 4 > end:
        return W_FALLBACK
    size = VARSIZE_4B(buf + off)
    if size < VARHDRSZ or off + size > end or VARATT_IS_4B_C(b0):
        return W_FALLBACK
    pstart[0] = off + VARHDRSZ
    plen[0] = size - VARHDRSZ
    return W_OK


cdef int put_jsonb_scalar(OutBuf o, const unsigned char *buf, Py_ssize_t base, Py_ssize_t start, Py_ssize_t end,
                          unsigned int jtype, Py_ssize_t limit) except -1:
    cdef Py_ssize_t q, qlen
    if jtype == JENTRY_ISSTRING:
        return put_json_string(o, buf + base + start, end - start)
    if jtype == JENTRY_ISNUMERIC:
        if varlena_payload(buf, base + ((start + 3) & ~3), base + end, &q, &qlen) != W_OK:
            return W_FALLBACK
        return put_numeric(o, buf + q, qlen)
    if jtype == JENTRY_ISBOOL_TRUE:
        return put_lit(o, b"true")
    if jtype == JENTRY_ISBOOL_FALSE:
        return put_lit(o, b"false")
    if jtype == JENTRY_ISNULL:
        return put_lit(o, b"null")
    if jtype == JENTRY_ISCONTAINER:
        return put_jsonb_container(o, buf, base + ((start + 3) & ~3), base + end, limit)
    return W_FALLBACK


cdef int put_jsonb_container(OutBuf o, const unsigned char *buf, Py_ssize_t off, Py_ssize_t end,
                             Py_ssize_t limit) except -1:
    """jsonb.py _container: one container, its children first validated (offsets), then printed."""
    cdef unsigned int header, je
    cdef Py_ssize_t count, nchildren, base, size, pos, start, k, i
    cdef bint is_object
    cdef Py_ssize_t small[32]
    cdef Py_ssize_t *ends = small
    cdef int r = W_OK
    if off + 4 > end or end > limit:
        return W_FALLBACK
    header = pg_u32(buf + off)
    count = header & JB_CMASK
    is_object = (header & JB_FOBJECT) != 0
    nchildren = count * 2 if is_object else count
    base = off + 4 + 4 * nchildren
    if base > end:
        return W_FALLBACK
    size = end - base
    if nchildren > 32:
        ends = <Py_ssize_t *>PyMem_Malloc(nchildren * sizeof(Py_ssize_t))
        if ends == NULL:
            raise MemoryError()
    try:
        pos = 0
        for k in range(nchildren):
            je = pg_u32(buf + off + 4 + 4 * k)
            start = pos
            if je & JENTRY_HAS_OFF:
                pos = je & JENTRY_OFFLENMASK
            else:
                pos = pos + (je & JENTRY_OFFLENMASK)
            if pos < start or pos > size:
                return W_FALLBACK
            ends[k] = pos
        if is_object:
            ob_putc(o, c'{')
            # all keys come first, then all values: key i pairs with value count + i
            for i in range(count):
                if i:
                    put_lit(o, b", ")
                r = put_jsonb_scalar(o, buf, base, ends[i - 1] if i else 0, ends[i],
                                     pg_u32(buf + off + 4 + 4 * i) & JENTRY_TYPEMASK, end)
                if r != W_OK:
                    return r
                put_lit(o, b": ")
                k = count + i
                r = put_jsonb_scalar(o, buf, base, ends[k - 1], ends[k],
                                     pg_u32(buf + off + 4 + 4 * k) & JENTRY_TYPEMASK, end)
                if r != W_OK:
                    return r
            return ob_putc(o, c'}')
        if header & JB_FSCALAR:
            if count != 1:
                return W_FALLBACK
            return put_jsonb_scalar(o, buf, base, 0, ends[0], pg_u32(buf + off + 4) & JENTRY_TYPEMASK, end)
        if not header & JB_FARRAY:
            return W_FALLBACK
        ob_putc(o, c'[')
        for k in range(count):
            if k:
                put_lit(o, b", ")
            r = put_jsonb_scalar(o, buf, base, ends[k - 1] if k else 0, ends[k],
                                 pg_u32(buf + off + 4 + 4 * k) & JENTRY_TYPEMASK, end)
            if r != W_OK:
                return r
        return ob_putc(o, c']')
    finally:
        if ends != small:
            PyMem_Free(ends)


# -- array_out (arrays.py) -------------------------------------------------------------------------

cdef inline bint array_char_needs_quote(unsigned char c, char delim) noexcept nogil:
    return (c == c'"' or c == c'\\' or c == c'{' or c == c'}' or c == <unsigned char>delim or c == c' '
            or c == c'\t' or c == c'\n' or c == c'\r' or c == c'\v' or c == c'\f')


cdef inline char ascii_lower(char c) noexcept nogil:
    return c + (c'a' - c'A') if c'A' <= c <= c'Z' else c


cdef int array_quote(OutBuf o, Py_ssize_t mark, char delim) except -1:
    """arrays.py _quote on the element text at o.data[mark:]: double-quoted (with \\ before
    \\ and ") when empty, NULL in any case, or holding a delimiter, brace, quote or space."""
    cdef Py_ssize_t n = o.size - mark, i, esc = 0, src, dst
    cdef unsigned char c
    cdef bint need = n == 0
    cdef char *s = o.data + mark
    if n == 4 and ascii_lower(s[0]) == c'n' and ascii_lower(s[1]) == c'u' and ascii_lower(s[2]) == c'l' \
            and ascii_lower(s[3]) == c'l':
        need = True
    for i in range(n):
        c = <unsigned char>s[i]
        if array_char_needs_quote(c, delim):
            need = True
            if c == c'"' or c == c'\\':
                esc += 1
    if not need:
        return 0
    ob_reserve(o, esc + 2)
    s = o.data + mark
    # shift right, from the end, inserting the backslashes; then the opening quote
    src = n - 1
    dst = n + esc      # index (after the opening quote) of the last character
    while src >= 0:
        c = <unsigned char>s[src]
        s[dst] = <char>c
        dst -= 1
        if c == c'"' or c == c'\\':
            s[dst] = c'\\'
            dst -= 1
        src -= 1
    s[0] = c'"'
    s[n + esc + 1] = c'"'
    o.size = mark + n + esc + 2
    return 0


cdef int put_array(TypeOut t, OutBuf o, const unsigned char *v, Py_ssize_t n) except -1:
    """array_out over an array payload (the datum without its varlena header)."""
    cdef int ndim, dataoffset, i, j
    cdef unsigned int elemtype
    cdef long long dims[MAXDIM]
    cdef long long lbounds[MAXDIM]
    cdef int indx[MAXDIM]
    cdef long long nitems = 1, k, lb
    cdef bint any_zero = False, hasnull, nonunit = False
    cdef Py_ssize_t bitmap_off, data, off, nxt, q, qlen, mark
    cdef const unsigned char *nul
    cdef ElemInfo *e
    cdef int pad, r
    if n < 12:
        return W_FALLBACK
    ndim = pg_i32(v)
    dataoffset = pg_i32(v + 4)
    elemtype = pg_u32(v + 8)
    if ndim < 0 or ndim > MAXDIM:
        return W_FALLBACK
    if ndim == 0:
        return put_lit(o, b"{}")
    if n < 12 + 8 * ndim:
        return W_FALLBACK
    for i in range(ndim):
        dims[i] = pg_i32(v + 12 + 4 * i)
        lbounds[i] = pg_i32(v + 12 + 4 * ndim + 4 * i)
        if dims[i] < 0:
            return W_FALLBACK
        if dims[i] == 0:
            any_zero = True
        if lbounds[i] != 1:
            nonunit = True
    if any_zero:
        nitems = 0
    else:
        for i in range(ndim):
            nitems *= dims[i]
            if nitems > MaxAllocSize // 4:      # arrays.py's bound on the element count
                return W_FALLBACK
    bitmap_off = 12 + 8 * ndim
    if dataoffset:
        data = dataoffset - VARHDRSZ
        if data < bitmap_off + (nitems + 7) // 8 or data > n:
            return W_FALLBACK
        hasnull = True
    else:
        data = ((SIZEOF_ARRAYTYPE + 8 * ndim + MAXALIGN - 1) & ~(MAXALIGN - 1)) - VARHDRSZ
        hasnull = False
    e = t._elem(elemtype)
    if e == NULL or e.kind == KIND_PYTHON:
        return W_FALLBACK
    if nitems == 0:
        return put_lit(o, b"{}")
    if nonunit:
        for i in range(ndim):
            ob_putc(o, c'[')
            put_i64(o, lbounds[i])
            ob_putc(o, c':')
            put_i64(o, lbounds[i] + dims[i] - 1)
            ob_putc(o, c']')
        ob_putc(o, c'=')
    for i in range(ndim):
        indx[i] = 0
    j = 0
    off = data
    for k in range(nitems):
        for i in range(j, ndim):
            ob_putc(o, c'{')
        if hasnull and not (v[bitmap_off + (k >> 3)] >> (k & 7)) & 1:
            put_lit(o, b"NULL")
        else:
            # elements are aligned on offsets from the start of the 4-byte varlena header
            pad = (off + VARHDRSZ) % e.typalign
            if pad:
                off += e.typalign - pad
            if e.typlen > 0:
                nxt = off + e.typlen
                if nxt > n:
                    return W_FALLBACK
                q = off
                qlen = e.typlen
                off = nxt
            elif e.typlen == -1:
                if varlena_payload(v, off, n, &q, &qlen) != W_OK:
                    return W_FALLBACK
                # the datum's on-disk size: header + payload
                off = q + qlen
            elif e.typlen == -2:
                if off >= n:
                    return W_FALLBACK
                nul = <const unsigned char *>memchr(v + off, 0, n - off)
                if nul == NULL:
                    return W_FALLBACK
                q = off
                qlen = nul - (v + off)
                off = off + qlen + 1
            else:
                return W_FALLBACK
            mark = o.size
            r = t.write(o, e.kind, v + q, qlen)
            if r != W_OK:
                return r
            array_quote(o, mark, e.typdelim)
        i = ndim - 1
        while i >= 0:
            indx[i] += 1
            if indx[i] < dims[i]:
                ob_putc(o, e.typdelim)
                break
            indx[i] = 0
            ob_putc(o, c'}')
            i -= 1
        j = i + 1
    return W_OK


# -- money (misc.py cash_text) ---------------------------------------------------------------------

cdef int put_money(TypeOut t, OutBuf o, long long value) except -1:
    """cash_out with the lc_monetary conventions read at set-up."""
    cdef char tmp[(20 + 11) * (MONEY_SYMBOL_MAX + 1)]
    cdef Py_ssize_t pos = sizeof(tmp), blen
    cdef unsigned long long mag
    cdef int points = t.m_points, digit_pos, sep_by_space
    cdef const char *dsym = PyBytes_AS_STRING(t.m_dsymbol)
    cdef Py_ssize_t dlen = PyBytes_GET_SIZE(t.m_dsymbol)
    cdef const char *ssym = PyBytes_AS_STRING(t.m_ssymbol)
    cdef Py_ssize_t slen = PyBytes_GET_SIZE(t.m_ssymbol)
    cdef bytes sign, cs = t.m_csymbol
    if value < 0:
        mag = <unsigned long long>0 - <unsigned long long>value
        sign = t.m_nsign
        sep_by_space = t.m_n_sep_by_space
    else:
        mag = <unsigned long long>value
        sign = t.m_psign
        sep_by_space = t.m_p_sep_by_space
    # built right to left, as cash_out does
    digit_pos = points
    while True:
        if points and digit_pos == 0:
            pos -= dlen
            memcpy(tmp + pos, dsym, dlen)
        elif digit_pos < 0 and digit_pos % t.m_group == 0:
            pos -= slen
            memcpy(tmp + pos, ssym, slen)
        pos -= 1
        tmp[pos] = <char>(c'0' + mag % 10)
        mag //= 10
        digit_pos -= 1
        if not (mag or digit_pos >= 0):
            break
    blen = sizeof(tmp) - pos
    cdef const char *layout = PyBytes_AS_STRING(t.m_n_layout if value < 0 else t.m_p_layout)
    cdef char part
    while layout[0]:
        part = layout[0]
        layout += 1
        if part == c'N':
            ob_put(o, tmp + pos, blen)
        elif part == c'C':
            _put_bytes(o, cs)
        elif part == c'S':
            _put_bytes(o, sign)
        elif part == c'1':
            if sep_by_space == 1:
                ob_putc(o, c' ')
        elif part == c'2':
            if sep_by_space == 2:
                ob_putc(o, c' ')
        else:  # the parentheses of sign_posn 0
            ob_putc(o, part)
    return 0


cdef inline int _put_bytes(OutBuf o, bytes b) except -1:
    return ob_put(o, PyBytes_AS_STRING(b), PyBytes_GET_SIZE(b))


cdef bytes _utf8(s):
    return (<str>s).encode("utf-8", "surrogateescape")


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
