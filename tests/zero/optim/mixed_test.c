/*
 * fp16 dynamic loss scaling: a step whose gradients overflow on any rank is
 * skipped on every rank, the parameters stay as they were, and the scale is
 * halved; clean windows double it again. The scaler's state reads back and
 * restores (zsh_optim_get_loss_scaler / zsh_optim_set_loss_scaler).
 */
#include "optim/scaler.h"
#include "quad.h"

#include <math.h>
#include <stdint.h>
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

ZSH_RANK_TEST(optim_mixed, the_scaler_state_is_restored_and_values_out_of_range_change_nothing)
{
    uint16_t w[4] = {0}, g[4] = {0}; /* fp16 zeros */
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p;
    unsigned clean = 9;
    float scale = 0.0f;
    int applied = 0;

    zsh_optim_config_init(&cfg);
    cfg.precision         = ZSH_FLOAT16;
    cfg.loss_scale        = 256.0f;
    cfg.loss_scale_window = 3;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", 4, ZSH_FLOAT16, w, &p));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_loss_scaler(opt, &scale, &clean));
    ZSH_EXPECT_TRUE((scale == 256.0f) && (clean == 0));
    /* Two clean steps restored: the next one completes the window of 3. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_loss_scaler(opt, 64.0f, 2));
    ZSH_EXPECT_TRUE(zsh_optim_loss_scale(opt) == 64.0f);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_loss_scaler(opt, -1.0f, 0));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "a loss scale of -1");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_loss_scaler(opt, NAN, 0));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_loss_scaler(opt, 0.5f, 0));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "at least the minimum");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_loss_scaler(opt, 8.0f, 3));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "3 clean steps");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, p, g));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_loss_scaler(opt, 8.0f, 0));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "has a gradient pending");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_loss_scaler(opt, &scale, &clean));
    ZSH_EXPECT_TRUE((scale == 64.0f) && (clean == 2));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
    ZSH_EXPECT_EQ(1, applied);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_loss_scaler(opt, &scale, &clean));
    ZSH_EXPECT_TRUE((scale == 128.0f) && (clean == 0));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_get_loss_scaler(opt, NULL, &clean));
    zsh_optim_destroy(opt);

    /* A static scale counts no clean steps. */
    cfg.dynamic_loss_scale = 0;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_set_loss_scaler(opt, 32.0f, 0));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_loss_scaler(opt, 32.0f, 1));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "a static scale counts none");
    zsh_optim_destroy(opt);
}
