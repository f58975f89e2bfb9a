/*
 * A collective of the optimizer that fails is sticky: once rank 1 stops
 * taking part, rank 0's step (stages 1-3) or fetch (stage 3) fails at its
 * timeout, and every later fetch, gradient and step of that optimizer fails
 * with the same status, saying that a collective failed and what to do;
 * the optimizer is still destroyed cleanly (its buffers go through
 * zsh_comm_free_buffer(), never back to a pool).
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdio.h>
#include <string.h>

#define CF_NUMEL 4096

typedef struct {
    int          stage;
    int          fetch;          /* fail in a fetch rather than in the step */
    /* Written by rank 0 only. */
    zsh_status_t first, again[3];
    char         first_msg[512], again_msg[512];
} cf_run_t;

static void cf_rank(zsh_comm_t *comm, void *arg)
{
    cf_run_t *run = arg;
    static _Thread_local float w[CF_NUMEL], g[CF_NUMEL];
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p;
    void *data;
    int applied;
    zsh_status_t status;

    zsh_optim_config_init(&cfg);
    cfg.stage = run->stage;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_register(opt, "w", CF_NUMEL, ZSH_FLOAT32, w, &p));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    /* One good step on both ranks. */
    if (run->stage == 3) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_fetch(opt, p, &data));
        zsh_optim_release(opt, p);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, p, g));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
    if (zsh_comm_rank(comm) != 0) {
        zsh_optim_destroy(opt); /* and never takes part again */
        return;
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_timeout(comm, 0.3));
    if (run->fetch) {
        status = zsh_optim_fetch(opt, p, &data);
    } else {
        status = zsh_optim_grad_ready(opt, p, g);
        if (status == ZSH_OK) {
            status = zsh_optim_step(opt, &applied);
        }
    }
    run->first = status;
    snprintf(run->first_msg, sizeof(run->first_msg), "%s", zsh_last_error());
    run->again[0] = zsh_optim_fetch(opt, p, &data);
    run->again[1] = zsh_optim_grad_ready(opt, p, g);
    snprintf(run->again_msg, sizeof(run->again_msg), "%s", zsh_last_error());
    run->again[2] = zsh_optim_step(opt, &applied);
    zsh_optim_destroy(opt);
}

static void cf_check(int stage, int fetch)
{
    static cf_run_t run;
    int i;

    memset(&run, 0, sizeof(run));
    run.stage = stage;
    run.fetch = fetch;
    zsh_inproc_run(2, cf_rank, &run);
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, run.first);
    ZSH_EXPECT_STR_CONTAINS(run.first_msg, "timed out");
    for (i = 0; i < 3; i++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, run.again[i]);
    }
    ZSH_EXPECT_STR_CONTAINS(run.again_msg, "zsh_optim_grad_ready: a collective of this optimizer "
                                           "failed (");
    ZSH_EXPECT_STR_CONTAINS(run.again_msg, "timed out");
    ZSH_EXPECT_STR_CONTAINS(run.again_msg, "resume from a checkpoint");
}

ZSH_TEST(optim_comm_failure, a_failed_reduction_at_stage_1_stops_every_later_call)
{
    cf_check(1, 0);
}

ZSH_TEST(optim_comm_failure, a_failed_reduction_at_stage_2_stops_every_later_call)
{
    cf_check(2, 0);
}

ZSH_TEST(optim_comm_failure, a_failed_reduction_at_stage_3_stops_every_later_call)
{
    cf_check(3, 0);
}

ZSH_TEST(optim_comm_failure, a_failed_gather_at_stage_3_stops_every_later_call)
{
    cf_check(3, 1);
}
