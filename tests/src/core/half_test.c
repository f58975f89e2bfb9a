/*
 * Conversions between fp32 and the half-precision formats (fp16, bf16) in
 * half.h: ties to even, overflow to inf, subnormals, signed zero, quiet NaN,
 * and every half value and a sweep of fp32 against the reference in half_ref.h.
 */
#include "core/half.h"

#include "core/dtype.h"
#include "half_ref.h"
#include "harness/zsh_test.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static float half_widen(zsh_dtype_t dt, uint16_t h)
{
    return (dt == ZSH_FLOAT16) ? zsh_fp16_to_float(h) : zsh_bf16_to_float(h);
}

static void expect_fp16(float in, uint16_t expected, int line)
{
    uint16_t actual = zsh_float_to_fp16(in);

    if (actual != expected) {
        zsh_test_fail(__FILE__, line, "fp16(%.9g): expected 0x%04x, actual 0x%04x", in, expected,
                      actual);
    }
}

static void expect_bf16(float in, uint16_t expected, int line)
{
    uint16_t actual = zsh_float_to_bf16(in);

    if (actual != expected) {
        zsh_test_fail(__FILE__, line, "bf16(%.9g / 0x%08x): expected 0x%04x, actual 0x%04x", in,
                      zsh_float_bits(in), expected, actual);
    }
}

ZSH_TEST(kernels, fp16_rounds_ties_to_even)
{
    expect_fp16(2049.0f, 0x6800, __LINE__);    /* 2048 */
    expect_fp16(2051.0f, 0x6802, __LINE__);    /* 2052 */
    expect_fp16(2050.0f, 0x6801, __LINE__);    /* exact */
    expect_fp16(2049.5f, 0x6801, __LINE__);    /* above the tie: up to 2050 */
    expect_fp16(1.0f + 0x1p-11f, 0x3c00, __LINE__);
    expect_fp16(1.0f + 0x1.8p-10f, 0x3c02, __LINE__);
    expect_fp16(-2049.0f, 0xe800, __LINE__);
}

ZSH_TEST(kernels, bf16_rounds_ties_to_even)
{
    expect_bf16(257.0f, 0x4380, __LINE__);     /* 256 */
    expect_bf16(259.0f, 0x4382, __LINE__);     /* 260 */
    expect_bf16(257.5f, 0x4381, __LINE__);     /* above the tie: up to 258 */
    expect_bf16(zsh_bits_float(0x3f808000u), 0x3f80, __LINE__);
    expect_bf16(zsh_bits_float(0x3f818000u), 0x3f82, __LINE__);
    expect_bf16(zsh_bits_float(0x3f808001u), 0x3f81, __LINE__);
    expect_bf16(-257.0f, 0xc380, __LINE__);
}

ZSH_TEST(kernels, half_overflow_goes_to_inf)
{
    expect_fp16(65519.0f, 0x7bff, __LINE__);   /* 65504, the largest fp16 */
    expect_fp16(65520.0f, 0x7c00, __LINE__);   /* the tie above it rounds up, to inf */
    expect_fp16(-65520.0f, 0xfc00, __LINE__);
    expect_fp16(1e10f, 0x7c00, __LINE__);
    expect_fp16(FLT_MAX, 0x7c00, __LINE__);
    expect_fp16(INFINITY, 0x7c00, __LINE__);
    expect_fp16(-INFINITY, 0xfc00, __LINE__);
    expect_bf16(zsh_bits_float(0x7f7f7fffu), 0x7f7f, __LINE__);
    expect_bf16(zsh_bits_float(0x7f7f8000u), 0x7f80, __LINE__);
    expect_bf16(FLT_MAX, 0x7f80, __LINE__);
    expect_bf16(-FLT_MAX, 0xff80, __LINE__);
    expect_bf16(-INFINITY, 0xff80, __LINE__);
}

ZSH_TEST(kernels, half_subnormals_convert_exactly_and_round_to_even)
{
    expect_fp16(0x1p-24f, 0x0001, __LINE__);
    expect_fp16(0x1p-25f, 0x0000, __LINE__);       /* tie between 0 and 2^-24 */
    expect_fp16(0x1.8p-24f, 0x0002, __LINE__);     /* tie between 1 and 2 steps */
    expect_fp16(0x1p-14f - 0x1p-25f, 0x0400, __LINE__);  /* rounds up to the least normal */
    expect_fp16(0x3ffp-24f, 0x03ff, __LINE__);
    expect_fp16(-0x1p-24f, 0x8001, __LINE__);
    expect_fp16(1e-30f, 0x0000, __LINE__);
    ZSH_EXPECT_TRUE(zsh_fp16_to_float(0x0001) == 0x1p-24f);
    ZSH_EXPECT_TRUE(zsh_fp16_to_float(0x83ff) == -0x3ffp-24f);
    expect_bf16(zsh_bits_float(0x00010000u), 0x0001, __LINE__);
    expect_bf16(zsh_bits_float(0x00008000u), 0x0000, __LINE__);
    expect_bf16(zsh_bits_float(0x00018000u), 0x0002, __LINE__);
    expect_bf16(zsh_bits_float(0x007fffffu), 0x0080, __LINE__);   /* up to FLT_MIN */
    ZSH_EXPECT_EQ(0x00010000u, zsh_float_bits(zsh_bf16_to_float(0x0001)));
}

ZSH_TEST(kernels, half_conversions_keep_signed_zero)
{
    expect_fp16(0.0f, 0x0000, __LINE__);
    expect_fp16(-0.0f, 0x8000, __LINE__);
    expect_bf16(0.0f, 0x0000, __LINE__);
    expect_bf16(-0.0f, 0x8000, __LINE__);
    ZSH_EXPECT_EQ(0x80000000u, zsh_float_bits(zsh_fp16_to_float(0x8000)));
    ZSH_EXPECT_EQ(0x80000000u, zsh_float_bits(zsh_bf16_to_float(0x8000)));
}

ZSH_TEST(kernels, half_conversions_keep_nan_a_quiet_nan)
{
    /* 0x7f800001 has no payload bits that survive narrowing: still NaN. */
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u, 0xff800001u,
                                    0x7fbfffffu};

    for (size_t i = 0; i < sizeof(nans) / sizeof(nans[0]); i++) {
        float    f    = zsh_bits_float(nans[i]);
        uint16_t h    = zsh_float_to_fp16(f);
        uint16_t b    = zsh_float_to_bf16(f);
        uint16_t sign = (uint16_t)((nans[i] >> 16) & 0x8000u);

        if (((h & 0x7e00u) != 0x7e00u) || ((h & 0x8000u) != sign)) {
            zsh_test_fail(__FILE__, __LINE__, "fp16(0x%08x) = 0x%04x: not a quiet NaN of that sign",
                          nans[i], h);
        }
        if (((b & 0x7fc0u) != 0x7fc0u) || ((b & 0x8000u) != sign)) {
            zsh_test_fail(__FILE__, __LINE__, "bf16(0x%08x) = 0x%04x: not a quiet NaN of that sign",
                          nans[i], b);
        }
    }
    ZSH_EXPECT_TRUE(isnan(zsh_fp16_to_float(0x7e00)));
    ZSH_EXPECT_TRUE(isnan(zsh_fp16_to_float(0x7c01)));
    ZSH_EXPECT_TRUE(isnan(zsh_bf16_to_float(0x7fc0)));
    ZSH_EXPECT_TRUE(isnan(zsh_bf16_to_float(0xff81)));
}

/* Every half value widens to what the reference decodes and narrows back. */
ZSH_TEST(kernels, half_widening_is_exact_and_round_trips)
{
    static const zsh_dtype_t dtypes[] = {ZSH_FLOAT16, ZSH_BFLOAT16};

    for (size_t d = 0; d < 2; d++) {
        zsh_dtype_t dt = dtypes[d];

        for (uint32_t h = 0; h <= 0xffffu; h++) {
            double   ref  = ref_half_decode((uint16_t)h, dt);
            float    f    = half_widen(dt, (uint16_t)h);
            uint16_t back = half_narrow(dt, f);
            bool     same = (f == ref) && (!signbit(f) == !signbit(ref)) && (back == h);
            bool     ok   = isnan(ref) ? (isnan(f) && isnan(ref_half_decode(back, dt))) : same;

            if (!ok) {
                zsh_test_fail(__FILE__, __LINE__,
                              "%s 0x%04x: widened %.9g (reference %.9g), back 0x%04x",
                              zsh_dtype_name(dt), h, f, ref, back);
                break;
            }
        }
    }
}

/* A sweep of fp32 bit patterns, every sign and exponent, against the reference. */
ZSH_TEST(kernels, half_narrowing_matches_reference_across_fp32)
{
    static const zsh_dtype_t dtypes[] = {ZSH_FLOAT16, ZSH_BFLOAT16};

    for (size_t d = 0; d < 2; d++) {
        zsh_dtype_t dt = dtypes[d];

        for (uint64_t u = 0; u <= UINT32_MAX; u += 4093) {
            float    f   = zsh_bits_float((uint32_t)u);
            uint16_t got = half_narrow(dt, f);
            uint16_t ref = ref_half_encode(f, dt);
            bool     ok  = isnan(f) ? isnan(ref_half_decode(got, dt)) : (got == ref);

            if (!ok) {
                zsh_test_fail(__FILE__, __LINE__,
                              "%s(0x%08x = %.9g): expected 0x%04x, actual 0x%04x",
                              zsh_dtype_name(dt), (uint32_t)u, f, ref, got);
                break;
            }
        }
    }
}

/* The array conversions (the optimizer's and the quantizer's one copy) give
 * each element's bits as the scalar conversion does, at every length's
 * vector body and tail; fp32 is copied as it is. */
ZSH_TEST(kernels, half_arrays_convert_each_element_as_the_scalar_does)
{
    static const zsh_dtype_t dtypes[] = {ZSH_FLOAT16, ZSH_BFLOAT16};
    static uint16_t h[65536 + 1], back[65536 + 1];
    static float    f[65536 + 1], sweep[65536 + 1];
    size_t          n = 65536;

    for (size_t i = 0; i < n; i++) {
        h[i]     = (uint16_t)i;
        sweep[i] = zsh_bits_float((uint32_t)(i * 65521u + 12345u));
    }
    for (size_t d = 0; d < 2; d++) {
        zsh_dtype_t dt = dtypes[d];

        /* Odd lengths and offsets: bodies of every width and their tails. */
        for (size_t start = 0; start < 3; start++) {
            zsh_half_widen(dt, h + start, n - start, f + start);
            for (size_t i = start; i < n; i++) {
                if (zsh_float_bits(f[i]) != zsh_float_bits(half_widen(dt, h[i]))) {
                    zsh_test_fail(__FILE__, __LINE__, "%s widen [%zu] 0x%04x: 0x%08x",
                                  zsh_dtype_name(dt), i, h[i], zsh_float_bits(f[i]));
                    return;
                }
            }
            zsh_half_narrow(dt, sweep + start, n - start, back + start);
            for (size_t i = start; i < n; i++) {
                if (back[i] != half_narrow(dt, sweep[i])) {
                    zsh_test_fail(__FILE__, __LINE__, "%s narrow [%zu] 0x%08x: 0x%04x",
                                  zsh_dtype_name(dt), i, zsh_float_bits(sweep[i]), back[i]);
                    return;
                }
            }
        }
    }
    zsh_half_widen(ZSH_FLOAT32, sweep, 7, f);
    ZSH_EXPECT_TRUE(memcmp(f, sweep, 7 * sizeof(float)) == 0);
    zsh_half_narrow(ZSH_FLOAT32, sweep + 1, 5, f);
    ZSH_EXPECT_TRUE(memcmp(f, sweep + 1, 5 * sizeof(float)) == 0);
}
