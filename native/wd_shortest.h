/*
 * Shortest round-trip digits of a binary float, as PostgreSQL's Ryu prints them
 * (src/common/d2s.c d2d, f2s.c f2d, built without STRICTLY_SHORTEST).
 *
 * This is not Ryu's table-driven code: it is waldecode/types/float.py's
 * shortest_digits() -- Ryu's digit-removal loop run on *exact* integers -- with the
 * same choice of decimal scale q and the same arithmetic, carried out in fixed-width
 * integers instead of Python's unbounded ones.  Every intermediate value is exact:
 * 128-bit integers when the scaled bounds fit (|x| roughly within 1e-12 .. 1e38
 * for doubles), otherwise a small little-endian bignum of 32-bit limbs that only
 * needs "multiply by a small number", "divide by a small number" and "shift".
 * So the result equals the Python reference for every input by construction; the
 * parity tests check it on random bit patterns and every binade edge.
 */
#ifndef WD_SHORTEST_H
#define WD_SHORTEST_H

#include <stdint.h>
#include <string.h>

typedef unsigned __int128 wd_u128;

/* 1280 bits: (2^55 - 1) << 969 (the largest double's upper bound) needs 1024,
 * (2^55 - 1) * 5^330 (the smallest subnormals) about 822. */
#define WD_BIG_LIMBS 40

typedef struct
{
    uint32_t    d[WD_BIG_LIMBS];    /* little-endian 32-bit limbs */
    int         n;                  /* limbs in use; d[n-1] != 0 unless n == 0 */
} wd_big;

static inline void
wd_big_set(wd_big *b, uint64_t v)
{
    b->n = 0;
    while (v)
    {
        b->d[b->n++] = (uint32_t) v;
        v >>= 32;
    }
}

static inline void
wd_big_mul_small(wd_big *b, uint32_t m)
{
    uint64_t    carry = 0;
    int         i;

    for (i = 0; i < b->n; i++)
    {
        uint64_t    t = (uint64_t) b->d[i] * m + carry;

        b->d[i] = (uint32_t) t;
        carry = t >> 32;
    }
    if (carry)
        b->d[b->n++] = (uint32_t) carry;
}

/* b <<= s */
static inline void
wd_big_shl(wd_big *b, int s)
{
    int         limbs = s / 32,
                bits = s % 32,
                i;

    if (b->n == 0)
        return;
    if (bits)
    {
        uint32_t    carry = 0;

        for (i = 0; i < b->n; i++)
        {
            uint32_t    v = b->d[i];

            b->d[i] = (v << bits) | carry;
            carry = v >> (32 - bits);
        }
        if (carry)
            b->d[b->n++] = carry;
    }
    if (limbs)
    {
        memmove(b->d + limbs, b->d, sizeof(uint32_t) * b->n);
        memset(b->d, 0, sizeof(uint32_t) * limbs);
        b->n += limbs;
    }
}

/* b >>= s; returns whether the bits shifted out were all zero */
static inline int
wd_big_shr(wd_big *b, int s)
{
    int         limbs = s / 32,
                bits = s % 32,
                i,
                exact = 1;

    if (limbs >= b->n)
    {
        exact = b->n == 0;
        b->n = 0;
        return exact;
    }
    for (i = 0; i < limbs; i++)
        if (b->d[i])
            exact = 0;
    if (bits && (b->d[limbs] & ((1u << bits) - 1)))
        exact = 0;
    memmove(b->d, b->d + limbs, sizeof(uint32_t) * (b->n - limbs));
    b->n -= limbs;
    if (bits)
    {
        for (i = 0; i < b->n; i++)
        {
            uint32_t    hi = (i + 1 < b->n) ? b->d[i + 1] : 0;

            b->d[i] = (b->d[i] >> bits) | (uint32_t) ((uint64_t) hi << (32 - bits));
        }
    }
    while (b->n && b->d[b->n - 1] == 0)
        b->n--;
    return exact;
}

/* b //= m; returns b % m */
static inline uint32_t
wd_big_divmod_small(wd_big *b, uint32_t m)
{
    uint64_t    rem = 0;
    int         i;

    for (i = b->n - 1; i >= 0; i--)
    {
        uint64_t    cur = (rem << 32) | b->d[i];

        b->d[i] = (uint32_t) (cur / m);
        rem = cur % m;
    }
    while (b->n && b->d[b->n - 1] == 0)
        b->n--;
    return (uint32_t) rem;
}

/* the value, which the callers know to fit in 128 bits */
static inline wd_u128
wd_big_u128(const wd_big *b)
{
    wd_u128     v = 0;
    int         i;

    for (i = b->n - 1; i >= 0; i--)
        v = (v << 32) | b->d[i];
    return v;
}

static const uint32_t wd_pow10_u32[10] = {
    1u, 10u, 100u, 1000u, 10000u, 100000u, 1000000u, 10000000u, 100000000u, 1000000000u
};

/* floor(m << e2 / 10^q) and whether it was exact */
static inline wd_u128
wd_scale_up(uint64_t m, int e2, int q, int *exact)
{
    if (55 + e2 <= 127 && q <= 19)
    {
        wd_u128     n = (wd_u128) m << e2;
        wd_u128     p10 = 1;
        int         i;

        for (i = 0; i < q; i++)
            p10 *= 10;
        *exact = (n % p10) == 0;
        return n / p10;
    }
    else
    {
        wd_big      b;
        int         left = q;

        *exact = 1;
        wd_big_set(&b, m);
        wd_big_shl(&b, e2);
        while (left > 0)
        {
            int         step = left > 9 ? 9 : left;

            if (wd_big_divmod_small(&b, wd_pow10_u32[step]))
                *exact = 0;
            left -= step;
        }
        return wd_big_u128(&b);
    }
}

/* 5^0 .. 5^27 (5^27 < 2^63) */
static const uint64_t wd_pow5_u64[28] = {
    1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL,
    9765625ULL, 48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL,
    152587890625ULL, 762939453125ULL, 3814697265625ULL, 19073486328125ULL, 95367431640625ULL,
    476837158203125ULL, 2384185791015625ULL, 11920928955078125ULL, 59604644775390625ULL,
    298023223876953125ULL, 1490116119384765625ULL, 7450580596923828125ULL
};

/* floor(m * 5^k / 2^q) and whether it was exact */
static inline wd_u128
wd_scale_down(uint64_t m, int k, int q, int *exact)
{
    if (k <= 27 && q < 128)
    {
        /* 5^27 < 2^63, m < 2^55: the product fits in 118 bits */
        wd_u128     n = (wd_u128) m * wd_pow5_u64[k];

        *exact = q == 0 || (n & (((wd_u128) 1 << q) - 1)) == 0;
        return n >> q;
    }
    else
    {
        wd_big      b;
        int         left = k;

        wd_big_set(&b, m);
        while (left > 0)
        {
            /* 5^13 = 1220703125 < 2^32 */
            int         step = left > 13 ? 13 : left;
            uint32_t    p = 1;
            int         i;

            for (i = 0; i < step; i++)
                p *= 5;
            wd_big_mul_small(&b, p);
            left -= step;
        }
        *exact = wd_big_shr(&b, q);
        return wd_big_u128(&b);
    }
}

/* float.py's _LOG10_2 / _LOG10_5, the same doubles */
#define WD_LOG10_2 0.30102999566398119521
#define WD_LOG10_5 0.69897000433601880479

/*
 * float.py shortest_digits(ieee_mantissa, ieee_exponent, mantissa_bits, bias)
 * with accept_bounds_when_even False: the decimal digits *output and exponent
 * *exp10 of a finite non-zero binary float.
 */
static inline void
wd_shortest_digits(unsigned long long ieee_mantissa, int ieee_exponent, int mantissa_bits, int bias,
                   unsigned long long *output, int *exp10)
{
    int         e2;
    uint64_t    m2,
                mv,
                mp,
                mm;
    int         mm_shift,
                q,
                e10,
                vr_exact,
                vp_exact,
                vm_exact,
                vr_trailing_zeros,
                removed = 0,
                last_removed = 0;
    wd_u128     vr,
                vp,
                vm;

    if (ieee_exponent == 0)
    {
        e2 = 1 - bias - mantissa_bits - 2;
        m2 = ieee_mantissa;
    }
    else
    {
        e2 = ieee_exponent - bias - mantissa_bits - 2;
        m2 = ((uint64_t) 1 << mantissa_bits) | ieee_mantissa;
    }
    mv = 4 * m2;
    mm_shift = (ieee_mantissa != 0 || ieee_exponent <= 1) ? 1 : 0;
    mp = mv + 2;
    mm = mv - 1 - mm_shift;
    if (e2 >= 0)
    {
        q = (int) (e2 * WD_LOG10_2) - 3;
        if (q < 0)
            q = 0;
        vr = wd_scale_up(mv, e2, q, &vr_exact);
        vp = wd_scale_up(mp, e2, q, &vp_exact);
        vm = wd_scale_up(mm, e2, q, &vm_exact);
        e10 = q;
    }
    else
    {
        q = (int) (-e2 * WD_LOG10_5) - 3;
        if (q < 0)
            q = 0;
        vr = wd_scale_down(mv, -e2 - q, q, &vr_exact);
        vp = wd_scale_down(mp, -e2 - q, q, &vp_exact);
        vm = wd_scale_down(mm, -e2 - q, q, &vm_exact);
        e10 = e2 + q;
    }
    (void) vm_exact;            /* only read when interval bounds are accepted */
    vr_trailing_zeros = vr_exact;
    if (vp_exact)
        vp -= 1;                /* the upper bound itself is excluded */
    /*
     * The digit-removal loop.  vm <= vr <= vp: once vp fits in 64 bits, so do the
     * others, and the rest of the loop runs in 64-bit arithmetic (a 128-bit division
     * is a library call; a 64-bit one by 10 is a multiplication).
     */
    while ((vp >> 64) != 0 && vp / 10 > vm / 10)
    {
        vr_trailing_zeros = vr_trailing_zeros && last_removed == 0;
        last_removed = (int) (vr % 10);
        vr /= 10;
        vp /= 10;
        vm /= 10;
        removed++;
    }
    if ((vp >> 64) == 0)
    {
        uint64_t    r = (uint64_t) vr,
                    p = (uint64_t) vp,
                    m = (uint64_t) vm;

        while (p / 10 > m / 10)
        {
            vr_trailing_zeros = vr_trailing_zeros && last_removed == 0;
            last_removed = (int) (r % 10);
            r /= 10;
            p /= 10;
            m /= 10;
            removed++;
        }
        vr = r;
        vp = p;
        vm = m;
    }
    if (vr_trailing_zeros && last_removed == 5 && vr % 2 == 0)
        last_removed = 4;       /* round half to even */
    *output = (unsigned long long) vr + ((vr == vm || last_removed >= 5) ? 1 : 0);
    *exp10 = e10 + removed;
}

#endif                          /* WD_SHORTEST_H */
