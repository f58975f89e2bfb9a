/*
 * The bf16 update kernels compute every element exactly as the fp32 kernel
 * does on the widened gradient, and the bf16 parameters they write in the
 * same pass are the updated master weights rounded to nearest even: the
 * same bits as the rule followed by a separate conversion. Lengths exercise
 * the vector bodies of every width and their tails, and runs of more than
 * one rounding block (ZSH_RULE_ROUND_BLOCK), whole and with a partial last.
 */
#include "harness/zsh_test.h"

#include "core/half.h"
#include "optim/rule/rule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const size_t zsh_rb_lengths[] = {1, 7, 15, 16, 33, 100, 1000, 1024, 1025, 3000};

static void zsh_rb_check(const zsh_optim_config_t *c, const char *what)
{
    size_t l, i;
    int t, with_out;

    for (with_out = 0; with_out < 2; with_out++) {
        for (l = 0; l < sizeof(zsh_rb_lengths) / sizeof(zsh_rb_lengths[0]); l++) {
            size_t n = zsh_rb_lengths[l];
            float *p = calloc(n, sizeof(float)), *m = calloc(n, sizeof(float));
            float *v = calloc(n, sizeof(float)), *g = calloc(n, sizeof(float));
            float *rp = calloc(n, sizeof(float)), *rm = calloc(n, sizeof(float));
            float *rv = calloc(n, sizeof(float));
            uint16_t *g16 = calloc(n, sizeof(uint16_t)), *out = calloc(n, sizeof(uint16_t));
            zsh_update_t u;

            for (i = 0; i < n; i++) {
                p[i] = rp[i] = (float)sin(0.7 * (double)i);
            }
            for (t = 1; t <= 3; t++) {
                for (i = 0; i < n; i++) {
                    g16[i] = zsh_float_to_bf16((float)sin(0.3 * (double)i + t) * 4.0f);
                    g[i]   = zsh_bf16_to_float(g16[i]);
                }
                u = zsh_update_make(c, (unsigned long)t, 0.25f);
                if (c->kind == ZSH_OPTIM_SGD) {
                    zsh_sgd_update_bf16(p, g16, m, with_out ? out : NULL, n, &u);
                    zsh_sgd_update(rp, g, rm, n, &u);
                } else {
                    zsh_adam_update_bf16(p, g16, m, v, with_out ? out : NULL, n, &u);
                    zsh_adam_update(rp, g, rm, rv, n, &u);
                }
                if ((memcmp(p, rp, n * sizeof(float)) != 0) ||
                    (memcmp(m, rm, n * sizeof(float)) != 0) ||
                    ((c->kind != ZSH_OPTIM_SGD) && (memcmp(v, rv, n * sizeof(float)) != 0))) {
                    zsh_test_fail(__FILE__, __LINE__, "%s n=%zu step %d: the bf16 kernel's "
                                  "weights or states differ from the fp32 kernel's", what, n, t);
                }
                for (i = 0; with_out && (i < n); i++) {
                    if (out[i] != zsh_float_to_bf16(rp[i])) {
                        zsh_test_fail(__FILE__, __LINE__, "%s n=%zu step %d: out[%zu] is 0x%04x, "
                                      "the rounded weight 0x%04x", what, n, t, i, out[i],
                                      zsh_float_to_bf16(rp[i]));
                        break;
                    }
                }
            }
            free(p); free(m); free(v); free(g); free(rp); free(rm); free(rv);
            free(g16); free(out);
        }
    }
}

ZSH_TEST(optim_rule_bf16, adam_and_adamw_match_the_fp32_kernel_bit_for_bit)
{
    zsh_optim_config_t c;

    zsh_optim_config_init(&c);
    c.lr           = 0.01f;
    c.weight_decay = 0.1f;
    c.kind         = ZSH_OPTIM_ADAM;
    zsh_rb_check(&c, "adam");
    c.kind = ZSH_OPTIM_ADAMW;
    zsh_rb_check(&c, "adamw");
}

ZSH_TEST(optim_rule_bf16, sgd_plain_momentum_and_nesterov_match_the_fp32_kernel_bit_for_bit)
{
    zsh_optim_config_t c;

    zsh_optim_config_init(&c);
    c.kind         = ZSH_OPTIM_SGD;
    c.lr           = 0.05f;
    c.weight_decay = 0.01f;
    zsh_rb_check(&c, "sgd");
    c.momentum = 0.9f;
    zsh_rb_check(&c, "sgd momentum");
    c.nesterov = 1;
    zsh_rb_check(&c, "sgd nesterov");
}
