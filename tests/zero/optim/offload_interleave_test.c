/*
 * Gradients handed over between fetches, as a stage 3 backward pass does:
 * each parameter is gathered again, its gradient computed and handed over,
 * so its bucket's reduction is in flight while the next parameter is read
 * from the NVMe tier. With the host budget full, a wait for room takes back
 * only what finished writes held, never the buffer a reduction in flight
 * still writes: the training gives the in-memory run's parameters, bit for
 * bit.
 */
#include "harness/zsh_test.h"

#include "optim/optim_impl.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_IL_PARAMS 8
#define ZSH_IL_NUMEL  4096
#define ZSH_IL_STEPS  3

/* The gradient of parameter @p at step @step on @rank from its values @w. */
static void zsh_il_grad(const float *w, float *g, int p, int step, int rank)
{
    size_t j;

    for (j = 0; j < ZSH_IL_NUMEL; j++) {
        g[j] = 0.01f * w[j] + 0.001f * (float)(rank + 1) * sinf((float)(j + 7 * p + 13 * step));
    }
}

/* Train @cfg on @comm; the final parameters into @out (ZSH_IL_PARAMS x
 * ZSH_IL_NUMEL); false after a test failure. */
static bool zsh_il_train(zsh_comm_t *comm, const zsh_optim_config_t *cfg, float *out)
{
    float *w = calloc(ZSH_IL_PARAMS * ZSH_IL_NUMEL, sizeof(float));
    float *g = calloc(ZSH_IL_PARAMS * ZSH_IL_NUMEL, sizeof(float));
    zsh_param_t *params[ZSH_IL_PARAMS];
    int rank = zsh_comm_rank(comm), p, step;
    zsh_optim_t *opt = NULL;
    char name[16];
    size_t j;
    void *v;

    if ((w == NULL) || (g == NULL)) {
        zsh_test_fail(__FILE__, __LINE__, "out of memory");
        free(w);
        free(g);
        return false;
    }
    for (j = 0; j < ZSH_IL_PARAMS * ZSH_IL_NUMEL; j++) {
        w[j] = cosf(0.01f * (float)j);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_create(comm, cfg, &opt));
    for (p = 0; (opt != NULL) && (p < ZSH_IL_PARAMS); p++) {
        snprintf(name, sizeof(name), "w%d", p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, name, ZSH_IL_NUMEL, ZSH_FLOAT32,
                                                     w + p * ZSH_IL_NUMEL, &params[p]));
    }
    if ((opt != NULL) && (zsh_test_failures() == 0)) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    }
    for (step = 0; (zsh_test_failures() == 0) && (step < ZSH_IL_STEPS); step++) {
        /* Forward: every parameter in order. */
        for (p = 0; (zsh_test_failures() == 0) && (p < ZSH_IL_PARAMS); p++) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], &v));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
        }
        /* Backward: gathered again, each gradient handed over at once. */
        for (p = ZSH_IL_PARAMS - 1; (zsh_test_failures() == 0) && (p >= 0); p--) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], &v));
            if (zsh_test_failures() == 0) {
                zsh_il_grad(v, g + p * ZSH_IL_NUMEL, p, step, rank);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, params[p], g + p * ZSH_IL_NUMEL));
        }
        if (zsh_test_failures() == 0) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
        }
    }
    for (p = 0; (zsh_test_failures() == 0) && (p < ZSH_IL_PARAMS); p++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], &v));
        if (zsh_test_failures() == 0) {
            memcpy(out + p * ZSH_IL_NUMEL, v, ZSH_IL_NUMEL * sizeof(float));
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
    }
    zsh_optim_destroy(opt);
    free(g);
    free(w);
    return zsh_test_failures() == 0;
}

ZSH_RANK_TEST(optim_offload, gradients_between_fetches_in_a_full_host_budget_match_memory)
{
    char tmpl[] = "/var/tmp/zsh-interleave-XXXXXX", *dir = mkdtemp(tmpl);
    float *ref = calloc(ZSH_IL_PARAMS * ZSH_IL_NUMEL, sizeof(float));
    float *off = calloc(ZSH_IL_PARAMS * ZSH_IL_NUMEL, sizeof(float));
    zsh_optim_config_t cfg;
    size_t j;

    ZSH_ASSERT_TRUE((dir != NULL) && (ref != NULL) && (off != NULL));
    zsh_optim_config_init(&cfg);
    cfg.stage        = 3;
    cfg.kind         = ZSH_OPTIM_ADAMW;
    cfg.lr           = 0.05f;
    cfg.weight_decay = 0.1f;
    cfg.bucket_size  = ZSH_IL_NUMEL * sizeof(float); /* a bucket per parameter */
    cfg.hpz          = ZSH_HPZ_OFF;
    if (zsh_il_train(comm, &cfg, ref)) {
        cfg.offload_optimizer = ZSH_OFFLOAD_NVME;
        cfg.offload_params    = ZSH_OFFLOAD_NVME;
        cfg.nvme_dir          = dir;
        cfg.sub_group_size    = ZSH_TIER_ALIGN_ELEMS;
        /* One sub-group of every kind of model state (parameters on NVMe
         * need no undo copy): the budget is full as soon as a few gradient
         * shards and parameter reads are under way. */
        cfg.host_mem_limit = ZSH_TK_UNDO * ZSH_TIER_ALIGN_ELEMS * sizeof(float);
        if (zsh_il_train(comm, &cfg, off)) {
            for (j = 0; j < ZSH_IL_PARAMS * ZSH_IL_NUMEL; j++) {
                if (memcmp(&ref[j], &off[j], sizeof(float)) != 0) {
                    zsh_test_fail(__FILE__, __LINE__, "rank %d of %d: parameter w%zu[%zu] is %.9g "
                                  "with the NVMe tier, %.9g in memory", zsh_comm_rank(comm),
                                  zsh_comm_size(comm), j / ZSH_IL_NUMEL, j % ZSH_IL_NUMEL,
                                  (double)off[j], (double)ref[j]);
                    break;
                }
            }
        }
    }
    rmdir(dir);
    free(off);
    free(ref);
}
