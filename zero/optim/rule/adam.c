/*
 * Adam and AdamW with bias correction, in the operations and roundings of
 * torch.optim's (1.13, for-loop and foreach alike) on ATen's CPU kernels:
 *   Adam:   g' = fma(p, wd, g)                   grad.add(param, alpha=wd)
 *   AdamW:  p' = p * decay                       param.mul_(1 - lr * wd)
 *   m = fma(g', 1 - b1, m * b1)                  exp_avg.mul_(b1).add_(g', alpha=1 - b1)
 *   v = fma((1 - b2) * g', g', v * b2)           exp_avg_sq.mul_(b2).addcmul_(g', g', 1 - b2)
 *   p = p' + (-step * m) / (sqrt(v) / sqrt(bc2) + eps)       param.addcdiv_(m, denom, -step)
 * ATen's add with alpha is vec::fmadd, and gcc contracts its addcmul into
 * one FMA in the vector body and the scalar tail alike; addcdiv's divide
 * and the sqrt's divide by a scalar stay divides (the latter computed
 * without the divide instruction, to the same bits: zsh_rule_div()).
 * tests/python/test_torch_bits.py holds these to torch's bits.
 * The loops vectorize because this file is built without math-errno (see
 * libzsh_zero_kernels in Makefile.am): sqrt and fma become one instruction.
 */
#include "optim/rule/rule.h"

#include <math.h>

zsh_update_t zsh_update_make(const zsh_optim_config_t *cfg, unsigned long t, float grad_mul)
{
    const int adam = (cfg->kind != ZSH_OPTIM_SGD), adamw = (cfg->kind == ZSH_OPTIM_ADAMW);
    zsh_update_t u = {cfg->kind, 0, 0, 0, 0, 0, 0, 0, cfg->nesterov, 1.0f, 0, 1.0f, 1.0f,
                      grad_mul};

    u.eps          = (float)cfg->eps;
    u.momentum     = (float)cfg->momentum;
    u.weight_decay = adamw ? 0.0f : (float)cfg->weight_decay;
    if (adam) {
        u.beta1    = (float)cfg->beta1;
        u.beta2    = (float)cfg->beta2;
        u.omb1     = (float)(1.0 - cfg->beta1);
        u.omb2     = (float)(1.0 - cfg->beta2);
        u.neg_step = (float)-(cfg->lr / (1.0 - pow(cfg->beta1, (double)t)));
        u.bc2_sqrt = (float)sqrt(1.0 - pow(cfg->beta2, (double)t));
        /* RN(1 / bc2_sqrt): 1/x of a float is never within double's
         * precision of a midpoint between floats, so rounding twice is
         * rounding once. */
        u.inv_bc2_sqrt = (float)(1.0 / (double)u.bc2_sqrt);
        u.decay    = adamw ? (float)(1.0 - cfg->lr * cfg->weight_decay) : 1.0f;
    } else {
        u.neg_step = (float)-cfg->lr;
    }
    return u;
}

/* One element: updates *m and *v, returns the new parameter. @l2 is a
 * constant at every call, so each loop is compiled without the branch. */
static inline float zsh_adam_elem(const zsh_update_t *k, int l2, float p, float g, float *m,
                                  float *v)
{
    float gi = g * k->grad_mul;
    float mi, vi, den;

    if (l2) {
        gi = fmaf(p, k->weight_decay, gi);
    }
    mi  = fmaf(gi, k->omb1, *m * k->beta1);
    vi  = fmaf(k->omb2 * gi, gi, *v * k->beta2);
    den = zsh_rule_div(sqrtf(vi), k->bc2_sqrt, k->inv_bc2_sqrt) + k->eps;
    *m  = mi;
    *v  = vi;
    return p * k->decay + (k->neg_step * mi) / den;
}

ZSH_KERNEL_CLONES
void zsh_adam_update(float *restrict p, const float *restrict g, float *restrict m,
                     float *restrict v, size_t n, const zsh_update_t *u)
{
    const zsh_update_t k = *u; /* a local copy: the loops need no alias check against it */
    size_t i;

    if (k.weight_decay != 0.0f) {
        for (i = 0; i < n; i++) {
            p[i] = zsh_adam_elem(&k, 1, p[i], g[i], &m[i], &v[i]);
        }
    } else {
        for (i = 0; i < n; i++) {
            p[i] = zsh_adam_elem(&k, 0, p[i], g[i], &m[i], &v[i]);
        }
    }
}

ZSH_KERNEL_CLONES
void zsh_adam_update_bf16(float *restrict p, const uint16_t *restrict g, float *restrict m,
                          float *restrict v, uint16_t *restrict out, size_t n,
                          const zsh_update_t *u)
{
    const zsh_update_t k = *u;
    const int l2 = (k.weight_decay != 0.0f);
    size_t b, e, i;

    for (b = 0; b < n; b = e) {
        e = (n - b > ZSH_RULE_ROUND_BLOCK) ? b + ZSH_RULE_ROUND_BLOCK : n;
        if (l2) {
            for (i = b; i < e; i++) {
                p[i] = zsh_adam_elem(&k, 1, p[i], zsh_bf16_to_float(g[i]), &m[i], &v[i]);
            }
        } else {
            for (i = b; i < e; i++) {
                p[i] = zsh_adam_elem(&k, 0, p[i], zsh_bf16_to_float(g[i]), &m[i], &v[i]);
            }
        }
        if (out != NULL) {
            zsh_rule_round_bf16(p + b, out + b, e - b);
        }
    }
}
