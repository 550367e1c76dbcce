/*
 * pg_waldump's record line in C, of a record decoded by native/wd_xlogrecord.h (xlogreader.c
 * DecodeXLogRecord): the block-reference summary (xlogdesc.c XLogRecGetBlockRefInfo) and the
 * descriptions of the common records (src/backend/access/rmgrdesc/ heapdesc.c,
 * nbtdesc.c, xactdesc.c, standbydesc.c, xlogdesc.c), written into a growable buffer.
 *
 * The reference is the pure-Python port (waldecode/rmgr/, waldecode/waldump.py): every
 * function here writes the same bytes for the cases it accepts, and returns 0 for the
 * others (rare records, other versions' layouts, data too short for its layout), which
 * the caller then hands to the Python describer — so errors are raised in one place.
 */
#ifndef WD_WALDUMP_H
#define WD_WALDUMP_H

#include <stdint.h>
#include <string.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdlib.h>
#include <time.h>

#include "wd_xlogrecord.h"

/* -- the output buffer ------------------------------------------------------------------ */

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} wd_buf;

static int wd_buf_reserve(wd_buf *b, size_t extra)
{
    size_t need = b->len + extra, cap;
    char *p;
    if (need <= b->cap)
        return 0;
    cap = b->cap ? b->cap * 2 : 1 << 16;
    while (cap < need)
        cap *= 2;
    p = (char *) realloc(b->data, cap);
    if (p == NULL)
        return -1;
    b->data = p;
    b->cap = cap;
    return 0;
}

static inline int wd_put(wd_buf *b, const char *s, size_t n)
{
    if (b->len + n > b->cap && wd_buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, s, n);
    b->len += n;
    return 0;
}

#define WD_PUTS(b, lit) wd_put((b), (lit), sizeof(lit) - 1)

static int wd_printf(wd_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int wd_printf(wd_buf *b, const char *fmt, ...)
{
    va_list ap;
    int n;
    size_t room = b->cap - b->len;
    if (room < 256) {
        if (wd_buf_reserve(b, 256) < 0)
            return -1;
        room = b->cap - b->len;
    }
    va_start(ap, fmt);
    n = vsnprintf(b->data + b->len, room, fmt, ap);
    va_end(ap);
    if (n < 0)
        return -1;
    if ((size_t) n >= room) {
        if (wd_buf_reserve(b, (size_t) n + 1) < 0)
            return -1;
        va_start(ap, fmt);
        vsnprintf(b->data + b->len, (size_t) n + 1, fmt, ap);
        va_end(ap);
    }
    b->len += (size_t) n;
    return 0;
}

/*
 * Numbers as printf prints them, without printf (its format parsing is most of the time of
 * a line): %u, %<width>u, %X, %08X, %02X.
 */
static inline int wd_put_u(wd_buf *b, uint32_t v)
{
    char tmp[12];
    int i = 12;
    do {
        tmp[--i] = (char) ('0' + v % 10);
        v /= 10;
    } while (v);
    return wd_put(b, tmp + i, 12 - i);
}

static inline int wd_put_u_w(wd_buf *b, uint32_t v, int width)
{
    char tmp[24];
    int i = 24;
    do {
        tmp[--i] = (char) ('0' + v % 10);
        v /= 10;
    } while (v);
    while (24 - i < width)
        tmp[--i] = ' ';
    return wd_put(b, tmp + i, 24 - i);
}

static inline int wd_put_hex(wd_buf *b, uint32_t v, int zero_width)
{
    static const char digits[] = "0123456789ABCDEF";
    char tmp[8];
    int i = 8;
    do {
        tmp[--i] = digits[v & 0xF];
        v >>= 4;
    } while (v);
    while (8 - i < zero_width)
        tmp[--i] = '0';
    return wd_put(b, tmp + i, 8 - i);
}

/* %X/%08X of an LSN */
static inline int wd_put_lsn(wd_buf *b, uint64_t lsn)
{
    wd_put_hex(b, (uint32_t) (lsn >> 32), 0);
    wd_put(b, "/", 1);
    return wd_put_hex(b, (uint32_t) lsn, 8);
}

/* 0x%02X */
static inline int wd_put_flags(wd_buf *b, uint32_t v)
{
    wd_put(b, "0x", 2);
    return wd_put_hex(b, v, 2);
}

/* -- the decoded record (native/wd_xlogrecord.h) -------------------------------------------- */

static inline uint16_t wd_rd16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t wd_rd32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t wd_rd64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* XLogRecGetBlockData: the block's data, or NULL when it has none */
static const unsigned char *wd_block_data(const WdDecodedXLogRecord *rec, uint32_t block_id, uint32_t *len)
{
    int i;
    for (i = 0; i < rec->nblocks; i++)
        if (rec->blocks[i].block_id == block_id) {
            if (rec->blocks[i].data_len == 0)
                return NULL;
            *len = rec->blocks[i].data_len;
            return rec->blocks[i].data;
        }
    return NULL;
}

/* -- block references: xlogdesc.c XLogRecGetBlockRefInfo (waldump.block_ref_info) --------- */

/* src/common/relpath.c forkNames; rmgrdesc_utils.fork_name for the others */
static int wd_put_fork(wd_buf *b, uint32_t forknum)
{
    static const char *const names[] = {"main", "fsm", "vm", "init"};
    if (forknum < 4)
        return wd_put(b, names[forknum], strlen(names[forknum]));
    return wd_printf(b, "(invalid fork %d)", (int) forknum);
}

static int wd_block_refs(wd_buf *b, const WdDecodedXLogRecord *rec, int major, int detailed)
{
    int i;
    for (i = 0; i < rec->nblocks; i++) {
        const WdDecodedBkpBlock *bk = &rec->blocks[i];
        if (detailed) {
            wd_printf(b, "\n\tblkref #%d: rel %u/%u/%u fork ", (int) bk->block_id, bk->rlocator.spcOid, bk->rlocator.dbOid, bk->rlocator.relNumber);
            wd_put_fork(b, bk->forknum);
            wd_printf(b, " blk %u", bk->blkno);
            if (bk->has_image) {
                const char *verify = bk->apply_image ? "" : " for WAL verification";
                int compressed = (bk->bimg_info & WD_BKPIMAGE_COMPRESSED_MASK(major)) != 0;
                if (compressed) {
                    /* Python's "%u" of a negative number prints it signed */
                    long long saved = (long long) BLCKSZ - bk->hole_length - bk->bimg_len;
                    if (major >= 15) {
                        const char *method = (bk->bimg_info & BKPIMAGE_COMPRESS_PGLZ) ? "pglz"
                            : (bk->bimg_info & BKPIMAGE_COMPRESS_LZ4) ? "lz4"
                            : (bk->bimg_info & BKPIMAGE_COMPRESS_ZSTD) ? "zstd" : "unknown";
                        wd_printf(b, " (FPW%s); hole: offset: %u, length: %d, compression saved: %lld, method: %s",
                                  verify, bk->hole_offset, bk->hole_length, saved, method);
                    } else
                        wd_printf(b, " (FPW%s); hole: offset: %u, length: %d, compression saved: %lld",
                                  verify, bk->hole_offset, bk->hole_length, saved);
                } else
                    wd_printf(b, " (FPW%s); hole: offset: %u, length: %d", verify, bk->hole_offset, bk->hole_length);
            }
        } else {
            WD_PUTS(b, ", blkref #");
            wd_put_u(b, bk->block_id);
            WD_PUTS(b, ": rel ");
            wd_put_u(b, bk->rlocator.spcOid);
            WD_PUTS(b, "/");
            wd_put_u(b, bk->rlocator.dbOid);
            WD_PUTS(b, "/");
            wd_put_u(b, bk->rlocator.relNumber);
            if (bk->forknum != 0) {
                WD_PUTS(b, " fork ");
                wd_put_fork(b, bk->forknum);
            }
            WD_PUTS(b, " blk ");
            wd_put_u(b, bk->blkno);
            if (bk->has_image) {
                if (bk->apply_image)
                    WD_PUTS(b, " FPW");
                else
                    WD_PUTS(b, " FPW for WAL verification");
            }
        }
    }
    return 0;
}

/*
 * XLogDumpDisplayRecord's head: "rmgr: <name> len (rec/tot): %6u/%6u, tx: %10u, lsn: %X/%08X,
 * prev %X/%08X, desc: <TYPE> " (waldump._record_head); ``name`` is "rmgr: %-11s len (rec/tot): "
 * and ``kind`` "desc: TYPE ", both made once by the Python side.
 */
static int wd_head(wd_buf *b, const WdDecodedXLogRecord *rec, const char *name, size_t name_len, const char *kind,
                   size_t kind_len)
{
    if (wd_buf_reserve(b, name_len + kind_len + 96) < 0)
        return -1;
    wd_put(b, name, name_len);
    wd_put_u_w(b, rec->xl_tot_len - wd_XLogRecFPILen(rec), 6);
    WD_PUTS(b, "/");
    wd_put_u_w(b, rec->xl_tot_len, 6);
    WD_PUTS(b, ", tx: ");
    wd_put_u_w(b, rec->xl_xid, 10);
    WD_PUTS(b, ", lsn: ");
    wd_put_lsn(b, rec->lsn);
    WD_PUTS(b, ", prev ");
    wd_put_lsn(b, rec->xl_prev);
    WD_PUTS(b, ", ");
    return wd_put(b, kind, kind_len);
}

/* -- descriptions ------------------------------------------------------------------------ */

/*
 * standbydesc.c standby_desc_invalidations over the whole messages of ``len`` bytes at ``msgs``
 * (waldecode/rmgr/standby.py: a trailing partial message is not shown)
 */
static void wd_invalidations(wd_buf *b, const unsigned char *msgs, uint64_t len, uint32_t dbId, uint32_t tsId,
                             int relcache_init, int major)
{
    uint64_t nmsgs = len / 16, i;
    if (nmsgs == 0)
        return;
    if (relcache_init)
        wd_printf(b, "; relcache init file inval dbid %u tsid %u", dbId, tsId);
    WD_PUTS(b, "; inval msgs:");
    for (i = 0; i < nmsgs; i++) {
        const unsigned char *msg = msgs + 16 * i;
        int id = (int8_t) msg[0];
        uint32_t db = wd_rd32(msg + 4), obj = wd_rd32(msg + 8);
        if (id >= 0)
            wd_printf(b, " catcache %d", id);
        else if (id == -1)      /* SHAREDINVALCATALOG_ID */
            wd_printf(b, " catalog %u", obj);
        else if (id == -2)      /* SHAREDINVALRELCACHE_ID */
            wd_printf(b, " relcache %u", obj);
        else if (id == -3)      /* SHAREDINVALSMGR_ID */
            WD_PUTS(b, " smgr");
        else if (id == -4)      /* SHAREDINVALRELMAP_ID */
            wd_printf(b, " relmap db %u", db);
        else if (id == -5)      /* SHAREDINVALSNAPSHOT_ID */
            wd_printf(b, " snapshot %u", obj);
        else if (id == -6 && major >= 18)   /* SHAREDINVALRELSYNC_ID */
            wd_printf(b, " relsync %u", obj);
        else
            wd_printf(b, " unrecognized id %d", id);
    }
}

/* the bytes of ``want`` (may be negative: none) from ``pos`` of data of ``n`` bytes, as a slice takes them */
static inline uint64_t wd_slice_len(uint32_t n, uint64_t pos, int64_t want)
{
    if (want <= 0 || pos >= n)
        return 0;
    return (uint64_t) want < n - pos ? (uint64_t) want : n - pos;
}

/*
 * relpath.c GetRelationPath for the global and default tablespaces (rmgrdesc_utils.relpathperm);
 * 0 for the others, whose path names the catalog version
 */
static int wd_relpathperm(wd_buf *b, uint32_t spc, uint32_t db, uint32_t rel, int32_t forknum)
{
    if (spc == 1664)            /* GLOBALTABLESPACE_OID */
        wd_printf(b, "global/%u", rel);
    else if (spc == 1663)       /* DEFAULTTABLESPACE_OID */
        wd_printf(b, "base/%u/%u", db, rel);
    else
        return 0;
    if (forknum != 0) {
        WD_PUTS(b, "_");
        if (forknum >= 0 && forknum < 4)
            wd_put_fork(b, (uint32_t) forknum);
        else
            wd_printf(b, "(invalid fork %d)", forknum);
    }
    return 1;
}

/* smgrdesc.c smgr_desc (waldecode/rmgr/smgr.py) */
static int wd_smgr_desc(wd_buf *b, const WdDecodedXLogRecord *rec)
{
    const unsigned char *m = rec->main_data;
    uint32_t n = rec->main_data_len, info = rec->xl_info & 0xF0;
    if (info == 0x10) {         /* XLOG_SMGR_CREATE */
        if (n < 16)
            return 0;
        return wd_relpathperm(b, wd_rd32(m), wd_rd32(m + 4), wd_rd32(m + 8), (int32_t) wd_rd32(m + 12));
    }
    if (info == 0x20) {         /* XLOG_SMGR_TRUNCATE */
        if (n < 20 || !wd_relpathperm(b, wd_rd32(m + 4), wd_rd32(m + 8), wd_rd32(m + 12), 0))
            return 0;
        wd_printf(b, " to %u blocks flags %d", wd_rd32(m), (int32_t) wd_rd32(m + 16));
        return 1;
    }
    return 1;
}

/* heapdesc.c 13-15 out_infobits: each name followed by a space */
static void wd_out_infobits(wd_buf *b, uint32_t infobits)
{
    if (infobits & 0x01) WD_PUTS(b, "IS_MULTI ");
    if (infobits & 0x02) WD_PUTS(b, "LOCK_ONLY ");
    if (infobits & 0x04) WD_PUTS(b, "EXCL_LOCK ");
    if (infobits & 0x08) WD_PUTS(b, "KEYSHR_LOCK ");
    if (infobits & 0x10) WD_PUTS(b, "KEYS_UPDATED ");
}

/* heapdesc.c 16+ infobits_desc: "key: [A, B]" */
static void wd_infobits_desc(wd_buf *b, uint32_t infobits, const char *keyname)
{
    static const char *const names[] = {"IS_MULTI", "LOCK_ONLY", "EXCL_LOCK", "KEYSHR_LOCK", "KEYS_UPDATED"};
    int i, first = 1;
    wd_printf(b, "%s: [", keyname);
    for (i = 0; i < 5; i++)
        if (infobits & (1u << i)) {
            if (!first)
                WD_PUTS(b, ", ");
            wd_put(b, names[i], strlen(names[i]));
            first = 0;
        }
    WD_PUTS(b, "]");
}

/*
 * xl_heap_delete, xl_heap_lock and xl_heap_lock_updated share their layout {xmax, offnum,
 * infobits_set, flags}: 16+ print them alike, 13-15 with ``old_fmt`` ("off %u flags 0x%02X ",
 * "off %u: xid %u: flags 0x%02X ", ...; the xmax argument is skipped when the format has one %u)
 */
static void wd_xmax_off_desc(wd_buf *b, const unsigned char *m, int new, const char *old_fmt, int old_has_xmax)
{
    if (new) {
        wd_printf(b, "xmax: %u, off: %u, ", wd_rd32(m), wd_rd16(m + 4));
        wd_infobits_desc(b, m[6], "infobits");
        wd_printf(b, ", flags: 0x%02X", m[7]);
        return;
    }
    if (old_has_xmax)
        wd_printf(b, old_fmt, wd_rd16(m + 4), wd_rd32(m), m[7]);
    else
        wd_printf(b, old_fmt, wd_rd16(m + 4), m[7]);
    wd_out_infobits(b, m[6]);
}

/* rmgrdesc_utils.c array_desc of offset_elem_desc: " [1, 2]" or " []" */
static void wd_offset_array(wd_buf *b, const unsigned char *p, uint32_t count)
{
    uint32_t i;
    WD_PUTS(b, " [");
    for (i = 0; i < count; i++) {
        if (i)
            WD_PUTS(b, ", ");
        wd_put_u(b, wd_rd16(p + 2 * i));
    }
    WD_PUTS(b, "]");
}

/* heapdesc.c heap_desc (waldecode/rmgr/heap.py heap_desc) */
static int wd_heap_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major)
{
    const unsigned char *m = rec->main_data;
    uint32_t n = rec->main_data_len, info = rec->xl_info & 0x70;
    int new = major >= 16;
    switch (info) {
    case 0x00:                  /* XLOG_HEAP_INSERT */
        if (n < 3)
            return 0;
        if (new)
            WD_PUTS(b, "off: ");
        else
            WD_PUTS(b, "off ");
        wd_put_u(b, wd_rd16(m));
        if (new)
            WD_PUTS(b, ", flags: ");
        else
            WD_PUTS(b, " flags ");
        wd_put_flags(b, m[2]);
        return 1;
    case 0x10:                  /* XLOG_HEAP_DELETE */
        if (n < 8)
            return 0;
        wd_xmax_off_desc(b, m, new, "off %u flags 0x%02X ", 0);
        return 1;
    case 0x20:                  /* XLOG_HEAP_UPDATE */
    case 0x40:                  /* XLOG_HEAP_HOT_UPDATE */
        if (n < 14)
            return 0;
        if (new) {
            wd_printf(b, "old_xmax: %u, old_off: %u, ", wd_rd32(m), wd_rd16(m + 4));
            wd_infobits_desc(b, m[6], "old_infobits");
            wd_printf(b, ", flags: 0x%02X, new_xmax: %u, new_off: %u", m[7], wd_rd32(m + 8), wd_rd16(m + 12));
        } else {
            WD_PUTS(b, "off ");
            wd_put_u(b, wd_rd16(m + 4));
            WD_PUTS(b, " xmax ");
            wd_put_u(b, wd_rd32(m));
            WD_PUTS(b, " flags ");
            wd_put_flags(b, m[7]);
            WD_PUTS(b, " ");
            wd_out_infobits(b, m[6]);
            WD_PUTS(b, "; new off ");
            wd_put_u(b, wd_rd16(m + 12));
            WD_PUTS(b, " xmax ");
            wd_put_u(b, wd_rd32(m + 8));
        }
        return 1;
    case 0x50:                  /* XLOG_HEAP_CONFIRM */
        if (n < 2)
            return 0;
        wd_printf(b, new ? "off: %u" : "off %u", wd_rd16(m));
        return 1;
    case 0x60:                  /* XLOG_HEAP_LOCK */
        if (n < 8)
            return 0;
        wd_xmax_off_desc(b, m, new, "off %u: xid %u: flags 0x%02X ", 1);
        return 1;
    case 0x70:                  /* XLOG_HEAP_INPLACE; 18 adds invalidations */
        if (major >= 18) {
            if (n < 20)
                return 0;
            WD_PUTS(b, "off: ");
            wd_put_u(b, wd_rd16(m));
            wd_invalidations(b, m + 20, wd_slice_len(n, 20, 16 * (int64_t) (int32_t) wd_rd32(m + 16)), wd_rd32(m + 4),
                             wd_rd32(m + 8), m[12] != 0, major);
            return 1;
        }
        if (n < 2)
            return 0;
        wd_printf(b, new ? "off: %u" : "off %u", wd_rd16(m));
        return 1;
    }
    return 0;                   /* TRUNCATE */
}

/* a u16 at ``pos`` of data of ``len`` bytes, or -1 past its end (the reference's struct.error) */
static inline int32_t wd_u16_at(const unsigned char *d, uint32_t len, uint64_t pos)
{
    return pos + 2 <= len ? (int32_t) wd_rd16(d + pos) : -1;
}

/*
 * heapdesc.c plan_elem_desc over ``nplans`` freeze plans at ``plans`` (16: xl_heap_freeze_plan,
 * 17+: xlhp_freeze_plan, 12 bytes), their offsets from ``offsets`` of ``data``: 0 if the data is short
 */
static int wd_freeze_plans(wd_buf *b, const unsigned char *data, uint32_t dlen, uint64_t plans, uint32_t nplans,
                           uint64_t offsets)
{
    uint32_t i, k;
    if (plans + 12 * (uint64_t) nplans > dlen)
        return 0;
    WD_PUTS(b, " [");
    for (i = 0; i < nplans; i++) {
        const unsigned char *pl = data + plans + 12 * i;
        uint32_t ntuples = wd_rd16(pl + 10);
        if (offsets + 2 * (uint64_t) ntuples > dlen)
            return 0;
        if (i)
            WD_PUTS(b, ", ");
        wd_printf(b, "{ xmax: %u, infomask: %u, infomask2: %u, ntuples: %u, offsets:", wd_rd32(pl), wd_rd16(pl + 6),
                  wd_rd16(pl + 4), ntuples);
        WD_PUTS(b, " [");
        for (k = 0; k < ntuples; k++) {
            if (k)
                WD_PUTS(b, ", ");
            wd_put_u(b, wd_rd16(data + offsets + 2 * k));
        }
        WD_PUTS(b, "] }");
        offsets += 2 * (uint64_t) ntuples;
    }
    WD_PUTS(b, "]");
    return 1;
}

/* redirect_elem_desc over ``n`` pairs: " [1->2, 3->4]" */
static void wd_redirect_array(wd_buf *b, const unsigned char *p, uint32_t n)
{
    uint32_t i;
    WD_PUTS(b, " [");
    for (i = 0; i < n; i++) {
        if (i)
            WD_PUTS(b, ", ");
        wd_put_u(b, wd_rd16(p + 4 * i));
        WD_PUTS(b, "->");
        wd_put_u(b, wd_rd16(p + 4 * i + 2));
    }
    WD_PUTS(b, "]");
}

/*
 * heapdesc.c heap_xlog_deserialize_prune_and_freeze, one part: a u16 count at *pos, ``header``
 * bytes from *pos to the first of its ``elem``-byte elements; *pos moves past them (0: data short)
 */
static int wd_prune_items(const unsigned char *data, uint32_t dlen, uint64_t *pos, uint32_t header, uint32_t elem,
                          int32_t *count, uint64_t *start)
{
    if ((*count = wd_u16_at(data, dlen, *pos)) < 0)
        return 0;
    *start = *pos + header;
    *pos = *start + elem * (uint64_t) *count;
    return 1;
}

/* heapdesc.c 17+ heap2_desc of PRUNE_ON_ACCESS, PRUNE_VACUUM_SCAN, PRUNE_VACUUM_CLEANUP
 * (waldecode/rmgr/heap.py _heap2_prune_desc_17, heap_xlog_deserialize_prune_and_freeze) */
static int wd_heap2_prune_17(wd_buf *b, const WdDecodedXLogRecord *rec)
{
    const unsigned char *m = rec->main_data, *data;
    uint32_t n = rec->main_data_len, flags, dlen = 0;
    if (n < 2)
        return 0;
    flags = m[1];
    if (flags & (1u << 3)) {    /* XLHP_HAS_CONFLICT_HORIZON */
        if (n < 6)
            return 0;
        WD_PUTS(b, "snapshotConflictHorizon: ");
        wd_put_u(b, wd_rd32(m + 2));
    }
    if (flags & (1u << 1))      /* XLHP_IS_CATALOG_REL */
        WD_PUTS(b, ", isCatalogRel: T");
    else
        WD_PUTS(b, ", isCatalogRel: F");
    data = wd_block_data(rec, 0, &dlen);
    if (data != NULL) {
        uint64_t pos = 0, plans = 0, redirected = 0, nowdead = 0, nowunused = 0;
        int32_t nplans = 0, nredirected = 0, ndead = 0, nunused = 0;
        /* xlhp_freeze_plans {nplans, pad, plans[]}, then xlhp_prune_items {ntargets, data[]} thrice */
        if ((flags & (1u << 4) && !wd_prune_items(data, dlen, &pos, 4, 12, &nplans, &plans))
                || (flags & (1u << 5) && !wd_prune_items(data, dlen, &pos, 2, 4, &nredirected, &redirected))
                || (flags & (1u << 6) && !wd_prune_items(data, dlen, &pos, 2, 2, &ndead, &nowdead))
                || (flags & (1u << 7) && !wd_prune_items(data, dlen, &pos, 2, 2, &nunused, &nowunused)))
            return 0;
        if (redirected + 4 * (uint64_t) nredirected > dlen || nowdead + 2 * (uint64_t) ndead > dlen
                || nowunused + 2 * (uint64_t) nunused > dlen)
            return 0;
        wd_printf(b, ", nplans: %u, nredirected: %u, ndead: %u, nunused: %u", (unsigned) nplans,
                  (unsigned) nredirected, (unsigned) ndead, (unsigned) nunused);
        if (nplans > 0) {
            WD_PUTS(b, ", plans:");
            if (!wd_freeze_plans(b, data, dlen, plans, (uint32_t) nplans, pos))
                return 0;
        }
        if (nredirected > 0) {
            WD_PUTS(b, ", redirected:");
            wd_redirect_array(b, data + redirected, (uint32_t) nredirected);
        }
        if (ndead > 0) {
            WD_PUTS(b, ", dead:");
            wd_offset_array(b, data + nowdead, (uint32_t) ndead);
        }
        if (nunused > 0) {
            WD_PUTS(b, ", unused:");
            wd_offset_array(b, data + nowunused, (uint32_t) nunused);
        }
    }
    return 1;
}

/* heapdesc.c heap2_desc, 14+ (waldecode/rmgr/heap.py heap2_desc) */
static int wd_heap2_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major)
{
    const unsigned char *m = rec->main_data, *data;
    uint32_t n = rec->main_data_len, info = rec->xl_info & 0x70, dlen = 0;
    int new = major >= 16;
    if (major <= 13)
        return 0;
    if (major >= 17 && (info == 0x10 || info == 0x20 || info == 0x30))
        return wd_heap2_prune_17(b, rec);
    switch (info) {
    case 0x10:                  /* XLOG_HEAP2_PRUNE */
        if (n < 8)
            return 0;
        if (!new) {
            wd_printf(b, "latestRemovedXid %u nredirected %u ndead %u", wd_rd32(m), wd_rd16(m + 4), wd_rd16(m + 6));
            return 1;
        } else {
            uint32_t nredirected = wd_rd16(m + 4), ndead = wd_rd16(m + 6);
            wd_printf(b, "snapshotConflictHorizon: %u, nredirected: %u, ndead: %u", wd_rd32(m), nredirected, ndead);
            data = wd_block_data(rec, 0, &dlen);
            if (data != NULL) {
                uint32_t nowdead = 4 * nredirected, nowunused = nowdead + 2 * ndead, nunused;
                if (dlen < nowunused)
                    return 0;
                nunused = (dlen - nowunused) / 2;
                wd_printf(b, ", nunused: %d, redirected:", (int) nunused);
                wd_redirect_array(b, data, nredirected);
                WD_PUTS(b, ", dead:");
                wd_offset_array(b, data + nowdead, ndead);
                WD_PUTS(b, ", unused:");
                wd_offset_array(b, data + nowunused, nunused);
            }
            return 1;
        }
    case 0x20:                  /* XLOG_HEAP2_VACUUM */
        if (n < 2)
            return 0;
        if (!new) {
            wd_printf(b, "nunused %u", wd_rd16(m));
            return 1;
        }
        data = wd_block_data(rec, 0, &dlen);
        if (data != NULL && dlen < 2u * wd_rd16(m))
            return 0;
        wd_printf(b, "nunused: %u", wd_rd16(m));
        if (data != NULL) {
            WD_PUTS(b, ", unused:");
            wd_offset_array(b, data, wd_rd16(m));
        }
        return 1;
    case 0x30:                  /* XLOG_HEAP2_FREEZE_PAGE */
        if (n < 6)
            return 0;
        if (!new) {
            wd_printf(b, "cutoff xid %u ntuples %u", wd_rd32(m), wd_rd16(m + 4));
            return 1;
        }
        wd_printf(b, "snapshotConflictHorizon: %u, nplans: %u", wd_rd32(m), wd_rd16(m + 4));
        data = wd_block_data(rec, 0, &dlen);
        if (data != NULL) {
            WD_PUTS(b, ", plans:");
            return wd_freeze_plans(b, data, dlen, 0, wd_rd16(m + 4), 12 * (uint64_t) wd_rd16(m + 4));
        }
        return 1;
    case 0x40:                  /* XLOG_HEAP2_VISIBLE */
        if (n < 5)
            return 0;
        wd_printf(b, new ? "snapshotConflictHorizon: %u, flags: 0x%02X" : "cutoff xid %u flags 0x%02X",
                  wd_rd32(m), m[4]);
        return 1;
    case 0x50:                  /* XLOG_HEAP2_MULTI_INSERT */
        if (n < 4)
            return 0;
        if (!new) {
            wd_printf(b, "%d tuples flags 0x%02X", (int) wd_rd16(m + 2), m[0]);
            return 1;
        } else {
            uint32_t ntuples = wd_rd16(m + 2);
            int offsets = wd_block_data(rec, 0, &dlen) != NULL && !(rec->xl_info & 0x80);
            if (offsets && n < 4 + 2 * ntuples)
                return 0;
            wd_printf(b, "ntuples: %d, flags: 0x%02X", (int) ntuples, m[0]);
            if (offsets) {
                WD_PUTS(b, ", offsets:");
                wd_offset_array(b, m + 4, ntuples);
            }
            return 1;
        }
    case 0x60:                  /* XLOG_HEAP2_LOCK_UPDATED */
        if (n < 8)
            return 0;
        wd_xmax_off_desc(b, m, new, "off %u: xmax %u: flags 0x%02X ", 1);
        return 1;
    case 0x70:                  /* XLOG_HEAP2_NEW_CID */
        if (n < 34)
            return 0;
        wd_printf(b, new ? "rel: %u/%u/%u, tid: %u/%u, cmin: %u, cmax: %u, combo: %u"
                  : "rel %u/%u/%u; tid %u/%u; cmin: %u, cmax: %u, combo: %u",
                  wd_rd32(m + 16), wd_rd32(m + 20), wd_rd32(m + 24),
                  ((uint32_t) wd_rd16(m + 28) << 16) | wd_rd16(m + 30), wd_rd16(m + 32),
                  wd_rd32(m + 4), wd_rd32(m + 8), wd_rd32(m + 12));
        return 1;
    case 0x00:                  /* XLOG_HEAP2_REWRITE */
        return 1;
    }
    return 0;
}

/* nbtdesc.c 16+ delvacuum_desc (waldecode/rmgr/btree.py): 0 if the block data is short */
static int wd_delvacuum_desc(wd_buf *b, const unsigned char *data, uint32_t dlen, uint32_t ndeleted,
                             uint32_t nupdated)
{
    uint64_t updated = 2 * (uint64_t) ndeleted, updates = updated + 2 * (uint64_t) nupdated;
    uint32_t i, k;
    if (updates > dlen)
        return 0;
    WD_PUTS(b, ", deleted:");
    wd_offset_array(b, data, ndeleted);
    WD_PUTS(b, ", updated: [");
    for (i = 0; i < nupdated; i++) {
        uint32_t ntids;
        if (updates + 2 > dlen)
            return 0;
        ntids = wd_rd16(data + updates);
        if (updates + 2 + 2 * (uint64_t) ntids > dlen)
            return 0;
        if (i)
            WD_PUTS(b, ", ");
        wd_printf(b, "{ off: %u, nptids: %u, ptids: [", wd_rd16(data + updated + 2 * i), ntids);
        for (k = 0; k < ntids; k++) {
            if (k)
                WD_PUTS(b, ", ");
            wd_put_u(b, wd_rd16(data + updates + 2 + 2 * k));
        }
        WD_PUTS(b, "] }");
        updates += 2 + 2 * (uint64_t) ntids;
    }
    WD_PUTS(b, "]");
    return 1;
}

/* nbtdesc.c btree_desc, the common records (waldecode/rmgr/btree.py desc) */
static int wd_btree_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major)
{
    const unsigned char *m = rec->main_data, *data;
    uint32_t n = rec->main_data_len, info = rec->xl_info & 0xF0, dlen = 0;
    int new = major >= 16;
    switch (info) {
    case 0x00:                  /* XLOG_BTREE_INSERT_LEAF */
    case 0x10:                  /* XLOG_BTREE_INSERT_UPPER */
    case 0x20:                  /* XLOG_BTREE_INSERT_META */
    case 0x50:                  /* XLOG_BTREE_INSERT_POST */
        if (n < 2)
            return 0;
        if (new)
            WD_PUTS(b, "off: ");
        else
            WD_PUTS(b, "off ");
        wd_put_u(b, wd_rd16(m));
        return 1;
    case 0x30:                  /* XLOG_BTREE_SPLIT_L */
    case 0x40:                  /* XLOG_BTREE_SPLIT_R */
        if (n < 10)
            return 0;
        wd_printf(b, new ? "level: %u, firstrightoff: %d, newitemoff: %d, postingoff: %d"
                  : "level %u, firstrightoff %d, newitemoff %d, postingoff %d",
                  wd_rd32(m), (int) wd_rd16(m + 4), (int) wd_rd16(m + 6), (int) wd_rd16(m + 8));
        return 1;
    case 0x60:                  /* XLOG_BTREE_DEDUP */
        if (n < 2)
            return 0;
        wd_printf(b, new ? "nintervals: %u" : "nintervals %u", wd_rd16(m));
        return 1;
    case 0xA0:                  /* XLOG_BTREE_NEWROOT */
        if (n < 8)
            return 0;
        wd_printf(b, new ? "level: %u" : "lev %u", wd_rd32(m + 4));
        return 1;
    case 0xC0:                  /* XLOG_BTREE_VACUUM */
        if (n < 4)
            return 0;
        if (!new) {
            wd_printf(b, "ndeleted %u; nupdated %u", wd_rd16(m), wd_rd16(m + 2));
            return 1;
        }
        wd_printf(b, "ndeleted: %u, nupdated: %u", wd_rd16(m), wd_rd16(m + 2));
        data = wd_block_data(rec, 0, &dlen);
        return data == NULL || wd_delvacuum_desc(b, data, dlen, wd_rd16(m), wd_rd16(m + 2));
    case 0x70:                  /* XLOG_BTREE_DELETE */
        if (major <= 13) {
            if (n < 8)
                return 0;
            wd_printf(b, "latestRemovedXid %u; ndeleted %u", wd_rd32(m), wd_rd32(m + 4));
            return 1;
        }
        if (!new) {
            if (n < 8)
                return 0;
            wd_printf(b, "latestRemovedXid %u; ndeleted %u; nupdated %u", wd_rd32(m), wd_rd16(m + 4), wd_rd16(m + 6));
            return 1;
        }
        if (n < 9)
            return 0;
        wd_printf(b, "snapshotConflictHorizon: %u, ndeleted: %u, nupdated: %u", wd_rd32(m), wd_rd16(m + 4),
                  wd_rd16(m + 6));
        if (major >= 17)
            wd_printf(b, ", isCatalogRel: %s", m[8] ? "T" : "F");
        data = wd_block_data(rec, 0, &dlen);
        return data == NULL || wd_delvacuum_desc(b, data, dlen, wd_rd16(m + 4), wd_rd16(m + 6));
    }
    return 0;
}

/*
 * src/bin/pg_waldump/compat.c timestamptz_to_str (rmgrdesc_utils.timestamptz_to_str):
 * localtime and %Z as the C code does; the text of the last second is kept, since
 * commits come many to a second.
 */
static int64_t wd_ts_sec = INT64_MIN;
static char wd_ts_date[64], wd_ts_zone[64];
static size_t wd_ts_date_len, wd_ts_zone_len;

/* 0 when localtime cannot place the instant (the Python describer then raises as its time.localtime does) */
static int wd_timestamptz(wd_buf *b, int64_t dt)
{
    /* C division truncates toward zero, as in compat.c */
    int64_t sec = dt / 1000000 + 946684800;
    int64_t usec = dt % 1000000;
    if (sec != wd_ts_sec) {
        time_t t = (time_t) sec;
        struct tm ltime;
        /* Python's time.localtime refuses years it cannot represent; keep those for it */
        if (sec < -62135596800LL || sec > 253402300799LL || localtime_r(&t, &ltime) == NULL)
            return 0;
        wd_ts_date_len = strftime(wd_ts_date, sizeof(wd_ts_date), "%Y-%m-%d %H:%M:%S", &ltime);
        wd_ts_zone_len = strftime(wd_ts_zone, sizeof(wd_ts_zone), "%Z", &ltime);
        wd_ts_sec = sec;
    }
    if (usec < 0) {
        wd_printf(b, "%s.%06d %s", wd_ts_date, (int) usec, wd_ts_zone);
        return 1;
    }
    wd_put(b, wd_ts_date, wd_ts_date_len);
    {
        char digits[8];
        int i;
        digits[0] = '.';
        for (i = 6; i >= 1; i--) {
            digits[i] = (char) ('0' + usec % 10);
            usec /= 10;
        }
        digits[7] = ' ';
        wd_put(b, digits, 8);
    }
    wd_put(b, wd_ts_zone, wd_ts_zone_len);
    return 1;
}

/* xactdesc.c xact_desc for COMMIT and ABORT records without relations, stats, invalidations,
 * two-phase or origin parts (waldecode/rmgr/xact.py xact_desc_commit, xact_desc_abort) */
static int wd_xact_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major)
{
    const unsigned char *m = rec->main_data;
    uint32_t n = rec->main_data_len, op = rec->xl_info & 0x70, xinfo = 0, pos = 8;
    int32_t nsub = 0, nmsgs = 0;
    uint32_t dbId = 0, tsId = 0;
    const unsigned char *subs = NULL;
    uint64_t msgs_pos = 0;
    int i;
    if (op == 0x60 && major >= 14) {    /* XLOG_XACT_INVALIDATIONS */
        if (n < 4)
            return 0;
        wd_invalidations(b, m + 4, wd_slice_len(n, 4, 16 * (int64_t) (int32_t) wd_rd32(m)), 0, 0, 0, major);
        return 1;
    }
    if (op != 0x00 && op != 0x20)
        return 0;
    if (n < 8)
        return 0;
    if (rec->xl_info & 0x80) {     /* XLOG_XACT_HAS_INFO */
        if (n < 12)
            return 0;
        xinfo = wd_rd32(m + 8);
        pos = 12;
    }
    /* DBINFO and SUBXACTS only, and the completion flags that print "; apply_feedback", "; sync" */
    /* (AE_LOCKS carries no data; abort records have no invalidations) */
    if (xinfo & ~(uint32_t) (0x01 | 0x02 | 0x08 | 0x40 | (1u << 29) | (1u << 30) | (1u << 31)))
        return 0;
    if (xinfo & 0x01) {
        if (n < pos + 8)
            return 0;
        dbId = wd_rd32(m + pos);
        tsId = wd_rd32(m + pos + 4);
        pos += 8;
    }
    if (xinfo & 0x02) {
        if (n < pos + 4)
            return 0;
        nsub = (int32_t) wd_rd32(m + pos);
        if (nsub < 0 || (uint64_t) n < pos + 4 + 4 * (uint64_t) nsub)
            return 0;
        subs = m + pos + 4;
        pos += 4 + 4 * (uint32_t) nsub;
    }
    if (xinfo & 0x08 && op == 0x00) {   /* XACT_XINFO_HAS_INVALS */
        if (n < pos + 4)
            return 0;
        nmsgs = (int32_t) wd_rd32(m + pos);
        if (nmsgs < 0)
            return 0;
        msgs_pos = pos + 4;
    }
    if (!wd_timestamptz(b, (int64_t) wd_rd64(m)))
        return 0;
    if (nsub > 0) {
        WD_PUTS(b, "; subxacts:");
        for (i = 0; i < nsub; i++) {
            WD_PUTS(b, " ");
            wd_put_u(b, wd_rd32(subs + 4 * i));
        }
    }
    if (op == 0x00) {
        wd_invalidations(b, m + msgs_pos, wd_slice_len(n, msgs_pos, 16 * (int64_t) nmsgs), dbId, tsId,
                         (xinfo & (1u << 30)) != 0, major);
        if (major >= 15 && xinfo & (1u << 29))
            WD_PUTS(b, "; apply_feedback");
        if (xinfo & (1u << 31))
            WD_PUTS(b, "; sync");
    }
    return 1;
}

/* standbydesc.c standby_desc: LOCK and RUNNING_XACTS (waldecode/rmgr/standby.py) */
static int wd_standby_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major)
{
    const unsigned char *m = rec->main_data;
    uint32_t n = rec->main_data_len, info = rec->xl_info & 0xF0;
    if (info == 0x00) {         /* XLOG_STANDBY_LOCK */
        int32_t nlocks, i;
        if (n < 4)
            return 0;
        nlocks = (int32_t) wd_rd32(m);
        if (nlocks > 0 && (uint64_t) n < 4 + 12 * (uint64_t) nlocks)
            return 0;
        for (i = 0; i < nlocks; i++)
            wd_printf(b, "xid %u db %u rel %u ", wd_rd32(m + 4 + 12 * i), wd_rd32(m + 8 + 12 * i),
                      wd_rd32(m + 12 + 12 * i));
        return 1;
    }
    if (info == 0x10) {         /* XLOG_RUNNING_XACTS */
        int32_t xcnt, subxcnt, i;
        uint64_t nx;
        const unsigned char *xids = m + 24;
        if (n < 24)
            return 0;
        xcnt = (int32_t) wd_rd32(m);
        subxcnt = (int32_t) wd_rd32(m + 4);
        nx = (uint64_t) (xcnt > 0 ? xcnt : 0) + (uint64_t) (subxcnt > 0 ? subxcnt : 0);
        if (n < 24 + 4 * nx)
            return 0;
        wd_printf(b, "nextXid %u latestCompletedXid %u oldestRunningXid %u", wd_rd32(m + 12), wd_rd32(m + 20),
                  wd_rd32(m + 16));
        if (xcnt > 0) {
            wd_printf(b, "; %d xacts:", xcnt);
            for (i = 0; i < xcnt; i++) {
                WD_PUTS(b, " ");
                wd_put_u(b, wd_rd32(xids + 4 * i));
            }
        }
        if (major >= 16) {
            if (m[8])
                WD_PUTS(b, "; subxid overflowed");
            if (subxcnt > 0) {
                wd_printf(b, "; %d subxacts:", subxcnt);
                for (i = 0; i < subxcnt; i++) {
                    WD_PUTS(b, " ");
                    wd_put_u(b, wd_rd32(xids + 4 * ((xcnt > 0 ? xcnt : 0) + i)));
                }
            }
        } else if (m[8])
            WD_PUTS(b, "; subxid ovf");
        return 1;
    }
    if (info == 0x20) {         /* XLOG_INVALIDATIONS */
        if (n < 16)
            return 0;
        wd_invalidations(b, m + 16, wd_slice_len(n, 16, 16 * (int64_t) (int32_t) wd_rd32(m + 12)), wd_rd32(m),
                         wd_rd32(m + 4), m[8] != 0, major);
        return 1;
    }
    return 1;
}

/*
 * rm_desc for the records handled here: 1 when written, 0 when the caller must use the
 * Python describer (nothing is left in the buffer then).
 */
static int wd_desc(wd_buf *b, const WdDecodedXLogRecord *rec, int major)
{
    size_t mark = b->len;
    int done = 0;
    switch (rec->xl_rmid) {
    case 0:                     /* RM_XLOG_ID: FPI and FPI_FOR_HINT describe nothing */
        done = (rec->xl_info & 0xF0) == 0xA0 || (rec->xl_info & 0xF0) == 0xB0;
        break;
    case 1:                     /* RM_XACT_ID */
        done = wd_xact_desc(b, rec, major);
        break;
    case 2:                     /* RM_SMGR_ID */
        done = wd_smgr_desc(b, rec);
        break;
    case 8:                     /* RM_STANDBY_ID */
        done = wd_standby_desc(b, rec, major);
        break;
    case 9:                     /* RM_HEAP2_ID */
        done = wd_heap2_desc(b, rec, major);
        break;
    case 10:                    /* RM_HEAP_ID */
        done = wd_heap_desc(b, rec, major);
        break;
    case 11:                    /* RM_BTREE_ID */
        done = wd_btree_desc(b, rec, major);
        break;
    }
    if (!done)
        b->len = mark;
    return done;
}

#endif
