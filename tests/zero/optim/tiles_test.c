/*
 * Memory-centric tiling through the optimizer: a parameter registered as
 * tiles is fetched, used and released one tile at a time, so at stage 3 the
 * gathered bytes stay within max_live_bytes although the whole parameter
 * does not fit, and the training result is the same as untiled.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stdlib.h>

#define ZSH_TILES_NUMEL 4000
#define ZSH_TILES_TILE  1000

/* Two SGD steps on loss 0.5 * |p - 1|^2 (per element), tiled or not; the
 * gathered peak in *peak_p and the final first and last element. */
static void zsh_tiles_run(zsh_comm_t *comm, bool tiled, size_t *peak_p, float *ends)
{
    int n = zsh_comm_size(comm), step;
    zsh_param_t *tiles[ZSH_TILES_NUMEL / ZSH_TILES_TILE], *whole;
    float *buf = calloc(ZSH_TILES_NUMEL, sizeof(float)), grad[ZSH_TILES_NUMEL];
    size_t k, i, ntiles = tiled ? ZSH_TILES_NUMEL / ZSH_TILES_TILE : 1;
    size_t len = tiled ? ZSH_TILES_TILE : ZSH_TILES_NUMEL;
    zsh_optim_config_t cfg;
    zsh_optim_stats_t st;
    zsh_optim_t *opt;
    float *w;

    zsh_optim_config_init(&cfg);
    cfg.stage          = 3;
    cfg.kind           = ZSH_OPTIM_SGD;
    cfg.lr             = 0.5f;
    cfg.bucket_size    = ZSH_TILES_TILE * sizeof(float);
    cfg.max_live_bytes = 2 * ZSH_TILES_TILE * sizeof(float) + 64 * (size_t)n;
    for (i = 0; i < ZSH_TILES_NUMEL; i++) {
        buf[i] = (float)(i % 10);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    if (tiled) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register_tiled(opt, "big.weight", ZSH_TILES_NUMEL,
                                                           ZSH_FLOAT32, buf, ZSH_TILES_TILE,
                                                           tiles));
        ZSH_EXPECT_STR_CONTAINS(zsh_param_name(tiles[3]), "big.weight[3]");
        ZSH_EXPECT_EQ(ZSH_TILES_TILE, zsh_param_numel(tiles[3]));
    } else {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "big.weight", ZSH_TILES_NUMEL,
                                                     ZSH_FLOAT32, buf, &whole));
        tiles[0] = whole;
    }
    for (step = 0; step <= 2; step++) {
        for (k = ntiles; k-- > 0;) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, tiles[k], (void **)&w));
            for (i = 0; i < len; i++) {
                grad[i] = (w[i] - 1.0f) / (float)n; /* every rank: the same share */
            }
            if ((step == 2) && (k == 0)) {
                ends[0] = w[0];
            }
            if ((step == 2) && (k == ntiles - 1)) {
                ends[1] = w[len - 1];
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, tiles[k]));
            if (step < 2) {
                ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, tiles[k], grad));
            }
        }
        if (step < 2) {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
        }
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    *peak_p = st.gathered_peak_bytes;
    zsh_optim_destroy(opt);
    free(buf);
}

ZSH_RANK_TEST(optim_tiles, a_tiled_parameter_stays_within_the_live_budget_and_trains_the_same)
{
    size_t budget = 2 * ZSH_TILES_TILE * sizeof(float) + 64 * (size_t)zsh_comm_size(comm);
    size_t tiled_peak, whole_peak;
    float tiled_ends[2], whole_ends[2];

    zsh_tiles_run(comm, true, &tiled_peak, tiled_ends);
    zsh_tiles_run(comm, false, &whole_peak, whole_ends);
    ZSH_EXPECT_TRUE(tiled_peak <= budget);
    ZSH_EXPECT_TRUE(whole_peak >= ZSH_TILES_NUMEL * sizeof(float));
    /* p - 0.5 (p - 1) twice: 0 -> 0.75, 9 -> 3. */
    ZSH_EXPECT_TRUE(tiled_ends[0] == whole_ends[0]);
    ZSH_EXPECT_TRUE(tiled_ends[1] == whole_ends[1]);
    ZSH_EXPECT_TRUE(tiled_ends[0] == 0.75f);
    ZSH_EXPECT_TRUE(tiled_ends[1] == 3.0f);
}

ZSH_RANK_TEST(optim_tiles, a_refused_tiled_registration_registers_no_tile)
{
    float buf[10] = {0};
    zsh_param_t *tiles[4] = {NULL, NULL, NULL, NULL}, *p;
    zsh_optim_stats_t st;
    zsh_optim_t *opt;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, NULL, &opt));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_register_tiled(opt, "w", 10, ZSH_BFLOAT16,
                                                                    buf, 3, tiles));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "parameter 'w' has dtype bf16");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_register_tiled(opt, "w", 10, ZSH_FLOAT32,
                                                                    buf, 0, tiles));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "parameter 'w': tile_numel is 0");
    ZSH_EXPECT_TRUE(tiles[0] == NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "v", 10, ZSH_FLOAT32, buf, &p));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
    ZSH_EXPECT_EQ(10 * sizeof(float), st.param_bytes); /* only v */
    zsh_optim_destroy(opt);
}
