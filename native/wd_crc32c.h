/*
 * CRC-32C as src/port/pg_crc32c_sb8.c computes it (slicing by 8, little-endian): a record's
 * CRC in one C call.  Shared by waldecode._native (framing) and waldecode._waldump (inspect).
 */
#ifndef WD_CRC32C_H
#define WD_CRC32C_H
#include <stdint.h>
#include <string.h>

/* src/include/port/pg_crc32c.h */
#define INIT_CRC32C 0xFFFFFFFFu
#define FIN_CRC32C 0xFFFFFFFFu
static uint32_t pg_crc32c_table[8][256];

static void pg_crc32c_sb8_init(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t crc = i;
        for (int k = 0; k < 8; k++)
            crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78 : crc >> 1;
        pg_crc32c_table[0][i] = crc;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            pg_crc32c_table[t][i] = (pg_crc32c_table[t - 1][i] >> 8)
                ^ pg_crc32c_table[0][pg_crc32c_table[t - 1][i] & 0xFF];
}

static uint32_t pg_comp_crc32c_sb8(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len >= 8) {
        uint32_t a, b;
        memcpy(&a, p, 4);
        memcpy(&b, p + 4, 4);
        a ^= crc;
        crc = pg_crc32c_table[7][a & 0xFF] ^ pg_crc32c_table[6][(a >> 8) & 0xFF]
            ^ pg_crc32c_table[5][(a >> 16) & 0xFF] ^ pg_crc32c_table[4][a >> 24]
            ^ pg_crc32c_table[3][b & 0xFF] ^ pg_crc32c_table[2][(b >> 8) & 0xFF]
            ^ pg_crc32c_table[1][(b >> 16) & 0xFF] ^ pg_crc32c_table[0][b >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = pg_crc32c_table[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

/*
 * src/port/pg_crc32c_sse42.c: the same CRC with the SSE 4.2 instruction, 8 bytes at a time,
 * chosen at run time (src/port/pg_crc32c_sse42_choose.c) as the server and pg_waldump do.
 */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>

__attribute__((target("sse4.2")))
static uint32_t pg_comp_crc32c_sse42(uint32_t crc, const unsigned char *p, size_t len)
{
    while (len >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        crc = (uint32_t) _mm_crc32_u64(crc, v);
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}
#define WD_HAVE_SSE42 1
#endif

static uint32_t (*pg_comp_crc32c)(uint32_t crc, const unsigned char *p, size_t len) = pg_comp_crc32c_sb8;

/* pg_crc32c_sb8_init, and the SSE 4.2 version when this CPU has it */
static void pg_crc32c_init(void)
{
    pg_crc32c_sb8_init();
#ifdef WD_HAVE_SSE42
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2"))
        pg_comp_crc32c = pg_comp_crc32c_sse42;
#endif
}

/* xlogreader.c ValidXLogRecord: the data after the header, then the header up to xl_crc */
static inline uint32_t wd_record_crc(const unsigned char *r, uint32_t tot_len)
{
    uint32_t crc = INIT_CRC32C;
    crc = pg_comp_crc32c(crc, r + 24, tot_len - 24);
    crc = pg_comp_crc32c(crc, r, 20);
    return crc ^ FIN_CRC32C;
}

#endif
