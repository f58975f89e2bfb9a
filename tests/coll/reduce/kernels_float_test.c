/*
 * The floating types' semantics in the reduction kernels, case by case:
 * fp16 and bf16 accumulate in fp32 and round once at the store, NaN and inf
 * behave as IEEE arithmetic says on every path, and AVG divides at the store.
 */
#include "reduce/kernels.h"

#include "core/dtype.h"
#include "harness/zsh_test.h"
#include "kernels_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* 2048 + 1 + 1 in fp16 steps would stay 2048 (each +1 is a tie to even);
 * in fp32 it is 2050, rounded once. bf16 has the same at 256. */
static void expect_sum_rounds_once(zsh_dtype_t dt, float big, int line)
{
    uint16_t first = half_narrow(dt, big), one = half_narrow(dt, 1.0f), out = 0;
    float    acc, acc2;
    uint16_t expected = half_narrow(dt, big + 2.0f);

    zsh_reduce_load(&acc, &first, 1, dt);
    zsh_reduce_acc(&acc, &one, 1, dt, ZSH_SUM);
    zsh_reduce_acc(&acc, &one, 1, dt, ZSH_SUM);
    zsh_reduce_store(&out, &acc, 1, dt, ZSH_SUM, 3);
    if (out != expected) {
        zsh_test_fail(__FILE__, line, "%s %g + 1 + 1: expected 0x%04x, actual 0x%04x",
                      zsh_dtype_name(dt), big, expected, out);
    }
    zsh_reduce_load(&acc, &first, 1, dt);
    zsh_reduce_load(&acc2, &one, 1, dt);
    zsh_reduce_acc_acc(&acc, &acc2, 1, dt, ZSH_SUM);
    zsh_reduce_acc_store(&out, &acc, &one, 1, dt, ZSH_SUM, 3);
    if (out != expected) {
        zsh_test_fail(__FILE__, line, "%s %g + 1 + 1 via acc_store: expected 0x%04x, actual 0x%04x",
                      zsh_dtype_name(dt), big, expected, out);
    }
}

ZSH_TEST(kernels, fp16_sum_accumulates_in_fp32_and_rounds_once)
{
    expect_sum_rounds_once(ZSH_FLOAT16, 2048.0f, __LINE__);
}

ZSH_TEST(kernels, bf16_sum_accumulates_in_fp32_and_rounds_once)
{
    expect_sum_rounds_once(ZSH_BFLOAT16, 256.0f, __LINE__);
}

/* Put @v, as an fp64 value, into element @i of a buffer of @dt. */
static void put_float(void *buf, zsh_dtype_t dt, size_t i, double v)
{
    ref_t r = {0, v};

    ref_put(buf, dt, i, r);
}

static double get_float(const void *buf, zsh_dtype_t dt, size_t i)
{
    return ref_get(buf, dt, i).f;
}

static const zsh_dtype_t float_dtypes[] = {ZSH_FLOAT16, ZSH_BFLOAT16, ZSH_FLOAT32, ZSH_FLOAT64};

/*
 * acc = load(x) op y through all three paths (acc, acc_acc then store,
 * acc_store), for one pair; @expected NaN means any NaN.
 */
static void expect_pair(zsh_dtype_t dt, zsh_op_t op, double x, double y, double expected,
                        int line)
{
    double      xs[1], ys[1], accs[1], acc2s[1], outs[3];
    const char *path[3] = {"acc", "acc_acc", "acc_store"};

    put_float(xs, dt, 0, x);
    put_float(ys, dt, 0, y);
    zsh_reduce_load(accs, xs, 1, dt);
    zsh_reduce_acc(accs, ys, 1, dt, op);
    zsh_reduce_store(&outs[0], accs, 1, dt, op, 1);
    zsh_reduce_load(accs, xs, 1, dt);
    zsh_reduce_load(acc2s, ys, 1, dt);
    zsh_reduce_acc_acc(accs, acc2s, 1, dt, op);
    zsh_reduce_store(&outs[1], accs, 1, dt, op, 1);
    zsh_reduce_load(accs, xs, 1, dt);
    zsh_reduce_acc_store(&outs[2], accs, ys, 1, dt, op, 1);
    for (int p = 0; p < 3; p++) {
        double got = get_float(&outs[p], dt, 0);
        bool   ok  = isnan(expected) ? isnan(got) : (got == expected);

        if (!ok) {
            zsh_test_fail(__FILE__, line, "%s %s(%g, %g) via %s: expected %g, actual %g",
                          zsh_dtype_name(dt), zsh_op_name(op), x, y, path[p], expected, got);
        }
    }
}

ZSH_TEST(kernels, nan_propagates_through_min_max_sum_and_prod)
{
    static const zsh_op_t ops[] = {ZSH_SUM, ZSH_PROD, ZSH_MIN, ZSH_MAX, ZSH_AVG};

    for (size_t d = 0; d < 4; d++) {
        for (size_t o = 0; o < 5; o++) {
            expect_pair(float_dtypes[d], ops[o], NAN, 1.0, NAN, __LINE__);
            expect_pair(float_dtypes[d], ops[o], 1.0, NAN, NAN, __LINE__);
            expect_pair(float_dtypes[d], ops[o], NAN, NAN, NAN, __LINE__);
            expect_pair(float_dtypes[d], ops[o], -INFINITY, NAN, NAN, __LINE__);
            expect_pair(float_dtypes[d], ops[o], NAN, INFINITY, NAN, __LINE__);
        }
    }
}

ZSH_TEST(kernels, inf_behaves_as_in_ieee_arithmetic)
{
    for (size_t d = 0; d < 4; d++) {
        zsh_dtype_t dt = float_dtypes[d];

        expect_pair(dt, ZSH_SUM, INFINITY, -INFINITY, NAN, __LINE__);
        expect_pair(dt, ZSH_SUM, INFINITY, 1.0, INFINITY, __LINE__);
        expect_pair(dt, ZSH_PROD, INFINITY, -2.0, -INFINITY, __LINE__);
        expect_pair(dt, ZSH_PROD, INFINITY, 0.0, NAN, __LINE__);
        expect_pair(dt, ZSH_MAX, INFINITY, 3.0, INFINITY, __LINE__);
        expect_pair(dt, ZSH_MAX, 3.0, INFINITY, INFINITY, __LINE__);
        expect_pair(dt, ZSH_MAX, -INFINITY, 3.0, 3.0, __LINE__);
        expect_pair(dt, ZSH_MIN, -INFINITY, 3.0, -INFINITY, __LINE__);
        expect_pair(dt, ZSH_MIN, 3.0, INFINITY, 3.0, __LINE__);
        expect_pair(dt, ZSH_MIN, -INFINITY, INFINITY, -INFINITY, __LINE__);
    }
}

/* A NaN in one element leaves its neighbours alone, in vector-sized runs. */
ZSH_TEST(kernels, nan_stays_in_its_element)
{
    enum { n = 37 };
    double src[n], acc[n], out[n];

    for (size_t d = 0; d < 4; d++) {
        zsh_dtype_t dt = float_dtypes[d];

        for (size_t i = 0; i < n; i++) {
            put_float(src, dt, i, (i % 5 == 2) ? NAN : (double)i);
        }
        zsh_reduce_load(acc, src, n, dt);
        zsh_reduce_acc(acc, src, n, dt, ZSH_MAX);
        zsh_reduce_acc_store(out, acc, src, n, dt, ZSH_MIN, 1);
        for (size_t i = 0; i < n; i++) {
            double got = get_float(out, dt, i);
            bool   ok  = (i % 5 == 2) ? isnan(got) : (got == (double)i);

            if (!ok) {
                zsh_test_fail(__FILE__, __LINE__, "%s index %zu: got %g", zsh_dtype_name(dt), i,
                              got);
                break;
            }
        }
    }
}

ZSH_TEST(kernels, avg_divides_by_nranks_at_store)
{
    for (size_t d = 0; d < 4; d++) {
        zsh_dtype_t dt = float_dtypes[d];
        double      in[2], acc[2], out[2];

        /* acc holds 1 + 2 + 3 + 6 = 12; stored over 4 ranks: 3 */
        put_float(in, dt, 0, 12.0);
        put_float(in, dt, 1, 1.0);
        zsh_reduce_load(acc, in, 2, dt);
        zsh_reduce_store(out, acc, 2, dt, ZSH_AVG, 4);
        ZSH_EXPECT_TRUE(get_float(out, dt, 0) == 3.0);
        ZSH_EXPECT_TRUE(get_float(out, dt, 1) == 0.25);
        /* 10 accumulated + 2 arriving, over 4 ranks: 3; the source stays put */
        put_float(in, dt, 0, 2.0);
        put_float(acc, zsh_dtype_acc(dt), 0, 10.0);
        zsh_reduce_acc_store(out, acc, in, 1, dt, ZSH_AVG, 4);
        if (get_float(out, dt, 0) != 3.0) {
            zsh_test_fail(__FILE__, __LINE__, "%s avg (10 + 2) / 4: got %g", zsh_dtype_name(dt),
                          get_float(out, dt, 0));
        }
        /* SUM with the same nranks does not divide */
        zsh_reduce_acc_store(out, acc, in, 1, dt, ZSH_SUM, 4);
        ZSH_EXPECT_TRUE(get_float(out, dt, 0) == 12.0);
    }
}

/* fp16 has 2048 and 2052 but not 2049..2051. 6153 / 3 = 2051 rounds to 2052;
 * rounding the sum to fp16 first (6152) would give 2050. */
ZSH_TEST(kernels, fp16_avg_divides_in_fp32_then_rounds)
{
    float    acc = 6147.0f;
    uint16_t out = 0;

    zsh_reduce_store(&out, &acc, 1, ZSH_FLOAT16, ZSH_AVG, 3);
    ZSH_EXPECT_EQ(0x6800, out);
    acc = 6153.0f;   /* 2051 -> 2052 */
    zsh_reduce_store(&out, &acc, 1, ZSH_FLOAT16, ZSH_AVG, 3);
    ZSH_EXPECT_EQ(0x6802, out);
}
