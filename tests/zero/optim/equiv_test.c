/*
 * Every stage, at every rank count, follows the training computed without
 * the optimizer (zsh_quad_by_definition: double precision, the published
 * update rules), and on more than one rank the single-rank stage 0
 * trajectory too: same losses, same final parameters, within rounding (the
 * only difference is the order in which partial sums are added, and the
 * definition's double precision).
 */
#include "quad.h"

#include <math.h>
#include <stdio.h>

#define ZSH_EQUIV_STEPS 5

static void zsh_equiv_check(zsh_comm_t *comm, const zsh_optim_config_t *base, double tol,
                            const char *label)
{
    zsh_quad_run_t exact = {.bad_rank = -1}, ref = {.bad_rank = -1}, run;
    zsh_optim_config_t cfg = *base;
    bool one = (zsh_comm_size(comm) == 1);
    char what[160];
    int stage;

    zsh_quad_by_definition(base, ZSH_EQUIV_STEPS, &exact);
    /* On one rank the reference would be stage 0's run itself. */
    if (!one && !zsh_quad_reference(comm, base, ZSH_EQUIV_STEPS, &ref)) {
        zsh_quad_free(&exact);
        return;
    }
    for (stage = 0; stage <= 3; stage++) {
        run       = (zsh_quad_run_t){.bad_rank = -1};
        cfg.stage = stage;
        snprintf(what, sizeof(what), "%s stage %d on %d ranks", label, stage,
                 zsh_comm_size(comm));
        if (zsh_quad_train(comm, &cfg, ZSH_EQUIV_STEPS, &run)) {
            zsh_quad_expect_near(&run, &exact, ZSH_EQUIV_STEPS, tol, what);
            if (!one) {
                zsh_quad_expect_near(&run, &ref, ZSH_EQUIV_STEPS, tol, what);
            }
        }
        zsh_quad_free(&run);
    }
    zsh_quad_free(&ref);
    zsh_quad_free(&exact);
}

ZSH_RANK_TEST(optim_equiv, adamw_every_stage_matches_the_definition_and_one_rank_stage0)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.kind         = ZSH_OPTIM_ADAMW;
    cfg.lr           = 0.05f;
    cfg.weight_decay = 0.1f;
    zsh_equiv_check(comm, &cfg, 1e-5, "adamw");
}

ZSH_RANK_TEST(optim_equiv, adam_and_sgd_variants_match_the_definition_and_one_rank_stage0)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.kind         = ZSH_OPTIM_ADAM;
    cfg.lr           = 0.05f;
    cfg.weight_decay = 0.01f;
    zsh_equiv_check(comm, &cfg, 1e-5, "adam");
    cfg.kind     = ZSH_OPTIM_SGD;
    cfg.lr       = 0.1f;
    cfg.momentum = 0.9f;
    cfg.nesterov = 1;
    zsh_equiv_check(comm, &cfg, 1e-5, "sgd nesterov");
    cfg.momentum     = 0.0f;
    cfg.nesterov     = 0;
    cfg.weight_decay = 0.0f;
    zsh_equiv_check(comm, &cfg, 1e-5, "sgd plain");
}

ZSH_RANK_TEST(optim_equiv, small_buckets_and_a_tight_live_budget_change_nothing)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.lr = 0.05f;
    /* 64-byte buckets split every large parameter's bucket across ranks and
     * put the small ones together; one live bucket forces evictions and
     * re-gathers at stage 3; prefetch runs ahead in the recorded order. */
    cfg.bucket_size    = 64;
    cfg.max_live_bytes = 4;
    cfg.prefetch       = 3;
    zsh_equiv_check(comm, &cfg, 1e-5, "64-byte buckets, no room");
    cfg.bucket_size    = 1 << 20;
    cfg.max_live_bytes = 1 << 20;
    zsh_equiv_check(comm, &cfg, 1e-5, "one bucket");
}

ZSH_RANK_TEST(optim_equiv, bf16_and_fp16_master_weights_match_the_definition_and_one_rank_stage0)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.lr        = 0.05f;
    cfg.precision = ZSH_BFLOAT16;
    /* bf16 gradients summed in another order round differently (8 bits of
     * significand); the fp32 master weights keep the trajectories close. */
    zsh_equiv_check(comm, &cfg, 3e-2, "bf16");
    cfg.precision  = ZSH_FLOAT16;
    cfg.loss_scale = 256.0f; /* dynamic, but no gradient here overflows at this scale */
    zsh_equiv_check(comm, &cfg, 5e-3, "fp16");
}

ZSH_RANK_TEST(optim_equiv, clipping_by_the_global_norm_across_shards_equals_unsharded_clipping)
{
    zsh_quad_run_t ref = {.bad_rank = -1}, run = {.bad_rank = -1}, free_run = {.bad_rank = -1};
    zsh_optim_config_t cfg;
    int stage;

    zsh_optim_config_init(&cfg);
    cfg.kind          = ZSH_OPTIM_SGD;
    cfg.lr            = 0.1f;
    cfg.max_grad_norm = 0.5f;
    zsh_quad_by_definition(&cfg, ZSH_EQUIV_STEPS, &ref);
    /* The norm is well above 0.5 here, so clipping changes the result. */
    ZSH_EXPECT_TRUE(ref.stats.last_grad_norm > 1.0);
    for (stage = 0; stage <= 3; stage++) {
        cfg.stage = stage;
        ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, ZSH_EQUIV_STEPS, &run));
        zsh_quad_expect_near(&run, &ref, ZSH_EQUIV_STEPS, 1e-5, "clipped");
        ZSH_EXPECT_TRUE(fabs(run.stats.last_grad_norm - ref.stats.last_grad_norm) <=
                        1e-5 * ref.stats.last_grad_norm);
        zsh_quad_free(&run);
    }
    cfg.max_grad_norm = 0.0f;
    ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, ZSH_EQUIV_STEPS, &free_run));
    ZSH_EXPECT_TRUE(fabs(free_run.final[4][0] - ref.final[4][0]) > 1e-3);
    zsh_quad_free(&free_run);
    zsh_quad_free(&ref);
}
