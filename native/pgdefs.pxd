# PostgreSQL's on-disk constants the native code needs, named and grouped as in the
# headers they come from (the pure-Python modules define the same names: heaptuple.py,
# varlena.py, types/*.py).  Declarations only: cimported, never imported.

cdef extern from *:
    """
    #include <stdint.h>
    #include <string.h>
    /* Unaligned little-endian loads (WAL and tuple data are little-endian, unaligned). */
    static inline uint16_t pg_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
    static inline int16_t pg_i16(const unsigned char *p) { int16_t v; memcpy(&v, p, 2); return v; }
    static inline uint32_t pg_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
    static inline int32_t pg_i32(const unsigned char *p) { int32_t v; memcpy(&v, p, 4); return v; }
    static inline uint64_t pg_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
    static inline int64_t pg_i64(const unsigned char *p) { int64_t v; memcpy(&v, p, 8); return v; }
    static inline float pg_f4(uint32_t bits) { float f; memcpy(&f, &bits, 4); return f; }
    static inline double pg_f8(uint64_t bits) { double d; memcpy(&d, &bits, 8); return d; }

    /* src/include/datatype/timestamp.h (64-bit: not expressible as a C enum) */
    #define USECS_PER_DAY    ((int64_t) 86400000000)
    #define USECS_PER_HOUR   ((int64_t) 3600000000)
    #define USECS_PER_MINUTE ((int64_t) 60000000)
    #define USECS_PER_SEC    ((int64_t) 1000000)
    #define DT_NOBEGIN       INT64_MIN
    #define DT_NOEND         INT64_MAX
    /* src/include/utils/date.h */
    #define DATEVAL_NOBEGIN  INT32_MIN
    #define DATEVAL_NOEND    INT32_MAX
    /* src/include/utils/jsonb.h (does not fit a C enum) */
    #define JENTRY_HAS_OFF   0x80000000u

    /* src/include/varatt.h, little-endian: the first byte of a varlena tells its form */
    static inline int VARATT_IS_1B_E(unsigned char b0) { return b0 == 0x01; }           /* external pointer */
    static inline int VARATT_IS_1B(unsigned char b0) { return (b0 & 0x01) == 0x01; }     /* 1-byte header */
    static inline int VARATT_IS_4B_C(unsigned char b0) { return (b0 & 0x03) == 0x02; }  /* compressed inline */
    static inline uint32_t VARSIZE_1B(unsigned char b0) { return b0 >> 1; }
    static inline uint32_t VARSIZE_4B(const unsigned char *p) { return pg_u32(p) >> 2; }
    /* src/include/c.h */
    #define IS_HIGHBIT_SET(ch) ((unsigned char) (ch) & 0x80)
    """
    unsigned short pg_u16(const unsigned char *p) nogil
    short pg_i16(const unsigned char *p) nogil
    unsigned int pg_u32(const unsigned char *p) nogil
    int pg_i32(const unsigned char *p) nogil
    unsigned long long pg_u64(const unsigned char *p) nogil
    long long pg_i64(const unsigned char *p) nogil
    float pg_f4(unsigned int bits) nogil
    double pg_f8(unsigned long long bits) nogil
    const long long USECS_PER_DAY
    const long long USECS_PER_HOUR
    const long long USECS_PER_MINUTE
    const long long USECS_PER_SEC
    const long long DT_NOBEGIN
    const long long DT_NOEND
    const int DATEVAL_NOBEGIN
    const int DATEVAL_NOEND
    const unsigned int JENTRY_HAS_OFF
    bint VARATT_IS_1B_E(unsigned char b0) nogil
    bint VARATT_IS_1B(unsigned char b0) nogil
    bint VARATT_IS_4B_C(unsigned char b0) nogil
    unsigned int VARSIZE_1B(unsigned char b0) nogil
    unsigned int VARSIZE_4B(const unsigned char *p) nogil
    bint IS_HIGHBIT_SET(unsigned char ch) nogil

# src/include/access/htup_details.h
cdef enum:
    HEAP_NATTS_MASK = 0x07FF
    HEAP_HASNULL = 0x0001
    SizeofHeapTupleHeader = 23      # offsetof(HeapTupleHeaderData, t_bits)

# src/include/access/heapam_xlog.h: xl_heap_header (t_infomask2, t_infomask, t_hoff)
cdef enum:
    SizeOfHeapHeader = 5

# src/include/replication/reorderbuffer.h: ReorderBufferChangeType (the row changes)
cdef enum:
    REORDER_BUFFER_CHANGE_INSERT = 0
    REORDER_BUFFER_CHANGE_UPDATE = 1
    REORDER_BUFFER_CHANGE_DELETE = 2

# src/include/varatt.h (postgres.h before 16)
cdef enum:
    VARHDRSZ = 4
    VARHDRSZ_EXTERNAL = 2
    VARHDRSZ_COMPRESSED = 8         # va_header + va_tcinfo
    VARTAG_INDIRECT = 1
    VARTAG_EXPANDED_RO = 2
    VARTAG_EXPANDED_RW = 3
    VARTAG_ONDISK = 18
    SIZEOF_VARATT_EXTERNAL = 16     # sizeof(varatt_external)
    SIZEOF_VARATT_POINTER = 8       # the in-memory pointer of INDIRECT/EXPANDED tags
    VARLENA_EXTSIZE_BITS = 30
    VARLENA_EXTSIZE_MASK = 0x3FFFFFFF

# src/include/utils/memutils.h
cdef enum:
    MaxAllocSize = 0x3FFFFFFF

# src/include/catalog/pg_type.dat: the OIDs test_decoding's print_literal special-cases
cdef enum:
    BOOLOID = 16
    INT8OID = 20
    INT2OID = 21
    INT4OID = 23
    OIDOID = 26
    FLOAT4OID = 700
    FLOAT8OID = 701
    BITOID = 1560
    VARBITOID = 1562
    NUMERICOID = 1700

# src/include/utils/array.h
cdef enum:
    MAXDIM = 6
    MAXALIGN = 8                    # MAXIMUM_ALIGNOF on every platform PostgreSQL WAL comes from here
    SIZEOF_ARRAYTYPE = 16           # vl_len_, ndim, dataoffset, elemtype

# src/backend/utils/adt/numeric.c
cdef enum:
    NUMERIC_SIGN_MASK = 0xC000
    NUMERIC_POS = 0x0000
    NUMERIC_NEG = 0x4000
    NUMERIC_SHORT = 0x8000
    NUMERIC_SPECIAL = 0xC000
    NUMERIC_EXT_SIGN_MASK = 0xF000
    NUMERIC_NAN = 0xC000
    NUMERIC_PINF = 0xD000
    NUMERIC_NINF = 0xF000
    NUMERIC_DSCALE_MASK = 0x3FFF
    NUMERIC_SHORT_SIGN_MASK = 0x2000
    NUMERIC_SHORT_DSCALE_MASK = 0x1F80
    NUMERIC_SHORT_DSCALE_SHIFT = 7
    NUMERIC_SHORT_WEIGHT_SIGN_MASK = 0x0040
    NUMERIC_SHORT_WEIGHT_MASK = 0x003F
    NUMERIC_SHORT_WEIGHT_RANGE = 64  # a set weight sign bit means weight - 64
    DEC_DIGITS = 4                  # decimal digits per NBASE (10000) digit

# src/include/datatype/timestamp.h, utils/date.h
cdef enum:
    SECS_PER_DAY = 86400
    SECS_PER_HOUR = 3600
    SECS_PER_MINUTE = 60
    MONTHS_PER_YEAR = 12
    POSTGRES_EPOCH_JDATE = 2451545  # date2j(2000, 1, 1)
    UNIX_EPOCH_JDATE = 2440588      # date2j(1970, 1, 1)
    MAX_TIME_PRECISION = 6
    MAX_TIMESTAMP_PRECISION = 6
    MAX_INTERVAL_PRECISION = 6
    MAXTZLEN = 10

# src/include/miscadmin.h: DateStyle, DateOrder, IntervalStyle
cdef enum:
    USE_POSTGRES_DATES = 0
    USE_ISO_DATES = 1
    USE_SQL_DATES = 2
    USE_GERMAN_DATES = 3
    USE_XSD_DATES = 4
    DATEORDER_YMD = 0
    DATEORDER_DMY = 1
    DATEORDER_MDY = 2
    INTSTYLE_POSTGRES = 0
    INTSTYLE_POSTGRES_VERBOSE = 1
    INTSTYLE_SQL_STANDARD = 2
    INTSTYLE_ISO_8601 = 3

# src/include/utils/jsonb.h
cdef enum:
    JB_CMASK = 0x0FFFFFFF
    JB_FSCALAR = 0x10000000
    JB_FOBJECT = 0x20000000
    JB_FARRAY = 0x40000000
    JENTRY_OFFLENMASK = 0x0FFFFFFF
    JENTRY_TYPEMASK = 0x70000000
    JENTRY_ISSTRING = 0x00000000
    JENTRY_ISNUMERIC = 0x10000000
    JENTRY_ISBOOL_FALSE = 0x20000000
    JENTRY_ISBOOL_TRUE = 0x30000000
    JENTRY_ISNULL = 0x40000000
    JENTRY_ISCONTAINER = 0x50000000

# src/include/utils/inet.h
cdef enum:
    PGSQL_AF_INET = 2
    PGSQL_AF_INET6 = 3

# src/include/utils/float.h / float.c
cdef enum:
    DBL_DIG = 15
    FLT_DIG = 6
    FLOAT_MANTISSA_BITS = 23
    FLOAT_BIAS = 127
    FLOAT_MAX_EXPONENT = 0xFF
    FLOAT_FIXED_LIMIT = 6           # f2s.c: fixed notation for decimal exponents below 6
    DOUBLE_MANTISSA_BITS = 52
    DOUBLE_BIAS = 1023
    DOUBLE_MAX_EXPONENT = 0x7FF
    DOUBLE_FIXED_LIMIT = 15         # d2s.c: ... below 15

# src/include/access/rmgrlist.h: the resource managers logical decoding dispatches on
cdef enum:
    RM_XLOG_ID = 0
    RM_XACT_ID = 1
    RM_RELMAP_ID = 7
    RM_STANDBY_ID = 8
    RM_HEAP2_ID = 9
    RM_HEAP_ID = 10
    RM_LOGICALMSG_ID = 21

# src/include/access/heapam_xlog.h: heap record types (XLOG_HEAP_OPMASK of xl_info), flags, sizes
cdef enum:
    XLOG_HEAP_OPMASK = 0x70
    XLOG_HEAP_INSERT = 0x00
    XLOG_HEAP_DELETE = 0x10
    XLOG_HEAP_UPDATE = 0x20
    XLOG_HEAP_HOT_UPDATE = 0x40
    XLOG_HEAP_LOCK = 0x60
    XLOG_HEAP2_VISIBLE = 0x40
    XLOG_HEAP2_MULTI_INSERT = 0x50
    XLOG_HEAP2_LOCK_UPDATED = 0x60
    XLOG_HEAP2_NEW_CID = 0x70
    XLH_INSERT_LAST_IN_MULTI = 1 << 1
    XLH_INSERT_IS_SPECULATIVE = 1 << 2
    XLH_INSERT_CONTAINS_NEW_TUPLE = 1 << 3
    XLH_UPDATE_CONTAINS_OLD_TUPLE = 1 << 2
    XLH_UPDATE_CONTAINS_OLD_KEY = 1 << 3
    XLH_UPDATE_CONTAINS_NEW_TUPLE = 1 << 4
    XLH_DELETE_IS_SUPER = 1 << 3
    XLH_DELETE_CONTAINS_OLD_TUPLE = 1 << 1
    XLH_DELETE_CONTAINS_OLD_KEY = 1 << 2
    SizeOfHeapInsert = 3            # offnum, flags
    SizeOfHeapUpdate = 14
    SizeOfHeapDelete = 8
    SizeOfHeapMultiInsert = 4       # flags, ntuples (the offsets follow unless XLOG_HEAP_INIT_PAGE)
    SizeOfMultiInsertTuple = 7

# src/include/replication/reorderbuffer.h: ReorderBufferChangeType, the other queued ones
cdef enum:
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_INSERT = 7
    REORDER_BUFFER_CHANGE_INTERNAL_SPEC_ABORT = 9

# waldecode/logical/reorderbuffer.py _ChangeHeader, "<QBIIHBiii": a queued change as the reorder
# buffer holds it and spill files store it (lsn, action, spcOid, relNumber, origin,
# clear_toast_afterwards, the lengths of newtuple, oldtuple, extra: -1 for none), its bytes after it
cdef enum:
    SizeOfQueuedChange = 32

# src/include/access/xlogrecord.h: the record header, the block ids that are not blocks, block flags
cdef enum:
    SizeOfXLogRecord = 24
    XLR_MAX_BLOCK_ID = 32
    XLR_BLOCK_ID_DATA_SHORT = 255
    XLR_BLOCK_ID_DATA_LONG = 254
    XLR_BLOCK_ID_ORIGIN = 253
    XLR_BLOCK_ID_TOPLEVEL_XID = 252
    BKPBLOCK_HAS_IMAGE = 0x10
    BKPBLOCK_HAS_DATA = 0x20
    BKPBLOCK_SAME_REL = 0x80
    BKPIMAGE_HAS_HOLE = 0x01
    BLCKSZ = 8192
