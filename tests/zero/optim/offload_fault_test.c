/*
 * What the offload tiers refuse, and what a failing disk does to a step:
 * settings the stage cannot honour and a budget smaller than one sub-group
 * are refused at create or setup with a message naming them; an injected
 * EIO, ENOSPC or short read gives ZSH_ERR_IO on every rank (the failing one
 * names the file) and every later step is refused, so nothing trains on
 * what the failed step left half written; a directory that cannot hold the
 * files is named. Faults are injected on rank 0 only, through the I/O
 * engine's test hook.
 */
#include "harness/zsh_test.h"

#include "optim/optim_impl.h"

#include <zeroshard/optim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_FT_NUMEL 3000

static char *zsh_ft_dir(void)
{
    char tmpl[] = "/var/tmp/zsh-offload-fault-XXXXXX";
    char *dir   = mkdtemp(tmpl);

    return (dir != NULL) ? strdup(dir) : NULL;
}

static void zsh_ft_config(zsh_optim_config_t *cfg, int stage, const char *dir)
{
    zsh_optim_config_init(cfg);
    cfg->stage             = stage;
    cfg->kind              = ZSH_OPTIM_ADAMW;
    cfg->offload_optimizer = ZSH_OFFLOAD_NVME;
    cfg->offload_params    = (stage == 3) ? ZSH_OFFLOAD_NVME : ZSH_OFFLOAD_NONE;
    cfg->nvme_dir          = dir;
    cfg->bucket_size       = 4096;
    cfg->sub_group_size    = ZSH_TIER_ALIGN_ELEMS;
}

/* One parameter of ZSH_FT_NUMEL, its gradient handed over (fetched first at stage 3). */
static zsh_status_t zsh_ft_backward(zsh_optim_t *opt, zsh_param_t *p, const float *grad)
{
    zsh_status_t status;
    void *data;

    status = zsh_optim_fetch(opt, p, &data);
    if (status == ZSH_OK) {
        status = zsh_optim_release(opt, p);
    }
    return (status == ZSH_OK) ? zsh_optim_grad_ready(opt, p, grad) : status;
}

ZSH_RANK_TEST(optim_offload_fault, an_injected_write_error_fails_the_step_on_every_rank)
{
    static const zsh_aio_fault_t faults[] = {ZSH_AIO_FAULT_EIO, ZSH_AIO_FAULT_ENOSPC};
    float w[ZSH_FT_NUMEL], g[ZSH_FT_NUMEL];
    zsh_optim_config_t cfg;
    zsh_optim_stats_t stats;
    char *dir = zsh_ft_dir();
    zsh_optim_t *opt;
    zsh_param_t *p;
    int stage, f, applied;
    size_t i;

    ZSH_ASSERT_TRUE(dir != NULL);
    for (f = 0; f < 2; f++) {
        for (stage = 1; stage <= 3; stage++) {
            for (i = 0; i < ZSH_FT_NUMEL; i++) {
                w[i] = (float)i * 0.001f;
                g[i]             = 0.5f;
            }
            zsh_ft_config(&cfg, stage, dir);
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", ZSH_FT_NUMEL, ZSH_FLOAT32, w,
                                                         &p));
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_setup(opt));
            if (zsh_comm_rank(comm) == 0) {
                zsh_aio_inject(opt->tiers.aio, faults[f], 1, 0);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
            ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_step(opt, &applied));
            if (zsh_comm_rank(comm) == 0) {
                ZSH_EXPECT_TRUE(strstr(zsh_last_error(), zsh_aio_dir(opt->tiers.aio)) != NULL);
                ZSH_EXPECT_TRUE(strstr(zsh_last_error(), (f == 0) ? "Input/output error"
                                                                  : "No space left") != NULL);
            } else {
                ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "rank 0's NVMe tier failed") != NULL);
            }
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &stats));
            ZSH_EXPECT_EQ(0, stats.steps);
            /* Sticky: no later step trains on what the failed one left. */
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_zero_grad(opt));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
            ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_step(opt, &applied));
            zsh_optim_destroy(opt);
        }
    }
    ZSH_EXPECT_EQ(0, rmdir(dir)); /* destroy left nothing behind */
    free(dir);
}

ZSH_RANK_TEST(optim_offload_fault, a_short_read_fails_the_step_naming_the_file)
{
    float w[ZSH_FT_NUMEL], g[ZSH_FT_NUMEL];
    zsh_optim_config_t cfg;
    char *dir = zsh_ft_dir();
    zsh_optim_t *opt;
    zsh_param_t *p;
    int applied;
    size_t i;

    ZSH_ASSERT_TRUE(dir != NULL);
    for (i = 0; i < ZSH_FT_NUMEL; i++) {
        w[i] = (float)i;
        g[i] = 1.0f;
    }
    zsh_ft_config(&cfg, 2, dir);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", ZSH_FT_NUMEL, ZSH_FLOAT32, w, &p));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied)); /* states now on disk */
    if (zsh_comm_rank(comm) == 0) {
        zsh_aio_inject(opt->tiers.aio, ZSH_AIO_FAULT_SHORT, 0, 0);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_step(opt, &applied));
    if (zsh_comm_rank(comm) == 0) {
        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "short read") != NULL);
        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), zsh_aio_dir(opt->tiers.aio)) != NULL);
    }
    zsh_optim_destroy(opt);
    rmdir(dir);
    free(dir);
}

ZSH_RANK_TEST(optim_offload_fault, a_parameter_shard_that_cannot_be_read_fails_the_fetch)
{
    float w[ZSH_FT_NUMEL];
    zsh_optim_config_t cfg;
    char *dir = zsh_ft_dir();
    zsh_comm_t *child;
    zsh_optim_t *opt;
    zsh_param_t *p;
    void *data;

    ZSH_ASSERT_TRUE(dir != NULL);
    memset(w, 0, sizeof(w));
    zsh_ft_config(&cfg, 3, dir);
    cfg.prefetch = 0;
    /* The failed read aborts the optimizer's communicator: a child of the
     * test's own, which later tests (sharing it under mpirun) still use. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, zsh_comm_rank(comm), &child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(child, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", ZSH_FT_NUMEL, ZSH_FLOAT32, w, &p));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    if (zsh_comm_rank(comm) == 0) {
        zsh_aio_inject(opt->tiers.aio, ZSH_AIO_FAULT_EIO, 0, 0);
        ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_fetch(opt, p, &data));
        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "params") != NULL);
    } else {
        /* Rank 0 aborted the communicator: the gather fails instead of waiting. */
        ZSH_EXPECT_TRUE(zsh_optim_fetch(opt, p, &data) != ZSH_OK);
    }
    zsh_optim_destroy(opt);
    zsh_comm_destroy(child);
    rmdir(dir);
    free(dir);
}

ZSH_RANK_TEST(optim_offload_fault, settings_the_stage_or_budget_cannot_honour_are_refused_by_name)
{
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p;
    char *dir = zsh_ft_dir();
    static float w[1 << 16];

    ZSH_ASSERT_TRUE(dir != NULL);
    zsh_ft_config(&cfg, 2, dir);
    cfg.offload_params = ZSH_OFFLOAD_CPU;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "offload_params=cpu") != NULL);
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "needs stage 3") != NULL);

    zsh_ft_config(&cfg, 1, NULL);
    unsetenv("ZSH_NVME_DIR");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_create(comm, &cfg, &opt));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "ZSH_NVME_DIR") != NULL);

    /* One sub-group of 4096 elements x 12 bytes (fp32 AdamW's m, v and the
     * gradient shard) is 48k: a budget of 32k is refused at setup. */
    zsh_ft_config(&cfg, 2, dir);
    cfg.sub_group_size = 4096;
    cfg.bucket_size    = sizeof(w);
    cfg.host_mem_limit = 32 << 10;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", 1 << 16, ZSH_FLOAT32, w, &p));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_setup(opt));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "host_mem_limit (ZSH_HOST_MEM_LIMIT) is 32768") !=
                    NULL);
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "is 49152 bytes") != NULL);
    zsh_optim_destroy(opt);

    /* A directory that is a file cannot hold the tier: named at setup. */
    zsh_ft_config(&cfg, 2, "/etc/hostname");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", 1 << 10, ZSH_FLOAT32, w, &p));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_setup(opt));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "/etc/hostname") != NULL);
    zsh_optim_destroy(opt);
    rmdir(dir);
    free(dir);
}

ZSH_RANK_TEST(optim_offload_fault, a_caller_built_before_the_tiers_keeps_working)
{
    zsh_optim_config_t cfg;
    unsigned char stats[sizeof(zsh_optim_stats_t)];
    zsh_optim_t *opt;
    zsh_param_t *p;
    float w[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    size_t i;

    zsh_optim_config_init(&cfg);
    cfg.size = ZSH_OPTIM_CONFIG_SIZE_0;
    /* What an older caller never wrote: garbage, which must not be read. */
    cfg.offload_optimizer = (zsh_offload_t)77;
    cfg.nvme_dir          = (const char *)1;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", 8, ZSH_FLOAT32, w, &p));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    memset(stats, 0xab, sizeof(stats));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, (zsh_optim_stats_t *)stats));
    for (i = ZSH_OPTIM_STATS_SIZE_0; i < sizeof(stats); i++) {
        ZSH_EXPECT_EQ(0xab, stats[i]); /* its struct ends before the tier fields */
    }
    ZSH_EXPECT_EQ(8 * sizeof(float), ((zsh_optim_stats_t *)stats)->param_bytes);
    zsh_optim_destroy(opt);
}
