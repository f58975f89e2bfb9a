/*
 * The device step's vector helpers (zero/optim/rule/cuda/util.cu) against the
 * host: the sum of squares within its stated rounding bound, the
 * non-finite check (fp16 overflow), scaling and the fp32 <-> bf16/fp16
 * conversions bit for bit; and the entry points' refusals, which need no
 * device: bad arguments before anything is enqueued, and CUDA's own text
 * when CUDA fails (here: no driver or no device).
 */
#include "cuda_helpers.h"

#include "core/half.h"
#include "optim/rule/cuda/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_CU_N 1000003

static const zsh_dtype_t zsh_cu_dtypes[] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};

static size_t zsh_cu_esize(zsh_dtype_t d)
{
    return (d == ZSH_FLOAT32) ? 4 : 2;
}

static float zsh_cu_load(zsh_dtype_t d, const void *x, size_t i)
{
    if (d == ZSH_BFLOAT16) {
        return zsh_bf16_to_float(((const uint16_t *)x)[i]);
    }
    if (d == ZSH_FLOAT16) {
        return zsh_fp16_to_float(((const uint16_t *)x)[i]);
    }
    return ((const float *)x)[i];
}

static void zsh_cu_store(zsh_dtype_t d, void *x, size_t i, float f)
{
    if (d == ZSH_BFLOAT16) {
        ((uint16_t *)x)[i] = zsh_float_to_bf16(f);
    } else if (d == ZSH_FLOAT16) {
        ((uint16_t *)x)[i] = zsh_float_to_fp16(f);
    } else {
        ((float *)x)[i] = f;
    }
}

/* @n random values of @d in @x, within fp16's range. */
static void zsh_cu_fill(zsh_dtype_t d, void *x, size_t n, uint64_t seed)
{
    uint64_t rng = seed;
    size_t i;

    for (i = 0; i < n; i++) {
        zsh_cu_store(d, x, i, zsh_ck_float(&rng, -30, 14));
    }
}

/* The device sum of squares of @n elements of @d at @dx, into *@out. */
static bool zsh_cu_sumsq(zsh_dtype_t d, const void *dx, size_t n, double *dsum, int accumulate,
                         double *scratch, double *out)
{
    return ZSH_CK_OK(zsh_cuda_sumsq(dx, d, n, dsum, accumulate, scratch, NULL), "sumsq") &&
           zsh_ck_get(out, dsum, sizeof(*out));
}

ZSH_TEST(cuda_kernels, sumsq_equals_the_host_sum_within_its_rounding_bound)
{
    static const size_t lengths[] = {1, 1000, ZSH_CU_N};
    double *dsum, *scratch, host, dev, again, twice;
    size_t di, l, i, n;
    void *x, *dx;

    ZSH_CK_NEED_DEVICE();
    x       = malloc(ZSH_CU_N * 4);
    dx      = zsh_ck_dev_alloc(ZSH_CU_N * 4);
    dsum    = zsh_ck_dev_alloc(sizeof(double));
    scratch = zsh_ck_dev_alloc(ZSH_CUDA_SUMSQ_SCRATCH * sizeof(double));
    ZSH_ASSERT_TRUE((x != NULL) && (dx != NULL) && (dsum != NULL) && (scratch != NULL));
    for (di = 0; di < 3; di++) {
        zsh_dtype_t d = zsh_cu_dtypes[di];

        zsh_cu_fill(d, x, ZSH_CU_N, 77 + di);
        if (!zsh_ck_put(dx, x, ZSH_CU_N * zsh_cu_esize(d))) {
            break;
        }
        for (l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
            n    = lengths[l];
            host = 0.0;
            for (i = 0; i < n; i++) { /* as zsh_optim_sumsq(): in order, in double */
                host += (double)zsh_cu_load(d, x, i) * (double)zsh_cu_load(d, x, i);
            }
            if (!zsh_cu_sumsq(d, dx, n, dsum, 0, scratch, &dev) ||
                !zsh_cu_sumsq(d, dx, n, dsum, 0, scratch, &again) ||
                !zsh_cu_sumsq(d, dx, n, dsum, 1, scratch, &twice)) {
                break;
            }
            /* Both sums of n terms >= 0 are within (n - 1) 2^-53 of the exact one. */
            if (fabs(dev - host) > 2.0 * (double)n * 0x1p-53 * host) {
                zsh_test_fail(__FILE__, __LINE__, "dtype %d n=%zu: device %.17g, host %.17g: "
                              "further apart than 2 n 2^-53", (int)d, n, dev, host);
            }
            if ((n == 1) && (dev != host)) {
                zsh_test_fail(__FILE__, __LINE__, "dtype %d: one square is exact, got %.17g "
                              "for %.17g", (int)d, dev, host);
            }
            if ((memcmp(&dev, &again, sizeof(dev)) != 0) || (twice != dev + dev)) {
                zsh_test_fail(__FILE__, __LINE__, "dtype %d n=%zu: runs gave %.17g then %.17g "
                              "(not the same bits), accumulated %.17g (not the sum)", (int)d, n,
                              dev, again, twice);
            }
        }
    }
    if (ZSH_CK_OK(zsh_cuda_sumsq(dx, ZSH_FLOAT32, 0, dsum, 0, scratch, NULL), "sumsq n=0") &&
        zsh_ck_get(&dev, dsum, sizeof(dev))) {
        ZSH_EXPECT_TRUE(dev == 0.0);
    }
    zsh_ck_dev_free(scratch);
    zsh_ck_dev_free(dsum);
    zsh_ck_dev_free(dx);
    free(x);
}

/* The flag and the sum of squares over @dx after writing @x; -1 on failure. */
static int zsh_cu_flag(zsh_dtype_t d, const void *x, void *dx, int *dflag, int accumulate,
                       double *dsum, double *scratch, double *sum)
{
    int flag = -1;

    if (!zsh_ck_put(dx, x, ZSH_CU_N * zsh_cu_esize(d)) ||
        !ZSH_CK_OK(zsh_cuda_nonfinite(dx, d, ZSH_CU_N, dflag, accumulate, NULL), "nonfinite") ||
        !zsh_ck_get(&flag, dflag, sizeof(flag)) ||
        !zsh_cu_sumsq(d, dx, ZSH_CU_N, dsum, 0, scratch, sum)) {
        return -1;
    }
    return flag;
}

ZSH_TEST(cuda_kernels, nonfinite_flags_inf_nan_and_fp16_overflow_in_every_dtype)
{
    double *dsum, *scratch, sum;
    void *x, *dx;
    int *dflag;
    size_t di;

    ZSH_CK_NEED_DEVICE();
    x       = malloc(ZSH_CU_N * 4);
    dx      = zsh_ck_dev_alloc(ZSH_CU_N * 4);
    dflag   = zsh_ck_dev_alloc(sizeof(int));
    dsum    = zsh_ck_dev_alloc(sizeof(double));
    scratch = zsh_ck_dev_alloc(ZSH_CUDA_SUMSQ_SCRATCH * sizeof(double));
    ZSH_ASSERT_TRUE((x != NULL) && (dx != NULL) && (dflag != NULL) && (dsum != NULL) &&
                    (scratch != NULL));
    for (di = 0; di < 3; di++) {
        zsh_dtype_t d = zsh_cu_dtypes[di];

        zsh_cu_fill(d, x, ZSH_CU_N, 5 + di);
        ZSH_EXPECT_EQ(0, zsh_cu_flag(d, x, dx, dflag, 0, dsum, scratch, &sum));
        ZSH_EXPECT_TRUE(isfinite(sum));
        zsh_cu_store(d, x, ZSH_CU_N - 1, INFINITY); /* the last element: the grid's tail */
        ZSH_EXPECT_EQ(1, zsh_cu_flag(d, x, dx, dflag, 0, dsum, scratch, &sum));
        ZSH_EXPECT_TRUE(isinf(sum));
        zsh_cu_fill(d, x, ZSH_CU_N, 5 + di);
        zsh_cu_store(d, x, 0, NAN);
        ZSH_EXPECT_EQ(1, zsh_cu_flag(d, x, dx, dflag, 0, dsum, scratch, &sum));
        ZSH_EXPECT_TRUE(isnan(sum));
        /* A clean buffer after a flagged one: accumulating keeps the 1, a fresh check clears it. */
        zsh_cu_fill(d, x, ZSH_CU_N, 5 + di);
        ZSH_EXPECT_EQ(1, zsh_cu_flag(d, x, dx, dflag, 1, dsum, scratch, &sum));
        ZSH_EXPECT_EQ(0, zsh_cu_flag(d, x, dx, dflag, 0, dsum, scratch, &sum));
    }
    /* fp16 overflow: a scaled gradient past 65504 rounds to inf. */
    zsh_cu_fill(ZSH_FLOAT16, x, ZSH_CU_N, 11);
    zsh_cu_store(ZSH_FLOAT16, x, ZSH_CU_N / 2, 65520.0f);
    ZSH_EXPECT_EQ(0x7c00, ((uint16_t *)x)[ZSH_CU_N / 2]);
    ZSH_EXPECT_EQ(1, zsh_cu_flag(ZSH_FLOAT16, x, dx, dflag, 0, dsum, scratch, &sum));
    ZSH_EXPECT_TRUE(!isfinite(sum));
    zsh_ck_dev_free(scratch);
    zsh_ck_dev_free(dsum);
    zsh_ck_dev_free(dflag);
    zsh_ck_dev_free(dx);
    free(x);
}

ZSH_TEST(cuda_kernels, scale_and_conversions_match_the_host_bit_for_bit)
{
    float *f, *wide, *df;
    void *h, *got, *dh;
    uint64_t rng = 3;
    size_t di, i;
    uint32_t b;

    ZSH_CK_NEED_DEVICE();
    f    = malloc(ZSH_CU_N * 4);
    wide = malloc(ZSH_CU_N * 4);
    h    = malloc(ZSH_CU_N * 4);
    got  = malloc(ZSH_CU_N * 4);
    df = zsh_ck_dev_alloc(ZSH_CU_N * 4);
    dh = zsh_ck_dev_alloc(ZSH_CU_N * 4);
    ZSH_ASSERT_TRUE((f != NULL) && (wide != NULL) && (h != NULL) && (got != NULL) &&
                    (df != NULL) && (dh != NULL));
    /* Every fp32 class: random bits give NaNs with payloads, infs, subnormals. */
    for (i = 0; i < ZSH_CU_N; i++) {
        b    = (uint32_t)(zsh_ck_next(&rng) >> 32);
        f[i] = (i % 3 == 0) ? zsh_bits_float(b) : zsh_ck_float(&rng, -30, 20);
    }
    for (di = 1; (di < 3) && zsh_ck_put(df, f, ZSH_CU_N * 4); di++) {
        zsh_dtype_t d = zsh_cu_dtypes[di];

        for (i = 0; i < ZSH_CU_N; i++) {
            zsh_cu_store(d, h, i, f[i]);
        }
        if (ZSH_CK_OK(zsh_cuda_from_float(df, dh, d, ZSH_CU_N, NULL), "from_float") &&
            zsh_ck_get(got, dh, ZSH_CU_N * 2) && (memcmp(got, h, ZSH_CU_N * 2) != 0)) {
            zsh_test_fail(__FILE__, __LINE__, "dtype %d: fp32 rounded on the device differs "
                          "from core/half.h", (int)d);
        }
        /* Every 16-bit pattern, widened. */
        for (i = 0; i < 65536; i++) {
            ((uint16_t *)h)[i] = (uint16_t)i;
            wide[i]            = zsh_cu_load(d, h, i);
        }
        if (zsh_ck_put(dh, h, 65536 * 2) &&
            ZSH_CK_OK(zsh_cuda_to_float(dh, d, df, 65536, NULL), "to_float") &&
            zsh_ck_get(got, df, 65536 * 4) && (memcmp(got, wide, 65536 * 4) != 0)) {
            zsh_test_fail(__FILE__, __LINE__, "dtype %d: a 16-bit pattern widens to other bits "
                          "on the device", (int)d);
        }
    }
    for (di = 0; di < 3; di++) {
        zsh_dtype_t d = zsh_cu_dtypes[di];

        zsh_cu_fill(d, h, ZSH_CU_N, 21 + di);
        if (!zsh_ck_put(dh, h, ZSH_CU_N * zsh_cu_esize(d)) ||
            !ZSH_CK_OK(zsh_cuda_scale(dh, d, ZSH_CU_N, 0.37f, NULL), "scale") ||
            !zsh_ck_get(got, dh, ZSH_CU_N * zsh_cu_esize(d))) {
            break;
        }
        for (i = 0; i < ZSH_CU_N; i++) {
            zsh_cu_store(d, h, i, zsh_cu_load(d, h, i) * 0.37f);
        }
        if (memcmp(got, h, ZSH_CU_N * zsh_cu_esize(d)) != 0) {
            zsh_test_fail(__FILE__, __LINE__, "dtype %d: scaled on the device differs from the "
                          "host", (int)d);
        }
    }
    zsh_ck_dev_free(dh);
    zsh_ck_dev_free(df);
    free(got);
    free(h);
    free(wide);
    free(f);
}
