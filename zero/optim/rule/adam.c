/*
 * Adam and AdamW with bias correction, as PyTorch defines them:
 *   Adam:  g' = g + wd * p
 *   AdamW: p  = p * (1 - lr * wd)
 *   m = b1 m + (1 - b1) g',  v = b2 v + (1 - b2) g'^2
 *   p -= (lr / bc1) * m / (sqrt(v / bc2) + eps)
 * The loops vectorize because this file is built without math-errno (see
 * libzsh_zero_kernels in Makefile.am): the square root becomes one
 * instruction.
 */
#include "optim/rule/rule.h"

#include <math.h>

zsh_update_t zsh_update_make(const zsh_optim_config_t *cfg, unsigned long t, float grad_mul)
{
    zsh_update_t u = {cfg->kind, cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay,
                      cfg->momentum, cfg->nesterov, 1.0f, 1.0f, grad_mul};

    u.bc1 = (float)(1.0 - pow(cfg->beta1, (double)t));
    u.bc2 = (float)(1.0 - pow(cfg->beta2, (double)t));
    return u;
}

/* The step's scalars, folded once per call. */
typedef struct {
    float b1, b2, gm, eps, step, inv_bc2, l2, decay;
} zsh_adam_k_t;

static inline zsh_adam_k_t zsh_adam_k(const zsh_update_t *u)
{
    zsh_adam_k_t k = {u->beta1, u->beta2, u->grad_mul, u->eps, u->lr / u->bc1, 1.0f / u->bc2,
                      (u->kind == ZSH_OPTIM_ADAM) ? u->weight_decay : 0.0f,
                      (u->kind == ZSH_OPTIM_ADAMW) ? 1.0f - u->lr * u->weight_decay : 1.0f};

    return k;
}

/* One element: updates *m and *v, returns the new parameter. */
static inline float zsh_adam_elem(const zsh_adam_k_t *k, float p, float g, float *m, float *v)
{
    float gi = g * k->gm + k->l2 * p;
    float mi = k->b1 * *m + (1.0f - k->b1) * gi;
    float vi = k->b2 * *v + (1.0f - k->b2) * gi * gi;

    *m = mi;
    *v = vi;
    return p * k->decay - k->step * mi / (sqrtf(vi * k->inv_bc2) + k->eps);
}

ZSH_KERNEL_CLONES
void zsh_adam_update(float *restrict p, const float *restrict g, float *restrict m,
                     float *restrict v, size_t n, const zsh_update_t *u)
{
    const zsh_adam_k_t k = zsh_adam_k(u);
    size_t i;

    for (i = 0; i < n; i++) {
        p[i] = zsh_adam_elem(&k, p[i], g[i], &m[i], &v[i]);
    }
}

ZSH_KERNEL_CLONES
void zsh_adam_update_bf16(float *restrict p, const uint16_t *restrict g, float *restrict m,
                          float *restrict v, uint16_t *restrict out, size_t n,
                          const zsh_update_t *u)
{
    const zsh_adam_k_t k = zsh_adam_k(u);
    size_t b, e, i;

    for (b = 0; b < n; b = e) {
        e = (n - b > ZSH_RULE_ROUND_BLOCK) ? b + ZSH_RULE_ROUND_BLOCK : n;
        for (i = b; i < e; i++) {
            p[i] = zsh_adam_elem(&k, p[i], zsh_bf16_to_float(g[i]), &m[i], &v[i]);
        }
        if (out != NULL) {
            zsh_rule_round_bf16(p + b, out + b, e - b);
        }
    }
}
