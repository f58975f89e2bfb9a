/*
 * zsh_oob_agree() on 4 thread-ranks over the environment bootstrap's store:
 * every rank's outcome of a step of creation, so that each rank reports the
 * cause. When all succeed, all get ZSH_OK; when some fail, each failing rank
 * keeps its own error and the others get the lowest failing rank's status
 * and message, naming it.
 */
#include "boot/env.h"
#include "boot/oob.h"
#include "core/status.h"
#include "harness/zsh_test.h"
#include "store_helpers.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define AGREE_RANKS 4

typedef struct {
    zsh_boot_config_t cfg;
    zsh_status_t      mine, got;
    char              error[ZSH_ERROR_MSG_MAX];
} agree_job_t;

static void *agree_main(void *arg)
{
    agree_job_t *job = arg;
    zsh_boot_env_t *env;
    zsh_oob_t oob;

    job->got = zsh_boot_env_create(&job->cfg, &oob, &env);
    if (job->got != ZSH_OK) {
        return NULL;
    }
    if (job->mine != ZSH_OK) {
        zsh_error(job->mine, "step failed on rank %d", job->cfg.rank);
    }
    job->got = zsh_oob_agree(&oob, T_OK, job->mine);
    snprintf(job->error, sizeof(job->error), "%s", zsh_last_error());
    zsh_boot_env_destroy(env);
    return NULL;
}

static void agree_run(agree_job_t *jobs, const zsh_status_t *mine)
{
    pthread_t threads[AGREE_RANKS];
    int r, port = free_port();

    for (r = 0; r < AGREE_RANKS; r++) {
        memset(&jobs[r], 0, sizeof(jobs[r]));
        jobs[r].cfg.rank          = r;
        jobs[r].cfg.world_size    = AGREE_RANKS;
        jobs[r].cfg.master_port   = port;
        jobs[r].cfg.store_timeout = T_OK;
        snprintf(jobs[r].cfg.master_addr, sizeof(jobs[r].cfg.master_addr), "127.0.0.1");
        jobs[r].mine = mine[r];
        pthread_create(&threads[r], NULL, agree_main, &jobs[r]);
    }
    for (r = 0; r < AGREE_RANKS; r++) {
        pthread_join(threads[r], NULL);
    }
}

ZSH_TEST(oob_agree, every_rank_succeeds_only_when_all_did)
{
    static const zsh_status_t ok[AGREE_RANKS] = {ZSH_OK, ZSH_OK, ZSH_OK, ZSH_OK};
    agree_job_t jobs[AGREE_RANKS];
    int r;

    agree_run(jobs, ok);
    for (r = 0; r < AGREE_RANKS; r++) {
        zsh_test_set_rank(r);
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].got);
    }
}

ZSH_TEST(oob_agree, failing_ranks_keep_their_error_and_the_others_get_the_lowest_ones)
{
    static const zsh_status_t mine[AGREE_RANKS] = {ZSH_OK, ZSH_ERR_NO_MEMORY,
                                                   ZSH_ERR_TRANSPORT, ZSH_OK};
    agree_job_t jobs[AGREE_RANKS];
    char want[64];
    int r;

    agree_run(jobs, mine);
    for (r = 0; r < AGREE_RANKS; r++) {
        zsh_test_set_rank(r);
        ZSH_EXPECT_STATUS((mine[r] != ZSH_OK) ? mine[r] : ZSH_ERR_NO_MEMORY, jobs[r].got);
        if (mine[r] != ZSH_OK) {
            snprintf(want, sizeof(want), "step failed on rank %d", r);
        } else {
            snprintf(want, sizeof(want), "rank 1: step failed on rank 1");
        }
        ZSH_EXPECT_TRUE(strcmp(jobs[r].error, want) == 0);
    }
}
