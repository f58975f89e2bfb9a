/*
 * zsh_optim_set_param rewrites every copy the layer keeps of a parameter:
 * a step after it starts from the new values at every stage and precision
 * (the mixed-precision master weights included), and a fetched parameter is
 * refused with nothing changed.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdint.h>
#include <string.h>

#define ZSH_SP_NUMEL 37

static uint16_t zsh_sp_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return (uint16_t)(u >> 16); /* exact for the small integers used here */
}

static float zsh_sp_float(zsh_dtype_t dt, const void *buf, size_t i)
{
    uint32_t u;
    float f;

    if (dt == ZSH_FLOAT32) {
        return ((const float *)buf)[i];
    }
    u = (uint32_t)((const uint16_t *)buf)[i] << 16;
    memcpy(&f, &u, sizeof(f));
    return f;
}

static void zsh_sp_fill(zsh_dtype_t dt, void *buf, float base)
{
    size_t i;

    for (i = 0; i < ZSH_SP_NUMEL; i++) {
        if (dt == ZSH_FLOAT32) {
            ((float *)buf)[i] = base + (float)(i % 8);
        } else {
            ((uint16_t *)buf)[i] = zsh_sp_bf16(base + (float)(i % 8));
        }
    }
}

ZSH_RANK_TEST(optim_set_param, a_step_after_set_param_starts_from_the_new_values_at_every_stage)
{
    zsh_dtype_t dts[2] = {ZSH_FLOAT32, ZSH_BFLOAT16};
    int n = zsh_comm_size(comm), stage, d, applied;
    float init[ZSH_SP_NUMEL], vals[ZSH_SP_NUMEL], grad[ZSH_SP_NUMEL];
    uint16_t inith[ZSH_SP_NUMEL], valsh[ZSH_SP_NUMEL], gradh[ZSH_SP_NUMEL];
    zsh_optim_config_t cfg;
    zsh_param_t *p, *q;
    zsh_optim_t *opt;
    void *data, *ib, *vb, *gb;
    float other[4] = {1, 2, 3, 4};
    size_t i;

    for (d = 0; d < 2; d++) {
        ib = (dts[d] == ZSH_FLOAT32) ? (void *)init : (void *)inith;
        vb = (dts[d] == ZSH_FLOAT32) ? (void *)vals : (void *)valsh;
        gb = (dts[d] == ZSH_FLOAT32) ? (void *)grad : (void *)gradh;
        for (stage = 0; stage <= 3; stage++) {
            zsh_sp_fill(dts[d], ib, 100.0f);
            zsh_sp_fill(dts[d], vb, 8.0f);
            zsh_optim_config_init(&cfg);
            cfg.stage     = stage;
            cfg.kind      = ZSH_OPTIM_SGD;
            cfg.lr        = 1.0f;
            cfg.precision = dts[d];
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
            ZSH_ASSERT_STATUS(ZSH_OK,
                              zsh_optim_register(opt, "w", ZSH_SP_NUMEL, dts[d], ib, &p));
            if (dts[d] == ZSH_FLOAT32) {
                ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "b", 4, dts[d], other, &q));
            } else {
                q = NULL;
            }
            /* Fetched: refused, and the values stay. */
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(opt, p, &data));
            ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_param(opt, p, vb));
            ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "release it");
            ZSH_EXPECT_TRUE(zsh_sp_float(dts[d], data, 1) == 101.0f);
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(opt, p));

            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_set_param(opt, p, vb));
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(opt, p, &data));
            for (i = 0; i < ZSH_SP_NUMEL; i++) {
                ZSH_EXPECT_TRUE(zsh_sp_float(dts[d], data, i) == 8.0f + (float)(i % 8));
            }
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(opt, p));
            /* Gradient 1 in total: the step lands one below the new values. */
            for (i = 0; i < ZSH_SP_NUMEL; i++) {
                grad[i]  = 1.0f / (float)n;
                gradh[i] = zsh_sp_bf16(1.0f / (float)n);
            }
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, p, gb));
            ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_set_param(opt, p, vb));
            ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "gradient pending");
            if (q != NULL) {
                ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, q, grad));
            }
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
            ZSH_EXPECT_EQ(1, applied);
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(opt, p, &data));
            for (i = 0; i < ZSH_SP_NUMEL; i++) {
                ZSH_EXPECT_TRUE(zsh_sp_float(dts[d], data, i) == 7.0f + (float)(i % 8));
            }
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(opt, p));
            zsh_optim_destroy(opt);
        }
    }
}
