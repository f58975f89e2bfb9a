/*
 * Adam and AdamW with bias correction, as PyTorch defines them:
 *   Adam:  g' = g + wd * p
 *   AdamW: p  = p * (1 - lr * wd)
 *   m = b1 m + (1 - b1) g',  v = b2 v + (1 - b2) g'^2
 *   p -= (lr / bc1) * m / (sqrt(v / bc2) + eps)
 * The loop vectorizes because this file is built without math-errno (see
 * libzsh_kernels in Makefile.am): the square root becomes one instruction.
 */
#include "optim/rule.h"

#include <math.h>

zsh_update_t zsh_update_make(const zsh_optim_config_t *cfg, unsigned long t, float grad_mul)
{
    zsh_update_t u = {cfg->kind, cfg->lr, cfg->beta1, cfg->beta2, cfg->eps, cfg->weight_decay,
                      cfg->momentum, cfg->nesterov, 1.0f, 1.0f, grad_mul};

    u.bc1 = (float)(1.0 - pow(cfg->beta1, (double)t));
    u.bc2 = (float)(1.0 - pow(cfg->beta2, (double)t));
    return u;
}

void zsh_adam_update(float *restrict p, const float *restrict g, float *restrict m,
                     float *restrict v, size_t n, const zsh_update_t *u)
{
    const float b1 = u->beta1, b2 = u->beta2, gm = u->grad_mul, eps = u->eps;
    const float step    = u->lr / u->bc1;
    const float inv_bc2 = 1.0f / u->bc2;
    const float l2      = (u->kind == ZSH_OPTIM_ADAM) ? u->weight_decay : 0.0f;
    const float decay   = (u->kind == ZSH_OPTIM_ADAMW) ? 1.0f - u->lr * u->weight_decay : 1.0f;
    size_t i;

    for (i = 0; i < n; i++) {
        float gi = g[i] * gm + l2 * p[i];
        float mi = b1 * m[i] + (1.0f - b1) * gi;
        float vi = b2 * v[i] + (1.0f - b2) * gi * gi;

        m[i] = mi;
        v[i] = vi;
        p[i] = p[i] * decay - step * mi / (sqrtf(vi * inv_bc2) + eps);
    }
}
