#include "coll/check.h"

#include "core/dtype.h"

#include <stdlib.h>
#include <string.h>

#define ZSH_NB_INFLIGHT 6

typedef struct zsh_nb_call {
    zsh_request_t *req;
    char          *send, *recv;
    size_t         count;
    int            kind;    /* 0 allgather, 1 reduce-scatter, 2 allreduce */
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
    default:
        c->send = zsh_check_alloc(blk);
        c->recv = zsh_check_alloc(blk);
        zsh_check_fill(c->send, ZSH_FLOAT32, ZSH_MAX, rank, n, 0, count);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_iallreduce(c->send, c->recv, count, ZSH_FLOAT32, ZSH_MAX,
                                                 comm, &c->req));
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
    default:
        zsh_check_buf(c->recv, ZSH_FLOAT32, ZSH_MAX, n, -1, 0, c->count, "iallreduce", __FILE__,
                      __LINE__);
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
