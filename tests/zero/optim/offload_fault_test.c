/*
 * What the offload tiers refuse, and what a failing disk does to a step:
 * settings the stage cannot honour and a budget smaller than one sub-group
 * are refused at create or setup with a message naming them; an injected
 * EIO, ENOSPC or short read gives ZSH_ERR_IO on every rank (the failing one
 * names the file) and every later step is refused, so nothing trains on
 * what the failed step left half written (and parameters in the NVMe tier's
 * file are not fetched from it); a directory that cannot hold the
 * files is named. Faults are injected on rank 0 only, through the I/O
 * engine's test hook.
 */
#include "harness/zsh_test.h"

#include "core/half.h"
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
            /* Sticky: no later step trains on what the failed one left, and
             * at stage 3 the parameters' file, perhaps partly rewritten, is
             * not handed out. */
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_zero_grad(opt));
            if (stage == 3) {
                void *data;

                ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_fetch(opt, p, &data));
                ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "may be partly updated");
            } else {
                ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
                ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_step(opt, &applied));
            }
            zsh_optim_destroy(opt);
        }
    }
    ZSH_EXPECT_EQ(0, rmdir(dir)); /* destroy left nothing behind */
    free(dir);
}

/* This rank's view of parameter @p: the framework's buffer @w below stage
 * 3, the gathered parameter at stage 3; @bytes of it into @out. */
static zsh_status_t zsh_ft_params(zsh_optim_t *opt, zsh_param_t *p, const void *w, int stage,
                                  size_t bytes, void *out)
{
    zsh_status_t status;
    void *data;

    if (stage < 3) {
        memcpy(out, w, bytes);
        return ZSH_OK;
    }
    status = zsh_optim_fetch(opt, p, &data);
    if (status == ZSH_OK) {
        memcpy(out, data, bytes);
        status = zsh_optim_release(opt, p);
    }
    return status;
}

/* Elements per rank: a shard of two sub-groups, the second partly full. */
#define ZSH_FT_UNDO_PER_RANK (3 * ZSH_TIER_ALIGN_ELEMS / 2)

/* A write fails on rank 0 at every point of a step in turn: in its
 * gradient writes, before any sub-group is updated, after some are, in the
 * last. Every rank (those that finished their part of the step too) gives
 * back exactly the parameters it had before the step, at every stage whose
 * parameters live in memory and in fp32 and bf16, and the error says so. */
ZSH_RANK_TEST(optim_offload_fault, a_failed_step_leaves_the_parameters_as_they_were_on_every_rank)
{
    static const zsh_dtype_t precs[] = {ZSH_FLOAT32, ZSH_BFLOAT16};
    /* Each rank is a thread: buffers of its own. */
    const size_t numel = ZSH_FT_UNDO_PER_RANK * (size_t)zsh_comm_size(comm);
    float *w32 = calloc(numel, sizeof(float));
    float *g32 = calloc(numel, sizeof(float));
    float *before = calloc(numel, sizeof(float));
    float *after  = calloc(numel, sizeof(float));
    uint16_t *w16 = calloc(numel, sizeof(uint16_t));
    uint16_t *g16 = calloc(numel, sizeof(uint16_t));
    zsh_optim_config_t cfg;
    char *dir = zsh_ft_dir();
    unsigned long ok_writes;
    size_t i, bytes;
    int pr, stage, cpu, applied;
    zsh_status_t status;
    zsh_optim_t *opt;
    zsh_param_t *p;
    void *w, *g;

    ZSH_ASSERT_TRUE((dir != NULL) && (w32 != NULL) && (g32 != NULL) && (before != NULL) &&
                    (after != NULL) && (w16 != NULL) && (g16 != NULL));
    for (pr = 0; pr < 2; pr++) {
        w     = (precs[pr] == ZSH_FLOAT32) ? (void *)w32 : (void *)w16;
        g     = (precs[pr] == ZSH_FLOAT32) ? (void *)g32 : (void *)g16;
        bytes = numel * ((precs[pr] == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t));
        for (stage = 0; stage <= 3; stage++) {
            for (cpu = 0; cpu <= (stage == 3); cpu++) {
                /* Until the step has fewer writes than the fault lets through. */
                for (ok_writes = 0, status = ZSH_ERR_IO; status != ZSH_OK; ok_writes++) {
                    for (i = 0; i < numel; i++) {
                        w32[i] = (float)i * 0.001f;
                        g32[i] = 0.5f - (float)(i % 7) * 0.1f;
                        w16[i] = zsh_float_to_bf16(w32[i]);
                        g16[i] = zsh_float_to_bf16(g32[i]);
                    }
                    zsh_ft_config(&cfg, stage, dir);
                    cfg.precision      = precs[pr];
                    cfg.offload_params = cpu ? ZSH_OFFLOAD_CPU : ZSH_OFFLOAD_NONE;
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", numel,
                                                                 precs[pr], w, &p));
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_setup(opt));
                    ZSH_ASSERT_TRUE(opt->tiers.nsg >= 2); /* some updated, some not */
                    /* A first step, so the states are on disk and not zeros. */
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_zero_grad(opt));
                    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ft_params(opt, p, w, stage, bytes, before));
                    if (zsh_comm_rank(comm) == 0) {
                        zsh_aio_inject(opt->tiers.aio, ZSH_AIO_FAULT_EIO, 1, ok_writes);
                    }
                    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, p, g));
                    status = zsh_optim_step(opt, &applied);
                    if (status != ZSH_OK) {
                        ZSH_EXPECT_STATUS(ZSH_ERR_IO, status);
                        ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "the parameters are as they "
                                                                 "were before it") != NULL);
                        ZSH_EXPECT_STATUS(ZSH_OK,
                                          zsh_ft_params(opt, p, w, stage, bytes, after));
                        if (memcmp(before, after, bytes) != 0) {
                            zsh_test_fail(__FILE__, __LINE__, "rank %d of %d, %s, stage %d%s, "
                                          "the write after %lu failing: the failed step "
                                          "changed the parameters", zsh_comm_rank(comm),
                                          zsh_comm_size(comm), (pr == 0) ? "fp32" : "bf16",
                                          stage, cpu ? " (parameters in the host tier)" : "",
                                          ok_writes);
                        }
                    }
                    zsh_optim_destroy(opt);
                }
                /* The step's own writes: several undo copies and states. */
                ZSH_EXPECT_TRUE(ok_writes >= 4);
            }
        }
    }
    ZSH_EXPECT_EQ(0, rmdir(dir));
    free(dir);
    free(w32);
    free(g32);
    free(before);
    free(after);
    free(w16);
    free(g16);
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

/* A gradient write fails on rank 0 only, and rank 0 learns it between steps
 * (zsh_optim_zero_grad waits for the writes): the next fetches still run on
 * every rank, none refused alone while the others wait in its gather, and
 * the step after them fails on every rank. A child communicator with a
 * short timeout turns a rank left waiting into a failure, not a hang. */
ZSH_RANK_TEST(optim_offload_fault, a_gradient_write_failing_between_steps_stops_every_rank_at_the_step)
{
    float a[ZSH_FT_NUMEL], b[ZSH_FT_NUMEL], g[ZSH_FT_NUMEL];
    zsh_optim_config_t cfg;
    char *dir = zsh_ft_dir();
    zsh_comm_t *child;
    zsh_optim_t *opt;
    zsh_param_t *pa, *pb;
    int applied;
    size_t i;

    ZSH_ASSERT_TRUE(dir != NULL);
    for (i = 0; i < ZSH_FT_NUMEL; i++) {
        a[i] = b[i] = (float)i * 0.001f;
        g[i]        = 0.25f;
    }
    zsh_ft_config(&cfg, 3, dir);
    cfg.max_live_bytes = ZSH_FT_NUMEL * sizeof(float); /* one parameter gathered at a time */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, zsh_comm_rank(comm), &child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_timeout(child, 20.0));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(child, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "a", ZSH_FT_NUMEL, ZSH_FLOAT32, a, &pa));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "b", ZSH_FT_NUMEL, ZSH_FLOAT32, b, &pb));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    if (zsh_comm_rank(comm) == 0) {
        zsh_aio_inject(opt->tiers.aio, ZSH_AIO_FAULT_EIO, 1, 0);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, pa, g));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, pb, g));
    (void)zsh_optim_zero_grad(opt); /* rank 0's tier has failed, the others' not */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, pa, g));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_ft_backward(opt, pb, g));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_optim_step(opt, &applied));
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

    /* One sub-group of 4096 elements x 16 bytes (fp32 AdamW's m, v, the
     * gradient shard and the parameters' undo copy) is 64k: a budget of 32k
     * is refused at setup. */
    zsh_ft_config(&cfg, 2, dir);
    cfg.sub_group_size = 4096;
    cfg.bucket_size    = sizeof(w);
    cfg.host_mem_limit = 32 << 10;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", 1 << 16, ZSH_FLOAT32, w, &p));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_setup(opt));
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "host_mem_limit (ZSH_HOST_MEM_LIMIT) is 32768") !=
                    NULL);
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "is 65536 bytes") != NULL);
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
