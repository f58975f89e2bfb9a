/*
 * Arrays of bf16 or fp16 widened to fp32 and narrowed back: the one copy
 * that the optimizer's precision and the quantizer's bf16 and fp16 runs
 * share, so both round alike. The loops vectorize (half.h's conversions are
 * branch-free) and are cloned per vector width; each element takes at most
 * one fp32 operation, so no width rounds differently.
 */
#include "core/half.h"

#include "core/clones.h"

ZSH_KERNEL_CLONES
void zsh_half_widen(zsh_dtype_t dtype, const void *src, size_t n, float *dst)
{
    const uint16_t *h = src;
    size_t i;

    if (dtype == ZSH_FLOAT16) {
        for (i = 0; i < n; i++) {
            dst[i] = zsh_fp16_to_float(h[i]);
        }
    } else if (dtype == ZSH_BFLOAT16) {
        for (i = 0; i < n; i++) {
            dst[i] = zsh_bf16_to_float(h[i]);
        }
    } else {
        memcpy(dst, src, n * sizeof(float));
    }
}

ZSH_KERNEL_CLONES
void zsh_half_narrow(zsh_dtype_t dtype, const float *src, size_t n, void *dst)
{
    uint16_t *h = dst;
    size_t i;

    if (dtype == ZSH_FLOAT16) {
        for (i = 0; i < n; i++) {
            h[i] = zsh_float_to_fp16(src[i]);
        }
    } else if (dtype == ZSH_BFLOAT16) {
        for (i = 0; i < n; i++) {
            h[i] = zsh_float_to_bf16(src[i]);
        }
    } else {
        memcpy(dst, src, n * sizeof(float));
    }
}

ZSH_KERNEL_CLONES
void zsh_half_scale(zsh_dtype_t dtype, const void *src, size_t n, float mul, void *dst)
{
    const uint16_t *h = src;
    const float    *f = src;
    uint16_t       *ho = dst;
    float          *fo = dst;
    size_t i;

    if (dtype == ZSH_FLOAT16) {
        for (i = 0; i < n; i++) {
            ho[i] = zsh_float_to_fp16(zsh_fp16_to_float(h[i]) * mul);
        }
    } else if (dtype == ZSH_BFLOAT16) {
        for (i = 0; i < n; i++) {
            ho[i] = zsh_float_to_bf16(zsh_bf16_to_float(h[i]) * mul);
        }
    } else {
        for (i = 0; i < n; i++) {
            fo[i] = f[i] * mul;
        }
    }
}
