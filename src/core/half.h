/*
 * IEEE binary16 (fp16) and bfloat16 conversions to and from fp32.
 *
 * The x86-64 baseline has no half-precision instructions (F16C is optional),
 * and _Float16 conversions lower to libgcc calls, which stop a loop from
 * vectorizing. So these work on the bits: integer arithmetic, at most one
 * fp32 multiply or add, and selects that compile to blends; no tables, no
 * calls, no branches. A loop that converts an array with them auto-vectorizes.
 *
 * Widening is exact (a NaN keeps its bits). Narrowing rounds to nearest even
 * (the fp32 add relies on the default rounding mode; flush-to-zero does not
 * matter), overflows to +/-inf, keeps signed zero and subnormals, and turns a
 * NaN into a quiet NaN of the same sign.
 */
#ifndef ZSH_CORE_HALF_H_
#define ZSH_CORE_HALF_H_

#include <stdint.h>
#include <string.h>

/* The device kernels (zero/optim/rule/cuda) convert with these same functions,
 * so host and device give the same bits. */
#ifdef __CUDACC__
#define ZSH_HALF_FN static __host__ __device__ __forceinline__
#else
#define ZSH_HALF_FN static inline
#endif

ZSH_HALF_FN uint32_t zsh_float_bits(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return u;
}

ZSH_HALF_FN float zsh_bits_float(uint32_t u)
{
    float f;

    memcpy(&f, &u, sizeof(f));
    return f;
}

/* All-ones where @cond holds, else zero: selects written as masks stay
 * branch-free. A ?: whose arm does fp32 arithmetic can become a branch around
 * it, and gcc will not if-convert a trapping FP op back, so the loop would
 * not vectorize. */
ZSH_HALF_FN uint32_t zsh_half_mask(int cond)
{
    return 0u - (uint32_t)(cond != 0);
}

ZSH_HALF_FN float zsh_fp16_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t mag  = h & 0x7fffu;
    /* Normal: rebias the exponent (15 -> 127); inf and NaN need 255. */
    uint32_t wide = (mag << 13) + ((127u - 15u) << 23) +
                    (zsh_half_mask(mag >= 0x7c00u) & ((127u - 15u) << 23));
    /* Subnormal or zero: mag * 2^-24, exact in fp32 and never subnormal
     * there, so no slow microcode assist. */
    uint32_t tiny    = zsh_float_bits((float)(int32_t)mag * 0x1p-24f);
    uint32_t is_tiny = zsh_half_mask(mag < 0x0400u);

    return zsh_bits_float(sign | (tiny & is_tiny) | (wide & ~is_tiny));
}

ZSH_HALF_FN uint16_t zsh_float_to_fp16(float f)
{
    uint32_t bits = zsh_float_bits(f);
    uint32_t sign = (bits >> 16) & 0x8000u;
    uint32_t mag  = bits & 0x7fffffffu;
    /* fp16 keeps 11 significant bits in binade 2^e, and steps of 2^-24 below
     * 2^-14. Adding magic = 2^(e+13), e clamped to [-14, 16], leaves the sum
     * with exactly that step, so the FPU rounds |f| to nearest even, and the
     * sum's low bits count the steps: the significand with its leading 1,
     * which carries into the exponent field when rounding leaves the binade.
     * From 2^16 up, and for inf and NaN, the count only needs to be large. */
    uint32_t exp   = mag >> 23;
    uint32_t e     = (exp < 127u - 14u) ? 127u - 14u : (exp > 127u + 16u) ? 127u + 16u : exp;
    uint32_t magic = (e + 13u) << 23;
    uint32_t steps = zsh_float_bits(zsh_bits_float(mag) + zsh_bits_float(magic)) - magic;
    uint32_t h     = ((e - (127u - 14u)) << 10) + steps;
    uint32_t finite = (h > 0x7c00u) ? 0x7c00u : h;
    /* NaN: set the quiet bit and keep the top of the payload. */
    uint32_t nan = zsh_half_mask(mag > 0x7f800000u) & (0x0200u | ((mag >> 13) & 0x03ffu));

    return (uint16_t)(sign | finite | nan);
}

ZSH_HALF_FN float zsh_bf16_to_float(uint16_t h)
{
    return zsh_bits_float((uint32_t)h << 16);
}

ZSH_HALF_FN uint16_t zsh_float_to_bf16(float f)
{
    uint32_t bits = zsh_float_bits(f);
    /* Round the low 16 bits to nearest even; a carry into the exponent
     * rounds the largest finite values up to inf. A NaN only gets its quiet
     * bit. Both arms stay 32 bits wide and are narrowed once, and the NaN
     * test is an fp32 compare: vectorized, that is a few integer operations
     * fewer per lane than testing the bits and selecting 16-bit halves. */
    uint32_t rounded = bits + 0x7fffu + ((bits >> 16) & 1u);
    uint32_t quiet   = bits | 0x00400000u;
#if defined(__FINITE_MATH_ONLY__) && __FINITE_MATH_ONLY__
    /* -ffinite-math-only (and -ffast-math) folds f != f to false. */
    int is_nan = (bits & 0x7fffffffu) > 0x7f800000u;
#else
    int is_nan = f != f;
#endif

    return (uint16_t)((is_nan ? quiet : rounded) >> 16);
}

#ifndef __CUDACC__
#include <zeroshard.h>

#include <stddef.h>

/* @n elements of @dtype (bf16, fp16; any other is fp32 and copied) at @src
 * widened into fp32 @dst; exact. */
void zsh_half_widen(zsh_dtype_t dtype, const void *src, size_t n, float *dst);

/* @n fp32 at @src rounded into @dst of @dtype, to nearest even (fp32 is
 * copied). */
void zsh_half_narrow(zsh_dtype_t dtype, const float *src, size_t n, void *dst);

/* @n elements of @dtype at @src, each widened, multiplied by @mul in fp32
 * and rounded once into @dst of @dtype (fp32: the product itself). @dst
 * may be @src. */
void zsh_half_scale(zsh_dtype_t dtype, const void *src, size_t n, float mul, void *dst);
#endif

#endif
