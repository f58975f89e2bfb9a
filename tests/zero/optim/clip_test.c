/*
 * Clipping decides as torch.nn.utils.clip_grad_norm_ does: it multiplies the
 * gradients by max_norm / (norm + 1e-6) whenever that factor is below 1, so
 * a norm under max_norm by less than 1e-6 is still scaled down a little, and
 * a norm further under it is left alone. zsh_optim_clip_grad_norm(), called
 * between the gradients and the step as torch's is, returns the global norm
 * and clips the coming step as the configured max_grad_norm would; called
 * twice, the lower bound applies; bad bounds and a call before every
 * gradient is in are refused and change nothing.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <string.h>

/* Per rank: multiples of 2^-12, so the sum over N ranks is exact and so is
 * its norm, 5 * N * 2^-12. */
static const float zsh_clip_grad[2] = {3.0f / 4096.0f, -4.0f / 4096.0f};

/* One SGD step (lr 1, parameters from 0) at @stage with @max_norm
 * configured, and zsh_optim_clip_grad_norm() called with each of the
 * @ncalls bounds in @calls (its norms into @norms): @out gets the
 * parameters, minus the clipped gradient sum. */
static void zsh_clip_run(zsh_comm_t *comm, int stage, float max_norm, const double *calls,
                         int ncalls, double *norms, float out[2])
{
    float buf[2] = {0.0f, 0.0f};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p[2];
    void *data;
    int i;

    zsh_optim_config_init(&cfg);
    cfg.stage         = stage;
    cfg.kind          = ZSH_OPTIM_SGD;
    cfg.lr            = 1.0f;
    cfg.max_grad_norm = max_norm;
    out[0] = out[1] = NAN;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    for (i = 0; i < 2; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, i ? "b" : "a", 1, ZSH_FLOAT32,
                                                     &buf[i], &p[i]));
    }
    for (i = 0; i < 2; i++) { /* a forward pass, so stage 3 records the order it reads in */
        if (zsh_optim_fetch(opt, p[i], &data) == ZSH_OK) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, p[i]));
        }
    }
    for (i = 0; i < 2; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, p[i], &zsh_clip_grad[i]));
    }
    for (i = 0; i < ncalls; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_clip_grad_norm(opt, calls[i], &norms[i]));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
    for (i = 0; i < 2; i++) { /* at stage 3 the layer holds the values */
        if (zsh_optim_fetch(opt, p[i], &data) == ZSH_OK) {
            out[i] = *(const float *)data;
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, p[i]));
        }
    }
    zsh_optim_destroy(opt);
}

static void zsh_clip_step(zsh_comm_t *comm, int stage, float max_norm, float out[2])
{
    zsh_clip_run(comm, stage, max_norm, NULL, 0, NULL, out);
}

ZSH_RANK_TEST(optim_clip, a_norm_within_1e_6_below_max_norm_is_scaled_as_torch_scales_it)
{
    double n = zsh_comm_size(comm), norm = 5.0 * n / 4096.0, coef;
    float max_norm, got[2];
    int stage, i;

    /* The float just above norm + 2^-24: below norm + 1e-6, so torch's
     * factor max_norm / (norm + 1e-6) is 1 - 7e-4 / n, under 1. */
    max_norm = nextafterf((float)(norm + 0x1p-24), 1.0f);
    coef     = max_norm / (norm + 1e-6);
    ZSH_ASSERT_TRUE((max_norm > norm) && (coef < 1.0 - 1e-4 / n));
    for (stage = 0; stage <= 3; stage++) {
        zsh_clip_step(comm, stage, max_norm, got);
        for (i = 0; i < 2; i++) {
            double want = -n * zsh_clip_grad[i] * coef;

            if (!(fabs(got[i] - want) <= 1e-6 * fabs(want))) {
                zsh_test_fail(__FILE__, __LINE__, "stage %d: parameter %d is %.9g, torch's "
                              "clipping gives %.9g (unclipped %.9g)", stage, i, got[i], want,
                              -n * zsh_clip_grad[i]);
            }
        }
    }
}

ZSH_RANK_TEST(optim_clip, a_norm_more_than_1e_6_below_max_norm_is_left_alone)
{
    double n = zsh_comm_size(comm), norm = 5.0 * n / 4096.0;
    float got[2];
    int stage, i;

    for (stage = 0; stage <= 3; stage++) {
        zsh_clip_step(comm, stage, (float)(norm + 2e-6), got);
        for (i = 0; i < 2; i++) {
            /* Exact: the factor is 1, not a rounding of something near it. */
            ZSH_EXPECT_TRUE(got[i] == (float)(-n * zsh_clip_grad[i]));
        }
    }
}

ZSH_RANK_TEST(optim_clip, clip_grad_norm_returns_the_norm_and_clips_the_step_as_max_grad_norm)
{
    double n = zsh_comm_size(comm), norm = 5.0 * n / 4096.0, half = norm / 2, got_norm;
    float got[2], want[2];
    int stage, i;

    for (stage = 0; stage <= 3; stage++) {
        /* Configured clipping at half the norm, against none configured and
         * the call asking for it: the same bits, and the exact norm. */
        zsh_clip_step(comm, stage, (float)half, want);
        got_norm = 0.0;
        zsh_clip_run(comm, stage, 0.0f, &half, 1, &got_norm, got);
        ZSH_EXPECT_TRUE(got_norm == norm);
        for (i = 0; i < 2; i++) {
            if (memcmp(&got[i], &want[i], sizeof(float)) != 0 ||
                !(fabsf(want[i]) < fabsf((float)(n * zsh_clip_grad[i])))) {
                zsh_test_fail(__FILE__, __LINE__, "stage %d: parameter %d is %a after the call, "
                              "%a with max_grad_norm configured", stage, i, (double)got[i],
                              (double)want[i]);
            }
        }
        /* A bound above the norm by more than 1e-6 leaves the step unclipped,
         * and one above the configured bound leaves that one in force. */
        {
            double above = norm * 2;

            zsh_clip_run(comm, stage, 0.0f, &above, 1, &got_norm, got);
            for (i = 0; i < 2; i++) {
                ZSH_EXPECT_TRUE(got[i] == (float)(-n * zsh_clip_grad[i]));
            }
            zsh_clip_run(comm, stage, (float)half, &above, 1, &got_norm, got);
            ZSH_EXPECT_TRUE(memcmp(got, want, sizeof(got)) == 0);
        }
    }
}

ZSH_RANK_TEST(optim_clip, clip_grad_norm_twice_returns_the_clipped_norm_and_the_lower_bound_applies)
{
    double n = zsh_comm_size(comm), norm = 5.0 * n / 4096.0;
    double calls[2] = {norm / 2, norm / 4}, norms[2] = {0.0, 0.0};
    float got[2], want[2];
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        zsh_clip_step(comm, stage, (float)(norm / 4), want);
        zsh_clip_run(comm, stage, 0.0f, calls, 2, norms, got);
        ZSH_EXPECT_TRUE(norms[0] == norm);
        /* torch's second call sees the first's clipped gradients. */
        ZSH_EXPECT_TRUE(fabs(norms[1] - norm * calls[0] / (norm + 1e-6)) <= 1e-12);
        ZSH_EXPECT_TRUE(memcmp(got, want, sizeof(got)) == 0);
    }
}

ZSH_RANK_TEST(optim_clip, clip_grad_norm_refuses_bad_bounds_and_missing_gradients_and_changes_nothing)
{
    static const double bad[] = {0.0, -1.0, NAN, INFINITY};
    double n = zsh_comm_size(comm), norm = -1.0;
    float buf[2] = {0.0f, 0.0f};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p[2];
    size_t k;
    void *data;
    int i;

    zsh_optim_config_init(&cfg);
    cfg.stage = 2;
    cfg.kind  = ZSH_OPTIM_SGD;
    cfg.lr    = 1.0f;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    for (i = 0; i < 2; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, i ? "b" : "a", 1, ZSH_FLOAT32,
                                                     &buf[i], &p[i]));
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_clip_grad_norm(opt, 1.0, NULL));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, p[0], &zsh_clip_grad[0]));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_clip_grad_norm(opt, 1e-9, &norm));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "'b' has no gradient") != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, p[1], &zsh_clip_grad[1]));
    for (k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_clip_grad_norm(opt, bad[k], &norm));
        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "max_norm=") != NULL);
    }
    ZSH_EXPECT_TRUE(norm == -1.0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
    for (i = 0; i < 2; i++) { /* unclipped: the refusals set no bound */
        data = &buf[i];
        ZSH_EXPECT_TRUE(*(const float *)data == (float)(-n * zsh_clip_grad[i]));
    }
    zsh_optim_destroy(opt);
}
