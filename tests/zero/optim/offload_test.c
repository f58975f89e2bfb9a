/*
 * The offload tiers change where state lives, never what is computed: at
 * every stage, rule and precision, with the optimizer states (and their
 * gradient shards) in the host tier or in files, and at stage 3 the
 * parameters too, the losses and final parameters equal the in-memory
 * run's bit for bit. Buckets of a few hundred elements and sub-groups of
 * one bucket each make the step swap several sub-groups through a budget of
 * two to four, so the pipeline's reuse of its buffers is exercised.
 */
#include "quad.h"

#include "optim/optim_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_OFF_STEPS 4

typedef struct zsh_off_tiers {
    zsh_offload_t opt, params;
} zsh_off_tiers_t;

static const zsh_off_tiers_t zsh_off_combos[] = {
    {ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE},  {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE},
    {ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_CPU},  {ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NVME},
    {ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_CPU},   {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME},
    {ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NVME},  {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_CPU},
};

static const char *const zsh_off_names[] = {"none", "cpu", "nvme"};

/* A directory of this rank's own for the NVMe tier. */
static char *zsh_off_dir(void)
{
    char tmpl[] = "/var/tmp/zsh-offload-test-XXXXXX";
    char *dir   = mkdtemp(tmpl);

    return (dir != NULL) ? strdup(dir) : NULL;
}

static void zsh_off_small(zsh_optim_config_t *cfg, const char *dir)
{
    cfg->bucket_size    = 1024;
    cfg->sub_group_size = ZSH_TIER_ALIGN_ELEMS;
    /* Two sub-groups of every kind swapped at once: fewer slots than
     * sub-groups, so the pipeline reuses them. */
    cfg->host_mem_limit = 2 * 5 * 4 * ZSH_TIER_ALIGN_ELEMS;
    cfg->nvme_dir       = dir;
}

static void zsh_off_check(zsh_comm_t *comm, const zsh_optim_config_t *base, const char *label)
{
    zsh_quad_run_t ref, run;
    zsh_optim_config_t cfg;
    char what[200], *dir = zsh_off_dir();
    size_t c;
    int stage;

    ZSH_ASSERT_TRUE(dir != NULL);
    for (stage = 0; stage <= 3; stage++) {
        cfg       = *base;
        cfg.stage = stage;
        zsh_off_small(&cfg, dir);
        ref = (zsh_quad_run_t){.bad_rank = base->dynamic_loss_scale == 1 ? 0 : -1, .bad_step = 2};
        if (!zsh_quad_train(comm, &cfg, ZSH_OFF_STEPS, &ref)) {
            zsh_quad_free(&ref);
            break;
        }
        for (c = 0; c < sizeof(zsh_off_combos) / sizeof(zsh_off_combos[0]); c++) {
            if ((stage < 3) && (zsh_off_combos[c].params != ZSH_OFFLOAD_NONE)) {
                continue;
            }
            cfg.offload_optimizer = zsh_off_combos[c].opt;
            cfg.offload_params    = zsh_off_combos[c].params;
            snprintf(what, sizeof(what), "%s stage %d optimizer %s params %s on %d ranks", label,
                     stage, zsh_off_names[cfg.offload_optimizer],
                     zsh_off_names[cfg.offload_params], zsh_comm_size(comm));
            run = (zsh_quad_run_t){.bad_rank = ref.bad_rank, .bad_step = ref.bad_step};
            if (zsh_quad_train(comm, &cfg, ZSH_OFF_STEPS, &run)) {
                zsh_quad_expect_near(&run, &ref, ZSH_OFF_STEPS, 0.0, what);
                ZSH_EXPECT_EQ(ref.stats.param_bytes, run.stats.param_bytes);
                ZSH_EXPECT_EQ(ref.stats.grad_bytes, run.stats.grad_bytes);
                ZSH_EXPECT_EQ(ref.stats.state_bytes, run.stats.state_bytes);
                ZSH_EXPECT_EQ(ref.stats.skipped_steps, run.stats.skipped_steps);
                ZSH_EXPECT_TRUE(run.stats.host_buffer_peak_bytes <= cfg.host_mem_limit);
                if ((cfg.offload_optimizer == ZSH_OFFLOAD_NVME) ||
                    (cfg.offload_params == ZSH_OFFLOAD_NVME)) {
                    ZSH_EXPECT_TRUE(run.stats.nvme_bytes > 0);
                    ZSH_EXPECT_TRUE(run.stats.io_read_bytes > 0);
                    ZSH_EXPECT_TRUE(run.stats.io_write_bytes > 0);
                    ZSH_EXPECT_TRUE(run.stats.io_engine != NULL);
                } else {
                    ZSH_EXPECT_EQ(0, run.stats.nvme_bytes);
                    ZSH_EXPECT_TRUE(run.stats.io_engine == NULL);
                    ZSH_EXPECT_TRUE(run.stats.host_bytes > 0);
                }
                ZSH_EXPECT_EQ(run.stats.param_bytes + run.stats.grad_bytes +
                                  run.stats.state_bytes,
                              run.stats.compute_bytes + run.stats.host_bytes +
                                  run.stats.nvme_bytes);
            }
            zsh_quad_free(&run);
        }
        zsh_quad_free(&ref);
    }
    rmdir(dir);
    free(dir);
}

ZSH_RANK_TEST(optim_offload, adamw_fp32_every_tier_matches_memory_bit_for_bit)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.kind          = ZSH_OPTIM_ADAMW;
    cfg.lr            = 0.05f;
    cfg.weight_decay  = 0.1f;
    cfg.max_grad_norm = 0.5f;
    zsh_off_check(comm, &cfg, "adamw fp32 clipped");
}

ZSH_RANK_TEST(optim_offload, adam_bf16_every_tier_matches_memory_bit_for_bit)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.kind          = ZSH_OPTIM_ADAM;
    cfg.precision     = ZSH_BFLOAT16;
    cfg.lr            = 0.05f;
    cfg.weight_decay  = 0.01f;
    cfg.max_grad_norm = 0.5f;
    zsh_off_check(comm, &cfg, "adam bf16 clipped");
}

ZSH_RANK_TEST(optim_offload, sgd_nesterov_fp32_every_tier_matches_memory_bit_for_bit)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.kind     = ZSH_OPTIM_SGD;
    cfg.lr       = 0.1f;
    cfg.momentum = 0.9f;
    cfg.nesterov = 1;
    zsh_off_check(comm, &cfg, "sgd nesterov fp32");
}

ZSH_RANK_TEST(optim_offload, fp16_with_an_overflowing_step_matches_memory_bit_for_bit)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.kind      = ZSH_OPTIM_ADAMW;
    cfg.precision = ZSH_FLOAT16;
    cfg.lr        = 0.01f;
    cfg.dynamic_loss_scale = 1;
    zsh_off_check(comm, &cfg, "adamw fp16 loss-scaled");
}

/* SGD without momentum keeps no state, so below stage 2 (where the
 * gradients stay the framework's) an NVMe optimizer tier has nothing to
 * swap: no files and no I/O engine are made for it, not even for the
 * parameters' undo copy, and the run is the in-memory one. */
ZSH_RANK_TEST(optim_offload, stateless_sgd_below_stage_2_makes_no_nvme_tier)
{
    zsh_quad_run_t ref, run;
    zsh_optim_config_t cfg;
    char *dir = zsh_off_dir();
    int stage;

    ZSH_ASSERT_TRUE(dir != NULL);
    for (stage = 0; stage <= 1; stage++) {
        zsh_optim_config_init(&cfg);
        cfg.kind     = ZSH_OPTIM_SGD;
        cfg.lr       = 0.1f;
        cfg.momentum = 0.0f;
        cfg.stage    = stage;
        zsh_off_small(&cfg, dir);
        ref = (zsh_quad_run_t){.bad_rank = -1};
        run = ref;
        if (zsh_quad_train(comm, &cfg, ZSH_OFF_STEPS, &ref)) {
            cfg.offload_optimizer = ZSH_OFFLOAD_NVME;
            if (zsh_quad_train(comm, &cfg, ZSH_OFF_STEPS, &run)) {
                zsh_quad_expect_near(&run, &ref, ZSH_OFF_STEPS, 0.0, "stateless sgd, nvme");
                ZSH_EXPECT_TRUE(run.stats.io_engine == NULL);
                ZSH_EXPECT_EQ(0, run.stats.nvme_bytes);
                ZSH_EXPECT_EQ(0, run.stats.io_write_bytes);
            }
        }
        zsh_quad_free(&run);
        zsh_quad_free(&ref);
    }
    ZSH_EXPECT_EQ(0, rmdir(dir));
    free(dir);
}
