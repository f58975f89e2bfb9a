/*
 * Clipping decides as torch.nn.utils.clip_grad_norm_ does: it multiplies the
 * gradients by max_norm / (norm + 1e-6) whenever that factor is below 1, so
 * a norm under max_norm by less than 1e-6 is still scaled down a little, and
 * a norm further under it is left alone.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <math.h>

/* Per rank: multiples of 2^-12, so the sum over N ranks is exact and so is
 * its norm, 5 * N * 2^-12. */
static const float zsh_clip_grad[2] = {3.0f / 4096.0f, -4.0f / 4096.0f};

/* One SGD step (lr 1, parameters from 0) at @stage with @max_norm: @out gets
 * the parameters, minus the clipped gradient sum. */
static void zsh_clip_step(zsh_comm_t *comm, int stage, float max_norm, float out[2])
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
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
    for (i = 0; i < 2; i++) { /* at stage 3 the layer holds the values */
        if (zsh_optim_fetch(opt, p[i], &data) == ZSH_OK) {
            out[i] = *(const float *)data;
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, p[i]));
        }
    }
    zsh_optim_destroy(opt);
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
