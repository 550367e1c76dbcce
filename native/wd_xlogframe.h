/*
 * The page walker of the native framers, once: one segment buffer's pages framed into records
 * (xlogreader.c's XLogDecodeNextRecord and XLogFindNextRecord over the pages of one segment),
 * as waldecode/wal/_pyframe.py's frame_segment, its reference, does.  Shared by
 * waldecode._native (frame_segment, with FrameState's firsts and catalog modes) and
 * waldecode._waldump (inspect's loop), as wd_xlogrecord.h is their one DecodeXLogRecord.
 *
 * The caller fills a WdXLogFrame from the FrameState and calls wd_frame_next until it returns
 * anything but a record.  The walker runs the common case only: whenever a check fails, or a
 * ReadStop is to be made (end of the data at hand, end of the requested range), it returns
 * WD_FRAME_REFERENCE with the state as it was before the failing step, and the caller writes that
 * state back and hands the rest of the segment to the reference, which builds the stop or raises
 * the error: both implementations then stop with the very same messages.
 */
#ifndef WD_XLOGFRAME_H
#define WD_XLOGFRAME_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "pgconsts.h"
#include "wd_crc32c.h"
#include "wd_xlogpage.h"

/* What wd_frame_next found */
typedef enum WdFrameEvent {
    WD_FRAME_RECORD,        /* a whole record: rec, rec_len, lsn, raw_end */
    WD_FRAME_FIRST,         /* FrameState.firsts: a record read up to its header: its xid and lsn */
    WD_FRAME_DONE,          /* the segment is read (or XLOG_SWITCH, or stop_after_partial): next_lsn */
    WD_FRAME_REFERENCE,     /* the reference takes over from next_lsn (with the partial record kept) */
    WD_FRAME_NOMEM          /* the partial record's buffer could not grow */
} WdFrameEvent;

/* After a record: return it first, then what it ends */
#define WD_FRAME_PENDING_NONE 0
#define WD_FRAME_PENDING_STOP 1     /* stop_after_partial: the record carried in is framed */
#define WD_FRAME_PENDING_SWITCH 2   /* XLOG_SWITCH: the rest of the segment is unused */

typedef struct WdXLogFrame {
    /* the segment (FrameState's fixed part and the call's arguments) */
    const unsigned char *buf;
    int64_t buflen;
    uint64_t seg_lsn;
    unsigned int page_size;
    uint64_t seg_size;
    unsigned int magic;
    uint64_t sysid;
    uint64_t end_lsn;               /* 0: no limit */
    int verify_crc;
    int stop_after_partial;
    /* FrameState.firsts (records but RM_XACT's read up to their header), and with it .catalog: those
     * the catalog history may need read whole (cat_nodes: its relfilenodes, sorted) */
    int firsts;
    int by_catalog;
    const unsigned int *cat_nodes;
    int64_t cat_n;
    unsigned int cat_mask;
    /* the walk */
    int64_t pos;                    /* segment offset of the next record (or of the partial's next page) */
    int64_t cur_page;               /* -1: no page header read yet */
    int64_t hdr;
    unsigned int info;
    unsigned int rem_len;
    int fresh;                      /* may start mid-record: skip a continuation (XLogFindNextRecord) */
    int pending;                    /* WD_FRAME_PENDING_* */
    /* FrameState's moving part */
    unsigned int latest_tli;
    uint64_t prev_lsn;
    int rand_access;
    int switch_seen;
    uint64_t next_lsn;              /* WD_FRAME_DONE and WD_FRAME_REFERENCE: FrameState.next_lsn */
    /* FrameState.partial: the record being assembled across pages (or only its header) */
    int in_partial;
    unsigned char *partial;         /* malloc'ed, grown by the walker; the caller frees it */
    size_t have;
    size_t cap;
    uint64_t partial_lsn;
    uint64_t partial_total;
    int partial_header_only;        /* -1: not known while its header is not whole (None) */
    int partial_seen;               /* one was carried in or begun: FrameState keeps its fields after it */
    /* the record found */
    const unsigned char *rec;
    uint32_t rec_len;
    uint64_t lsn;
    uint64_t raw_end;
    uint32_t xid;
} WdXLogFrame;

/* _pyframe._check_record's checks (ValidXLogRecordHeader, ValidXLogRecord) as yes/no */
static inline int wd_frame_record_ok(const WdXLogFrame *f, const unsigned char *r, int64_t n, uint64_t lsn,
                                     int verify_crc)
{
    uint32_t tot_len, crc;
    uint64_t prev;
    memcpy(&tot_len, r, 4);
    memcpy(&prev, r + 8, 8);
    memcpy(&crc, r + 20, 4);
    if (!wd_rmid_valid(r[17], f->magic))
        return 0;
    if (f->rand_access ? prev >= lsn : prev != f->prev_lsn)
        return 0;
    return !verify_crc || ((int64_t) tot_len <= n && wd_record_crc(r, tot_len) == crc);
}

/* _pyframe.catalog_wanted (its docstring says which records) of the ``avail`` bytes of the record at ``r`` */
static inline int wd_frame_catalog_wanted(const WdXLogFrame *f, const unsigned char *r, int64_t avail)
{
    unsigned int rmid = r[17], fork_flags, bimg_info;
    uint32_t xid, rel;
    int64_t off = SizeOfXLogRecord + 4, lo = 0, hi = f->cat_n, mid;
    if (rmid == RM_STANDBY_ID || rmid == RM_RELMAP_ID)
        return 1;
    if (rmid != RM_HEAP_ID && rmid != RM_HEAP2_ID && rmid != RM_XLOG_ID)
        return 0;
    memcpy(&xid, r + 4, 4);
    if (rmid == RM_XLOG_ID && xid != 0)
        return 1;
    /* too short to tell, or no block (the main data or the origin follow the header) */
    if (avail < off || r[SizeOfXLogRecord] > XLR_MAX_BLOCK_ID)
        return 1;
    /* XLogRecordBlockHeader: block id, fork_flags, data_length */
    fork_flags = r[SizeOfXLogRecord + 1];
    if (fork_flags & BKPBLOCK_HAS_IMAGE) {
        if (avail < off + 5)
            return 1;
        bimg_info = r[off + 4];
        off += 5;   /* XLogRecordBlockImageHeader */
        if (bimg_info & BKPIMAGE_HAS_HOLE && bimg_info & f->cat_mask)
            off += 2;   /* XLogRecordBlockCompressHeader */
    }
    /* the first block cannot name "the same relation": left to the decoder */
    if (fork_flags & BKPBLOCK_SAME_REL || avail < off + 12)
        return 1;
    memcpy(&rel, r + off + 8, 4);   /* RelFileLocator.relNumber */
    while (lo < hi) {
        mid = (lo + hi) >> 1;
        if (f->cat_nodes[mid] < rel)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < f->cat_n && f->cat_nodes[lo] == rel;
}

/* _pyframe._header_only: is the record at ``r`` (``avail`` bytes at hand, its header at least) read up to
 * its header only? */
static inline int wd_frame_header_only(const WdXLogFrame *f, const unsigned char *r, int64_t avail)
{
    if (!f->firsts || r[17] == RM_XACT_ID)
        return 0;
    return !f->by_catalog || !wd_frame_catalog_wanted(f, r, avail);
}

/* _pyframe._partial_header_only: decided once the partial record's header is whole */
static inline int wd_frame_partial_header_only(WdXLogFrame *f)
{
    if (f->partial_header_only < 0 && f->have >= SizeOfXLogRecord)
        f->partial_header_only = wd_frame_header_only(f, f->partial, (int64_t) f->have);
    return f->partial_header_only > 0;
}

static inline int wd_frame_partial_add(WdXLogFrame *f, const unsigned char *p, size_t n)
{
    size_t need = f->have + n, cap;
    unsigned char *grown;
    if (need > f->cap) {
        cap = f->cap ? f->cap * 2 : 65536;
        while (cap < need)
            cap *= 2;
        grown = (unsigned char *) realloc(f->partial, cap);
        if (grown == NULL)
            return -1;
        f->partial = grown;
        f->cap = cap;
    }
    if (n)
        memcpy(f->partial + f->have, p, n);
    f->have = need;
    return 0;
}

/* The reference takes over at segment offset ``at`` */
static inline WdFrameEvent wd_frame_reference(WdXLogFrame *f, int64_t at)
{
    f->next_lsn = f->seg_lsn + (uint64_t) at;
    return WD_FRAME_REFERENCE;
}

/* A record is taken: the xl_prev chain moves on, and an XLOG_SWITCH ends the segment */
static inline WdFrameEvent wd_frame_taken(WdXLogFrame *f, const unsigned char *r, uint64_t lsn, uint64_t raw_end,
                                          uint32_t rec_len, int header_only)
{
    f->prev_lsn = lsn;
    f->rand_access = 0;
    f->lsn = lsn;
    f->raw_end = raw_end;
    /* stop_after_partial is told first, as the reference does */
    if (f->pending == WD_FRAME_PENDING_NONE && r[17] == RM_XLOG_ID && (r[16] & XLR_RMGR_INFO_MASK) == XLOG_SWITCH)
        f->pending = WD_FRAME_PENDING_SWITCH;
    if (header_only) {
        memcpy(&f->xid, r + 4, 4);
        return WD_FRAME_FIRST;
    }
    f->rec = r;
    f->rec_len = rec_len;
    return WD_FRAME_RECORD;
}

/* The next record of the segment, or what ends the walk (frame_segment's loop, one step) */
static WdFrameEvent wd_frame_next(WdXLogFrame *f)
{
    const unsigned char *b = f->buf;
    int64_t page_size = f->page_size, seg_size = (int64_t) f->seg_size;
    int64_t pos = f->pos, page_off, take, avail;
    uint64_t lsn, raw_end, prev, skip;
    uint32_t tot_len;
    size_t have0;
    uint64_t total0;
    int header_only, header_only0;

    if (f->pending == WD_FRAME_PENDING_STOP) {
        f->pending = WD_FRAME_PENDING_NONE;
        f->next_lsn = f->seg_lsn + (uint64_t) pos;
        return WD_FRAME_DONE;
    }
    if (f->pending == WD_FRAME_PENDING_SWITCH) {
        f->pending = WD_FRAME_PENDING_NONE;
        f->switch_seen = 1;
        f->next_lsn = f->seg_lsn + f->seg_size;
        return WD_FRAME_DONE;
    }
    for (;;) {
        if (pos >= seg_size) {
            f->pos = pos;
            f->next_lsn = f->seg_lsn + f->seg_size;
            return WD_FRAME_DONE;
        }
        page_off = pos - pos % page_size;
        if (page_off != f->cur_page) {
            /* the end of the data at hand: the reference makes the stop */
            if (page_off + page_size > f->buflen)
                return wd_frame_reference(f, pos);
            /* the segment's long header too, as xlogreader does on opening a segment */
            if (f->cur_page < 0 && page_off != 0
                    && !wd_page_ok(b, 0, f->seg_lsn, f->magic, f->page_size, f->seg_size, f->sysid, 0))
                return wd_frame_reference(f, pos);
            if (!wd_page_ok(b + page_off, page_off, f->seg_lsn, f->magic, f->page_size, f->seg_size, f->sysid,
                            f->latest_tli))
                return wd_frame_reference(f, pos);
            memcpy(&f->latest_tli, b + page_off + 4, 4);
            {
                uint16_t info;
                memcpy(&info, b + page_off + 2, 2);
                f->info = info;
            }
            memcpy(&f->rem_len, b + page_off + 16, 4);
            f->hdr = f->info & XLP_LONG_HEADER ? SizeOfXLogLongPHD : SizeOfXLogShortPHD;
            f->cur_page = page_off;
            if (f->in_partial) {
                /* the rest of a record begun on an earlier page: an abandoned one (the overwrite flag) or a
                 * wrong continuation are the reference's to tell */
                if (f->info & XLP_FIRST_IS_OVERWRITE_CONTRECORD || !(f->info & XLP_FIRST_IS_CONTRECORD)
                        || f->rem_len == 0 || f->rem_len != f->partial_total - f->have)
                    return wd_frame_reference(f, pos);
                take = (int64_t) f->rem_len < page_size - f->hdr ? (int64_t) f->rem_len : page_size - f->hdr;
                have0 = f->have;
                total0 = f->partial_total;
                header_only0 = f->partial_header_only;
                if (wd_frame_partial_header_only(f))
                    f->partial_total -= (uint64_t) take;
                else if (wd_frame_partial_add(f, b + page_off + f->hdr, (size_t) take) < 0)
                    return WD_FRAME_NOMEM;
                if (take < (int64_t) f->rem_len) {
                    pos = page_off + page_size;
                    continue;
                }
                lsn = f->partial_lsn;
                raw_end = f->seg_lsn + (uint64_t) (page_off + f->hdr + f->rem_len);
                header_only = wd_frame_partial_header_only(f);
                if ((f->end_lsn && raw_end > f->end_lsn)
                        || !wd_frame_record_ok(f, f->partial, (int64_t) f->have, lsn, f->verify_crc && !header_only)) {
                    /* the stop is the reference's, from this page with the record as it was (its
                     * header-only choice too: made on the bytes at hand, which this page added to) */
                    f->have = have0;
                    f->partial_total = total0;
                    f->partial_header_only = header_only0;
                    return wd_frame_reference(f, pos);
                }
                f->in_partial = 0;
                f->pos = page_off + f->hdr + ((f->rem_len + 7) & ~7u);
                if (f->stop_after_partial)
                    f->pending = WD_FRAME_PENDING_STOP;
                return wd_frame_taken(f, f->partial, lsn, raw_end, (uint32_t) f->have, header_only);
            }
            if (pos == page_off) {
                if (f->info & XLP_FIRST_IS_CONTRECORD) {
                    if (!f->fresh)
                        return wd_frame_reference(f, pos);
                    /* XLogFindNextRecord: skip the tail of a record begun before this page */
                    skip = ((uint64_t) f->rem_len + 7) & ~(uint64_t) 7;
                    if ((uint64_t) f->hdr + skip >= (uint64_t) page_size) {
                        pos = page_off + page_size;
                        continue;
                    }
                    pos = page_off + f->hdr + (int64_t) skip;
                } else
                    pos = page_off + f->hdr;
            } else if (pos < page_off + f->hdr)
                pos = page_off + f->hdr;
            f->fresh = 0;
        }
        /* a record starts at pos, on the current page */
        lsn = f->seg_lsn + (uint64_t) pos;
        if (f->end_lsn && lsn >= f->end_lsn)
            return wd_frame_reference(f, pos);
        memcpy(&tot_len, b + pos, 4);
        if (tot_len < SizeOfXLogRecord || tot_len > MaxAllocSize)
            return wd_frame_reference(f, pos);
        avail = page_off + page_size - pos;
        if ((int64_t) tot_len <= avail) {
            if (f->end_lsn && lsn + tot_len > f->end_lsn)
                return wd_frame_reference(f, pos);
            header_only = wd_frame_header_only(f, b + pos, tot_len);
            if (!wd_frame_record_ok(f, b + pos, tot_len, lsn, f->verify_crc && !header_only))
                return wd_frame_reference(f, pos);
            f->pos = pos + ((tot_len + 7) & ~7u);
            return wd_frame_taken(f, b + pos, lsn, lsn + tot_len, tot_len, header_only);
        }
        if (avail >= SizeOfXLogRecord) {
            /* the header is on this page: check it before trusting the length (as xlogreader.c does) */
            memcpy(&prev, b + pos + 8, 8);
            if (!wd_rmid_valid(b[pos + 17], f->magic) || (f->rand_access ? prev >= lsn : prev != f->prev_lsn))
                return wd_frame_reference(f, pos);
        }
        f->have = 0;
        if (avail >= SizeOfXLogRecord && wd_frame_header_only(f, b + pos, avail)) {
            /* _pyframe._header_only: only the header is kept, the length left shrinks instead */
            if (wd_frame_partial_add(f, b + pos, SizeOfXLogRecord) < 0)
                return WD_FRAME_NOMEM;
            f->partial_total = tot_len - (uint64_t) (avail - SizeOfXLogRecord);
            f->partial_header_only = 1;
        } else {
            if (wd_frame_partial_add(f, b + pos, (size_t) avail) < 0)
                return WD_FRAME_NOMEM;
            f->partial_total = tot_len;
            f->partial_header_only = avail >= SizeOfXLogRecord ? 0 : -1;
        }
        f->in_partial = 1;
        f->partial_seen = 1;
        f->partial_lsn = lsn;
        pos = page_off + page_size;
    }
}

#endif
