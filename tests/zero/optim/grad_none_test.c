/*
 * zsh_optim_grad_none(): a parameter without a gradient in a step is left
 * as torch.optim leaves one whose gradient is None. AdamW with weight decay
 * over four parameters of awkward sizes, at every stage and rank count, in
 * one bucket (stage 3's shard holds pieces of several parameters, and its
 * update must split at them) and in a bucket each: "b" has no gradient at
 * step 2, "d" at any step. The parameters after each step are those of
 * torch.optim's rule (rule_ref.h, the kernels' bits) run per parameter
 * with the steps it took: bit for bit, b at its own count of updates
 * (Adam's t) after it missed one, d at its initial values; also across a
 * checkpoint, loaded at another stage. Refusals: a second gradient (or
 * none) for one parameter in a step.
 */
#include "harness/zsh_test.h"
#include "rule_ref.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_GN_NPARAMS 4
#define ZSH_GN_STEPS   3

static const size_t zsh_gn_sizes[ZSH_GN_NPARAMS] = {301, 37, 250, 19};

/* Whether parameter @p has a gradient at step @t (1-based). */
static bool zsh_gn_has_grad(int p, int t)
{
    return !((p == 1) && (t == 2)) && (p != 3);
}

static float zsh_gn_init(int p, size_t i)
{
    return (float)sin(0.3 * (double)i + p);
}

/* Multiples of 2^-6 below 1: sums over up to 8 ranks are exact, so the
 * reduced gradient is the rank count times this one in any order. */
static float zsh_gn_grad(int p, size_t i, int t)
{
    return (float)((int)((i * 7 + (size_t)p * 3 + (size_t)t * 5) % 13) - 6) * 0x1p-6f;
}

/* torch.optim's AdamW on each parameter, for the steps it took. */
static void zsh_gn_reference(const zsh_optim_config_t *cfg, int n, int upto, float *want[])
{
    float *g, *m, *v;
    size_t i, k;
    int p, t, count;

    for (p = 0; p < ZSH_GN_NPARAMS; p++) {
        k = zsh_gn_sizes[p];
        g = calloc(k, sizeof(float));
        m = calloc(k, sizeof(float));
        v = calloc(k, sizeof(float));
        for (i = 0; i < k; i++) {
            want[p][i] = zsh_gn_init(p, i);
        }
        for (t = 1, count = 0; t <= upto; t++) {
            if (!zsh_gn_has_grad(p, t)) {
                continue;
            }
            for (i = 0; i < k; i++) {
                g[i] = (float)n * zsh_gn_grad(p, i, t);
            }
            zsh_rule_adam_torch(want[p], g, m, v, k, cfg, ++count, 1.0f);
        }
        free(g);
        free(m);
        free(v);
    }
}

/* Parameter @p's values now into @got. */
static bool zsh_gn_values(zsh_optim_t *opt, zsh_param_t *param, const float *buf, size_t k,
                          int stage, float *got)
{
    void *data = NULL;

    if (stage < 3) {
        memcpy(got, buf, k * sizeof(float));
        return true;
    }
    if (zsh_optim_fetch(opt, param, &data) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "fetch: %s", zsh_last_error());
        return false;
    }
    memcpy(got, data, k * sizeof(float));
    return zsh_optim_release(opt, param) == ZSH_OK;
}

/* AdamW at @stage with buckets of @bucket_size bytes over buf[], which
 * holds the parameters' initial values; false, with the failure
 * reported, if it could not be made. */
static bool zsh_gn_open(zsh_comm_t *comm, int stage, size_t bucket_size, float *buf[],
                        zsh_param_t *param[], zsh_optim_t **opt, zsh_optim_config_t *cfg)
{
    char name[2] = "a";
    int p;

    zsh_optim_config_init(cfg);
    cfg->stage        = stage;
    cfg->kind         = ZSH_OPTIM_ADAMW;
    cfg->lr           = 0.01f;
    cfg->weight_decay = 0.1f;
    cfg->bucket_size  = bucket_size;
    if (zsh_optim_create(comm, cfg, opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "create: %s", zsh_last_error());
        return false;
    }
    for (p = 0; p < ZSH_GN_NPARAMS; p++) {
        name[0] = (char)('a' + p);
        if (zsh_optim_register(*opt, name, zsh_gn_sizes[p], ZSH_FLOAT32, buf[p], &param[p]) !=
            ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "register: %s", zsh_last_error());
            return false;
        }
    }
    return true;
}

/* A directory every rank of @comm shares, made by rank 0; NULL on failure. */
static char *zsh_gn_dir(zsh_comm_t *comm)
{
    char path[128] = "", tmpl[] = "/var/tmp/zsh-grad-none-XXXXXX";

    if ((zsh_comm_rank(comm) == 0) && (mkdtemp(tmpl) != NULL)) {
        snprintf(path, sizeof(path), "%s", tmpl);
    }
    if ((zsh_broadcast(path, sizeof(path), ZSH_UINT8, 0, comm) != ZSH_OK) || (path[0] == '\0')) {
        zsh_test_fail(__FILE__, __LINE__, "no shared directory: %s", zsh_last_error());
        return NULL;
    }
    return strdup(path);
}

/* Train ZSH_GN_STEPS steps at @stage with buckets of @bucket_size bytes,
 * checking every parameter after every step. With @dir, the optimizer is
 * saved there after step 2 and the rest trained by another, at stage
 * 3 - @stage, that loads it. */
static void zsh_gn_run(zsh_comm_t *comm, int stage, size_t bucket_size, const char *dir)
{
    int n = zsh_comm_size(comm), p, t, applied = 0;
    float *buf[ZSH_GN_NPARAMS] = {NULL}, *want[ZSH_GN_NPARAMS] = {NULL}, *grad = NULL, *got = NULL;
    zsh_param_t *param[ZSH_GN_NPARAMS];
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    size_t i, k;

    grad = calloc(zsh_gn_sizes[0], sizeof(float));
    got  = calloc(zsh_gn_sizes[0], sizeof(float));
    for (p = 0; p < ZSH_GN_NPARAMS; p++) {
        k       = zsh_gn_sizes[p];
        buf[p]  = malloc(k * sizeof(float));
        want[p] = malloc(k * sizeof(float));
        for (i = 0; i < k; i++) {
            buf[p][i] = zsh_gn_init(p, i);
        }
    }
    if (!zsh_gn_open(comm, stage, bucket_size, buf, param, &opt, &cfg)) {
        goto out;
    }
    for (t = 1; t <= ZSH_GN_STEPS; t++) {
        if ((dir != NULL) && (t == 3)) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_save(opt, dir));
            zsh_optim_destroy(opt);
            opt   = NULL;
            stage = 3 - stage;
            if (!zsh_gn_open(comm, stage, bucket_size, buf, param, &opt, &cfg) ||
                (zsh_optim_load(opt, dir) != ZSH_OK)) {
                zsh_test_fail(__FILE__, __LINE__, "load: %s", zsh_last_error());
                goto out;
            }
        }
        /* Backward's order: the last parameter first. */
        for (p = ZSH_GN_NPARAMS; p-- > 0;) {
            if (!zsh_gn_has_grad(p, t)) {
                ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_none(opt, param[p]));
                continue;
            }
            for (i = 0; i < zsh_gn_sizes[p]; i++) {
                grad[i] = zsh_gn_grad(p, i, t);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param[p], grad));
        }
        /* After its gradient, or its none: refused. */
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_grad_none(opt, param[1]));
        if (zsh_optim_step(opt, &applied) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "step %d: %s", t, zsh_last_error());
            goto out;
        }
        zsh_gn_reference(&cfg, n, t, want);
        for (p = 0; p < ZSH_GN_NPARAMS; p++) {
            k = zsh_gn_sizes[p];
            if (!zsh_gn_values(opt, param[p], buf[p], k, stage, got)) {
                goto out;
            }
            for (i = 0; i < k; i++) {
                if (memcmp(&got[i], &want[p][i], sizeof(float)) != 0) {
                    zsh_test_fail(__FILE__, __LINE__, "stage %d, %d ranks, buckets of %zu bytes, "
                                  "step %d%s: element %zu of '%c' is %a, not %a", stage, n,
                                  bucket_size, t, (dir != NULL) ? " (loaded)" : "", i, 'a' + p,
                                  (double)got[i], (double)want[p][i]);
                    goto out;
                }
            }
        }
    }
out:
    zsh_optim_destroy(opt);
    for (p = 0; p < ZSH_GN_NPARAMS; p++) {
        free(buf[p]);
        free(want[p]);
    }
    free(grad);
    free(got);
}

ZSH_RANK_TEST(optim_grad_none, a_parameter_without_a_gradient_is_left_and_keeps_its_own_count)
{
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_gn_run(comm, stage, 1 << 20, NULL); /* one bucket */
        zsh_gn_run(comm, stage, 1, NULL);       /* a bucket each */
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_grad_none(NULL, NULL));
}

/* Saved after the step that left b out and loaded at another stage: b's
 * own count comes back with it (the manifest's "updates"). */
ZSH_RANK_TEST(optim_grad_none, a_checkpoint_keeps_each_parameters_own_count)
{
    char *dir = zsh_gn_dir(comm), cmd[160];

    if (dir == NULL) {
        return;
    }
    zsh_gn_run(comm, 0, 1 << 20, dir);
    zsh_gn_run(comm, 3, 1 << 20, dir);
    zsh_barrier(comm);
    if (zsh_comm_rank(comm) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        ZSH_EXPECT_TRUE(system(cmd) == 0);
    }
    zsh_barrier(comm);
    free(dir);
}
