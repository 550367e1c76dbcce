# Cython's view of native/wd_xlogrecord.h: the one DecodeXLogRecord of the extensions (_native,
# _logical, _waldump).  Declarations only: cimported, never imported.

cdef extern from "wd_xlogrecord.h":
    ctypedef enum WdDecodeError:
        WD_DECODE_OK
        WD_DECODE_INVALID_LENGTH
        WD_DECODE_INVALID_BLOCK_ID
        WD_DECODE_OUT_OF_ORDER_BLOCK_ID
        WD_DECODE_HAS_DATA_NO_DATA
        WD_DECODE_NO_HAS_DATA_BUT_DATA
        WD_DECODE_HOLE_INVALID
        WD_DECODE_NO_HOLE_BUT_HOLE
        WD_DECODE_COMPRESSED_FULL_IMAGE
        WD_DECODE_SAME_REL_NO_PREVIOUS

    ctypedef struct WdRelFileLocator:
        unsigned int spcOid
        unsigned int dbOid
        unsigned int relNumber

    ctypedef struct WdDecodedBkpBlock:
        unsigned char block_id
        unsigned char forknum
        unsigned char flags
        unsigned char has_image
        unsigned char apply_image
        unsigned char has_data
        WdRelFileLocator rlocator
        unsigned int blkno
        unsigned short bimg_len
        unsigned short hole_offset
        int hole_length
        unsigned char bimg_info
        const unsigned char *bkp_image
        const unsigned char *data
        unsigned short data_len

    ctypedef struct WdDecodedXLogRecord:
        unsigned long long lsn
        unsigned long long end_lsn
        unsigned int xl_tot_len
        unsigned int xl_xid
        unsigned long long xl_prev
        unsigned char xl_info
        unsigned char xl_rmid
        unsigned int xl_crc
        unsigned short record_origin
        unsigned int toplevel_xid
        const unsigned char *main_data
        unsigned int main_data_len
        int max_block_id
        int nblocks
        WdDecodedBkpBlock blocks[33]

    WdDecodeError wd_DecodeXLogRecord(const unsigned char *r, size_t n, int major,
                                      WdDecodedXLogRecord *out) nogil
    unsigned int wd_XLogRecFPILen(const WdDecodedXLogRecord *rec) nogil
