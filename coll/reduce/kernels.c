/*
 * Reduction kernels: one generated loop per (function, dtype, op), chosen
 * through a table of typed functions.
 *
 * Each loop is a plain element-wise for loop, so that gcc -O3 vectorizes it;
 * the op and the conversions are expressions inlined into the body, never
 * calls through a pointer per element. load, acc and acc_acc mark their
 * pointers restrict (@acc never overlaps @src). The stores do not, since
 * @dst may be exactly @src (or @acc, when A is T); gcc guards those loops
 * with a runtime overlap check, which an exact alias passes, so in-place
 * calls still take the vector loop.
 */
#include "reduce/kernels.h"

#include "core/dtype.h"
#include "core/half.h"

#include <stdint.h>

/*
 * The ops, on accumulation values. _U is the type arithmetic runs in: the
 * unsigned twin for integers, so SUM and PROD wrap as two's complement
 * without undefined behaviour, and the type itself for floats. a != a is
 * the NaN test (always false for integers), so MIN and MAX propagate NaN
 * whichever side it is on.
 */
#define ZSH_OP_SUM(_U, _a, _b)  ((_U)(_a) + (_U)(_b))
#define ZSH_OP_PROD(_U, _a, _b) ((_U)(_a) * (_U)(_b))
#define ZSH_OP_MIN(_U, _a, _b)  ((((_a) != (_a)) | ((_a) < (_b))) ? (_a) : (_b))
#define ZSH_OP_MAX(_U, _a, _b)  ((((_a) != (_a)) | ((_a) > (_b))) ? (_a) : (_b))

#define ZSH_SAME(_x) (_x)

typedef void zsh_reduce_fn_t(void *restrict acc, const void *restrict src, size_t count);
typedef void zsh_store_fn_t(void *dst, const void *acc, size_t count, int nranks);
typedef void zsh_acc_store_fn_t(void *dst, const void *acc, const void *src, size_t count,
                                int nranks);

/* The three loops that depend on the op, for one dtype _dt (element type _T,
 * accumulation type _A) and one op. */
#define ZSH_REDUCE_OP_LOOPS(_dt, _T, _A, _U, _load, _store, _opname, _OP) \
    static void zsh_reduce_acc_##_dt##_##_opname(void *restrict acc_v, \
                                                 const void *restrict src_v, size_t count) \
    { \
        _A *restrict acc = acc_v; \
        const _T *restrict src = src_v; \
        for (size_t i = 0; i < count; i++) { \
            _A a = acc[i], b = _load(src[i]); \
            acc[i] = (_A)_OP(_U, a, b); \
        } \
    } \
    static void zsh_reduce_acc_acc_##_dt##_##_opname(void *restrict acc_v, \
                                                     const void *restrict src_v, size_t count) \
    { \
        _A *restrict acc = acc_v; \
        const _A *restrict src = src_v; \
        for (size_t i = 0; i < count; i++) { \
            _A a = acc[i], b = src[i]; \
            acc[i] = (_A)_OP(_U, a, b); \
        } \
    } \
    static void zsh_reduce_acc_store_##_dt##_##_opname(void *dst_v, const void *acc_v, \
                                                       const void *src_v, size_t count, \
                                                       int nranks) \
    { \
        _T *dst = dst_v; \
        const _A *acc = acc_v; \
        const _T *src = src_v; \
        (void)nranks; \
        for (size_t i = 0; i < count; i++) { \
            _A a = acc[i], b = _load(src[i]); \
            dst[i] = _store((_A)_OP(_U, a, b)); \
        } \
    }

/*
 * Everything for one dtype: load, the plain and AVG stores, AVG's acc_store,
 * and the op loops. AVG divides in the accumulation type, so a half type is
 * rounded once, after the division.
 */
#define ZSH_REDUCE_DTYPE(_dt, _T, _A, _U, _load, _store) \
    static void zsh_reduce_load_##_dt(void *restrict acc_v, const void *restrict src_v, \
                                      size_t count) \
    { \
        _A *restrict acc = acc_v; \
        const _T *restrict src = src_v; \
        for (size_t i = 0; i < count; i++) { \
            acc[i] = _load(src[i]); \
        } \
    } \
    static void zsh_reduce_store_##_dt(void *dst_v, const void *acc_v, size_t count, int nranks) \
    { \
        _T *dst = dst_v; \
        const _A *acc = acc_v; \
        (void)nranks; \
        for (size_t i = 0; i < count; i++) { \
            dst[i] = _store(acc[i]); \
        } \
    } \
    static void zsh_reduce_store_avg_##_dt(void *dst_v, const void *acc_v, size_t count, \
                                           int nranks) \
    { \
        _T *dst = dst_v; \
        const _A *acc = acc_v; \
        for (size_t i = 0; i < count; i++) { \
            dst[i] = _store((_A)(acc[i] / nranks)); \
        } \
    } \
    static void zsh_reduce_acc_store_avg_##_dt(void *dst_v, const void *acc_v, \
                                               const void *src_v, size_t count, int nranks) \
    { \
        _T *dst = dst_v; \
        const _A *acc = acc_v; \
        const _T *src = src_v; \
        for (size_t i = 0; i < count; i++) { \
            dst[i] = _store((_A)((_A)ZSH_OP_SUM(_U, acc[i], _load(src[i])) / nranks)); \
        } \
    } \
    ZSH_REDUCE_OP_LOOPS(_dt, _T, _A, _U, _load, _store, sum, ZSH_OP_SUM) \
    ZSH_REDUCE_OP_LOOPS(_dt, _T, _A, _U, _load, _store, prod, ZSH_OP_PROD) \
    ZSH_REDUCE_OP_LOOPS(_dt, _T, _A, _U, _load, _store, min, ZSH_OP_MIN) \
    ZSH_REDUCE_OP_LOOPS(_dt, _T, _A, _U, _load, _store, max, ZSH_OP_MAX)

ZSH_REDUCE_DTYPE(int8, int8_t, int8_t, uint8_t, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(uint8, uint8_t, uint8_t, uint8_t, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(int32, int32_t, int32_t, uint32_t, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(uint32, uint32_t, uint32_t, uint32_t, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(int64, int64_t, int64_t, uint64_t, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(uint64, uint64_t, uint64_t, uint64_t, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(fp16, uint16_t, float, float, zsh_fp16_to_float, zsh_float_to_fp16)
ZSH_REDUCE_DTYPE(bf16, uint16_t, float, float, zsh_bf16_to_float, zsh_float_to_bf16)
ZSH_REDUCE_DTYPE(fp32, float, float, float, ZSH_SAME, ZSH_SAME)
ZSH_REDUCE_DTYPE(fp64, double, double, double, ZSH_SAME, ZSH_SAME)

/* AVG accumulates as SUM; only the stores tell them apart. */
typedef struct {
    zsh_reduce_fn_t    *load;
    zsh_reduce_fn_t    *acc[ZSH_OP_COUNT];
    zsh_reduce_fn_t    *acc_acc[ZSH_OP_COUNT];
    zsh_store_fn_t     *store;
    zsh_store_fn_t     *store_avg;
    zsh_acc_store_fn_t *acc_store[ZSH_OP_COUNT];
} zsh_reduce_kernels_t;

#define ZSH_REDUCE_KERNELS(_dt) \
    { \
        .load      = zsh_reduce_load_##_dt, \
        .acc       = {[ZSH_SUM] = zsh_reduce_acc_##_dt##_sum, \
                      [ZSH_PROD] = zsh_reduce_acc_##_dt##_prod, \
                      [ZSH_MIN] = zsh_reduce_acc_##_dt##_min, \
                      [ZSH_MAX] = zsh_reduce_acc_##_dt##_max, \
                      [ZSH_AVG] = zsh_reduce_acc_##_dt##_sum}, \
        .acc_acc   = {[ZSH_SUM] = zsh_reduce_acc_acc_##_dt##_sum, \
                      [ZSH_PROD] = zsh_reduce_acc_acc_##_dt##_prod, \
                      [ZSH_MIN] = zsh_reduce_acc_acc_##_dt##_min, \
                      [ZSH_MAX] = zsh_reduce_acc_acc_##_dt##_max, \
                      [ZSH_AVG] = zsh_reduce_acc_acc_##_dt##_sum}, \
        .store     = zsh_reduce_store_##_dt, \
        .store_avg = zsh_reduce_store_avg_##_dt, \
        .acc_store = {[ZSH_SUM] = zsh_reduce_acc_store_##_dt##_sum, \
                      [ZSH_PROD] = zsh_reduce_acc_store_##_dt##_prod, \
                      [ZSH_MIN] = zsh_reduce_acc_store_##_dt##_min, \
                      [ZSH_MAX] = zsh_reduce_acc_store_##_dt##_max, \
                      [ZSH_AVG] = zsh_reduce_acc_store_avg_##_dt}, \
    }

static const zsh_reduce_kernels_t zsh_reduce_kernels[ZSH_DTYPE_COUNT] = {
    [ZSH_INT8]     = ZSH_REDUCE_KERNELS(int8),
    [ZSH_UINT8]    = ZSH_REDUCE_KERNELS(uint8),
    [ZSH_INT32]    = ZSH_REDUCE_KERNELS(int32),
    [ZSH_UINT32]   = ZSH_REDUCE_KERNELS(uint32),
    [ZSH_INT64]    = ZSH_REDUCE_KERNELS(int64),
    [ZSH_UINT64]   = ZSH_REDUCE_KERNELS(uint64),
    [ZSH_FLOAT16]  = ZSH_REDUCE_KERNELS(fp16),
    [ZSH_BFLOAT16] = ZSH_REDUCE_KERNELS(bf16),
    [ZSH_FLOAT32]  = ZSH_REDUCE_KERNELS(fp32),
    [ZSH_FLOAT64]  = ZSH_REDUCE_KERNELS(fp64),
};

/* A bad rank count must not divide by zero (integer AVG would trap). */
static int zsh_reduce_divisor(int nranks)
{
    return (nranks > 0) ? nranks : 1;
}

void zsh_reduce_load(void *acc, const void *src, size_t count, zsh_dtype_t dtype)
{
    zsh_reduce_kernels[dtype].load(acc, src, count);
}

void zsh_reduce_acc(void *acc, const void *src, size_t count, zsh_dtype_t dtype, zsh_op_t op)
{
    zsh_reduce_kernels[dtype].acc[op](acc, src, count);
}

void zsh_reduce_acc_acc(void *acc, const void *src, size_t count, zsh_dtype_t dtype, zsh_op_t op)
{
    zsh_reduce_kernels[dtype].acc_acc[op](acc, src, count);
}

void zsh_reduce_store(void *dst, const void *acc, size_t count, zsh_dtype_t dtype, zsh_op_t op,
                      int nranks)
{
    const zsh_reduce_kernels_t *k = &zsh_reduce_kernels[dtype];

    ((op == ZSH_AVG) ? k->store_avg : k->store)(dst, acc, count, zsh_reduce_divisor(nranks));
}

void zsh_reduce_acc_store(void *dst, const void *acc, const void *src, size_t count,
                          zsh_dtype_t dtype, zsh_op_t op, int nranks)
{
    zsh_reduce_kernels[dtype].acc_store[op](dst, acc, src, count, zsh_reduce_divisor(nranks));
}
