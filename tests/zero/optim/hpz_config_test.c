/*
 * hpZ's settings on one node (in-process ranks share a node): what cannot
 * apply is refused by name, auto is off where there is one node, ZSH_HPZ
 * fills a zero and is ignored below stage 3, and a caller built before the
 * field gets the variable and a stats struct that is never written past.
 * Across nodes, tests/zero/optim/run_hpz.sh trains with it.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int          stage, hpz, offload; /* hpz -9: a caller built before the field */
    zsh_status_t status;
    char         error[512];
    zsh_optim_stats_t stats;
    unsigned char tail;               /* a byte past an older caller's stats */
} zsh_hc_t;

/* Every rank thread runs it alike; rank 0's outcome is reported (threads
 * writing one result would race). */
typedef struct {
    zsh_hc_t in;   /* read by every rank thread */
    zsh_hc_t out;  /* written by rank 0's */
} zsh_hc_run_t;

static void zsh_hc_create(zsh_comm_t *comm, void *arg)
{
    zsh_hc_run_t *run = arg;
    zsh_hc_t mine = run->in;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p;
    float w[8] = {0};
    unsigned char *raw;
    size_t old = offsetof(zsh_optim_stats_t, comm_bytes_cross_node_last_step);

    zsh_optim_config_init(&cfg);
    cfg.stage          = mine.stage;
    cfg.offload_params = mine.offload ? ZSH_OFFLOAD_CPU : ZSH_OFFLOAD_NONE;
    if (mine.hpz == -9) {
        cfg.size = offsetof(zsh_optim_config_t, hpz);
        cfg.hpz  = 9999; /* past the older caller's struct: never read */
    } else {
        cfg.hpz = mine.hpz;
    }
    mine.status = zsh_optim_create(comm, &cfg, &opt);
    snprintf(mine.error, sizeof(mine.error), "%s", zsh_last_error());
    if (mine.status == ZSH_OK) {
        zsh_optim_register(opt, "w", 8, ZSH_FLOAT32, w, &p);
        mine.status = zsh_optim_setup(opt);
        raw         = malloc(sizeof(mine.stats));
        memset(raw, 0xa5, sizeof(mine.stats));
        zsh_optim_get_stats(opt, (zsh_optim_stats_t *)raw);
        memcpy(&mine.stats, raw, sizeof(mine.stats));
        mine.tail = (mine.hpz == -9) ? raw[old] : 0xa5;
        free(raw);
    }
    zsh_optim_destroy(opt);
    if (zsh_comm_rank(comm) == 0) {
        run->out = mine;
    }
}

static zsh_hc_t zsh_hc(int nranks, int stage, int hpz, int offload)
{
    zsh_hc_run_t run;

    memset(&run, 0, sizeof(run));
    run.in.stage   = stage;
    run.in.hpz     = hpz;
    run.in.offload = offload;
    run.in.status  = ZSH_ERR_INTERNAL;
    run.out        = run.in;
    zsh_inproc_run(nranks, zsh_hc_create, &run);
    return run.out;
}

ZSH_TEST(optim_hpz, settings_that_cannot_apply_are_refused_by_name)
{
    zsh_hc_t c;

    c = zsh_hc(1, 3, -2, 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "hpz is -2");
    c = zsh_hc(1, 3, 70000, 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "hpz is 70000");
    c = zsh_hc(2, 2, 2, 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "hpz=2 needs stage 3, and the stage is 2");
    c = zsh_hc(2, 3, ZSH_HPZ_AUTO, 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "offload_params=cpu");
    c = zsh_hc(2, 3, 3, 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "hpz=3 does not divide the 2 ranks on this rank's node");
}

ZSH_TEST(optim_hpz, auto_is_off_on_one_node_and_a_group_there_works)
{
    zsh_hc_t c;

    c = zsh_hc(2, 3, ZSH_HPZ_AUTO, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    ZSH_EXPECT_EQ(1, c.stats.hpz);
    ZSH_EXPECT_EQ(1, c.stats.nnodes);
    ZSH_EXPECT_EQ(0, (int)c.stats.hpz_bytes);
    c = zsh_hc(2, 3, 2, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    ZSH_EXPECT_EQ(2, c.stats.hpz);
    /* 8 elements over 2 ranks: a group of 2 holds the bucket in halves of 4 */
    ZSH_EXPECT_EQ(16, (int)c.stats.hpz_bytes);
    ZSH_EXPECT_EQ(32, (int)c.stats.param_bytes);
}

ZSH_TEST(optim_hpz, the_variable_fills_a_zero_and_older_callers_get_it)
{
    zsh_hc_t c;

    setenv("ZSH_HPZ", "2", 1);
    c = zsh_hc(2, 3, 0, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    ZSH_EXPECT_EQ(2, c.stats.hpz);
    c = zsh_hc(2, 2, 0, 0); /* a job-wide default: ignored below stage 3 */
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    c = zsh_hc(2, 3, -9, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    ZSH_EXPECT_EQ(0xa5, c.tail);
    setenv("ZSH_HPZ", "many", 1);
    c = zsh_hc(1, 3, 0, 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, c.status);
    ZSH_EXPECT_STR_CONTAINS(c.error, "ZSH_HPZ='many' is not off, auto or a group size");
    setenv("ZSH_HPZ", "off", 1);
    c = zsh_hc(1, 3, 0, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, c.status);
    unsetenv("ZSH_HPZ");
}
