#include "rule_ref.h"

#include <math.h>

void zsh_rule_adam_ref(double *p, const double *g, double *m, double *v, size_t n,
                       const zsh_optim_config_t *c, int t, double gm)
{
    double bc1 = 1 - pow(c->beta1, t), bc2 = 1 - pow(c->beta2, t);
    size_t i;

    for (i = 0; i < n; i++) {
        double gi = g[i] * gm;

        if (c->kind == ZSH_OPTIM_ADAMW) {
            p[i] *= 1 - (double)c->lr * c->weight_decay;
        } else {
            gi += c->weight_decay * p[i];
        }
        m[i] = c->beta1 * m[i] + (1 - c->beta1) * gi;
        v[i] = c->beta2 * v[i] + (1 - c->beta2) * gi * gi;
        p[i] -= c->lr * (m[i] / bc1) / (sqrt(v[i] / bc2) + c->eps);
    }
}

void zsh_rule_sgd_ref(double *p, const double *g, double *buf, size_t n,
                      const zsh_optim_config_t *c, int t, double gm)
{
    size_t i;

    for (i = 0; i < n; i++) {
        double gi = g[i] * gm + c->weight_decay * p[i];

        if (c->momentum > 0) {
            buf[i] = (t == 1) ? gi : c->momentum * buf[i] + gi;
            gi     = c->nesterov ? gi + c->momentum * buf[i] : buf[i];
        }
        p[i] -= c->lr * gi;
    }
}
