/*
 * The environment bootstrap (zsh_boot_env_*) on 1, 3 and 4 thread-ranks over
 * a loopback store: allgathers, mismatched lengths, a rank that never
 * finishes, and missing or out-of-range variables. Every wait is short, so a
 * broken bootstrap fails these tests instead of hanging.
 */
#include "boot/env.h"
#include "core/clock.h"
#include "harness/zsh_test.h"
#include "store_helpers.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_RANKS 8

static zsh_boot_config_t boot_config(int rank, int size, int port, double timeout)
{
    zsh_boot_config_t cfg;

    memset(&cfg, 0, sizeof(cfg));
    cfg.rank          = rank;
    cfg.world_size    = size;
    cfg.master_port   = port;
    cfg.store_timeout = timeout;
    snprintf(cfg.master_addr, sizeof(cfg.master_addr), "127.0.0.1");
    return cfg;
}

typedef struct {
    zsh_boot_config_t cfg;
    size_t       len[3];        /* this rank's block size in each of three allgathers */
    zsh_status_t create, gather[3], destroy;
    int          bad_index;     /* first wrong byte of the results, or -1 */
    int          rounds;        /* allgathers to run; 0 for all three */
    char         error[512];    /* the first allgather's error message */
} rank_job_t;

/* Block @round of rank @rank: a pattern no other rank or round shares. */
static uint8_t pattern(int round, int rank, size_t i)
{
    return (uint8_t)(round * 101 + rank * 17 + i);
}

/* One allgather; the last round runs in place. Checks into job->bad_index. */
static zsh_status_t rank_gather(rank_job_t *job, const zsh_oob_t *oob, int round)
{
    size_t len = job->len[round], i;
    uint8_t *recv = calloc((size_t)oob->size * len + 1, 1), *send = malloc(len + 1);
    zsh_status_t status;
    void *req = NULL;
    int r;

    for (i = 0; i < len; i++) {
        send[i] = pattern(round, oob->rank, i);
    }
    if (round == 2) {
        memcpy(recv + (size_t)oob->rank * len, send, len);
    }
    status = oob->allgather((round == 2) ? recv + (size_t)oob->rank * len : send, recv, len,
                            oob->ctx, &req);
    if (status == ZSH_OK) {
        status = oob->test(req);
        oob->free(req);
    }
    for (r = 0; (r < oob->size) && (status == ZSH_OK); r++) {
        for (i = 0; (i < len) && (job->bad_index < 0); i++) {
            if (recv[(size_t)r * len + i] != pattern(round, r, i)) {
                job->bad_index = (int)((size_t)r * len + i);
            }
        }
    }
    free(send);
    free(recv);
    return status;
}

static void *rank_main(void *arg)
{
    rank_job_t *job = arg;
    zsh_boot_env_t *env;
    zsh_oob_t oob;
    int round;

    job->bad_index = -1;
    job->create    = zsh_boot_env_create(&job->cfg, &oob, &env);
    if (job->create != ZSH_OK) {
        return NULL;
    }
    for (round = 0; round < ((job->rounds != 0) ? job->rounds : 3); round++) {
        job->gather[round] = rank_gather(job, &oob, round);
        if ((round == 0) && (job->gather[0] != ZSH_OK)) {
            snprintf(job->error, sizeof(job->error), "%s", zsh_last_error());
        }
    }
    job->destroy = zsh_boot_env_destroy(env);
    return NULL;
}

/* Run @n thread-ranks through create, three allgathers and destroy. */
static void run_ranks(rank_job_t *jobs, int n)
{
    pthread_t threads[MAX_RANKS];
    int r;

    for (r = 0; r < n; r++) {
        pthread_create(&threads[r], NULL, rank_main, &jobs[r]);
    }
    for (r = 0; r < n; r++) {
        pthread_join(threads[r], NULL);
    }
}

ZSH_TEST(boot_env, allgather_over_the_store_on_1_3_and_4_ranks_including_empty_and_in_place)
{
    static const int sizes[] = {1, 3, 4};
    rank_job_t jobs[MAX_RANKS];
    size_t s;
    int r, port;

    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        port = free_port();
        for (r = 0; r < sizes[s]; r++) {
            memset(&jobs[r], 0, sizeof(jobs[r]));
            jobs[r].cfg    = boot_config(r, sizes[s], port, T_OK);
            jobs[r].len[0] = 13;
            jobs[r].len[1] = 0;
            jobs[r].len[2] = 1000;
        }
        run_ranks(jobs, sizes[s]);
        for (r = 0; r < sizes[s]; r++) {
            zsh_test_set_rank(r);
            ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].create);
            ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].gather[0]);
            ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].gather[1]);
            ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].gather[2]);
            ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].destroy);
            ZSH_EXPECT_EQ(-1, jobs[r].bad_index);
        }
        zsh_test_set_rank(-1);
    }
}

ZSH_TEST(boot_env, allgather_with_different_lengths_fails_with_mismatch)
{
    rank_job_t jobs[2];
    int r, port = free_port();

    for (r = 0; r < 2; r++) {
        memset(&jobs[r], 0, sizeof(jobs[r]));
        jobs[r].cfg    = boot_config(r, 2, port, T_OK);
        jobs[r].len[0] = 4 + 4 * (size_t)r;
        jobs[r].len[1] = 8;
        jobs[r].len[2] = 8;
    }
    run_ranks(jobs, 2);
    for (r = 0; r < 2; r++) {
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].create);
        ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, jobs[r].gather[0]);
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].gather[1]); /* the store stays usable */
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].gather[2]);
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].destroy);
    }
}

ZSH_TEST(boot_env, destroy_on_rank_0_times_out_when_a_rank_never_finishes)
{
    zsh_boot_config_t cfg = boot_config(0, 2, free_port(), T_SHORT);
    zsh_boot_env_t *env;
    zsh_oob_t oob;
    double start;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_EQ(0, oob.rank);
    ZSH_EXPECT_EQ(2, oob.size);
    start = zsh_clock_now();
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_boot_env_destroy(env));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "done/1");
    /* Far above T_SHORT, so no machine is too slow for it: what it catches
     * is a wait that ignores the store timeout. */
    ZSH_EXPECT_TRUE(zsh_clock_now() - start < T_OK);
}

ZSH_TEST(boot_env, missing_variables_are_named)
{
    static const char *const names[] = {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
    zsh_boot_env_t *env = NULL;
    char expected[64];
    zsh_boot_config_t cfg;
    zsh_oob_t oob;
    size_t i;

    for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        cfg = boot_config(0, 2, 29500, T_OK);
        switch (i) {
        case 0: cfg.rank = -1; break;
        case 1: cfg.world_size = -1; break;
        case 2: cfg.master_addr[0] = '\0'; break;
        case 3: cfg.master_port = -1; break;
        }
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
        snprintf(expected, sizeof(expected), "%s is not set (nor ZSH_%s)", names[i], names[i]);
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), expected);
        ZSH_EXPECT_TRUE(env == NULL);
    }
}

/* A key set but empty (a failed $(cat keyfile)) is an error; only an unset
 * key means a store without authentication. */
ZSH_TEST(boot_env, an_empty_job_key_is_refused_not_taken_as_none)
{
    zsh_boot_env_t *env = NULL;
    zsh_boot_config_t cfg;
    zsh_oob_t oob;

    cfg = boot_config(0, 2, 29500, T_OK);
    setenv("ZSH_JOB_KEY", "", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_JOB_KEY is set but empty");
    unsetenv("ZSH_JOB_KEY");
    ZSH_EXPECT_TRUE(env == NULL);
}

ZSH_TEST(boot_env, out_of_range_values_are_rejected_before_any_socket)
{
    zsh_boot_env_t *env = NULL;
    zsh_boot_config_t cfg;
    zsh_oob_t oob;

    cfg = boot_config(4, 4, 29500, T_OK);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "RANK=4 is out of range");
    cfg = boot_config(0, 0, 29500, T_OK);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "WORLD_SIZE=0");
    cfg = boot_config(0, 2, 0, T_OK);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "MASTER_PORT=0 is out of range");
    cfg = boot_config(0, 2, 65536, T_OK);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
    cfg = boot_config(0, 2, 29500, 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "STORE_TIMEOUT");
    ZSH_EXPECT_TRUE(env == NULL);
}

ZSH_TEST(boot_env, one_rank_needs_no_store_no_address_and_no_port)
{
    zsh_boot_config_t cfg = boot_config(0, 1, -1, T_OK);
    zsh_boot_env_t *env   = NULL;
    int send = 7, recv = 0;
    zsh_oob_t oob;
    void *req;

    snprintf(cfg.master_addr, sizeof(cfg.master_addr), "no-such-host.invalid");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_boot_env_create(&cfg, &oob, &env));
    ZSH_EXPECT_EQ(1, oob.size);
    ZSH_ASSERT_STATUS(ZSH_OK, oob.allgather(&send, &recv, sizeof(send), oob.ctx, &req));
    ZSH_EXPECT_STATUS(ZSH_OK, oob.test(req));
    oob.free(req);
    ZSH_EXPECT_EQ(7, recv);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_boot_env_destroy(env));
}

ZSH_TEST(boot_env, a_missing_rank_fails_the_others_once_after_the_store_timeout_naming_it)
{
    /* Long enough for two ranks to join under valgrind, short enough to wait
     * out; the bound below leaves a whole timeout for joining on a slow,
     * loaded machine and still tells one wait from two. */
    const double timeout = 2.0;
    rank_job_t jobs[2];
    int r, port = free_port();
    double start = zsh_clock_now(), took;

    for (r = 0; r < 2; r++) {
        memset(&jobs[r], 0, sizeof(jobs[r]));
        jobs[r].cfg    = boot_config(r, 3, port, timeout);
        jobs[r].len[0] = 8;
        jobs[r].rounds = 1;
    }
    run_ranks(jobs, 2);
    took = zsh_clock_now() - start;
    for (r = 0; r < 2; r++) {
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].create);
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, jobs[r].gather[0]);
        ZSH_EXPECT_STR_CONTAINS(jobs[r].error, "rank 2 of 3 never joined the bootstrap within");
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[r].destroy);
    }
    /* Rank 0's goodbye wait is skipped: once the store timeout, not twice. */
    ZSH_EXPECT_TRUE(took < 2 * timeout);
    ZSH_EXPECT_TRUE(took >= timeout - 0.05);
}
