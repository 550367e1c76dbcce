/*
 * xlogreader.c DecodeXLogRecord, once, for every extension: a complete record's header, block
 * headers and main data split into a WdDecodedXLogRecord (xlogreader.h DecodedXLogRecord), as
 * PostgreSQL compiles its one DecodeXLogRecord into the backend and pg_waldump.  Included by
 * waldecode._native (decode_record), waldecode._logical (the record loop) and
 * waldecode._waldump (native/wd_waldump.h wd_decode), as wd_crc32c.h and wd_xlogpage.h are.
 *
 * The reference is waldecode/wal/_pyframe.py decode_record.  wd_DecodeXLogRecord runs its
 * checks in its order and returns which one failed (a WdDecodeError, one per message of the
 * reference, which xlogreader.c's report_invalid_record words); the callers then hand the record
 * to the reference, which raises the error with its message, so that bad input is reported in
 * one place, byte for byte the same under both implementations.
 *
 * The constants are PostgreSQL's (src/include/access/xlogrecord.h), as waldecode/wal/xlogrecord.py
 * writes them once: native/pgconsts.h is generated from it at build time (native/pgconsts.py).
 */
#ifndef WD_XLOGRECORD_H
#define WD_XLOGRECORD_H

#include <stdint.h>
#include <string.h>

#include "pgconsts.h"

/* xlogrecord.h BKPIMAGE_COMPRESSED (15+): an image compressed by any method; 13 and 14 had one bit */
#define WD_BKPIMAGE_COMPRESSED_MASK(major) \
    ((major) >= 15 ? (BKPIMAGE_COMPRESS_PGLZ | BKPIMAGE_COMPRESS_LZ4 | BKPIMAGE_COMPRESS_ZSTD) \
                   : BKPIMAGE_IS_COMPRESSED_V13)
/* xlogreader.h XLogRecBlockImageApply's bit: BKPIMAGE_APPLY moved from 0x04 to 0x02 in 15 */
#define WD_BKPIMAGE_APPLY_BIT(major) ((major) >= 15 ? BKPIMAGE_APPLY : BKPIMAGE_APPLY_V13)

/* The check that failed: each is one message of _pyframe.decode_record (xlogreader.c's wording) */
typedef enum {
    WD_DECODE_OK = 0,
    WD_DECODE_INVALID_LENGTH,           /* record with invalid length at %X/%X */
    WD_DECODE_INVALID_BLOCK_ID,         /* invalid block_id %u at %X/%X */
    WD_DECODE_OUT_OF_ORDER_BLOCK_ID,    /* out-of-order block_id %u at %X/%X */
    WD_DECODE_HAS_DATA_NO_DATA,         /* BKPBLOCK_HAS_DATA set, but no data included at %X/%X */
    WD_DECODE_NO_HAS_DATA_BUT_DATA,     /* BKPBLOCK_HAS_DATA not set, but data length is %u at %X/%X */
    WD_DECODE_HOLE_INVALID,             /* BKPIMAGE_HAS_HOLE set, but hole offset %u length %u block image
                                         * length %u at %X/%X */
    WD_DECODE_NO_HOLE_BUT_HOLE,         /* BKPIMAGE_HAS_HOLE not set, but hole offset %u length %u at %X/%X */
    WD_DECODE_COMPRESSED_FULL_IMAGE,    /* BKPIMAGE_COMPRESSED set, but block image length %u at %X/%X */
    WD_DECODE_SAME_REL_NO_PREVIOUS      /* BKPBLOCK_SAME_REL set but no previous rel at %X/%X */
} WdDecodeError;

/* relfilelocator.h RelFileLocator (RelFileNode before 16) */
typedef struct {
    uint32_t spcOid, dbOid, relNumber;
} WdRelFileLocator;

/* xlogreader.h DecodedBkpBlock; the pointers point into the record */
typedef struct {
    uint8_t block_id;                   /* DecodedXLogRecord's index of the block */
    uint8_t forknum;                    /* fork_flags & BKPBLOCK_FORK_MASK */
    uint8_t flags;                      /* fork_flags, every bit (as DecodedBkpBlock.flags) */
    uint8_t has_image, apply_image, has_data;
    WdRelFileLocator rlocator;
    uint32_t blkno;
    /* XLogRecordBlockImageHeader, XLogRecordBlockCompressHeader; zero without an image */
    uint16_t bimg_len, hole_offset;
    int32_t hole_length;                /* BLCKSZ - bimg_len when not compressed: below 0 for an image
                                         * longer than a page, as the reference has it */
    uint8_t bimg_info;
    const unsigned char *bkp_image;     /* bimg_len bytes, NULL without an image */
    const unsigned char *data;          /* data_len bytes */
    uint16_t data_len;
} WdDecodedBkpBlock;

/*
 * xlogreader.h DecodedXLogRecord.  Its blocks[] are indexed by block id (with in_use); here they
 * are packed in block id order, blocks[0..nblocks - 1], as every caller walks them.  ``lsn`` and
 * ``end_lsn`` are the caller's to set (waldecode's DecodedRecord.lsn and .end_lsn).
 */
typedef struct {
    uint64_t lsn, end_lsn;
    /* XLogRecord */
    uint32_t xl_tot_len, xl_xid;
    uint64_t xl_prev;
    uint8_t xl_info, xl_rmid;
    uint32_t xl_crc;
    uint16_t record_origin;             /* XLR_BLOCK_ID_ORIGIN, 0 (InvalidRepOriginId) when none */
    uint32_t toplevel_xid;              /* XLR_BLOCK_ID_TOPLEVEL_XID (14+), 0 when none */
    const unsigned char *main_data;
    uint32_t main_data_len;
    int max_block_id;                   /* -1 when none */
    int nblocks;
    WdDecodedBkpBlock blocks[XLR_MAX_BLOCK_ID + 1];
} WdDecodedXLogRecord;

static inline uint16_t wd_xlr_u16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t wd_xlr_u32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t wd_xlr_u64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/*
 * DecodeXLogRecord of the ``n`` bytes at ``r``, a record of PostgreSQL ``major`` (13 to 18): fills
 * ``out`` (all but lsn and end_lsn) and returns WD_DECODE_OK, or returns the check that failed,
 * ``out`` then half filled.  A record whose xl_tot_len is not ``n`` is of an invalid length.
 */
static inline WdDecodeError wd_DecodeXLogRecord(const unsigned char *r, size_t n, int major,
                                                WdDecodedXLogRecord *out)
{
    const uint32_t compressed_mask = WD_BKPIMAGE_COMPRESSED_MASK(major);
    const uint32_t apply_bit = WD_BKPIMAGE_APPLY_BIT(major);
    const WdRelFileLocator *rlocator = NULL;    /* the previous block's, for BKPBLOCK_SAME_REL */
    int64_t remaining, datatotal = 0;
    size_t pos = SizeOfXLogRecord;
    uint32_t main_len = 0;
    int i;

    if (n < SizeOfXLogRecord || wd_xlr_u32(r) != n)
        return WD_DECODE_INVALID_LENGTH;
    out->xl_tot_len = (uint32_t) n;
    out->xl_xid = wd_xlr_u32(r + 4);
    out->xl_prev = wd_xlr_u64(r + 8);
    out->xl_info = r[16];
    out->xl_rmid = r[17];
    out->xl_crc = wd_xlr_u32(r + 20);
    out->record_origin = 0;
    out->toplevel_xid = 0;
    out->max_block_id = -1;
    out->nblocks = 0;
    remaining = (int64_t) n - SizeOfXLogRecord;
    /* the block headers, then the main data's: until what is left is the data they announce */
    while (remaining > datatotal) {
        WdDecodedBkpBlock *blk;
        uint8_t block_id = r[pos];
        uint8_t fork_flags;
        pos++;
        remaining--;
        if (block_id == XLR_BLOCK_ID_DATA_SHORT) {
            if (remaining < 1)
                return WD_DECODE_INVALID_LENGTH;
            main_len = r[pos];
            pos++;
            remaining--;
            datatotal += main_len;
            break;                      /* by convention, the main data fragment is always last */
        }
        if (block_id == XLR_BLOCK_ID_DATA_LONG) {
            if (remaining < 4)
                return WD_DECODE_INVALID_LENGTH;
            main_len = wd_xlr_u32(r + pos);
            pos += 4;
            remaining -= 4;
            datatotal += main_len;
            break;
        }
        if (block_id == XLR_BLOCK_ID_ORIGIN) {
            if (remaining < 2)
                return WD_DECODE_INVALID_LENGTH;
            out->record_origin = wd_xlr_u16(r + pos);
            pos += 2;
            remaining -= 2;
            continue;
        }
        /* 14 added the toplevel xid; before, 252 is an invalid block id */
        if (block_id == XLR_BLOCK_ID_TOPLEVEL_XID && major >= 14) {
            if (remaining < 4)
                return WD_DECODE_INVALID_LENGTH;
            out->toplevel_xid = wd_xlr_u32(r + pos);
            pos += 4;
            remaining -= 4;
            continue;
        }
        if (block_id > XLR_MAX_BLOCK_ID)
            return WD_DECODE_INVALID_BLOCK_ID;
        if ((int) block_id <= out->max_block_id)
            return WD_DECODE_OUT_OF_ORDER_BLOCK_ID;
        out->max_block_id = block_id;
        if (remaining < 3)              /* XLogRecordBlockHeader after its id */
            return WD_DECODE_INVALID_LENGTH;
        blk = &out->blocks[out->nblocks];
        fork_flags = r[pos];
        blk->block_id = block_id;
        blk->flags = fork_flags;
        blk->forknum = fork_flags & BKPBLOCK_FORK_MASK;
        blk->has_image = (fork_flags & BKPBLOCK_HAS_IMAGE) != 0;
        blk->has_data = (fork_flags & BKPBLOCK_HAS_DATA) != 0;
        blk->data_len = wd_xlr_u16(r + pos + 1);
        pos += 3;
        remaining -= 3;
        /* cross-check that the HAS_DATA flag is set iff data_length > 0 */
        if (blk->has_data && blk->data_len == 0)
            return WD_DECODE_HAS_DATA_NO_DATA;
        if (!blk->has_data && blk->data_len != 0)
            return WD_DECODE_NO_HAS_DATA_BUT_DATA;
        datatotal += blk->data_len;
        blk->bimg_len = blk->hole_offset = blk->hole_length = 0;
        blk->bimg_info = 0;
        blk->apply_image = 0;
        if (blk->has_image) {
            int compressed;
            if (remaining < 5)          /* XLogRecordBlockImageHeader */
                return WD_DECODE_INVALID_LENGTH;
            blk->bimg_len = wd_xlr_u16(r + pos);
            blk->hole_offset = wd_xlr_u16(r + pos + 2);
            blk->bimg_info = r[pos + 4];
            pos += 5;
            remaining -= 5;
            blk->apply_image = (blk->bimg_info & apply_bit) != 0;
            compressed = (blk->bimg_info & compressed_mask) != 0;
            if (compressed) {
                if (blk->bimg_info & BKPIMAGE_HAS_HOLE) {
                    if (remaining < 2)  /* XLogRecordBlockCompressHeader */
                        return WD_DECODE_INVALID_LENGTH;
                    blk->hole_length = wd_xlr_u16(r + pos);
                    pos += 2;
                    remaining -= 2;
                }
            } else
                blk->hole_length = BLCKSZ - (int32_t) blk->bimg_len;
            datatotal += blk->bimg_len;
            /* cross-check that hole_offset > 0, hole_length > 0 and bimg_len < BLCKSZ if HAS_HOLE */
            if (blk->bimg_info & BKPIMAGE_HAS_HOLE) {
                if (blk->hole_offset == 0 || blk->hole_length == 0 || blk->bimg_len == BLCKSZ)
                    return WD_DECODE_HOLE_INVALID;
            } else if (blk->hole_offset != 0 || blk->hole_length != 0)
                return WD_DECODE_NO_HOLE_BUT_HOLE;
            /* cross-check that bimg_len < BLCKSZ if the image is compressed; without hole or
             * compression, bimg_len != BLCKSZ has failed the check above already */
            if (compressed && blk->bimg_len == BLCKSZ)
                return WD_DECODE_COMPRESSED_FULL_IMAGE;
        }
        if (!(fork_flags & BKPBLOCK_SAME_REL)) {
            if (remaining < 16)         /* RelFileLocator, BlockNumber */
                return WD_DECODE_INVALID_LENGTH;
            blk->rlocator.spcOid = wd_xlr_u32(r + pos);
            blk->rlocator.dbOid = wd_xlr_u32(r + pos + 4);
            blk->rlocator.relNumber = wd_xlr_u32(r + pos + 8);
            blk->blkno = wd_xlr_u32(r + pos + 12);
            pos += 16;
            remaining -= 16;
        } else {
            if (rlocator == NULL)
                return WD_DECODE_SAME_REL_NO_PREVIOUS;
            if (remaining < 4)          /* BlockNumber */
                return WD_DECODE_INVALID_LENGTH;
            blk->rlocator = *rlocator;
            blk->blkno = wd_xlr_u32(r + pos);
            pos += 4;
            remaining -= 4;
        }
        rlocator = &blk->rlocator;
        out->nblocks++;
    }
    if (remaining != datatotal)
        return WD_DECODE_INVALID_LENGTH;
    /* the data: each block's image and data, in block order, then the main data */
    for (i = 0; i < out->nblocks; i++) {
        WdDecodedBkpBlock *blk = &out->blocks[i];
        blk->bkp_image = NULL;
        if (blk->has_image) {
            blk->bkp_image = r + pos;
            pos += blk->bimg_len;
        }
        blk->data = r + pos;
        pos += blk->data_len;
    }
    out->main_data = r + pos;
    out->main_data_len = main_len;
    return WD_DECODE_OK;
}

/* XLogRecGetLen's fpi_len: the bytes of the record's block images */
static inline uint32_t wd_XLogRecFPILen(const WdDecodedXLogRecord *rec)
{
    uint32_t fpi_len = 0;
    int i;
    for (i = 0; i < rec->nblocks; i++)
        if (rec->blocks[i].has_image)
            fpi_len += rec->blocks[i].bimg_len;
    return fpi_len;
}

#endif
