/*
 * zsh_optim_set_weight_decay(): a parameter's own weight decay, as a
 * torch.optim parameter group gives it. Three parameters of awkward sizes in
 * one bucket, one at the configured decay, one at 0 (a bias's group) and one
 * at 0.5, under AdamW (decoupled), Adam and SGD with momentum (L2), at every
 * stage and rank count: after every step each parameter holds torch.optim's
 * rule (rule_ref.h, the kernels' bits) at its own decay. Decays that are not
 * finite and >= 0 are refused and change nothing.
 */
#include "harness/zsh_test.h"
#include "rule_ref.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_DECAY_NPARAMS 3
#define ZSH_DECAY_STEPS   3

static const size_t zsh_decay_sizes[ZSH_DECAY_NPARAMS] = {301, 37, 250};
/* Each parameter's decay; a negative one: the configured 0.1, not set. */
static const double zsh_decay_own[ZSH_DECAY_NPARAMS] = {-1.0, 0.0, 0.5};

static float zsh_decay_init(int p, size_t i)
{
    return (float)sin(0.3 * (double)i + p);
}

/* Multiples of 2^-6 below 1: the sum over up to 8 ranks is exact. */
static float zsh_decay_grad(int p, size_t i, int t)
{
    return (float)((int)((i * 7 + (size_t)p * 3 + (size_t)t * 5) % 13) - 6) * 0x1p-6f;
}

/* Parameter @p after @upto steps of @base's rule at its own decay. */
static void zsh_decay_reference(const zsh_optim_config_t *base, int p, int n, int upto,
                                float *want)
{
    zsh_optim_config_t c = *base;
    size_t i, k = zsh_decay_sizes[p];
    float *g = calloc(k, sizeof(float)), *m = calloc(k, sizeof(float));
    float *v = calloc(k, sizeof(float));
    int t;

    if (zsh_decay_own[p] >= 0.0) {
        c.weight_decay = zsh_decay_own[p];
    }
    for (i = 0; i < k; i++) {
        want[i] = zsh_decay_init(p, i);
    }
    for (t = 1; t <= upto; t++) {
        for (i = 0; i < k; i++) {
            g[i] = (float)n * zsh_decay_grad(p, i, t);
        }
        if (c.kind == ZSH_OPTIM_SGD) {
            zsh_rule_sgd_torch(want, g, m, k, &c, t, 1.0f);
        } else {
            zsh_rule_adam_torch(want, g, m, v, k, &c, t, 1.0f);
        }
    }
    free(g);
    free(m);
    free(v);
}

static void zsh_decay_run(zsh_comm_t *comm, zsh_optim_kind_t kind, int stage)
{
    int n = zsh_comm_size(comm), p, t;
    float *buf[ZSH_DECAY_NPARAMS] = {NULL}, *want = NULL, *grad = NULL;
    zsh_param_t *param[ZSH_DECAY_NPARAMS];
    char name[2] = "a";
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    const float *got;
    void *data;
    size_t i;

    zsh_optim_config_init(&cfg);
    cfg.stage        = stage;
    cfg.kind         = kind;
    cfg.lr           = 0.01;
    cfg.momentum     = (kind == ZSH_OPTIM_SGD) ? 0.9 : 0.0;
    cfg.weight_decay = 0.1;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    want = malloc(zsh_decay_sizes[0] * sizeof(float));
    grad = malloc(zsh_decay_sizes[0] * sizeof(float));
    for (p = 0; p < ZSH_DECAY_NPARAMS; p++) {
        buf[p] = malloc(zsh_decay_sizes[p] * sizeof(float));
        for (i = 0; i < zsh_decay_sizes[p]; i++) {
            buf[p][i] = zsh_decay_init(p, i);
        }
        name[0] = (char)('a' + p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, name, zsh_decay_sizes[p], ZSH_FLOAT32,
                                                     buf[p], &param[p]));
        if (zsh_decay_own[p] >= 0.0) {
            ZSH_EXPECT_STATUS(ZSH_OK,
                              zsh_optim_set_weight_decay(opt, param[p], zsh_decay_own[p]));
        }
    }
    for (t = 1; t <= ZSH_DECAY_STEPS; t++) {
        for (p = ZSH_DECAY_NPARAMS; p-- > 0;) {
            for (i = 0; i < zsh_decay_sizes[p]; i++) {
                grad[i] = zsh_decay_grad(p, i, t);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[p], grad));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
        for (p = 0; p < ZSH_DECAY_NPARAMS; p++) {
            zsh_decay_reference(&cfg, p, n, t, want);
            data = buf[p];
            if ((stage == 3) && (zsh_optim_fetch(opt, param[p], &data) != ZSH_OK)) {
                zsh_test_fail(__FILE__, __LINE__, "fetch: %s", zsh_last_error());
                goto out;
            }
            got = data;
            for (i = 0; i < zsh_decay_sizes[p]; i++) {
                if (memcmp(&got[i], &want[i], sizeof(float)) != 0) {
                    zsh_test_fail(__FILE__, __LINE__, "kind %d, stage %d, %d ranks, step %d: "
                                  "element %zu of '%c' (decay %g) is %a, not %a", (int)kind,
                                  stage, n, t, i, 'a' + p, zsh_decay_own[p], (double)got[i],
                                  (double)want[i]);
                    break;
                }
            }
            if (stage == 3) {
                ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, param[p]));
            }
        }
    }
out:
    zsh_optim_destroy(opt);
    for (p = 0; p < ZSH_DECAY_NPARAMS; p++) {
        free(buf[p]);
    }
    free(want);
    free(grad);
}

ZSH_RANK_TEST(optim_decay, each_parameter_decays_at_its_own_rate_with_torch_optims_bits)
{
    static const zsh_optim_kind_t kinds[] = {ZSH_OPTIM_ADAMW, ZSH_OPTIM_ADAM, ZSH_OPTIM_SGD};
    size_t k;
    int stage;

    for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
        for (stage = 0; stage <= 3; stage++) {
            zsh_decay_run(comm, kinds[k], stage);
        }
    }
}

ZSH_RANK_TEST(optim_decay, a_decay_not_finite_or_negative_is_refused_naming_the_parameter)
{
    static const double bad[] = {-1e-3, NAN, INFINITY, -INFINITY};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param;
    float buf[4] = {0};
    size_t i;

    zsh_optim_config_init(&cfg);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "bias", 4, ZSH_FLOAT32, buf, &param));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_weight_decay(opt, param, bad[i]));
        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "parameter 'bias': weight_decay=") != NULL);
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_weight_decay(NULL, param, 0.0));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_weight_decay(opt, NULL, 0.0));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_weight_decay(opt, param, 0.0));
    zsh_optim_destroy(opt);
}
