/*
 * fp16 dynamic loss scaling: a step whose gradients overflow on any rank is
 * skipped on every rank, the parameters stay as they were, and the scale is
 * halved; clean windows double it again.
 */
#include "optim/scaler.h"
#include "quad.h"

#include <stdio.h>

ZSH_TEST(optim_scaler, overflow_skips_and_halves_then_a_clean_window_doubles)
{
    zsh_scaler_t s;

    zsh_scaler_init(&s, 1024.0f, true, 2, 1.0f);
    ZSH_EXPECT_TRUE(!zsh_scaler_update(&s, false));
    ZSH_EXPECT_TRUE(zsh_scaler_update(&s, true));
    ZSH_EXPECT_TRUE(s.scale == 512.0f);
    ZSH_EXPECT_TRUE(!zsh_scaler_update(&s, false));
    ZSH_EXPECT_TRUE(s.scale == 512.0f);
    ZSH_EXPECT_TRUE(!zsh_scaler_update(&s, false));
    ZSH_EXPECT_TRUE(s.scale == 1024.0f);
    /* Never below the floor. */
    zsh_scaler_init(&s, 2.0f, true, 2, 1.0f);
    zsh_scaler_update(&s, true);
    zsh_scaler_update(&s, true);
    ZSH_EXPECT_TRUE(s.scale == 1.0f);
    /* A static scaler never skips. */
    zsh_scaler_init(&s, 8.0f, false, 2, 1.0f);
    ZSH_EXPECT_TRUE(!zsh_scaler_update(&s, true));
    ZSH_EXPECT_TRUE(s.scale == 8.0f);
}

ZSH_RANK_TEST(optim_mixed, fp16_overflow_on_one_rank_skips_the_step_everywhere_and_rescales)
{
    int n = zsh_comm_size(comm), stage;
    zsh_quad_run_t ref = {.bad_rank = 0, .bad_step = 2}, run;
    zsh_optim_config_t cfg;
    char what[64];

    zsh_optim_config_init(&cfg);
    cfg.precision         = ZSH_FLOAT16;
    cfg.lr                = 0.05f;
    cfg.loss_scale        = 256.0f;
    cfg.loss_scale_window = 3;
    ZSH_ASSERT_TRUE(zsh_quad_reference(comm, &cfg, 4, &ref));
    for (stage = 0; stage <= 3; stage++) {
        run       = (zsh_quad_run_t){.bad_rank = n - 1, .bad_step = 2};
        cfg.stage = stage;
        snprintf(what, sizeof(what), "fp16 stage %d on %d ranks", stage, n);
        ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 4, &run));
        ZSH_EXPECT_EQ(1, run.applied[0]);
        ZSH_EXPECT_EQ(0, run.applied[1]);
        ZSH_EXPECT_EQ(1, run.applied[2]);
        ZSH_EXPECT_EQ(1, run.applied[3]);
        ZSH_EXPECT_EQ(1, run.stats.skipped_steps);
        ZSH_EXPECT_EQ(4, run.stats.steps);
        /* 256, halved by the overflow, and two clean steps are not a window of 3. */
        ZSH_EXPECT_TRUE(run.stats.loss_scale == 128.0f);
        /* Skipping left the parameters alone: the run tracks a reference that
         * skipped the same step. */
        zsh_quad_expect_near(&run, &ref, 4, 5e-3, what);
        zsh_quad_free(&run);
    }
    zsh_quad_free(&ref);
}

ZSH_RANK_TEST(optim_mixed, a_skipped_step_leaves_the_parameters_unchanged)
{
    zsh_quad_run_t one = {.bad_rank = -1}, skipped = {.bad_rank = 0, .bad_step = 2};
    zsh_optim_config_t cfg;
    size_t p, e;

    zsh_optim_config_init(&cfg);
    cfg.precision  = ZSH_FLOAT16;
    cfg.loss_scale = 256.0f;
    cfg.stage      = 3;
    ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 1, &one));
    ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 2, &skipped));
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            ZSH_EXPECT_TRUE(one.final[p][e] == skipped.final[p][e]);
        }
    }
    zsh_quad_free(&one);
    zsh_quad_free(&skipped);
}
