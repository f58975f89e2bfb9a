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

/* One rounding each: the volatile store keeps a compiler from fusing a
 * product with the add after it, whatever its -ffp-contract. */
static float zsh_rule_mul(float a, float b)
{
    volatile float r = a * b;

    return r;
}

void zsh_rule_adam_torch(float *p, const float *g, float *m, float *v, size_t n,
                         const zsh_optim_config_t *c, int t, float gm)
{
    const float b1 = (float)c->beta1, b2 = (float)c->beta2;
    const float omb1 = (float)(1 - c->beta1), omb2 = (float)(1 - c->beta2);
    const float neg_step = (float)-(c->lr / (1 - pow(c->beta1, t)));
    const float bc2_sqrt = (float)sqrt(1 - pow(c->beta2, t));
    const float decay = (float)(1 - c->lr * c->weight_decay), wd = (float)c->weight_decay;
    size_t i;

    for (i = 0; i < n; i++) {
        float gi = zsh_rule_mul(g[i], gm);

        if (c->kind == ZSH_OPTIM_ADAMW) {
            p[i] = zsh_rule_mul(p[i], decay);              /* param.mul_(1 - lr * wd) */
        } else if (c->weight_decay != 0) {
            gi = fmaf(p[i], wd, gi);                       /* grad.add(param, alpha=wd) */
        }
        m[i] = fmaf(gi, omb1, zsh_rule_mul(m[i], b1));     /* mul_(b1).add_(g, alpha=1-b1) */
        v[i] = fmaf(zsh_rule_mul(omb2, gi), gi, zsh_rule_mul(v[i], b2)); /* addcmul_ */
        p[i] = p[i] + zsh_rule_mul(neg_step, m[i]) / (sqrtf(v[i]) / bc2_sqrt + (float)c->eps);
    }
}

void zsh_rule_sgd_torch(float *p, const float *g, float *buf, size_t n,
                        const zsh_optim_config_t *c, int t, float gm)
{
    const float mu = (float)c->momentum, wd = (float)c->weight_decay;
    size_t i;

    for (i = 0; i < n; i++) {
        float d = zsh_rule_mul(g[i], gm);

        if (c->weight_decay != 0) {
            d = fmaf(p[i], wd, d);                         /* d_p.add(param, alpha=wd) */
        }
        if (c->momentum > 0) {
            buf[i] = (t == 1) ? d : zsh_rule_mul(buf[i], mu) + d; /* clone, then mul_.add_ */
            d      = c->nesterov ? fmaf(buf[i], mu, d) : buf[i];
        }
        p[i] = fmaf(d, (float)-c->lr, p[i]);               /* param.add_(d, alpha=-lr) */
    }
}
