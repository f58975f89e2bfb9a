/*
 * SGD as PyTorch defines it (dampening 0):
 *   g' = g + wd * p;  buf = mu * buf + g';  d = nesterov ? g' + mu * buf : buf
 *   p -= lr * d  (d = g' without momentum)
 * A zero buffer makes the first step's buf equal g', as PyTorch's does.
 */
#include "optim/rule/rule.h"


/* One element with momentum: updates *buf, returns the new parameter. */
static inline float zsh_sgd_elem(const zsh_update_t *u, float nest, float keep, float p, float g,
                                 float *buf)
{
    float gi = g * u->grad_mul + u->weight_decay * p;
    float bi = u->momentum * *buf + gi;

    *buf = bi;
    return p - u->lr * (keep * gi + (1.0f - keep) * bi + nest * bi);
}

static inline float zsh_sgd_plain(const zsh_update_t *u, float p, float g)
{
    return p - u->lr * (g * u->grad_mul + u->weight_decay * p);
}

ZSH_KERNEL_CLONES
void zsh_sgd_update(float *restrict p, const float *restrict g, float *restrict buf, size_t n,
                    const zsh_update_t *u)
{
    const zsh_update_t k = *u; /* a local copy: the loops need no alias check against it */
    const float nest = k.nesterov ? k.momentum : 0.0f, keep = k.nesterov ? 1.0f : 0.0f;
    size_t i;

    if (k.momentum == 0.0f) {
        for (i = 0; i < n; i++) {
            p[i] = zsh_sgd_plain(&k, p[i], g[i]);
        }
        return;
    }
    for (i = 0; i < n; i++) {
        p[i] = zsh_sgd_elem(&k, nest, keep, p[i], g[i], &buf[i]);
    }
}

ZSH_KERNEL_CLONES
void zsh_sgd_update_bf16(float *restrict p, const uint16_t *restrict g, float *restrict buf,
                         uint16_t *restrict out, size_t n, const zsh_update_t *u)
{
    const zsh_update_t k = *u;
    const float nest = k.nesterov ? k.momentum : 0.0f, keep = k.nesterov ? 1.0f : 0.0f;
    size_t b, e, i;

    for (b = 0; b < n; b = e) {
        e = (n - b > ZSH_RULE_ROUND_BLOCK) ? b + ZSH_RULE_ROUND_BLOCK : n;
        if (k.momentum == 0.0f) {
            for (i = b; i < e; i++) {
                p[i] = zsh_sgd_plain(&k, p[i], zsh_bf16_to_float(g[i]));
            }
        } else {
            for (i = b; i < e; i++) {
                p[i] = zsh_sgd_elem(&k, nest, keep, p[i], zsh_bf16_to_float(g[i]), &buf[i]);
            }
        }
        if (out != NULL) {
            zsh_rule_round_bf16(p + b, out + b, e - b);
        }
    }
}
