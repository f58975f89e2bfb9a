/*
 * Update rules on fp32 arrays: the vectorized CPU kernels of the optimizer.
 *
 * They see only contiguous runs of (parameter, gradient, states), so the
 * same kernel serves a full replica, a shard or a slice of a framework
 * buffer. The loops are plain element-wise code over restrict pointers that
 * gcc -O3 vectorizes; per-step scalars are folded into zsh_update_t first.
 *
 * The bf16 variants read the gradient as bf16 and, given @out, round the
 * updated master weights into the bf16 parameters in the same pass, so
 * mixed precision reads and writes each array once. Every variant computes
 * each element exactly as the fp32 kernel does on the widened gradient.
 */
#ifndef ZSH_OPTIM_RULE_H_
#define ZSH_OPTIM_RULE_H_

#include <zeroshard/optim.h>

#include "core/clones.h"
#include "core/half.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The kernels are cloned per vector width (core/clones.h). They fuse a
 * multiply and an add exactly where ATen's CPU kernels do (explicit fmaf),
 * and nowhere else (-ffp-contract=off on the kernels); with correctly
 * rounded vector sqrt and division every width gives the same bits. The
 * baseline has no FMA instruction: its fmaf is libm's, correct and slow, and
 * the CPUs without x86-64-v3 are the old ones. AVX-512 without its word
 * instructions (a plain avx512f clone) narrows fp32 to bf16 at 256 bits,
 * which cost the mixed-precision kernels a third of their speed.
 */
/* The bf16 kernels update this many elements, then round them into the
 * bf16 parameters while they are still in L1: one loop doing both ran
 * slower than the two, the rounding's integer work competing with the
 * update's arithmetic for the same vector ports. */
#define ZSH_RULE_ROUND_BLOCK 1024

/* @p rounded to bf16 into @out, @n elements. */
static inline void zsh_rule_round_bf16(const float *restrict p, uint16_t *restrict out, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        out[i] = zsh_float_to_bf16(p[i]);
    }
}

/*
 * A step's scalars as ATen's CPU kernels see them: torch.optim computes
 * them from its Python floats in double (1 - beta, 1 - lr * wd, the bias
 * corrections, lr / bc1, sqrt(bc2)) and each reaches the kernel rounded
 * once to fp32. Folding them here, in double from the configuration's
 * doubles, gives the kernels the same fp32 numbers.
 */
typedef struct zsh_update {
    zsh_optim_kind_t kind;
    float beta1, beta2;  /* Adam: (float)beta */
    float omb1, omb2;    /* Adam: (float)(1 - beta) */
    float eps;           /* Adam: (float)eps */
    float weight_decay;  /* Adam and SGD: L2 term (float)wd, 0 for none (AdamW: 0) */
    float momentum;      /* SGD: (float)momentum */
    int   nesterov;
    float decay;         /* AdamW: (float)(1 - lr * wd); else 1 */
    float neg_step;      /* Adam: (float)-(lr / (1 - beta1^t)); SGD: (float)-lr */
    float bc2_sqrt;      /* Adam: (float)sqrt(1 - beta2^t) */
    float inv_bc2_sqrt;  /* Adam: 1 / bc2_sqrt rounded to nearest, for zsh_rule_div() */
    float grad_mul;      /* 1 / loss scale, times the clipping coefficient */
} zsh_update_t;

/*
 * @s / @c correctly rounded, as a divide gives it, for @s >= 0 the square
 * root of an fp32 value (at most 2^64, and 0 or at least 2^-75), @c in
 * [2^-27, 1] (sqrt(1 - beta2^t) of a double beta2 < 1) and @inv = RN(1 / @c).
 * torch's second divide an element cost the Adam kernel a quarter of its
 * speed, this about half that (docs/DECISIONS.md, "torch.optim's bits").
 * q0 = s * inv is within two ulps; one correction q + (s - q c) inv makes
 * it faithful, and a second gives RN(s / c) by Markstein's theorem (the
 * residual s - q c is exact in an FMA, its quantum far above fp32's
 * smallest in this range). s = inf gives inf, as the divide does; NaN
 * stays NaN.
 */
static inline float zsh_rule_div(float s, float c, float inv)
{
    float q0 = s * inv;
    float q  = fmaf(fmaf(-q0, c, s), inv, q0);

    q = fmaf(fmaf(-q, c, s), inv, q);
    return isfinite(q0) ? q : q0;
}

/* Per-step scalars for step @t (1-based) of @cfg, with @grad_mul. */
zsh_update_t zsh_update_make(const zsh_optim_config_t *cfg, unsigned long t, float grad_mul);

/* Adam or AdamW (u->kind) over @n elements. */
void zsh_adam_update(float *restrict p, const float *restrict g, float *restrict m,
                     float *restrict v, size_t n, const zsh_update_t *u);

/* Adam or AdamW on fp32 master weights @p with bf16 gradients @g; @out,
 * unless NULL, receives @p rounded to bf16. */
void zsh_adam_update_bf16(float *restrict p, const uint16_t *restrict g, float *restrict m,
                          float *restrict v, uint16_t *restrict out, size_t n,
                          const zsh_update_t *u);

/* SGD over @n elements; @buf is the momentum buffer (unused without momentum). */
void zsh_sgd_update(float *restrict p, const float *restrict g, float *restrict buf, size_t n,
                    const zsh_update_t *u);

/* SGD on fp32 master weights with bf16 gradients; @out as for zsh_adam_update_bf16(). */
void zsh_sgd_update_bf16(float *restrict p, const uint16_t *restrict g, float *restrict buf,
                         uint16_t *restrict out, size_t n, const zsh_update_t *u);

/* The rule on @n elements in @opt's precision (apply.c): @p and the states
 * are fp32, @g is in the layer's precision (an fp16 one widened a chunk at a
 * time). @out, unless NULL, receives the updated master weights in the half
 * precision of a mixed precision optimizer. */
void zsh_optim_apply_out(const zsh_optim_t *opt, float *p, const void *g, float *m, float *v,
                         void *out, size_t n, const zsh_update_t *u);

#endif
