/*
 * The offload tiers' tables (optim/tier_ops.h): each fills every
 * operation; the memory tier reads and writes a kind's region in place at
 * its state base; and the table of each kind follows where it lives: every
 * kind in memory until setup, the NVMe tier's file table for the kinds it
 * keeps in files after it, and memory again once the tiers are gone.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "optim/optim_impl.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void zsh_tier_table_check_filled(const zsh_tier_ops_t *t)
{
    ZSH_EXPECT_TRUE(t->name != NULL);
    ZSH_EXPECT_TRUE(t->place != NULL);
    ZSH_EXPECT_TRUE(t->alloc != NULL);
    ZSH_EXPECT_TRUE(t->peek != NULL);
    ZSH_EXPECT_TRUE(t->patch != NULL);
    ZSH_EXPECT_TRUE(t->put != NULL);
    ZSH_EXPECT_TRUE(t->grad_prepare != NULL);
    ZSH_EXPECT_TRUE(t->grad_sumsq != NULL);
    ZSH_EXPECT_TRUE(t->gather_src != NULL);
    ZSH_EXPECT_TRUE(t->gather_done != NULL);
    ZSH_EXPECT_TRUE(t->read_ahead != NULL);
    ZSH_EXPECT_TRUE(t->fetch_check != NULL);
}

ZSH_TEST(tier_table, both_tiers_have_every_operation_filled)
{
    zsh_tier_table_check_filled(&zsh_tier_mem_ops);
    zsh_tier_table_check_filled(&zsh_tier_file_ops);
}

ZSH_TEST(tier_table, memory_reads_and_writes_a_kinds_region_in_place_from_its_base)
{
    /* Stage 1 seen from rank 1 of 3: 10 elements, [4, 8) owned and the
     * state region, so flat element s is m[s - 4]. */
    zsh_obucket_t b = {.numel = 10, .count = 4, .lo = 4, .hi = 8};
    float m[4] = {0}, in[2] = {1.5f, -2.0f}, out[2] = {0};
    zsh_optim_t opt;

    memset(&opt, 0, sizeof(opt));
    opt.stage_ops = zsh_stage_ops(1);
    opt.dev_ops   = &zsh_dev_host_ops;
    opt.esize     = sizeof(float);
    b.m           = m;
    ZSH_EXPECT_EQ(ZSH_OK, zsh_tier_mem_ops.patch(&opt, ZSH_TK_EXP_AVG, &b, 5, 7, in));
    ZSH_EXPECT_TRUE((m[0] == 0.0f) && (m[1] == 1.5f) && (m[2] == -2.0f) && (m[3] == 0.0f));
    ZSH_EXPECT_EQ(ZSH_OK, zsh_tier_mem_ops.peek(&opt, ZSH_TK_EXP_AVG, &b, 6, 8, out));
    ZSH_EXPECT_TRUE((out[0] == -2.0f) && (out[1] == 0.0f));
    /* From the model's place: a copy on the host, in the precision. */
    ZSH_EXPECT_EQ(ZSH_OK, zsh_tier_mem_ops.put(&opt, ZSH_TK_EXP_AVG, &b, 4, 6, in, false));
    ZSH_EXPECT_TRUE((m[0] == 1.5f) && (m[1] == -2.0f));
}

typedef struct {
    char *dir;
    int   before, files, memory, after;
} zsh_tier_table_run_t;

static void zsh_tier_table_follow(zsh_comm_t *comm, void *arg)
{
    zsh_tier_table_run_t *run = arg;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p;
    float w[64] = {0};
    int k;

    zsh_optim_config_init(&cfg);
    cfg.stage             = 2;
    cfg.offload_optimizer = ZSH_OFFLOAD_NVME;
    cfg.nvme_dir          = run->dir;
    if (zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) {
        return;
    }
    run->before = 1;
    for (k = 0; k < ZSH_TK_KINDS; k++) {
        run->before &= opt->tiers.ops[k] == &zsh_tier_mem_ops;
    }
    if ((zsh_optim_register(opt, "w", 64, ZSH_FLOAT32, w, &p) == ZSH_OK) &&
        (zsh_optim_setup(opt) == ZSH_OK)) {
        /* Stage 2 offloads the gradient shards and the states, not the parameters. */
        run->files = (opt->tiers.ops[ZSH_TK_GRADS] == &zsh_tier_file_ops) &&
                     (opt->tiers.ops[ZSH_TK_EXP_AVG] == &zsh_tier_file_ops) &&
                     (opt->tiers.ops[ZSH_TK_EXP_AVG_SQ] == &zsh_tier_file_ops);
        run->memory = opt->tiers.ops[ZSH_TK_PARAMS] == &zsh_tier_mem_ops;
        zsh_tier_teardown(opt);
        run->after = 1;
        for (k = 0; k < ZSH_TK_KINDS; k++) {
            run->after &= opt->tiers.ops[k] == &zsh_tier_mem_ops;
        }
    }
    zsh_optim_destroy(opt);
}

ZSH_TEST(tier_table, each_kind_has_the_table_of_where_it_lives)
{
    char tmpl[] = "/var/tmp/zsh-tier-table-XXXXXX";
    zsh_tier_table_run_t run = {mkdtemp(tmpl), 0, 0, 0, 0};

    ZSH_ASSERT_TRUE(run.dir != NULL);
    zsh_inproc_run(1, zsh_tier_table_follow, &run);
    rmdir(run.dir);
    ZSH_EXPECT_TRUE(run.before);
    ZSH_EXPECT_TRUE(run.files);
    ZSH_EXPECT_TRUE(run.memory);
    ZSH_EXPECT_TRUE(run.after);
}
