/*
 * The states a stage 3 bucket goes through, seen through the calls a
 * framework makes: fetch, release, step, with prefetch, with a live budget
 * of one bucket, and with the parameters in NVMe files (read ahead twice as
 * far as they are gathered). At every point each bucket's state also
 * agrees with the memory it holds: a gathered buffer exactly in the
 * gathered states, a bounce buffer only while reading or gathering from
 * it, and parameters fetched exactly when live.
 */
#include "harness/zsh_test.h"

#include "core/status.h"
#include "optim/optim_impl.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ZSH_BSC_NPARAMS 4
#define ZSH_BSC_NUMEL   1024

/* One letter per bucket: s(harded), r(eading), g(athering), p(refetched),
 * l(ive), c(ached). */
static const char zsh_bsc_letters[ZSH_BSTATE_COUNT] = {
    [ZSH_BSTATE_SHARDED] = 's', [ZSH_BSTATE_READING] = 'r', [ZSH_BSTATE_GATHERING] = 'g',
    [ZSH_BSTATE_PREFETCHED] = 'p', [ZSH_BSTATE_LIVE] = 'l', [ZSH_BSTATE_CACHED] = 'c',
};

typedef struct {
    zsh_optim_t *opt;
    zsh_param_t *p[ZSH_BSC_NPARAMS];
    float        w[ZSH_BSC_NPARAMS][ZSH_BSC_NUMEL], g[ZSH_BSC_NUMEL];
    const char  *label;
} zsh_bsc_t;

/* Expect the buckets' states to read @want (one letter each) after @what. */
static void zsh_bsc_expect(const zsh_bsc_t *t, const char *what, const char *want)
{
    char seen[ZSH_BSC_NPARAMS + 1] = {0};
    const zsh_obucket_t *b;
    size_t i;

    ZSH_ASSERT_TRUE(t->opt->nbuckets == ZSH_BSC_NPARAMS);
    for (i = 0; i < ZSH_BSC_NPARAMS; i++) {
        b       = &t->opt->buckets[i];
        seen[i] = ((unsigned)b->fetch.state < ZSH_BSTATE_COUNT) ? zsh_bsc_letters[b->fetch.state]
                                                               : '?';
        if (zsh_bstate_gathered(b->fetch.state) != (bool)zsh_shard_is_gathered(b->fetch.pshard)) {
            zsh_test_fail(__FILE__, __LINE__, "%s, after %s: bucket %zu is %s, and its shard %s",
                          t->label, what, i, zsh_bstate_name(b->fetch.state),
                          zsh_shard_is_gathered(b->fetch.pshard) ? "is gathered"
                                                                 : "is not gathered");
        }
        if ((b->nvme.pbounce != NULL) && (b->fetch.state != ZSH_BSTATE_READING) &&
            (b->fetch.state != ZSH_BSTATE_GATHERING) &&
            (b->fetch.state != ZSH_BSTATE_PREFETCHED)) {
            zsh_test_fail(__FILE__, __LINE__, "%s, after %s: bucket %zu is %s with a bounce "
                          "buffer", t->label, what, i, zsh_bstate_name(b->fetch.state));
        }
        if ((b->fetch.refs > 0) != (b->fetch.state == ZSH_BSTATE_LIVE)) {
            zsh_test_fail(__FILE__, __LINE__, "%s, after %s: bucket %zu is %s with %d fetched",
                          t->label, what, i, zsh_bstate_name(b->fetch.state), b->fetch.refs);
        }
    }
    if (strcmp(seen, want) != 0) {
        zsh_test_fail(__FILE__, __LINE__, "%s, after %s: states %s, expected %s (s sharded, "
                      "r reading, p prefetched, l live, c cached)", t->label, what, seen, want);
    }
}

static bool zsh_bsc_create(zsh_comm_t *comm, zsh_bsc_t *t, const zsh_optim_config_t *cfg,
                           const char *label)
{
    char name[16];
    size_t i;

    t->label = label;
    if (zsh_optim_create(comm, cfg, &t->opt) != ZSH_OK) {
        return false;
    }
    for (i = 0; i < ZSH_BSC_NPARAMS; i++) {
        snprintf(name, sizeof(name), "w%zu", i);
        if (zsh_optim_register(t->opt, name, ZSH_BSC_NUMEL, ZSH_FLOAT32, t->w[i], &t->p[i]) !=
            ZSH_OK) {
            return false;
        }
    }
    return zsh_optim_setup(t->opt) == ZSH_OK;
}

/* Fetch parameter @i and expect @want; then release it and expect @after. */
static void zsh_bsc_use(zsh_bsc_t *t, size_t i, const char *want, const char *after)
{
    char what[32];
    void *data;

    snprintf(what, sizeof(what), "fetch w%zu", i);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(t->opt, t->p[i], &data));
    zsh_bsc_expect(t, what, want);
    snprintf(what, sizeof(what), "release w%zu", i);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(t->opt, t->p[i]));
    zsh_bsc_expect(t, what, after);
}

static void zsh_bsc_step(zsh_bsc_t *t)
{
    size_t i;
    int applied;

    for (i = 0; i < ZSH_BSC_NPARAMS; i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_grad_ready(t->opt, t->p[i], t->g));
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_step(t->opt, &applied));
    ZSH_EXPECT_EQ(1, applied);
    zsh_bsc_expect(t, "the step", "ssss");
}

/* Stage 3, one parameter per bucket, every tier in memory, budget roomy. */
static void zsh_bsc_config(zsh_optim_config_t *cfg, int prefetch)
{
    zsh_optim_config_init(cfg);
    cfg->stage             = 3;
    cfg->bucket_size       = 4;
    cfg->max_live_bytes    = 1 << 24;
    cfg->prefetch          = prefetch;
    cfg->offload_optimizer = ZSH_OFFLOAD_NONE;
    cfg->offload_params    = ZSH_OFFLOAD_NONE;
    cfg->hpz               = 1;
}

static zsh_bsc_t *zsh_bsc_new(void)
{
    return calloc(1, sizeof(zsh_bsc_t));
}

ZSH_RANK_TEST(optim_bstate_cycle, a_fetch_makes_a_bucket_live_release_caches_it_and_a_step_drops_it)
{
    zsh_bsc_t *t = zsh_bsc_new();
    zsh_optim_config_t cfg;
    void *data;

    ZSH_ASSERT_TRUE(t != NULL);
    zsh_bsc_config(&cfg, 1);
    if (zsh_bsc_create(comm, t, &cfg, "memory, prefetch 1")) {
        zsh_bsc_expect(t, "setup", "ssss");
        /* Step 1 records the order: nothing is gathered ahead yet. */
        zsh_bsc_use(t, 0, "lsss", "csss");
        zsh_bsc_use(t, 1, "clss", "ccss");
        zsh_bsc_use(t, 2, "ccls", "cccs");
        zsh_bsc_use(t, 3, "cccl", "cccc");
        zsh_bsc_step(t);
        /* Step 2 follows it: each fetch gathers the next bucket ahead. */
        zsh_bsc_use(t, 0, "lpss", "cpss");
        zsh_bsc_use(t, 1, "clps", "ccps");
        zsh_bsc_use(t, 2, "cclp", "cccp");
        zsh_bsc_use(t, 3, "cccl", "cccc");
        ZSH_EXPECT_EQ(3, t->opt->stats.prefetch_hits);
        zsh_bsc_step(t);
        /* Destroyed with a parameter fetched: its bucket goes by the
         * table too (live, cached, sharded), no move refused. */
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(t->opt, t->p[0], &data));
        zsh_bsc_expect(t, "fetch w0", "lpss");
        zsh_error_clear();
    } else {
        zsh_test_fail(__FILE__, __LINE__, "setup: %s", zsh_last_error());
    }
    zsh_optim_destroy(t->opt);
    ZSH_EXPECT_TRUE(strstr(zsh_last_error(), "no move") == NULL);
    free(t);
}

ZSH_RANK_TEST(optim_bstate_cycle, over_a_one_bucket_budget_the_cached_bucket_is_evicted)
{
    zsh_bsc_t *t = zsh_bsc_new();
    int n        = zsh_comm_size(comm);
    zsh_optim_config_t cfg;
    void *data;

    ZSH_ASSERT_TRUE(t != NULL);
    zsh_bsc_config(&cfg, 1);
    /* Room for one gathered bucket: ceil(numel / N) elements from each rank. */
    cfg.max_live_bytes = zsh_shard_part_count(ZSH_BSC_NUMEL, n) * (size_t)n * sizeof(float);
    if (zsh_bsc_create(comm, t, &cfg, "budget of one bucket")) {
        zsh_bsc_use(t, 0, "lsss", "csss"); /* at the budget, not over it: kept */
        zsh_bsc_use(t, 1, "slss", "scss"); /* the fetch made room */
        /* Two fetched at once go over it (a fetch must succeed); the first
         * released goes at once. */
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(t->opt, t->p[2], &data));
        zsh_bsc_expect(t, "fetch w2", "ssls");
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(t->opt, t->p[3], &data));
        zsh_bsc_expect(t, "fetch w3 with w2 held", "ssll");
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(t->opt, t->p[3]));
        zsh_bsc_expect(t, "release w3", "ssls");
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_release(t->opt, t->p[2]));
        zsh_bsc_expect(t, "release w2", "sscs");
        zsh_bsc_step(t);
        /* The recorded order is 0 1 2 3, but the one bucket of room is
         * the fetched one's: nothing is gathered ahead. */
        zsh_bsc_use(t, 0, "lsss", "csss");
        ZSH_EXPECT_EQ(0, t->opt->stats.prefetch_hits);
    } else {
        zsh_test_fail(__FILE__, __LINE__, "setup: %s", zsh_last_error());
    }
    zsh_optim_destroy(t->opt);
    free(t);
}

ZSH_RANK_TEST(optim_bstate_cycle, nvme_parameters_are_read_ahead_then_prefetched_then_live)
{
    char tmpl[] = "/var/tmp/zsh-bstate-test-XXXXXX";
    zsh_bsc_t *t = zsh_bsc_new();
    char *dir    = mkdtemp(tmpl);
    zsh_optim_config_t cfg;

    ZSH_ASSERT_TRUE((t != NULL) && (dir != NULL));
    zsh_bsc_config(&cfg, 1);
    cfg.offload_params = ZSH_OFFLOAD_NVME;
    cfg.nvme_dir       = dir;
    cfg.sub_group_size = ZSH_TIER_ALIGN_ELEMS;
    cfg.host_mem_limit = 1 << 20;
    if (zsh_bsc_create(comm, t, &cfg, "nvme parameters, prefetch 1")) {
        zsh_bsc_use(t, 0, "lsss", "csss"); /* read, gathered and waited for within the fetch */
        zsh_bsc_use(t, 1, "clss", "ccss");
        zsh_bsc_use(t, 2, "ccls", "cccs");
        zsh_bsc_use(t, 3, "cccl", "cccc");
        zsh_bsc_step(t);
        /* Reads go two buckets ahead, gathers one. */
        zsh_bsc_use(t, 0, "lprs", "cprs");
        zsh_bsc_use(t, 1, "clpr", "ccpr");
        zsh_bsc_use(t, 2, "cclp", "cccp");
        zsh_bsc_use(t, 3, "cccl", "cccc");
        ZSH_EXPECT_EQ(3, t->opt->stats.prefetch_hits);
        zsh_bsc_step(t);
        /* A read ahead is dropped by what makes it stale, or needs its room. */
        zsh_bsc_use(t, 0, "lprs", "cprs");
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_set_param(t->opt, t->p[3], t->w[3]));
        zsh_bsc_expect(t, "set w3", "cpss");
    } else {
        zsh_test_fail(__FILE__, __LINE__, "setup: %s", zsh_last_error());
    }
    zsh_optim_destroy(t->opt);
    rmdir(dir);
    free(t);
}
