/*
 * SGD as PyTorch defines it (dampening 0):
 *   g' = g + wd * p;  buf = mu * buf + g';  d = nesterov ? g' + mu * buf : buf
 *   p -= lr * d  (d = g' without momentum)
 * A zero buffer makes the first step's buf equal g', as PyTorch's does.
 */
#include "optim/rule.h"

void zsh_sgd_update(float *restrict p, const float *restrict g, float *restrict buf, size_t n,
                    const zsh_update_t *u)
{
    const float gm = u->grad_mul, wd = u->weight_decay, lr = u->lr, mu = u->momentum;
    const float nest = u->nesterov ? mu : 0.0f, keep = u->nesterov ? 1.0f : 0.0f;
    size_t i;

    if (mu == 0.0f) {
        for (i = 0; i < n; i++) {
            p[i] -= lr * (g[i] * gm + wd * p[i]);
        }
        return;
    }
    for (i = 0; i < n; i++) {
        float gi = g[i] * gm + wd * p[i];
        float bi = mu * buf[i] + gi;

        buf[i] = bi;
        p[i] -= lr * (keep * gi + (1.0f - keep) * bi + nest * bi);
    }
}
