/*
 * The quantization kernels (quant.h), one body built at three widths.
 *
 * The body is always-inline C that gcc vectorizes; each width is a set of
 * entry points carrying a target attribute (AVX2, x86-64-v4) or, for the
 * scalar reference, the vectorizer turned off. A block is quantized in two
 * passes over data still in L1: its largest magnitude, then its levels, so
 * memory sees the fp32 run read once and the levels written once.
 *
 * The largest magnitude is an integer maximum over the bits with the sign
 * cleared: for non-negative floats the integer order is the float order,
 * and NaN and the infinities sort above every finite value, so the one
 * reduction (which gcc vectorizes without fast-math, unlike a float max)
 * also says whether the block is finite. The level is the RNE integer of
 * x * inv, found by adding and subtracting 1.5 * 2^23, exact for |x * inv|
 * below 2^22; here it is at most 127 * (1 + 2^-22), so never needs a clamp.
 */
#include "quant/quant.h"

#include <stdint.h>
#include <string.h>

#define ZSH_Q_INLINE static inline __attribute__((always_inline))

#define ZSH_Q_ROUNDER 0x1.8p23f
#define ZSH_Q_INF_BITS 0x7f800000u

typedef uint32_t zsh_q_u32_alias __attribute__((may_alias));

ZSH_Q_INLINE uint32_t zsh_q_absmax_bits(const float *x, size_t n)
{
    const zsh_q_u32_alias *b = (const zsh_q_u32_alias *)x;
    uint32_t m = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        uint32_t v = b[i] & 0x7fffffffu;
        m = (v > m) ? v : m;
    }
    return m;
}

ZSH_Q_INLINE float zsh_q_level(float x, float inv)
{
    return ((x * inv) + ZSH_Q_ROUNDER) - ZSH_Q_ROUNDER;
}

/* The scale and inverse of a block whose bits of largest magnitude are
 * @mbits, for @levels; false (scale set) where the block is not quantized. */
ZSH_Q_INLINE int zsh_q_scale(uint32_t mbits, float levels, float *scale, float *inv,
                             size_t *nonfinite)
{
    float m;

    if (mbits >= ZSH_Q_INF_BITS) {
        *scale = __builtin_nanf("");
        (*nonfinite)++;
        return 0;
    }
    memcpy(&m, &mbits, sizeof(m));
    if (m < ZSH_QUANT_TINY) {
        *scale = 0.0f;
        return 0;
    }
    *scale = m / levels;
    *inv   = levels / m;
    return 1;
}

ZSH_Q_INLINE void zsh_q8_block(const float *restrict x, size_t n, float inv,
                               int8_t *restrict q)
{
    size_t i;

    for (i = 0; i < n; i++) {
        q[i] = (int8_t)(int32_t)zsh_q_level(x[i], inv);
    }
}

ZSH_Q_INLINE void zsh_q4_block(const float *restrict x, size_t n, float inv,
                               uint8_t *restrict q)
{
    size_t j, pairs = n / 2;

    for (j = 0; j < pairs; j++) {
        int32_t lo = (int32_t)zsh_q_level(x[2 * j], inv);
        int32_t hi = (int32_t)zsh_q_level(x[2 * j + 1], inv);
        q[j] = (uint8_t)(((uint32_t)lo & 0xfu) | (((uint32_t)hi & 0xfu) << 4));
    }
    if ((n & 1) != 0) {
        q[pairs] = (uint8_t)((int32_t)zsh_q_level(x[n - 1], inv) & 0xf);
    }
}

ZSH_Q_INLINE size_t zsh_q_quantize(const float *restrict x, size_t n, size_t block, int bits,
                                   void *restrict qv, float *restrict scales)
{
    uint8_t *q        = qv;
    float    levels   = (bits == 4) ? 7.0f : 127.0f;
    size_t   nonfinite = 0, off, k = 0;

    for (off = 0; off < n; off += block, k++) {
        size_t len = (n - off < block) ? (n - off) : block;
        size_t qlen = (bits == 4) ? (len + 1) / 2 : len;
        float  inv  = 0.0f;

        if (!zsh_q_scale(zsh_q_absmax_bits(x + off, len), levels, &scales[k], &inv,
                         &nonfinite)) {
            memset(q, 0, qlen);
        } else if (bits == 4) {
            zsh_q4_block(x + off, len, inv, q);
        } else {
            zsh_q8_block(x + off, len, inv, (int8_t *)q);
        }
        q += qlen;
    }
    return nonfinite;
}

/* int4 levels: the low nibble sign-extended by shifting it to the top of a
 * byte and back, the high one by an arithmetic shift of the signed byte. */
ZSH_Q_INLINE float zsh_q4_lo(uint8_t b)
{
    return (float)((int8_t)(uint8_t)(b << 4) >> 4);
}

ZSH_Q_INLINE float zsh_q4_hi(uint8_t b)
{
    return (float)((int8_t)b >> 4);
}

ZSH_Q_INLINE void zsh_q_dequantize(const void *restrict qv, const float *restrict scales,
                                   size_t n, size_t block, int bits, float *restrict out,
                                   int add)
{
    const uint8_t *q = qv;
    size_t off, i, k = 0;

    for (off = 0; off < n; off += block, k++) {
        size_t len = (n - off < block) ? (n - off) : block;
        float  s   = scales[k];
        float *o   = out + off;

        if (bits == 4) {
            size_t pairs = len / 2;
            for (i = 0; i < pairs; i++) {
                float lo = zsh_q4_lo(q[i]) * s, hi = zsh_q4_hi(q[i]) * s;
                o[2 * i]     = add ? o[2 * i] + lo : lo;
                o[2 * i + 1] = add ? o[2 * i + 1] + hi : hi;
            }
            if ((len & 1) != 0) {
                float lo = zsh_q4_lo(q[pairs]) * s;
                o[len - 1] = add ? o[len - 1] + lo : lo;
            }
            q += (len + 1) / 2;
        } else {
            const int8_t *q8 = (const int8_t *)q;
            for (i = 0; i < len; i++) {
                float v = (float)q8[i] * s;
                o[i] = add ? o[i] + v : v;
            }
            q += len;
        }
    }
}

/* One width's entry points: _attr is its target (or the scalar's
 * optimize) attribute. */
#define ZSH_Q_WIDTH(_w, _attr) \
    _attr static size_t zsh_q_quantize_##_w(const float *x, size_t n, size_t block, int bits, \
                                            void *q, float *scales) \
    { \
        return zsh_q_quantize(x, n, block, bits, q, scales); \
    } \
    _attr static void zsh_q_dequantize_##_w(const void *q, const float *scales, size_t n, \
                                            size_t block, int bits, float *out) \
    { \
        zsh_q_dequantize(q, scales, n, block, bits, out, 0); \
    } \
    _attr static void zsh_q_dequantize_add_##_w(const void *q, const float *scales, size_t n, \
                                                size_t block, int bits, float *acc) \
    { \
        zsh_q_dequantize(q, scales, n, block, bits, acc, 1); \
    }

/* The scalar reference with GCC's vectorizer off, so that it measures one
 * element at a time; clang has no optimize attribute (and builds no other
 * width here). */
#if defined(__GNUC__) && !defined(__clang__)
#define ZSH_Q_SCALAR_ATTR __attribute__((optimize("no-tree-vectorize")))
#else
#define ZSH_Q_SCALAR_ATTR
#endif
ZSH_Q_WIDTH(scalar, ZSH_Q_SCALAR_ATTR)

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define ZSH_Q_X86 1
ZSH_Q_WIDTH(avx2, __attribute__((target("avx2"))))
ZSH_Q_WIDTH(avx512, __attribute__((target("arch=x86-64-v4"))))
#endif

static const zsh_quant_kernels_t zsh_q_tables[ZSH_QUANT_NWIDTHS] = {
    [ZSH_QUANT_SCALAR] = {"scalar", zsh_q_quantize_scalar, zsh_q_dequantize_scalar,
                          zsh_q_dequantize_add_scalar},
#ifdef ZSH_Q_X86
    [ZSH_QUANT_AVX2]   = {"avx2", zsh_q_quantize_avx2, zsh_q_dequantize_avx2,
                          zsh_q_dequantize_add_avx2},
    [ZSH_QUANT_AVX512] = {"avx512", zsh_q_quantize_avx512, zsh_q_dequantize_avx512,
                          zsh_q_dequantize_add_avx512},
#endif
};

static int zsh_q_cpu_has(zsh_quant_width_t width)
{
#ifdef ZSH_Q_X86
    __builtin_cpu_init();
    if (width == ZSH_QUANT_AVX2) {
        return __builtin_cpu_supports("avx2");
    }
    if (width == ZSH_QUANT_AVX512) {
        /* x86-64-v4: F, BW, DQ, VL (and CD) */
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    }
#endif
    return width == ZSH_QUANT_SCALAR;
}

const zsh_quant_kernels_t *zsh_quant_kernels(zsh_quant_width_t width)
{
    if (((unsigned)width >= ZSH_QUANT_NWIDTHS) || (zsh_q_tables[width].name == NULL) ||
        !zsh_q_cpu_has(width)) {
        return NULL;
    }
    return &zsh_q_tables[width];
}

const zsh_quant_kernels_t *zsh_quant_best(void)
{
    static const zsh_quant_kernels_t *best;
    const zsh_quant_kernels_t *k = __atomic_load_n(&best, __ATOMIC_ACQUIRE);
    int w;

    if (k == NULL) {
        for (w = ZSH_QUANT_NWIDTHS - 1; (k == NULL) && (w >= 0); w--) {
            k = zsh_quant_kernels((zsh_quant_width_t)w);
        }
        __atomic_store_n(&best, k, __ATOMIC_RELEASE);
    }
    return k;
}
