#include "coll/check.h"

#include "core/clock.h"
#include "core/dtype.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZSH_NB_INFLIGHT 6

typedef struct zsh_nb_call {
    zsh_request_t *req;
    char          *send, *recv;
    size_t         count;
    int            kind;    /* 0 allgather, 1 reduce-scatter, 2 allreduce, 3 broadcast,
                               4 barrier */
} zsh_nb_call_t;

static void zsh_nb_start(zsh_comm_t *comm, zsh_nb_call_t *c, int kind, size_t count)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t blk = count * sizeof(float);

    c->kind  = kind;
    c->count = count;
    switch (kind) {
    case 0:
        c->send = zsh_check_alloc(blk);
        c->recv = zsh_check_alloc(blk * (size_t)n);
        zsh_check_fill(c->send, ZSH_FLOAT32, ZSH_MIN, rank, n, 0, count);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_iallgather(c->send, c->recv, count, ZSH_FLOAT32, comm,
                                                 &c->req));
        break;
    case 1:
        c->send = zsh_check_alloc(blk * (size_t)n);
        c->recv = zsh_check_alloc(blk);
        zsh_check_fill(c->send, ZSH_FLOAT32, ZSH_SUM, rank, n, 0, count * (size_t)n);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_ireduce_scatter(c->send, c->recv, count, ZSH_FLOAT32,
                                                      ZSH_SUM, comm, &c->req));
        break;
    case 2:
        c->send = zsh_check_alloc(blk);
        c->recv = zsh_check_alloc(blk);
        zsh_check_fill(c->send, ZSH_FLOAT32, ZSH_MAX, rank, n, 0, count);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_iallreduce(c->send, c->recv, count, ZSH_FLOAT32, ZSH_MAX,
                                                 comm, &c->req));
        break;
    case 3: /* from root count % n, so roots vary with the counts */
        c->send = NULL;
        c->recv = zsh_check_alloc(blk);
        if (rank == (int)(count % (size_t)n)) {
            zsh_check_fill(c->recv, ZSH_FLOAT32, ZSH_MIN, rank, n, 0, count);
        } else {
            memset(c->recv, 0x5a, blk);
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_ibroadcast(c->recv, count, ZSH_FLOAT32,
                                                 (int)(count % (size_t)n), comm, &c->req));
        break;
    default:
        c->send = NULL;
        c->recv = NULL;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_ibarrier(comm, &c->req));
        break;
    }
}

static void zsh_nb_check(zsh_comm_t *comm, zsh_nb_call_t *c)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k;
    size_t blk = c->count * sizeof(float);

    switch (c->kind) {
    case 0:
        for (k = 0; k < n; k++) {
            zsh_check_buf(c->recv + blk * (size_t)k, ZSH_FLOAT32, ZSH_MIN, n, k, 0, c->count,
                          "iallgather", __FILE__, __LINE__);
        }
        break;
    case 1:
        zsh_check_buf(c->recv, ZSH_FLOAT32, ZSH_SUM, n, -1, c->count * (size_t)rank, c->count,
                      "ireduce_scatter", __FILE__, __LINE__);
        break;
    case 2:
        zsh_check_buf(c->recv, ZSH_FLOAT32, ZSH_MAX, n, -1, 0, c->count, "iallreduce", __FILE__,
                      __LINE__);
        break;
    case 3:
        zsh_check_buf(c->recv, ZSH_FLOAT32, ZSH_MIN, n, (int)(c->count % (size_t)n), 0, c->count,
                      "ibroadcast", __FILE__, __LINE__);
        break;
    default:
        break;
    }
    zsh_request_free(c->req);
    free(c->send);
    free(c->recv);
}

/* Ranks complete the same requests in different orders: even ranks oldest
 * first, odd ranks newest first. Sizes mix small and pipelined algorithms. */
ZSH_RANK_TEST(nonblocking, several_in_flight_complete_in_any_order)
{
    static const size_t counts[ZSH_NB_INFLIGHT] = {1, 5000, 17, 70001, 3, 20011};
    zsh_nb_call_t calls[ZSH_NB_INFLIGHT];
    int odd = zsh_comm_rank(comm) % 2, i, j;

    for (i = 0; i < ZSH_NB_INFLIGHT; i++) {
        zsh_nb_start(comm, &calls[i], i % 3, counts[i]);
    }
    for (i = 0; i < ZSH_NB_INFLIGHT; i++) {
        j = odd ? ZSH_NB_INFLIGHT - 1 - i : i;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(calls[j].req));
        zsh_nb_check(comm, &calls[j]);
    }
}

ZSH_RANK_TEST(nonblocking, polling_with_test_completes_every_request)
{
    zsh_nb_call_t calls[3];
    zsh_status_t status;
    int i, pending;

    for (i = 0; i < 3; i++) {
        zsh_nb_start(comm, &calls[i], i, 4099);
    }
    do {
        pending = 0;
        for (i = 0; i < 3; i++) {
            status = zsh_request_test(calls[i].req);
            ZSH_ASSERT_TRUE((status == ZSH_OK) || (status == ZSH_INPROGRESS));
            pending += (status == ZSH_INPROGRESS);
        }
    } while (pending > 0);
    for (i = 0; i < 3; i++) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_test(calls[i].req));
        zsh_nb_check(comm, &calls[i]);
    }
}

ZSH_RANK_TEST(nonblocking, blocking_call_between_posted_requests_completes)
{
    zsh_nb_call_t call;
    float x = 1.0f, sum = 0.0f;

    zsh_nb_start(comm, &call, 2, 100003);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&x, &sum, 1, ZSH_FLOAT32, ZSH_SUM, comm));
    ZSH_EXPECT_EQ(zsh_comm_size(comm), (int)sum);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(call.req));
    zsh_nb_check(comm, &call);
}

/* Broadcasts from several roots and barriers in flight among the other
 * three, completed in opposite orders on even and odd ranks; sizes mix the
 * eager, direct and pipelined algorithms. */
ZSH_RANK_TEST(nonblocking, broadcasts_and_barriers_in_flight_among_the_others_complete_in_any_order)
{
    static const size_t counts[10] = {3, 70001, 1, 17, 5000, 20011, 2, 100003, 4099, 7};
    zsh_nb_call_t calls[10];
    int odd = zsh_comm_rank(comm) % 2, i, j;

    for (i = 0; i < 10; i++) {
        zsh_nb_start(comm, &calls[i], (i % 2) ? 3 + (i / 2) % 2 : (i / 2) % 3, counts[i]);
    }
    for (i = 0; i < 10; i++) {
        j = odd ? 9 - i : i;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(calls[j].req));
        zsh_nb_check(comm, &calls[j]);
    }
}

/* A barrier's request stays in progress on every rank until the last rank
 * has posted its own: rank 0 posts 200 ms late, and no rank sees its
 * request complete before then (CLOCK_MONOTONIC is one clock for all
 * processes of a node). */
ZSH_RANK_TEST(nonblocking, ibarrier_completes_only_after_the_last_rank_posts_it)
{
    const struct timespec late = {0, 200 * 1000 * 1000};
    int n = zsh_comm_size(comm), r;
    double times[2] = {0, 0}; /* rank 0's post, this rank's completion */
    double *all = zsh_check_alloc(sizeof(times) * (size_t)n);
    zsh_request_t *req = NULL;
    zsh_status_t status;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_barrier(comm));
    if (zsh_comm_rank(comm) == 0) {
        nanosleep(&late, NULL);
        times[0] = zsh_clock_now();
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ibarrier(comm, &req));
    while ((status = zsh_request_test(req)) == ZSH_INPROGRESS) {
        sched_yield();
    }
    times[1] = zsh_clock_now();
    ZSH_EXPECT_STATUS(ZSH_OK, status);
    zsh_request_free(req);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(times, all, 2, ZSH_FLOAT64, comm));
    for (r = 0; r < n; r++) {
        if (all[2 * r + 1] < all[0]) {
            zsh_test_fail(__FILE__, __LINE__, "rank %d's ibarrier completed %.3f s before rank 0 "
                          "posted it", r, all[0] - all[2 * r + 1]);
        }
    }
    free(all);
}
