/*
 * zsh_optim_set_lr(): a schedule's learning rate, set between steps. AdamW
 * with weight decay over three parameters of awkward sizes at every stage
 * and rank count, the rate changed before each step (down, to 0, up): the
 * parameters after every step are torch.optim's rule (rule_ref.h, the
 * kernels' bits) at that step's rate, its decay (1 - lr * wd) included. A
 * checkpoint carries the rate in effect to an optimizer configured with
 * another, at another stage. Rates that are not finite and >= 0 are refused
 * and change nothing.
 */
#include "harness/zsh_test.h"
#include "rule_ref.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_LR_NPARAMS 3
#define ZSH_LR_STEPS   4

static const size_t zsh_lr_sizes[ZSH_LR_NPARAMS] = {301, 37, 250};

/* Step t's rate (1-based); step 1 runs at the configured 0.01. */
static const double zsh_lr_rates[ZSH_LR_STEPS + 1] = {0, 0.01, 0.004, 0.0, 0.025};

static float zsh_lr_init(int p, size_t i)
{
    return (float)cos(0.7 * (double)i - p);
}

/* Multiples of 2^-6 below 1: the sum over any number of ranks up to 8 is
 * exact, so the reduced gradient is the rank count times this one. */
static float zsh_lr_grad(int p, size_t i, int t)
{
    return (float)((int)((i * 5 + (size_t)p * 7 + (size_t)t * 3) % 11) - 5) * 0x1p-6f;
}

/* The parameters after @upto steps, each at its own step's rate. */
static void zsh_lr_reference(const zsh_optim_config_t *base, int n, int upto,
                             float *want[])
{
    zsh_optim_config_t c = *base;
    float *g, *m, *v;
    size_t i, k;
    int p, t;

    for (p = 0; p < ZSH_LR_NPARAMS; p++) {
        k = zsh_lr_sizes[p];
        g = calloc(k, sizeof(float));
        m = calloc(k, sizeof(float));
        v = calloc(k, sizeof(float));
        for (i = 0; i < k; i++) {
            want[p][i] = zsh_lr_init(p, i);
        }
        for (t = 1; t <= upto; t++) {
            for (i = 0; i < k; i++) {
                g[i] = (float)n * zsh_lr_grad(p, i, t);
            }
            c.lr = zsh_lr_rates[t];
            zsh_rule_adam_torch(want[p], g, m, v, k, &c, t, 1.0f);
        }
        free(g);
        free(m);
        free(v);
    }
}

static bool zsh_lr_open(zsh_comm_t *comm, int stage, float *buf[], zsh_param_t *param[],
                        zsh_optim_t **opt, zsh_optim_config_t *cfg)
{
    char name[2] = "a";
    int p;

    zsh_optim_config_init(cfg);
    cfg->stage        = stage;
    cfg->kind         = ZSH_OPTIM_ADAMW;
    cfg->lr           = zsh_lr_rates[1];
    cfg->weight_decay = 0.1;
    if (zsh_optim_create(comm, cfg, opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "create: %s", zsh_last_error());
        return false;
    }
    for (p = 0; p < ZSH_LR_NPARAMS; p++) {
        name[0] = (char)('a' + p);
        if (zsh_optim_register(*opt, name, zsh_lr_sizes[p], ZSH_FLOAT32, buf[p], &param[p]) !=
            ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    return true;
}

/* Whether every parameter holds @want's bits after step @t. */
static bool zsh_lr_check(zsh_optim_t *opt, zsh_param_t *param[], float *buf[], int stage, int n,
                         int t, float *want[])
{
    void *data;
    const float *got;
    size_t i;
    int p, ok = 1;

    for (p = 0; (p < ZSH_LR_NPARAMS) && ok; p++) {
        data = buf[p];
        if ((stage == 3) && (zsh_optim_fetch(opt, param[p], &data) != ZSH_OK)) {
            zsh_test_fail(__FILE__, __LINE__, "fetch: %s", zsh_last_error());
            return false;
        }
        got = data;
        for (i = 0; (i < zsh_lr_sizes[p]) && ok; i++) {
            if (memcmp(&got[i], &want[p][i], sizeof(float)) != 0) {
                zsh_test_fail(__FILE__, __LINE__, "stage %d, %d ranks, step %d at lr %g: "
                              "element %zu of '%c' is %a, not %a", stage, n, t,
                              zsh_lr_rates[t], i, 'a' + p, (double)got[i], (double)want[p][i]);
                ok = 0;
            }
        }
        if ((stage == 3) && (zsh_optim_release(opt, param[p]) != ZSH_OK)) {
            return false;
        }
    }
    return ok;
}

/* ZSH_LR_STEPS steps at @stage, the rate set before each; with @dir the
 * optimizer is saved there after step 2 and another, configured at 0.01
 * and at stage 3 - @stage, loads it and trains the rest. */
static void zsh_lr_run(zsh_comm_t *comm, int stage, const char *dir)
{
    int n = zsh_comm_size(comm), p, t;
    float *buf[ZSH_LR_NPARAMS] = {NULL}, *want[ZSH_LR_NPARAMS] = {NULL}, *grad = NULL;
    zsh_param_t *param[ZSH_LR_NPARAMS];
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    double lr = -1.0;
    size_t i;

    grad = calloc(zsh_lr_sizes[0], sizeof(float));
    for (p = 0; p < ZSH_LR_NPARAMS; p++) {
        buf[p]  = malloc(zsh_lr_sizes[p] * sizeof(float));
        want[p] = malloc(zsh_lr_sizes[p] * sizeof(float));
        for (i = 0; i < zsh_lr_sizes[p]; i++) {
            buf[p][i] = zsh_lr_init(p, i);
        }
    }
    if (!zsh_lr_open(comm, stage, buf, param, &opt, &cfg)) {
        goto out;
    }
    for (t = 1; t <= ZSH_LR_STEPS; t++) {
        if ((dir != NULL) && (t == 3)) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_save(opt, dir));
            zsh_optim_destroy(opt);
            opt   = NULL;
            stage = 3 - stage;
            if (!zsh_lr_open(comm, stage, buf, param, &opt, &cfg) ||
                (zsh_optim_load(opt, dir) != ZSH_OK)) {
                zsh_test_fail(__FILE__, __LINE__, "load: %s", zsh_last_error());
                goto out;
            }
            /* The saved rate, not the configured one. */
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_lr(opt, &lr));
            ZSH_EXPECT_TRUE(lr == zsh_lr_rates[2]);
        }
        if (t > 1) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_lr(opt, zsh_lr_rates[t]));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_lr(opt, &lr));
        ZSH_EXPECT_TRUE(lr == zsh_lr_rates[t]);
        for (p = ZSH_LR_NPARAMS; p-- > 0;) {
            for (i = 0; i < zsh_lr_sizes[p]; i++) {
                grad[i] = zsh_lr_grad(p, i, t);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[p], grad));
        }
        if (zsh_optim_step(opt, NULL) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "step %d: %s", t, zsh_last_error());
            goto out;
        }
        zsh_lr_reference(&cfg, n, t, want);
        if (!zsh_lr_check(opt, param, buf, stage, n, t, want)) {
            goto out;
        }
    }
out:
    zsh_optim_destroy(opt);
    for (p = 0; p < ZSH_LR_NPARAMS; p++) {
        free(buf[p]);
        free(want[p]);
    }
    free(grad);
}

ZSH_RANK_TEST(optim_lr, each_step_takes_the_rate_set_before_it)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_lr_run(comm, stage, NULL);
    }
}

ZSH_RANK_TEST(optim_lr, a_checkpoint_carries_the_rate_in_effect)
{
    char path[128] = "", tmpl[] = "/var/tmp/zsh-lr-XXXXXX", cmd[160];

    if ((zsh_comm_rank(comm) == 0) && (mkdtemp(tmpl) != NULL)) {
        snprintf(path, sizeof(path), "%s", tmpl);
    }
    if ((zsh_broadcast(path, sizeof(path), ZSH_UINT8, 0, comm) != ZSH_OK) || (path[0] == '\0')) {
        zsh_test_fail(__FILE__, __LINE__, "no shared directory: %s", zsh_last_error());
        return;
    }
    zsh_lr_run(comm, 0, path);
    zsh_lr_run(comm, 3, path);
    zsh_barrier(comm);
    if (zsh_comm_rank(comm) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
        ZSH_EXPECT_TRUE(system(cmd) == 0);
    }
    zsh_barrier(comm);
}

ZSH_RANK_TEST(optim_lr, a_rate_not_finite_or_negative_is_refused_and_changes_nothing)
{
    const double bad[] = {-1e-3, NAN, INFINITY, -INFINITY, -0x1p-1074};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    double lr = 0.0;
    size_t i;

    zsh_optim_config_init(&cfg);
    cfg.lr = 3e-4;
    if (zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "create: %s", zsh_last_error());
        return;
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_lr(opt, bad[i]));
        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "zsh_optim_set_lr: lr=") != NULL);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_lr(opt, &lr));
        ZSH_EXPECT_TRUE(lr == 3e-4);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_lr(opt, 0.0));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_lr(opt, &lr));
    ZSH_EXPECT_TRUE(lr == 0.0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_lr(NULL, 1e-3));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_lr(NULL, &lr));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_lr(opt, NULL));
    zsh_optim_destroy(opt);
}
