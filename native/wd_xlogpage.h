/*
 * The page and record header checks of xlogreader.c that the native framers run on every
 * page and record (XLogReaderValidatePageHeader, RmgrIdIsValid), as yes/no: when one says
 * no, the caller hands the input to the pure-Python reference (waldecode/wal/_pyframe.py),
 * which names the failure.  Shared by waldecode._native and waldecode._waldump.
 */
#ifndef WD_XLOGPAGE_H
#define WD_XLOGPAGE_H

#include <stdint.h>
#include <string.h>

/* XLP_* (xlog_internal.h), RM_* (rmgr.h): generated from waldecode/wal/xlogpage.py and waldecode/rmgr */
#include "pgconsts.h"

/* RmgrIdIsValid: 15 (page magic 0xD110) added custom resource managers 128..255 */
static inline int wd_rmid_valid(unsigned int rmid, unsigned int magic)
{
    return rmid <= RM_MAX_BUILTIN_ID || (rmid >= RM_MIN_CUSTOM_ID && magic >= 0xD110);
}

/* XLogReaderValidatePageHeader's checks of the page at ``p`` (segment offset ``page_off``) */
static inline int wd_page_ok(const unsigned char *p, int64_t page_off, uint64_t seg_lsn, unsigned int magic,
                             unsigned int page_size, uint64_t seg_size, uint64_t sysid, unsigned int latest_tli)
{
    uint16_t m, info;
    uint32_t tli, u32;
    uint64_t u64;
    memcpy(&m, p, 2);
    memcpy(&info, p + 2, 2);
    if (m != magic || info & ~XLP_ALL_FLAGS)
        return 0;
    if (info & XLP_LONG_HEADER) {
        memcpy(&u64, p + 24, 8);
        if (sysid && u64 != sysid)
            return 0;
        memcpy(&u32, p + 32, 4);
        if (u32 != seg_size)
            return 0;
        memcpy(&u32, p + 36, 4);
        if (u32 != page_size)
            return 0;
    } else if (page_off == 0)
        return 0;
    memcpy(&u64, p + 8, 8);
    if (u64 != seg_lsn + (uint64_t) page_off)
        return 0;
    memcpy(&tli, p + 4, 4);
    return tli >= latest_tli;
}

#endif
