/*
 * Reduction kernels on every dtype, op and length, against a scalar reference
 * written here and in kernels_ref.h and half_ref.h, independently of the
 * kernels: halves are decoded with ldexp and encoded with nearbyint, floats
 * are computed in double and rounded to the accumulation type after every step
 * (exact for the +, *, / of fp32 values), and integers are computed in
 * uint64_t and truncated to their width. The single cases that pin down the
 * floating and integer semantics are in kernels_float_test.c and
 * kernels_int_test.c.
 */
#include "reduce/kernels.h"

#include "core/dtype.h"
#include "harness/zsh_test.h"
#include "kernels_ref.h"

#include <math.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const size_t kernels_lengths[] = {1, 3, 17, 1031};

/* ---- reference values ---------------------------------------------------- */

static bool dtype_is_signed(zsh_dtype_t dtype)
{
    return (dtype == ZSH_INT8) || (dtype == ZSH_INT32) || (dtype == ZSH_INT64);
}

/* Truncate to the width of @dtype and extend back, as the kernels wrap. */
static uint64_t ref_wrap(zsh_dtype_t dtype, uint64_t u)
{
    int bits = 8 * (int)zsh_dtype_size(dtype);

    if (bits == 64) {
        return u;
    }
    u &= (UINT64_C(1) << bits) - 1u;
    if (dtype_is_signed(dtype) && (u >> (bits - 1))) {
        u |= ~((UINT64_C(1) << bits) - 1u);
    }
    return u;
}

static double ref_round_acc(zsh_dtype_t acc_dtype, double f)
{
    return (acc_dtype == ZSH_FLOAT32) ? (double)(float)f : f;
}

static bool ref_less(zsh_dtype_t dtype, ref_t a, ref_t b)
{
    if (zsh_dtype_is_float(dtype)) {
        return a.f < b.f;
    }
    return dtype_is_signed(dtype) ? ((int64_t)a.u < (int64_t)b.u) : (a.u < b.u);
}

/* a op b in the accumulation type @acc_dtype; AVG accumulates as SUM. */
static ref_t ref_op(zsh_dtype_t acc_dtype, zsh_op_t op, ref_t a, ref_t b)
{
    ref_t r = {0, 0.0};

    if ((op == ZSH_MIN) || (op == ZSH_MAX)) {
        if (isnan(a.f) || isnan(b.f)) {
            r.f = NAN;
            return r;
        }
        return (ref_less(acc_dtype, a, b) == (op == ZSH_MIN)) ? a : b;
    }
    if (op == ZSH_PROD) {
        r.u = ref_wrap(acc_dtype, a.u * b.u);
        r.f = ref_round_acc(acc_dtype, a.f * b.f);
    } else {
        r.u = ref_wrap(acc_dtype, a.u + b.u);
        r.f = ref_round_acc(acc_dtype, a.f + b.f);
    }
    return r;
}

/* What a store does before converting: divide by @nranks for AVG. */
static ref_t ref_finish(zsh_dtype_t acc_dtype, zsh_op_t op, ref_t a, int nranks)
{
    if (op != ZSH_AVG) {
        return a;
    }
    if (dtype_is_signed(acc_dtype)) {
        a.u = ref_wrap(acc_dtype, (uint64_t)((int64_t)a.u / nranks));
    } else {
        a.u = a.u / (uint64_t)nranks;
    }
    a.f = ref_round_acc(acc_dtype, a.f / nranks);
    return a;
}

static void ref_format(char *out, size_t len, zsh_dtype_t dtype, const void *buf, size_t i)
{
    ref_t v = ref_get(buf, dtype, i);

    if ((dtype == ZSH_FLOAT16) || (dtype == ZSH_BFLOAT16)) {
        snprintf(out, len, "%.9g (0x%04x)", v.f, ((const uint16_t *)buf)[i]);
    } else if (zsh_dtype_is_float(dtype)) {
        snprintf(out, len, "%.17g", v.f);
    } else if (dtype_is_signed(dtype)) {
        snprintf(out, len, "%" PRId64, (int64_t)v.u);
    } else {
        snprintf(out, len, "%" PRIu64, v.u);
    }
}

/* Equal values, the same sign of zero, or NaN for NaN. */
static bool ref_same(zsh_dtype_t dtype, ref_t e, ref_t a)
{
    if (!zsh_dtype_is_float(dtype)) {
        return e.u == a.u;
    }
    if (isnan(e.f) || isnan(a.f)) {
        return isnan(e.f) && isnan(a.f);
    }
    return (e.f == a.f) && (!signbit(e.f) == !signbit(a.f));
}

/* ---- the cases ------------------------------------------------------------ */

/* One dtype, op and length, with inputs of dtype (a..d) and two accumulators. */
typedef struct {
    zsh_dtype_t dtype, acc_dtype;
    zsh_op_t    op;
    size_t      count;
    int         nranks;
    void       *a, *b, *c, *d;
    void       *acc, *acc2;
    void       *expected, *out;
} kcase_t;

/* Compare @count elements of @buf_dtype; report only the first mismatch. */
static bool kcase_check(const kcase_t *k, const char *what, zsh_dtype_t buf_dtype,
                        const void *expected, const void *actual)
{
    char e[64], a[64];

    for (size_t i = 0; i < k->count; i++) {
        if (!ref_same(buf_dtype, ref_get(expected, buf_dtype, i), ref_get(actual, buf_dtype, i))) {
            ref_format(e, sizeof(e), buf_dtype, expected, i);
            ref_format(a, sizeof(a), buf_dtype, actual, i);
            zsh_test_fail(__FILE__, __LINE__,
                          "%s %s %s, count %zu, nranks %d: index %zu expected %s, actual %s",
                          what, zsh_dtype_name(k->dtype), zsh_op_name(k->op), k->count,
                          k->nranks, i, e, a);
            return false;
        }
    }
    return true;
}

static uint64_t kernels_rand(uint64_t *state)
{
    *state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
    return *state >> 11;
}

/*
 * Integers: full-width random bits, with the first elements set to pairs
 * that wrap (100 + 100 in int8, INT32_MAX + 1, ...). Floats: small integers,
 * so every sum and product is exact in fp32 and only stores round.
 */
static void kcase_fill(const kcase_t *k, void *buf, int which, uint64_t seed)
{
    static const int64_t edges[4][3] = {
        {100, 100, 3}, {INT64_MAX, 1, -1}, {INT64_MIN, -1, 2}, {-128, 127, -1},
    };
    uint64_t state = seed;
    int      bits  = 8 * (int)zsh_dtype_size(k->dtype);
    ref_t    v     = {0, 0.0};

    for (size_t i = 0; i < k->count; i++) {
        if (zsh_dtype_is_float(k->dtype)) {
            v.f = (double)(int)(kernels_rand(&state) % 17) - 8.0;
        } else if ((i < 4) && (which < 3)) {
            /* the extremes of this width: shift INT64_MAX/MIN down to it */
            int64_t x = edges[i][which];
            v.u = ((x == INT64_MAX) || (x == INT64_MIN)) ? (uint64_t)(x >> (64 - bits)) :
                                                            (uint64_t)x;
        } else {
            v.u = kernels_rand(&state) ^ (kernels_rand(&state) << 40);
        }
        ref_put(buf, k->dtype, i, v);
    }
}

typedef void kcase_fn_t(kcase_t *k);

/* Run @fn on every dtype x op x length, on buffers offset one element from
 * their allocation so the vector loops also start unaligned. */
static void kernels_for_each_case(kcase_fn_t *fn)
{
    for (int dt = 0; dt < ZSH_DTYPE_COUNT; dt++) {
        for (int op = 0; op < ZSH_OP_COUNT; op++) {
            for (size_t l = 0; l < sizeof(kernels_lengths) / sizeof(kernels_lengths[0]); l++) {
                kcase_t k = {.dtype = (zsh_dtype_t)dt, .acc_dtype = zsh_dtype_acc(dt),
                             .op = (zsh_op_t)op, .count = kernels_lengths[l], .nranks = 3};
                size_t  sz = zsh_dtype_size(k.dtype), asz = zsh_dtype_size(k.acc_dtype);
                char   *mem[8];
                void  **bufs[8] = {&k.a, &k.b, &k.c, &k.d, &k.acc, &k.acc2, &k.expected, &k.out};

                for (int j = 0; j < 8; j++) {
                    mem[j]   = malloc((k.count + 1) * 8);
                    *bufs[j] = mem[j] + ((j < 4) ? sz : asz);
                }
                kcase_fill(&k, k.a, 0, 1 + (uint64_t)l);
                kcase_fill(&k, k.b, 1, 2 + (uint64_t)l);
                kcase_fill(&k, k.c, 2, 3 + (uint64_t)l);
                kcase_fill(&k, k.d, 3, 4 + (uint64_t)l);
                fn(&k);
                for (int j = 0; j < 8; j++) {
                    free(mem[j]);
                }
            }
        }
    }
}

/* acc = load(a) op load(b) op load(c): the state the store tests start from. */
static ref_t kcase_ref_acc(const kcase_t *k, size_t i)
{
    ref_t r = ref_op(k->acc_dtype, k->op, ref_get(k->a, k->dtype, i), ref_get(k->b, k->dtype, i));

    return ref_op(k->acc_dtype, k->op, r, ref_get(k->c, k->dtype, i));
}

static void kcase_accumulate(const kcase_t *k)
{
    zsh_reduce_load(k->acc, k->a, k->count, k->dtype);
    zsh_reduce_acc(k->acc, k->b, k->count, k->dtype, k->op);
    zsh_reduce_load(k->acc2, k->c, k->count, k->dtype);
    zsh_reduce_acc_acc(k->acc, k->acc2, k->count, k->dtype, k->op);
}

static void kcase_load(kcase_t *k)
{
    zsh_reduce_load(k->acc, k->a, k->count, k->dtype);
    for (size_t i = 0; i < k->count; i++) {
        ref_put(k->expected, k->acc_dtype, i, ref_get(k->a, k->dtype, i));
    }
    kcase_check(k, "load", k->acc_dtype, k->expected, k->acc);
}

ZSH_TEST(kernels, load_widens_every_dtype_exactly)
{
    kernels_for_each_case(kcase_load);
}

static void kcase_acc(kcase_t *k)
{
    zsh_reduce_load(k->acc, k->a, k->count, k->dtype);
    zsh_reduce_acc(k->acc, k->b, k->count, k->dtype, k->op);
    for (size_t i = 0; i < k->count; i++) {
        ref_put(k->expected, k->acc_dtype, i,
                ref_op(k->acc_dtype, k->op, ref_get(k->a, k->dtype, i),
                       ref_get(k->b, k->dtype, i)));
    }
    kcase_check(k, "acc", k->acc_dtype, k->expected, k->acc);
}

ZSH_TEST(kernels, acc_matches_reference_for_every_dtype_op_and_length)
{
    kernels_for_each_case(kcase_acc);
}

static void kcase_acc_acc(kcase_t *k)
{
    kcase_accumulate(k);
    for (size_t i = 0; i < k->count; i++) {
        ref_put(k->expected, k->acc_dtype, i, kcase_ref_acc(k, i));
    }
    kcase_check(k, "acc_acc", k->acc_dtype, k->expected, k->acc);
}

ZSH_TEST(kernels, acc_acc_matches_reference_for_every_dtype_op_and_length)
{
    kernels_for_each_case(kcase_acc_acc);
}

static void kcase_store(kcase_t *k)
{
    kcase_accumulate(k);
    zsh_reduce_store(k->out, k->acc, k->count, k->dtype, k->op, k->nranks);
    for (size_t i = 0; i < k->count; i++) {
        ref_put(k->expected, k->dtype, i,
                ref_finish(k->acc_dtype, k->op, kcase_ref_acc(k, i), k->nranks));
    }
    kcase_check(k, "store", k->dtype, k->expected, k->out);
}

ZSH_TEST(kernels, store_matches_reference_for_every_dtype_op_and_length)
{
    kernels_for_each_case(kcase_store);
}

static void kcase_expect_acc_store(const kcase_t *k)
{
    for (size_t i = 0; i < k->count; i++) {
        ref_t r = ref_op(k->acc_dtype, k->op, kcase_ref_acc(k, i), ref_get(k->d, k->dtype, i));

        ref_put(k->expected, k->dtype, i, ref_finish(k->acc_dtype, k->op, r, k->nranks));
    }
}

static void kcase_acc_store(kcase_t *k)
{
    kcase_accumulate(k);
    zsh_reduce_acc_store(k->out, k->acc, k->d, k->count, k->dtype, k->op, k->nranks);
    kcase_expect_acc_store(k);
    kcase_check(k, "acc_store", k->dtype, k->expected, k->out);
}

ZSH_TEST(kernels, acc_store_matches_reference_for_every_dtype_op_and_length)
{
    kernels_for_each_case(kcase_acc_store);
}

static void kcase_acc_store_in_place(kcase_t *k)
{
    kcase_accumulate(k);
    kcase_expect_acc_store(k);
    zsh_reduce_acc_store(k->d, k->acc, k->d, k->count, k->dtype, k->op, k->nranks);
    kcase_check(k, "acc_store in place", k->dtype, k->expected, k->d);
}

ZSH_TEST(kernels, acc_store_in_place_matches_reference)
{
    kernels_for_each_case(kcase_acc_store_in_place);
}

/* ---- count 0 ------------------------------------------------------------- */

ZSH_TEST(kernels, count_zero_writes_nothing)
{
    unsigned char src[16], acc[16], dst[16], poison[16];

    memset(src, 0x5a, sizeof(src));
    memset(poison, 0xa5, sizeof(poison));
    for (int dt = 0; dt < ZSH_DTYPE_COUNT; dt++) {
        for (int op = 0; op < ZSH_OP_COUNT; op++) {
            memcpy(acc, poison, sizeof(acc));
            memcpy(dst, poison, sizeof(dst));
            zsh_reduce_load(acc, src, 0, dt);
            zsh_reduce_acc(acc, src, 0, dt, op);
            zsh_reduce_acc_acc(acc, src, 0, dt, op);
            zsh_reduce_store(dst, acc, 0, dt, op, 2);
            zsh_reduce_acc_store(dst, acc, src, 0, dt, op, 2);
            zsh_reduce_acc_store(src, acc, src, 0, dt, op, 2);
            if (memcmp(acc, poison, sizeof(acc)) || memcmp(dst, poison, sizeof(dst))) {
                zsh_test_fail(__FILE__, __LINE__, "%s %s: count 0 wrote to its output",
                              zsh_dtype_name(dt), zsh_op_name(op));
            }
        }
    }
}

/* Every kernel with count 0 and NULL buffers. */
static void kernels_count_zero_on_null(void)
{
    for (int dt = 0; dt < ZSH_DTYPE_COUNT; dt++) {
        for (int op = 0; op < ZSH_OP_COUNT; op++) {
            zsh_reduce_load(NULL, NULL, 0, dt);
            zsh_reduce_acc(NULL, NULL, 0, dt, op);
            zsh_reduce_acc_acc(NULL, NULL, 0, dt, op);
            zsh_reduce_store(NULL, NULL, 0, dt, op, 2);
            zsh_reduce_acc_store(NULL, NULL, NULL, 0, dt, op, 2);
        }
    }
}

static sigjmp_buf kernels_null_jump;

static void kernels_null_fault(int sig)
{
    siglongjmp(kernels_null_jump, sig);
}

/* A kernel that touches a NULL buffer faults: the fault comes back here as
 * this test's failure, instead of ending the run. */
ZSH_TEST(kernels, count_zero_accepts_null_buffers)
{
    struct sigaction catch_fault = {.sa_handler = kernels_null_fault}, was_segv, was_bus;
    int sig;

    sigemptyset(&catch_fault.sa_mask);
    ZSH_ASSERT_TRUE(sigaction(SIGSEGV, &catch_fault, &was_segv) == 0);
    ZSH_ASSERT_TRUE(sigaction(SIGBUS, &catch_fault, &was_bus) == 0);
    sig = sigsetjmp(kernels_null_jump, 1);
    if (sig == 0) {
        kernels_count_zero_on_null();
    }
    sigaction(SIGBUS, &was_bus, NULL);
    sigaction(SIGSEGV, &was_segv, NULL);
    if (sig != 0) {
        zsh_test_fail(__FILE__, __LINE__, "a kernel with count 0 touched a NULL buffer: "
                      "signal %d (%s)", sig, strsignal(sig));
    }
}
