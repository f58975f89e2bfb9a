/*
 * Sizes that do not fit a size_t are refused before anything is allocated,
 * naming the parameter, and the optimizer or tensor stays usable. Nothing
 * here allocates the sizes it names: every refusal comes first.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>
#include <zeroshard/shard.h>

#include <stdint.h>

#define ZSH_EXPECT_REJECTED(_call, _needle) \
    do { \
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, (_call)); \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), (_needle)); \
    } while (0)

static zsh_optim_t *zsh_overflow_optim(zsh_comm_t *comm, int stage, zsh_optim_kind_t kind,
                                       zsh_dtype_t precision)
{
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;

    zsh_optim_config_init(&cfg);
    cfg.stage     = stage;
    cfg.kind      = kind;
    cfg.precision = precision;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    return opt;
}

/* The probe: 2^62 fp32 elements wrapped to 0 bytes and aborted in
 * free() at the first step. */
ZSH_RANK_TEST(optim_overflow, numel_2_pow_62_is_refused_and_the_optimizer_still_steps)
{
    static const zsh_dtype_t precisions[] = {ZSH_FLOAT32, ZSH_BFLOAT16};
    uint16_t hbuf[4] = {0}, hgrad[4] = {0};
    float buf[4] = {1, 2, 3, 4}, grad[4] = {0};
    zsh_param_t *huge = NULL, *w, *tiles[4];
    zsh_optim_stats_t stats;
    zsh_optim_t *opt;
    size_t p;
    int stage;

    for (p = 0; p < 2; p++) {
        bool half = precisions[p] != ZSH_FLOAT32;

        for (stage = 0; stage <= 3; stage++) {
            opt = zsh_overflow_optim(comm, stage, ZSH_OPTIM_ADAMW, precisions[p]);
            ZSH_EXPECT_REJECTED(zsh_optim_register(opt, "emb.weight", (size_t)1 << 62,
                                                   precisions[p], buf, &huge),
                                "parameter 'emb.weight' (index 0): numel 4611686018427387904");
            ZSH_EXPECT_TRUE(huge == NULL);
            ZSH_EXPECT_REJECTED(zsh_optim_register_tiled(opt, "emb.tiled", (size_t)1 << 62,
                                                         precisions[p], buf, (size_t)1 << 20,
                                                         tiles),
                                "parameter 'emb.tiled' (index 0)");
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "fc.weight", 4, precisions[p],
                                                         half ? (void *)hbuf : (void *)buf,
                                                         &w));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &stats));
            ZSH_EXPECT_EQ((size_t)1, stats.nbuckets);
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, w,
                                                           half ? (void *)hgrad : (void *)grad));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, NULL));
            zsh_optim_destroy(opt);
        }
    }
}

ZSH_RANK_TEST(optim_overflow, parameters_whose_sum_overflows_are_refused_at_the_one_that_does)
{
    float buf[1] = {0};
    zsh_param_t *param;
    zsh_optim_t *opt;
    int stage;

    /* AdamW fp32 costs 16 bytes an element: four of 2^58 reach 2^64. */
    for (stage = 0; stage <= 3; stage++) {
        opt = zsh_overflow_optim(comm, stage, ZSH_OPTIM_ADAMW, ZSH_FLOAT32);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "layer0", (size_t)1 << 58,
                                                     ZSH_FLOAT32, buf, &param));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "layer1", (size_t)1 << 58,
                                                     ZSH_FLOAT32, buf, &param));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "layer2", (size_t)1 << 58,
                                                     ZSH_FLOAT32, buf, &param));
        ZSH_EXPECT_REJECTED(zsh_optim_register(opt, "layer3", (size_t)1 << 58, ZSH_FLOAT32,
                                               buf, &param),
                            "parameter 'layer3' (index 3) of numel 288230376151711744 brings "
                            "the 864691128455135232 elements registered before it past");
        /* A small one still fits beside them. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "bias", 1, ZSH_FLOAT32, buf,
                                                     &param));
        zsh_optim_destroy(opt);
    }
}

/* SGD without momentum at fp32 costs 8 bytes an element, so 2^61 - 1
 * elements fit (a prime: no rank count divides it) but padding them to
 * equal shards does not. */
ZSH_RANK_TEST(optim_overflow, a_bucket_that_overflows_once_padded_is_refused_at_setup)
{
    size_t limit = ((size_t)1 << 61) - 1, n = (size_t)zsh_comm_size(comm);
    float buf[1] = {0};
    zsh_param_t *param;
    zsh_optim_t *opt;
    int stage;

    if (n < 2) {
        ZSH_SKIP("padding needs at least 2 ranks");
    }
    for (stage = 0; stage <= 3; stage++) {
        opt = zsh_overflow_optim(comm, stage, ZSH_OPTIM_SGD, ZSH_FLOAT32);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "wide", (limit / n) * n + 1,
                                                     ZSH_FLOAT32, buf, &param));
        ZSH_EXPECT_REJECTED(zsh_optim_setup(opt), "the bucket from parameter 'wide'");
        zsh_optim_destroy(opt);
    }
}

ZSH_RANK_TEST(optim_overflow, sharded_tensors_of_huge_numel_are_refused)
{
    zsh_shard_t *shard = NULL;
    zsh_tiled_t *tiled = NULL;

    ZSH_EXPECT_REJECTED(zsh_shard_create(comm, (size_t)1 << 62, ZSH_FLOAT32, &shard),
                        "numel 4611686018427387904 of fp32");
    ZSH_EXPECT_REJECTED(zsh_shard_create(comm, SIZE_MAX, ZSH_FLOAT32, &shard),
                        "is more than 18446744073709551615 bytes");
    ZSH_EXPECT_TRUE(shard == NULL);
    ZSH_EXPECT_REJECTED(zsh_tiled_create(comm, SIZE_MAX, ZSH_FLOAT64, 4, &tiled),
                        "zsh_tiled_create: numel 18446744073709551615 of fp64");
    ZSH_EXPECT_REJECTED(zsh_tiled_create(comm, (size_t)1 << 62, ZSH_FLOAT32, 2, &tiled),
                        "zsh_tiled_create: numel 4611686018427387904 of fp32");
    ZSH_EXPECT_TRUE(tiled == NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_shard_create(comm, 10, ZSH_FLOAT32, &shard));
    zsh_shard_destroy(shard);
}
