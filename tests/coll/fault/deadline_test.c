/*
 * Deadlines and abort, on in-process jobs of their own: a timed-out
 * collective leaves its communicator out of step, so these never share one.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "coll/check.h"
#include "core/clock.h"

#include <pthread.h>
#include <time.h>

static void zsh_deadline_rank(zsh_comm_t *comm, void *arg)
{
    float x = 1, y = 0;
    double start;

    (void)arg;
    if (zsh_comm_rank(comm) != 0) {
        return; /* never joins: rank 0 must not wait forever */
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_set_timeout(comm, 0.5));
    start = zsh_clock_now();
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, zsh_allreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "allreduce seq 0");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "not heard from rank(s): 1");
    ZSH_EXPECT_TRUE(zsh_clock_now() - start < 5);
}

ZSH_TEST(deadline, collective_with_a_silent_peer_times_out_naming_it)
{
    zsh_inproc_run(2, zsh_deadline_rank, NULL);
}

static void *zsh_abort_later(void *comm)
{
    const struct timespec pause = {0, 100 * 1000 * 1000};

    nanosleep(&pause, NULL);
    zsh_comm_abort(comm);
    return NULL;
}

static void zsh_abort_rank(zsh_comm_t *comm, void *arg)
{
    zsh_request_t *req;
    float x = 1, y = 0;
    pthread_t thread;
    double start;

    (void)arg;
    if (zsh_comm_rank(comm) != 0) {
        return;
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm, &req));
    start = zsh_clock_now();
    pthread_create(&thread, NULL, zsh_abort_later, comm);
    ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, zsh_request_wait(req));
    ZSH_EXPECT_TRUE(zsh_clock_now() - start < 5);
    pthread_join(thread, NULL);
    zsh_request_free(req);
    ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, zsh_allreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm));
}

ZSH_TEST(deadline, abort_from_another_thread_fails_pending_and_later_calls)
{
    zsh_inproc_run(3, zsh_abort_rank, NULL);
}
