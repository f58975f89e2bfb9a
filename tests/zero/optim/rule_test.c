/*
 * The vectorized update kernels against scalar references written from the
 * published definitions (PyTorch's Adam, AdamW and SGD), in double, over
 * lengths that exercise the vector body and its tail; and against the same
 * rules in torch.optim's fp32 operation order (rule_ref.h), bit for bit,
 * over many steps on gradients down to 1e-12.
 */
#include "harness/zsh_test.h"

#include "optim/rule/rule.h"
#include "rule_ref.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const size_t zsh_rule_lengths[] = {1, 7, 8, 33, 1000};

static float zsh_rule_value(size_t i, int salt)
{
    return (float)sin(0.7 * (double)i + salt);
}

static void zsh_rule_check(const zsh_optim_config_t *c, const char *what)
{
    size_t l, i;
    int t;

    for (l = 0; l < sizeof(zsh_rule_lengths) / sizeof(zsh_rule_lengths[0]); l++) {
        size_t n = zsh_rule_lengths[l];
        float *p = calloc(n, sizeof(float)), *g = calloc(n, sizeof(float));
        float *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
        double *rp = calloc(n, sizeof(double)), *rg = calloc(n, sizeof(double));
        double *rm = calloc(n, sizeof(double)), *rv = calloc(n, sizeof(double));
        zsh_update_t u;

        for (i = 0; i < n; i++) {
            p[i] = zsh_rule_value(i, 0);
            rp[i] = p[i];
        }
        for (t = 1; t <= 3; t++) {
            for (i = 0; i < n; i++) {
                g[i]  = zsh_rule_value(i, t) * 4.0f;
                rg[i] = g[i];
            }
            u = zsh_update_make(c, (unsigned long)t, 0.25f);
            if (c->kind == ZSH_OPTIM_SGD) {
                zsh_sgd_update(p, g, m, n, &u);
                zsh_rule_sgd_ref(rp, rg, rm, n, c, t, 0.25);
            } else {
                zsh_adam_update(p, g, m, v, n, &u);
                zsh_rule_adam_ref(rp, rg, rm, rv, n, c, t, 0.25);
            }
        }
        for (i = 0; i < n; i++) {
            if (!(fabs(p[i] - rp[i]) <= 1e-6 * (1 + fabs(rp[i])))) {
                zsh_test_fail(__FILE__, __LINE__, "%s n=%zu: p[%zu] is %.9g, reference %.9g",
                              what, n, i, p[i], rp[i]);
                break;
            }
        }
        free(p); free(g); free(m); free(v);
        free(rp); free(rg); free(rm); free(rv);
    }
}

/* A gradient for element @i of step @t: sin's values scaled by 10^-(0..12),
 * so Adam's second moment spans its whole range; every 17th is zero. */
static float zsh_rule_tiny(size_t i, int t)
{
    double mag = pow(10.0, -(double)((i * 7 + (size_t)t) % 13));

    return (i % 17 == 5) ? 0.0f : (float)(sin(1.3 * (double)i + t) * mag);
}

/* 30 steps of the kernel and of torch's order, the same bits after each. */
static void zsh_rule_check_bits(const zsh_optim_config_t *c, const char *what)
{
    static const size_t lengths[] = {1, 7, 8, 15, 16, 17, 33, 63, 1000};
    size_t l, i;
    int t;

    for (l = 0; l < sizeof(lengths) / sizeof(lengths[0]); l++) {
        size_t n = lengths[l];
        float *p = calloc(n, sizeof(float)), *g = calloc(n, sizeof(float));
        float *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
        float *rp = calloc(n, sizeof(float)), *rm = calloc(n, sizeof(float));
        float *rv = calloc(n, sizeof(float));
        zsh_update_t u;

        for (i = 0; i < n; i++) {
            p[i] = rp[i] = zsh_rule_value(i, 0);
        }
        for (t = 1; t <= 30; t++) {
            for (i = 0; i < n; i++) {
                g[i] = zsh_rule_tiny(i, t);
            }
            u = zsh_update_make(c, (unsigned long)t, 1.0f);
            if (c->kind == ZSH_OPTIM_SGD) {
                zsh_sgd_update(p, g, m, n, &u);
                zsh_rule_sgd_torch(rp, g, rm, n, c, t, 1.0f);
            } else {
                zsh_adam_update(p, g, m, v, n, &u);
                zsh_rule_adam_torch(rp, g, rm, rv, n, c, t, 1.0f);
            }
            for (i = 0; (i < n) && (memcmp(&p[i], &rp[i], sizeof(float)) == 0); i++) {
            }
            if (i < n) {
                zsh_test_fail(__FILE__, __LINE__, "%s n=%zu step %d: p[%zu] is %a, torch's "
                              "order gives %a", what, n, t, i, p[i], rp[i]);
                break;
            }
        }
        free(p); free(g); free(m); free(v);
        free(rp); free(rm); free(rv);
    }
}

ZSH_TEST(optim_rule, adam_and_adamw_give_the_bits_of_torch_optims_operation_order)
{
    zsh_optim_config_t c;

    zsh_optim_config_init(&c);
    c.kind         = ZSH_OPTIM_ADAMW;
    c.weight_decay = 1e-2;
    zsh_rule_check_bits(&c, "adamw");
    c.lr = 3e-3, c.beta1 = 0.8, c.beta2 = 0.99, c.eps = 1e-6, c.weight_decay = 0.1;
    zsh_rule_check_bits(&c, "adamw with other betas and eps");
    c.kind = ZSH_OPTIM_ADAM;
    zsh_rule_check_bits(&c, "adam with L2");
    c.weight_decay = 0.0;
    zsh_rule_check_bits(&c, "adam");
}

ZSH_TEST(optim_rule, sgd_gives_the_bits_of_torch_optims_operation_order)
{
    zsh_optim_config_t c;

    zsh_optim_config_init(&c);
    c.kind = ZSH_OPTIM_SGD;
    c.lr   = 0.1;
    zsh_rule_check_bits(&c, "sgd");
    c.weight_decay = 1e-3;
    zsh_rule_check_bits(&c, "sgd with L2");
    c.momentum = 0.9;
    zsh_rule_check_bits(&c, "sgd momentum with L2");
    c.nesterov = 1;
    zsh_rule_check_bits(&c, "sgd nesterov with L2");
    c.weight_decay = 0.0;
    zsh_rule_check_bits(&c, "sgd nesterov");
}

/* True when zsh_rule_div() gives the divide's bits for @s / u->bc2_sqrt;
 * else a failure naming both. */
static bool zsh_rule_div_check(const zsh_update_t *u, float s, double beta2, int t)
{
    float got = zsh_rule_div(s, u->bc2_sqrt, u->inv_bc2_sqrt), want = s / u->bc2_sqrt;

    if (memcmp(&got, &want, sizeof(got)) != 0) {
        zsh_test_fail(__FILE__, __LINE__, "beta2 %g step %d: %a / %a gave %a, the divide %a",
                      beta2, t, s, u->bc2_sqrt, got, want);
        return false;
    }
    return true;
}

/* zsh_rule_div() against the divide over the square roots of fp32 values
 * (2^-75 to 2^64: every 65521st bit pattern, the ends, 0 and inf), for the
 * bias corrections of three beta2 over the first 400 steps. */
ZSH_TEST(optim_rule, divide_by_the_bias_correction_gives_the_divides_bits)
{
    static const double betas[] = {0.999, 0.99, 0.9999};
    static const float specials[] = {0.0f, 0x1p-75f, 0x1.fffffep63f, 0x1.fffffep-1f, INFINITY};
    size_t b, j;
    uint32_t w;
    float s;
    int t;

    for (b = 0; b < sizeof(betas) / sizeof(betas[0]); b++) {
        for (t = 1; t <= 400; t += (t < 20) ? 1 : 19) {
            zsh_optim_config_t c;
            zsh_update_t u;

            zsh_optim_config_init(&c);
            c.beta2 = betas[b];
            u       = zsh_update_make(&c, (unsigned long)t, 1.0f);
            for (w = 0x1a000000u; w < 0x5f800000u; w += 65521u) {
                memcpy(&s, &w, sizeof(s));
                if (!zsh_rule_div_check(&u, s, betas[b], t)) {
                    return;
                }
            }
            for (j = 0; j < sizeof(specials) / sizeof(specials[0]); j++) {
                if (!zsh_rule_div_check(&u, specials[j], betas[b], t)) {
                    return;
                }
            }
        }
    }
    ZSH_EXPECT_TRUE(isnan(zsh_rule_div(NAN, 0.5f, 2.0f)));
}

ZSH_TEST(optim_rule, adam_and_adamw_match_the_scalar_reference)
{
    zsh_optim_config_t c;

    zsh_optim_config_init(&c);
    c.lr           = 0.01f;
    c.weight_decay = 0.1f;
    c.kind         = ZSH_OPTIM_ADAM;
    zsh_rule_check(&c, "adam");
    c.kind = ZSH_OPTIM_ADAMW;
    zsh_rule_check(&c, "adamw");
    c.weight_decay = 0.0f;
    zsh_rule_check(&c, "adamw without decay");
}

ZSH_TEST(optim_rule, sgd_plain_momentum_and_nesterov_match_the_scalar_reference)
{
    zsh_optim_config_t c;

    zsh_optim_config_init(&c);
    c.kind         = ZSH_OPTIM_SGD;
    c.lr           = 0.1f;
    c.weight_decay = 0.01f;
    zsh_rule_check(&c, "sgd");
    c.momentum = 0.9f;
    zsh_rule_check(&c, "sgd momentum");
    c.nesterov = 1;
    zsh_rule_check(&c, "sgd nesterov");
}
