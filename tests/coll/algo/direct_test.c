/*
 * The direct algorithms (coll/direct.c): when they are available, what
 * forcing them where they are not does, and their larger-than-a-chunk paths
 * against exact references. The every-dtype reference matrices run them too
 * (allgather_test.c, reduce_scatter_test.c, allreduce_test.c).
 */
#include "algo/direct.h"
#include "algo/eager.h"
#include "bcast/bcast.h"
#include "coll/check.h"

#include "core/dtype.h"
#include "task/task.h"
#include "ucx/cma/cma.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every test of a job runs on its ranks together, so all take the same branch. */
ZSH_RANK_TEST(direct, every_rank_of_a_one_node_job_may_use_the_direct_algorithms)
{
    zsh_cma_id_t self;

    if (zsh_check_ucx_cfg().cma == 0) {
        ZSH_SKIP("ZSH_CMA=0 turns cross-memory attach off");
    }
    zsh_cma_local_id(true, &self);
    if (!self.usable) {
        ZSH_SKIP("process_vm_readv is not permitted here (Yama ptrace_scope or seccomp)");
    }
    ZSH_EXPECT_TRUE(comm->local.direct);
}

ZSH_RANK_TEST(direct, forced_where_it_cannot_run_fails_with_unsupported_and_loses_nothing)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm);
    bool direct = comm->local.direct;
    float send[64] = {0}, *recv = zsh_check_alloc(64 * sizeof(float) * (size_t)n);

    if (n < 2) {
        free(recv);
        ZSH_SKIP("a single rank never selects an algorithm");
    }
    comm->local.direct = false; /* as for ranks on two nodes */
    cfg->allgather_algo = ZSH_ALGO_DIRECT;
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_allgather(send, recv, 64, ZSH_FLOAT32, comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_ALLGATHER_ALGO=direct needs every rank");
    cfg->allgather_algo = saved.allgather_algo;
    cfg->allreduce_algo = ZSH_ALGO_DIRECT;
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED,
                      zsh_allreduce(send, recv, 64, ZSH_FLOAT32, ZSH_SUM, comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_ALLREDUCE_ALGO=direct");
    cfg->allreduce_algo = saved.allreduce_algo;
    cfg->reduce_scatter_algo = ZSH_ALGO_DIRECT;
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED,
                      zsh_reduce_scatter(recv, send, 64 / (size_t)n, ZSH_FLOAT32, ZSH_SUM, comm));
    cfg->reduce_scatter_algo = saved.reduce_scatter_algo;
    cfg->broadcast_algo      = ZSH_ALGO_DIRECT;
    send[0] = (float)zsh_comm_rank(comm);
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_broadcast(send, 64, ZSH_FLOAT32, 0, comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_BROADCAST_ALGO=direct");
    ZSH_EXPECT_TRUE(send[0] == (float)zsh_comm_rank(comm)); /* nothing was touched */
    *cfg = saved;
    comm->local.direct = direct;
    /* The communicator is still good. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(send, recv, 64, ZSH_FLOAT32, comm));
    free(recv);
}

/* Blocks of several chunks, uneven all-reduce blocks, and every rank's
 * buffers written by its peers, at exact values. */
ZSH_RANK_TEST(direct, multi_chunk_blocks_match_the_reference)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k;
    size_t count = 3 * ZSH_CHECK_CHUNK + 7, total = count * (size_t)n;
    float *send = zsh_check_alloc(total * sizeof(float));
    float *recv = zsh_check_alloc(total * sizeof(float));
    char what[96];

    if (!comm->local.direct) {
        free(send);
        free(recv);
        ZSH_SKIP("cross-memory attach is not available here");
    }
    cfg->chunk_size          = ZSH_CHECK_CHUNK * sizeof(float);
    cfg->allgather_algo      = ZSH_ALGO_DIRECT;
    cfg->reduce_scatter_algo = ZSH_ALGO_DIRECT;
    cfg->allreduce_algo      = ZSH_ALGO_DIRECT;

    zsh_check_fill(send, ZSH_FLOAT32, ZSH_MIN, rank, n, 0, count);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(send, recv, count, ZSH_FLOAT32, comm));
    for (k = 0; k < n; k++) {
        snprintf(what, sizeof(what), "direct allgather: block of rank %d", k);
        zsh_check_buf(recv + (size_t)k * count, ZSH_FLOAT32, ZSH_MIN, n, k, 0, count, what,
                      __FILE__, __LINE__);
    }

    zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, 0, total);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_reduce_scatter(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm));
    zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, count * (size_t)rank, count,
                  "direct reduce_scatter", __FILE__, __LINE__);

    /* total - 1 elements: blocks of unequal sizes. */
    zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, 0, total - 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, total - 1, ZSH_FLOAT32, ZSH_SUM, comm));
    zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, 0, total - 1, "direct allreduce",
                  __FILE__, __LINE__);
    *cfg = saved;
    free(send);
    free(recv);
}

/* The automatic choice on one node: direct above ZSH_DIRECT_MIN_SIZE times
 * ceil(log2(ranks)); below it eager on up to ZSH_EAGER_MAX_RANKS ranks while
 * a rank sends at most 4 KiB, else a log-latency algorithm; the ring where
 * ranks cannot reach each other and the call is large. */
/* The algorithm of a call just posted (@posted its status), once it is done. */
static zsh_algo_t zsh_direct_algo_of(zsh_status_t posted, zsh_request_t *req, const char *call)
{
    zsh_algo_t algo;

    if (posted != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s: %s", call, zsh_last_error());
        return ZSH_ALGO_LAST;
    }
    algo = req->algo;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    return algo;
}

static zsh_algo_t zsh_direct_chosen(zsh_comm_t *comm, size_t count, float *send, float *recv)
{
    zsh_request_t *req = NULL;
    zsh_status_t status = zsh_iallreduce(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm, &req);

    return zsh_direct_algo_of(status, req, "zsh_iallreduce");
}

ZSH_RANK_TEST(direct, is_chosen_above_the_direct_minimum_size_on_one_node)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm);
    size_t count = 8192, rounds = 0;
    float *send = zsh_check_alloc(count * sizeof(float));
    float *recv = zsh_check_alloc(count * sizeof(float));
    bool direct = comm->local.direct, board;

    while ((1 << rounds) < n) {
        rounds++;
    }

    if ((n < 2) || !direct) {
        free(send);
        free(recv);
        ZSH_SKIP((n < 2) ? "a single rank never selects an algorithm"
                         : "cross-memory attach is not available here");
    }
    memset(send, 0, count * sizeof(float));
    cfg->allreduce_algo  = ZSH_ALGO_AUTO;
    cfg->direct_min_size = 4096;
    cfg->small_msg_size  = 16384;
    /* 4 KiB: eager where it is written once, on two ranks or onto boards
     * of up to 8; sent to every peer through UCX, eager on two ranks only. */
    ZSH_EXPECT_EQ(((n == 2) || (comm->local.board && (n <= ZSH_EAGER_MAX_RANKS))) ? ZSH_ALGO_EAGER
                                                                           : ZSH_ALGO_RD,
                  zsh_direct_chosen(comm, 1024, send, recv));
    board       = comm->local.board;
    comm->local.board = false; /* alike on every rank */
    ZSH_EXPECT_EQ((n == 2) ? ZSH_ALGO_EAGER : ZSH_ALGO_RD,
                  zsh_direct_chosen(comm, 1024, send, recv));
    comm->local.board = board;
    ZSH_EXPECT_EQ((n <= ZSH_EAGER_MAX_RANKS) ? ZSH_ALGO_EAGER : ZSH_ALGO_RD,
                  zsh_direct_chosen(comm, 128, send, recv));
    /* Boards take eager calls up to 16 KiB, direct ones above. */
    if (board && (n <= ZSH_EAGER_MAX_RANKS)) {
        ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, zsh_direct_chosen(comm, ZSH_DESC_BOARD_INLINE_MAX / 4,
                                                        send, recv));
        ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, zsh_direct_chosen(comm, ZSH_DESC_BOARD_INLINE_MAX / 4 + 1,
                                                         send, recv));
    }
    /* Without: the minimum counts once per round of recursive doubling. */
    comm->local.board = false;
    ZSH_EXPECT_EQ((rounds == 1) ? ZSH_ALGO_DIRECT : ZSH_ALGO_RD,
                  zsh_direct_chosen(comm, 1025, send, recv));
    ZSH_EXPECT_EQ((n == 2) ? ZSH_ALGO_EAGER : ZSH_ALGO_RD,
                  zsh_direct_chosen(comm, 1024 * rounds, send, recv));
    ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, zsh_direct_chosen(comm, 1024 * rounds + 1, send, recv));
    comm->local.direct = false; /* and so no boards either */
    ZSH_EXPECT_EQ(ZSH_ALGO_RD, zsh_direct_chosen(comm, 4096, send, recv));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, zsh_direct_chosen(comm, count, send, recv));
    comm->local.direct = direct;
    comm->local.board  = board;
    *cfg = saved;
    free(send);
    free(recv);
}

/* A broadcast reads the root's buffer directly above the same minimum (one
 * round on two ranks, two on three or four); below it the root's buffer
 * rides in its descriptor where that is written once (two ranks, or
 * boards), else the binomial tree runs, as it does where ranks cannot
 * reach each other's memory. */
static zsh_algo_t zsh_direct_bcast_chosen(zsh_comm_t *comm, size_t count, float *buf)
{
    zsh_request_t *req = NULL;
    zsh_status_t status =
        zsh_ibroadcast(buf, count, ZSH_FLOAT32, zsh_comm_size(comm) - 1, comm, &req);

    return zsh_direct_algo_of(status, req, "zsh_ibroadcast");
}

ZSH_RANK_TEST(direct, broadcast_reads_the_root_above_the_direct_minimum_and_is_eager_below)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm), rounds = 0;
    size_t count = 8192, i;
    float *buf = zsh_check_alloc(count * sizeof(float));
    bool direct = comm->local.direct, board;

    while ((1 << rounds) < n) {
        rounds++;
    }
    if ((n < 2) || !direct) {
        free(buf);
        ZSH_SKIP((n < 2) ? "a single rank never selects an algorithm"
                         : "cross-memory attach is not available here");
    }
    cfg->broadcast_algo  = ZSH_ALGO_AUTO;
    cfg->direct_min_size = 4096;
    cfg->small_msg_size  = 16384;
    for (i = 0; i < count; i++) {
        buf[i] = (zsh_comm_rank(comm) == n - 1) ? (float)i : -1.0f;
    }
    ZSH_EXPECT_EQ(((n == 2) || (comm->local.board && (n <= ZSH_EAGER_MAX_RANKS)))
                      ? ZSH_ALGO_EAGER : ZSH_ALGO_BINOMIAL,
                  zsh_direct_bcast_chosen(comm, 1024 * (size_t)rounds, buf));
    board             = comm->local.board;
    comm->local.board = false; /* alike on every rank: through the transport */
    ZSH_EXPECT_EQ((n == 2) ? ZSH_ALGO_EAGER : ZSH_ALGO_BINOMIAL,
                  zsh_direct_bcast_chosen(comm, 1024 * (size_t)rounds, buf));
    comm->local.board = board;
    ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, zsh_direct_bcast_chosen(comm, count, buf));
    for (i = 0; i < count; i++) {
        if (buf[i] != (float)i) {
            zsh_test_fail(__FILE__, __LINE__, "element %zu is %g, not %zu", i, buf[i], i);
            break;
        }
    }
    comm->local.direct = false; /* as for ranks on two nodes */
    ZSH_EXPECT_EQ(ZSH_ALGO_BINOMIAL, zsh_direct_bcast_chosen(comm, count, buf));
    comm->local.direct = direct;
    *cfg = saved;
    free(buf);
}

/* Post a direct all-gather of @count floats from @send into @recv and say
 * whether it streams its own block; the result is checked against the
 * reference. */
static bool zsh_direct_streams(zsh_comm_t *comm, float *send, float *recv, size_t count)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k;
    zsh_request_t *req = NULL;
    char what[96];
    bool stream;

    zsh_check_fill(send, ZSH_FLOAT32, ZSH_MIN, rank, n, 0, count);
    if (zsh_iallgather(send, recv, count, ZSH_FLOAT32, comm, &req) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_iallgather: %s", zsh_last_error());
        return false;
    }
    ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, req->algo);
    stream = zsh_direct(req)->stream;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    for (k = 0; k < n; k++) {
        snprintf(what, sizeof(what), "%s direct allgather: block of rank %d",
                 stream ? "streaming" : "plain", k);
        zsh_check_buf(recv + (size_t)k * count, ZSH_FLOAT32, ZSH_MIN, n, k, 0, count, what,
                      __FILE__, __LINE__);
    }
    return stream;
}

/* Above ZSH_STREAM_MIN_SIZE (send and receive buffers together) the own
 * block is stored non-temporally, whatever the alignment of recvbuf and
 * however many chunks it takes; in place there is nothing to copy. */
ZSH_RANK_TEST(direct, allgather_streams_its_own_block_once_its_buffers_pass_the_threshold)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    size_t stream_min = comm->ctx->stream_min;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t count = 3 * ZSH_CHECK_CHUNK + 7, total = count * (size_t)n;
    size_t bytes = (total + count) * sizeof(float);
    float *send = zsh_check_alloc(count * sizeof(float));
    float *buf  = zsh_check_alloc((total + 1) * sizeof(float));
    float *recv = buf + 1; /* 4 bytes past a line: the copy starts mid-line */

    if ((n < 2) || !comm->local.direct) {
        free(send);
        free(buf);
        ZSH_SKIP((n < 2) ? "a single rank never selects an algorithm"
                         : "cross-memory attach is not available here");
    }
    cfg->chunk_size     = ZSH_CHECK_CHUNK * sizeof(float);
    cfg->allgather_algo = ZSH_ALGO_DIRECT;

    comm->ctx->stream_min = bytes - 1;
    ZSH_EXPECT_TRUE(zsh_direct_streams(comm, send, recv, count));
    comm->ctx->stream_min = bytes;
    ZSH_EXPECT_TRUE(!zsh_direct_streams(comm, send, recv, count));
    comm->ctx->stream_min = SIZE_MAX; /* auto, where no private cache is known */
    ZSH_EXPECT_TRUE(!zsh_direct_streams(comm, send, recv, count));
    /* In place: the input already sits in its block. */
    comm->ctx->stream_min = 0;
    memset(recv, 0, total * sizeof(float));
    ZSH_EXPECT_TRUE(!zsh_direct_streams(comm, recv + (size_t)rank * count, recv, count));

    comm->ctx->stream_min = stream_min;
    *cfg = saved;
    free(send);
    free(buf);
}

/* Where a direct call's buffers are rides in its descriptor message: to the
 * one peer through the mailbox on two ranks of one node, on the rank's
 * board for every peer on more (or to every peer at once through UCX
 * without boards), so the addresses cost no round of messages of their own.
 * Through the mailbox or board, the "done" message follows the descriptor
 * there. */
ZSH_RANK_TEST(direct, addresses_ride_in_the_descriptor_message_to_every_peer)
{
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t count = 2048, total = count * (size_t)n;
    float *send = zsh_check_alloc(total * sizeof(float));
    float *recv = zsh_check_alloc(total * sizeof(float));
    uint64_t sent = comm->local.sent;
    zsh_request_t *req = NULL;

    if ((n < 2) || !comm->local.direct) {
        free(send);
        free(recv);
        ZSH_SKIP((n < 2) ? "a single rank never selects an algorithm"
                         : "cross-memory attach is not available here");
    }
    cfg->reduce_scatter_algo = ZSH_ALGO_DIRECT;
    zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, 0, total);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ireduce_scatter(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm,
                                                  &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, req->algo);
    ZSH_EXPECT_EQ(2 * sizeof(uint64_t), req->hs.inline_len);
    ZSH_EXPECT_EQ(n > 2, req->hs.all);
    ZSH_EXPECT_EQ(comm->local.box || comm->local.board, zsh_hs_shared(&req->hs));
    ZSH_EXPECT_EQ(comm->local.box || comm->local.board, req->hs.done);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    ZSH_EXPECT_EQ(sent + ((comm->local.box || comm->local.board) ? 2 : 0), comm->local.sent);
    ZSH_EXPECT_EQ(comm->local.sent, comm->local.tickets);
    zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, count * (size_t)rank, count,
                  "direct reduce_scatter", __FILE__, __LINE__);
    *cfg = saved;
    free(send);
    free(recv);
}

/* More direct calls in flight than a mailbox or board has slots (two per
 * call through it: the descriptor, then "done"), mixed with eager calls, waited for
 * newest first: tickets keep their order and every call its data. */
ZSH_RANK_TEST(direct, more_direct_calls_in_flight_than_mailbox_slots_keep_order_and_data)
{
    enum { CALLS = 9, COUNT = 8192 }; /* above what boards take eager */
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k, r;
    float *send = zsh_check_alloc(CALLS * COUNT * sizeof(float));
    float *recv = zsh_check_alloc((size_t)CALLS * COUNT * (size_t)n * sizeof(float));
    float small[CALLS][2], small_out[CALLS][2];
    zsh_request_t *reqs[2 * CALLS];
    size_t i;

    if ((n < 2) || !comm->local.direct) {
        free(send);
        free(recv);
        ZSH_SKIP((n < 2) ? "a single rank never selects an algorithm"
                         : "cross-memory attach is not available here");
    }
    for (k = 0; k < CALLS; k++) {
        for (i = 0; i < COUNT; i++) {
            send[(size_t)k * COUNT + i] = (float)(1000 * k + 10 * rank) + (float)(i % 7);
        }
        small[k][0] = small[k][1] = (float)(k + rank);
        /* All-gather and all-reduce alternate, so a call that took another's
         * ticket is caught as a mismatch as well as by its data. */
        if (k % 2) {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(send + (size_t)k * COUNT,
                                                     recv + (size_t)k * COUNT * (size_t)n, COUNT,
                                                     ZSH_FLOAT32, ZSH_SUM, comm, &reqs[2 * k]));
        } else {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallgather(send + (size_t)k * COUNT,
                                                     recv + (size_t)k * COUNT * (size_t)n, COUNT,
                                                     ZSH_FLOAT32, comm, &reqs[2 * k]));
        }
        ZSH_EXPECT_EQ(ZSH_ALGO_DIRECT, reqs[2 * k]->algo);
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(small[k], small_out[k], 2, ZSH_FLOAT32, ZSH_SUM,
                                                 comm, &reqs[2 * k + 1]));
    }
    for (k = 2 * CALLS - 1; k >= 0; k--) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[k]));
        zsh_request_free(reqs[k]);
    }
    for (k = 0; k < CALLS; k++) {
        const float *out = recv + (size_t)k * COUNT * (size_t)n;

        ZSH_EXPECT_TRUE(small_out[k][1] == (float)(n * k + n * (n - 1) / 2));
        for (i = 0; i < COUNT; i += 97) {
            if (k % 2) {
                /* sum over r of 1000k + 10r + i % 7 */
                ZSH_EXPECT_TRUE(out[i] == (float)(n * (1000 * k + (int)(i % 7)) +
                                                  5 * n * (n - 1)));
                continue;
            }
            for (r = 0; r < n; r++) {
                ZSH_EXPECT_TRUE(out[(size_t)r * COUNT + i] ==
                                (float)(1000 * k + 10 * r) + (float)(i % 7));
            }
        }
    }
    free(send);
    free(recv);
}
