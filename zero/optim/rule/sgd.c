/*
 * SGD (dampening 0) in the operations and roundings of torch.optim's on
 * ATen's CPU kernels, each add with alpha one fused multiply-add:
 *   g' = fma(p, wd, g)                       d_p.add(param, alpha=wd), only for wd != 0
 *   buf = buf * mu + g'                      buf.mul_(mu).add_(d_p)
 *   d = nesterov ? fma(buf, mu, g') : buf    d_p.add(buf, alpha=mu)
 *   p = fma(d, -lr, p)                       param.add_(d, alpha=-lr)   (d = g' without momentum)
 * A zero buffer makes the first step's buf equal g', as torch's clone does.
 */
#include "optim/rule/rule.h"

#include <math.h>

/* One element: updates *buf when @mom, returns the new parameter. @l2,
 * @mom and @nest are constants at every call, so each loop is compiled
 * without the branches. */
static inline float zsh_sgd_elem(const zsh_update_t *k, int l2, int mom, int nest, float p,
                                 float g, float *buf)
{
    float d = g * k->grad_mul;

    if (l2) {
        d = fmaf(p, k->weight_decay, d);
    }
    if (mom) {
        float b = *buf * k->momentum + d;

        *buf = b;
        d    = nest ? fmaf(b, k->momentum, d) : b;
    }
    return fmaf(d, k->neg_step, p);
}

/* The loop over [@s, @e) for one combination of the flags. */
#define ZSH_SGD_LOOP(_l2, _mom, _nest, _load)                                          \
    for (i = s; i < e; i++) {                                                           \
        p[i] = zsh_sgd_elem(&k, _l2, _mom, _nest, p[i], _load(g[i]),                   \
                             _mom ? &buf[i] : NULL);                                    \
    }

#define ZSH_SGD_F32(_x) (_x)

/* The six combinations of L2, momentum and Nesterov, each a loop of its own. */
#define ZSH_SGD_DISPATCH(_load)                                                         \
    do {                                                                                \
        const int l2 = (k.weight_decay != 0.0f);                                        \
        if (k.momentum == 0.0f) {                                                       \
            if (l2) { ZSH_SGD_LOOP(1, 0, 0, _load) } else { ZSH_SGD_LOOP(0, 0, 0, _load) } \
        } else if (k.nesterov) {                                                        \
            if (l2) { ZSH_SGD_LOOP(1, 1, 1, _load) } else { ZSH_SGD_LOOP(0, 1, 1, _load) } \
        } else {                                                                        \
            if (l2) { ZSH_SGD_LOOP(1, 1, 0, _load) } else { ZSH_SGD_LOOP(0, 1, 0, _load) } \
        }                                                                               \
    } while (0)

ZSH_KERNEL_CLONES
void zsh_sgd_update(float *restrict p, const float *restrict g, float *restrict buf, size_t n,
                    const zsh_update_t *u)
{
    const zsh_update_t k = *u; /* a local copy: the loops need no alias check against it */
    const size_t s = 0, e = n;
    size_t i;

    ZSH_SGD_DISPATCH(ZSH_SGD_F32);
}

ZSH_KERNEL_CLONES
void zsh_sgd_update_bf16(float *restrict p, const uint16_t *restrict g, float *restrict buf,
                         uint16_t *restrict out, size_t n, const zsh_update_t *u)
{
    const zsh_update_t k = *u;
    size_t s, e, i;

    for (s = 0; s < n; s = e) {
        e = (n - s > ZSH_RULE_ROUND_BLOCK) ? s + ZSH_RULE_ROUND_BLOCK : n;
        ZSH_SGD_DISPATCH(zsh_bf16_to_float);
        if (out != NULL) {
            zsh_rule_round_bf16(p + s, out + s, e - s);
        }
    }
}
