/*
 * zsh_comm_free_buffer(): a buffer is freed at once while no collective of
 * the job has failed leaving a transfer under way (a call that timed out
 * against a silent peer cancelled its receives, which never matched), and
 * only after the transport is gone once one has (the job's context marked
 * as a failed call's drain marks it, since a transfer caught mid-way
 * cannot be staged between threads of one process); bad arguments free
 * nothing.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "comm/comm.h"
#include "comm/context.h"

#include <stdatomic.h>
#include <stdlib.h>

#define FREE_BUFFER_BYTES (1 << 20)

/* Buffers released so far, by rank: each rank thread counts its own. */
typedef struct {
    _Atomic int released[2];
    int         during[2];   /* what the count was right after the call */
} free_buffer_job_t;

static _Thread_local _Atomic int *free_buffer_count;

static void free_buffer_release(void *ptr)
{
    atomic_fetch_add(free_buffer_count, 1);
    free(ptr);
}

static void free_buffer_clean_rank(zsh_comm_t *comm, void *arg)
{
    free_buffer_job_t *job = arg;
    int rank               = zsh_comm_rank(comm);
    float x = 1, y = 0;

    free_buffer_count = &job->released[rank];
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_allreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_free_buffer(comm, malloc(64), free_buffer_release));
    job->during[rank] = atomic_load(free_buffer_count);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_free_buffer(comm, NULL, free_buffer_release));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_free_buffer(comm, &x, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "release is NULL");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_free_buffer(NULL, &x, free_buffer_release));
}

ZSH_TEST(free_buffer, without_a_failed_collective_a_buffer_is_freed_at_once)
{
    static free_buffer_job_t job;

    zsh_inproc_run(2, free_buffer_clean_rank, &job);
    ZSH_EXPECT_EQ(1, job.during[0]);
    ZSH_EXPECT_EQ(1, job.during[1]);
    ZSH_EXPECT_EQ(1, atomic_load(&job.released[0]));
    ZSH_EXPECT_EQ(1, atomic_load(&job.released[1]));
}

static void free_buffer_timeout_rank(zsh_comm_t *comm, void *arg)
{
    free_buffer_job_t *job = arg;
    int rank               = zsh_comm_rank(comm);
    char *buf;

    free_buffer_count = &job->released[rank];
    if (rank != 0) {
        return; /* never joins */
    }
    buf = malloc(2 * FREE_BUFFER_BYTES);
    ZSH_ASSERT_TRUE(buf != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_timeout(comm, 0.3));
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT,
                      zsh_allgather(buf, buf + FREE_BUFFER_BYTES, FREE_BUFFER_BYTES / 4 / 2,
                                    ZSH_FLOAT32, comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_free_buffer(comm, buf, free_buffer_release));
    job->during[rank] = atomic_load(free_buffer_count);
}

ZSH_TEST(free_buffer, a_call_that_timed_out_with_its_receives_cancelled_lets_a_buffer_go_at_once)
{
    static free_buffer_job_t job;

    zsh_inproc_run(2, free_buffer_timeout_rank, &job);
    ZSH_EXPECT_EQ(1, job.during[0]);
    ZSH_EXPECT_EQ(1, atomic_load(&job.released[0]));
}

static void free_buffer_left_rank(zsh_comm_t *comm, void *arg)
{
    free_buffer_job_t *job = arg;
    int rank               = zsh_comm_rank(comm);
    zsh_comm_t *half;

    free_buffer_count = &job->released[rank];
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, rank, &half));
    comm->ctx->transfers_left = true;
    /* Through any communicator of the job: the split's too. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_free_buffer(half, malloc(64), free_buffer_release));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(half));
    job->during[rank] = atomic_load(free_buffer_count);
}

ZSH_TEST(free_buffer, after_a_transfer_was_left_to_the_transport_a_buffer_goes_with_the_last_communicator)
{
    static free_buffer_job_t job;

    zsh_inproc_run(2, free_buffer_left_rank, &job);
    ZSH_EXPECT_EQ(0, job.during[0]);
    ZSH_EXPECT_EQ(0, job.during[1]);
    ZSH_EXPECT_EQ(1, atomic_load(&job.released[0]));
    ZSH_EXPECT_EQ(1, atomic_load(&job.released[1]));
}
