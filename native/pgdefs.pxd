# What the native code needs of PostgreSQL's headers besides the constants of the pure-Python
# modules (those come from native/pgconsts.pxd, generated from the modules at build time):
# unaligned loads, varlena header tests, and the few constants only the native code uses.
# Declarations only: cimported, never imported.

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
    bint VARATT_IS_1B_E(unsigned char b0) nogil
    bint VARATT_IS_1B(unsigned char b0) nogil
    bint VARATT_IS_4B_C(unsigned char b0) nogil
    unsigned int VARSIZE_1B(unsigned char b0) nogil
    unsigned int VARSIZE_4B(const unsigned char *p) nogil
    bint IS_HIGHBIT_SET(unsigned char ch) nogil

# src/include/varatt.h (postgres.h before 16)
cdef enum:
    SIZEOF_VARATT_EXTERNAL = 16     # sizeof(varatt_external)
    SIZEOF_VARATT_POINTER = 8       # the in-memory pointer of INDIRECT/EXPANDED tags

# src/include/utils/array.h
cdef enum:
    SIZEOF_ARRAYTYPE = 16           # vl_len_, ndim, dataoffset, elemtype

# src/backend/utils/adt/numeric.c
cdef enum:
    NUMERIC_SHORT_WEIGHT_RANGE = 64  # a set weight sign bit means weight - 64

# src/include/datatype/timestamp.h
cdef enum:
    SECS_PER_HOUR = 3600
    SECS_PER_MINUTE = 60

# src/include/utils/float.h / float.c
cdef enum:
    FLOAT_MAX_EXPONENT = 0xFF
    FLOAT_FIXED_LIMIT = 6           # f2s.c: fixed notation for decimal exponents below 6
    DOUBLE_MAX_EXPONENT = 0x7FF
    DOUBLE_FIXED_LIMIT = 15         # d2s.c: ... below 15

# src/include/access/heapam_xlog.h: xl_heap_insert (offnum, flags), which rmgr/heap.py reads by offset
cdef enum:
    SizeOfHeapInsert = 3

# waldecode/logical/reorderbuffer.py _ChangeHeader, "<QBIIHBiii": a queued change as the reorder
# buffer holds it and spill files store it (lsn, action, spcOid, relNumber, origin,
# clear_toast_afterwards, the lengths of newtuple, oldtuple, extra: -1 for none), its bytes after it
cdef enum:
    SizeOfQueuedChange = 32

