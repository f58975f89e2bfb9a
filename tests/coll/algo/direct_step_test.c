/*
 * A direct call copies a step at a time (algo/direct.h): each progress call
 * moves a bounded part of the rank's share, so that other calls complete and
 * deadlines fire while a large one runs.
 */
#include "algo/direct.h"
#include "coll/check.h"

#include "task/task.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Small chunks, so that a call of a few MiB takes many steps. */
#define ZSH_STEP_CHUNK 4096

/* Elements of fp32 per rank: 16 steps of the least a step moves. */
#define ZSH_STEP_COUNT (16 * ZSH_DIRECT_STEP_MIN / sizeof(float))

/* A skip reason where the direct algorithms cannot run, else NULL. */
static const char *zsh_step_unavailable(zsh_comm_t *comm)
{
    if (zsh_comm_size(comm) < 2) {
        return "a direct call needs two ranks";
    }
    if (!comm->local.direct) {
        return "the direct algorithms cannot run here (cross-memory attach, ZSH_CMA)";
    }
    return NULL;
}

/* Post collective @type forced direct on @comm, its every rank's share of the
 * copying ZSH_STEP_COUNT fp32 (the all-reduce's vector is n of them). */
static zsh_status_t zsh_step_post(zsh_comm_t *comm, zsh_coll_type_t type, const float *send,
                                  float *recv, zsh_request_t **req_p)
{
    size_t n = (size_t)zsh_comm_size(comm);

    switch (type) {
    case ZSH_COLL_ALLGATHER:
        return zsh_iallgather(send, recv, ZSH_STEP_COUNT, ZSH_FLOAT32, comm, req_p);
    case ZSH_COLL_REDUCE_SCATTER:
        return zsh_ireduce_scatter(send, recv, ZSH_STEP_COUNT, ZSH_FLOAT32, ZSH_SUM, comm,
                                   req_p);
    default:
        return zsh_iallreduce(send, recv, ZSH_STEP_COUNT * n, ZSH_FLOAT32, ZSH_SUM, comm,
                              req_p);
    }
}

/* Bytes of this rank's share a direct call has copied (a reduction counts
 * elements of its block). */
static size_t zsh_step_done_bytes(zsh_request_t *req)
{
    return zsh_direct(req)->done * ((req->args.type == ZSH_COLL_ALLGATHER) ? 1 : sizeof(float));
}

/* Whether the result of @type is exact on every index. */
static void zsh_step_check(zsh_comm_t *comm, zsh_coll_type_t type, const float *recv)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), r;

    switch (type) {
    case ZSH_COLL_ALLGATHER:
        for (r = 0; r < n; r++) {
            zsh_check_buf(recv + (size_t)r * ZSH_STEP_COUNT, ZSH_FLOAT32, ZSH_SUM, n, r,
                          (size_t)r * ZSH_STEP_COUNT, ZSH_STEP_COUNT, "allgather", __FILE__,
                          __LINE__);
        }
        return;
    case ZSH_COLL_REDUCE_SCATTER:
        zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, (size_t)rank * ZSH_STEP_COUNT,
                      ZSH_STEP_COUNT, "reduce_scatter", __FILE__, __LINE__);
        return;
    default:
        zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, 0, ZSH_STEP_COUNT * (size_t)n,
                      "allreduce", __FILE__, __LINE__);
        return;
    }
}

static void zsh_step_bounded(zsh_comm_t *comm, zsh_coll_type_t type)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t total = ZSH_STEP_COUNT * (size_t)n, share = ZSH_STEP_COUNT * sizeof(float);
    size_t last = 0, now, steps = 0, partial = 0;
    float *send = zsh_check_alloc(total * sizeof(float));
    float *recv = zsh_check_alloc(total * sizeof(float));
    zsh_request_t *req;
    zsh_status_t status;

    if (type == ZSH_COLL_ALLGATHER) {
        zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, (size_t)rank * ZSH_STEP_COUNT,
                       ZSH_STEP_COUNT);
    } else {
        zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, 0, total);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_step_post(comm, type, send, recv, &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, req->algo);
    do {
        now = zsh_step_done_bytes(req);
        /* A step stops once it has moved the least it may: a chunk more at most. */
        if (now - last > ZSH_DIRECT_STEP_MIN + ZSH_STEP_CHUNK) {
            zsh_test_fail(__FILE__, __LINE__, "%s: one progress call copied %zu bytes",
                          zsh_desc_type_name(type), now - last);
        }
        steps += (now > last);
        partial += (now > 0) && (now < share);
        last = now;
        status = zsh_request_test(req);
    } while (status == ZSH_INPROGRESS);
    ZSH_EXPECT_STATUS(ZSH_OK, status);
    ZSH_EXPECT_EQ(share, zsh_step_done_bytes(req));
    ZSH_EXPECT_TRUE(steps >= 8);
    ZSH_EXPECT_TRUE(partial >= 8);
    zsh_request_free(req);
    zsh_step_check(comm, type, recv);
    free(recv);
    free(send);
}

ZSH_RANK_TEST(direct_step, every_progress_call_copies_a_bounded_step_and_the_result_is_exact)
{
    static const zsh_coll_type_t types[] = {ZSH_COLL_ALLGATHER, ZSH_COLL_REDUCE_SCATTER,
                                            ZSH_COLL_ALLREDUCE};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    const char *why         = zsh_step_unavailable(comm);
    size_t t;

    if (why != NULL) {
        ZSH_SKIP(why);
    }
    cfg->chunk_size          = ZSH_STEP_CHUNK;
    cfg->allgather_algo      = ZSH_ALGO_DIRECT;
    cfg->reduce_scatter_algo = ZSH_ALGO_DIRECT;
    cfg->allreduce_algo      = ZSH_ALGO_DIRECT;
    for (t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
        zsh_step_bounded(comm, types[t]);
    }
    *cfg = saved;
}

/* A deadline that passes while a direct call copies fires between two steps,
 * not after the whole copy: the call fails with ZSH_ERR_TIMEOUT having
 * copied part of its share, and its peers, left waiting for its "done"
 * message, fail with the reason. */
ZSH_RANK_TEST(direct_step, a_deadline_fires_between_the_steps_of_a_large_direct_call)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    const char *why         = zsh_step_unavailable(comm);
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t share = ZSH_STEP_COUNT * sizeof(float);
    float *send, *recv;
    zsh_request_t *req;
    zsh_status_t status;
    zsh_comm_t *c = NULL;

    if ((why == NULL) && !comm->local.box && !comm->local.board) {
        why = "a peer learns of the timeout through a mailbox or board (ZSH_SHM)";
    }
    if (why != NULL) {
        ZSH_SKIP(why);
    }
    send = zsh_check_alloc(share);
    recv = zsh_check_alloc(share * (size_t)n);
    memset(send, 0, share);
    cfg->chunk_size     = ZSH_STEP_CHUNK;
    cfg->allgather_algo = ZSH_ALGO_DIRECT;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, rank, &c));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallgather(send, recv, ZSH_STEP_COUNT, ZSH_FLOAT32, c, &req));
    if (rank == 0) {
        /* Copying: the peers' descriptors came, and a step went. */
        while ((zsh_request_test(req) == ZSH_INPROGRESS) && (zsh_direct(req)->done == 0)) {
            sched_yield();
        }
        /* Its deadline then passes (the engine reads a coarse clock: wait for it). */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_set_timeout(req, 1e-9));
        usleep(20 * 1000);
    }
    status = zsh_request_wait(req);
    if (rank == 0) {
        ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT, status);
        ZSH_EXPECT_TRUE(zsh_direct(req)->done > 0);
        ZSH_EXPECT_TRUE(zsh_direct(req)->done < share);
    } else {
        ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, status);
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "allgather seq 0 failed before its");
    }
    zsh_request_free(req);
    *cfg = saved;
    /* Peers may still be writing into our recvbuf until they have failed too. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(c));
    free(recv);
    free(send);
}
