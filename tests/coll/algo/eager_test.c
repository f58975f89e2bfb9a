/*
 * The eager algorithm: on two ranks of one node through shared-memory
 * mailboxes (transports/shm), on up to ZSH_EAGER_MAX_RANKS ranks of one
 * node one message on each rank's board, else one descriptor message to
 * every peer through UCX. That it is what runs, and that many
 * calls in flight at once, more than a box has slots, keep their order and
 * their data. The reference matrices check every type and op through it too.
 */
#include "algo/eager.h"
#include "coll/check.h"

#include "task/task.h"
#include "ucx/shm/board.h"
#include "ucx/ucx.h"

#include <stdlib.h>
#include <unistd.h>

/* A communicator whose eager calls use mailboxes, or a skip saying why not. */
#define ZSH_EAGER_BOX_OR_SKIP(_comm) \
    do { \
        if (zsh_comm_size(_comm) != 2) { \
            ZSH_SKIP("the eager algorithm runs on two ranks"); \
        } \
        if (zsh_check_ucx_cfg().shm == 0) { \
            ZSH_SKIP("ZSH_SHM=0 turns mailboxes off"); \
        } \
        if (!(_comm)->local.box) { \
            ZSH_SKIP("no mailboxes here (cross-memory attach or memfd_create not permitted)"); \
        } \
    } while (0)

ZSH_RANK_TEST(eager, two_ranks_on_one_node_send_small_calls_through_mailboxes)
{
    float send[4], recv[8];
    uint64_t sent;
    zsh_request_t *req;
    int rank = zsh_comm_rank(comm), i;

    ZSH_EAGER_BOX_OR_SKIP(comm);
    for (i = 0; i < 4; i++) {
        send[i] = (float)(10 * rank + i);
    }
    sent = comm->local.sent;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallgather(send, recv, 4, ZSH_FLOAT32, comm, &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, req->algo);
    ZSH_EXPECT_TRUE(zsh_hs_shared(&req->hs));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    ZSH_EXPECT_EQ(sent + 1, comm->local.sent);
    for (i = 0; i < 8; i++) {
        ZSH_EXPECT_TRUE(recv[i] == (float)(10 * (i / 4) + i % 4));
    }
}

/* Post 19 small calls, all-reduce and all-gather in turn, then wait for
 * them newest first: the oldest must progress meanwhile. */
static void zsh_eager_many_in_flight(zsh_comm_t *comm)
{
    enum { CALLS = 19 };
    float send[CALLS][3], recv[CALLS][3 * ZSH_EAGER_MAX_RANKS];
    zsh_request_t *reqs[CALLS];
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), k, i, r;

    for (k = 0; k < CALLS; k++) {
        for (i = 0; i < 3; i++) {
            send[k][i] = (float)(100 * k + 10 * rank + i);
        }
        /* All-reduce and all-gather alternate, so a call found in the wrong
         * slot would be caught as a mismatch as well as by its data. */
        if (k % 2) {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(send[k], recv[k], 3, ZSH_FLOAT32, ZSH_SUM,
                                                     comm, &reqs[k]));
        } else {
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallgather(send[k], recv[k], 3, ZSH_FLOAT32, comm,
                                                     &reqs[k]));
        }
    }
    for (k = CALLS - 1; k >= 0; k--) {
        ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, reqs[k]->algo);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[k]));
        zsh_request_free(reqs[k]);
    }
    for (k = 0; k < CALLS; k++) {
        for (i = 0; i < 3; i++) {
            if (k % 2) {
                /* sum over r of 100k + 10r + i */
                ZSH_EXPECT_TRUE(recv[k][i] == (float)(n * (100 * k + i) + 5 * n * (n - 1)));
                continue;
            }
            for (r = 0; r < n; r++) {
                ZSH_EXPECT_TRUE(recv[k][3 * r + i] == (float)(100 * k + 10 * r + i));
            }
        }
    }
}

ZSH_RANK_TEST(eager, more_calls_in_flight_than_mailbox_slots_keep_order_and_data)
{
    ZSH_EAGER_BOX_OR_SKIP(comm);
    zsh_eager_many_in_flight(comm);
}

/* Between 3 and ZSH_EAGER_MAX_RANKS ranks, a small call sends its descriptor
 * and data to every peer at once, and takes every peer's. */
#define ZSH_EAGER_ALL_OR_SKIP(_comm) \
    do { \
        if ((zsh_comm_size(_comm) < 3) || (zsh_comm_size(_comm) > ZSH_EAGER_MAX_RANKS)) { \
            ZSH_SKIP("descriptors go to every peer on 3 to 8 ranks"); \
        } \
    } while (0)

static void zsh_eager_fill(float *send, int rank, int n)
{
    int i;

    for (i = 0; i < 2 * n; i++) {
        send[i] = (float)(100 * rank + i);
    }
}

/* Block @rank of every rank's input, summed: sum over r of 100r + 2 rank + i. */
static void zsh_eager_check_rs(const float *recv, int rank, int n)
{
    int i;

    for (i = 0; i < 2; i++) {
        ZSH_EXPECT_TRUE(recv[i] == (float)(50 * n * (n - 1) + n * (2 * rank + i)));
    }
}

/* Without boards (ZSH_SHM=0, or ranks that cannot map each other's
 * segments): a receive from every peer is posted with the call. */
ZSH_RANK_TEST(eager, small_calls_on_up_to_eight_ranks_without_boards_send_to_every_peer_at_once)
{
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), r;
    float send[2 * ZSH_EAGER_MAX_RANKS], recv[2];
    bool board = comm->local.board;
    uint64_t sent = comm->local.sent;
    zsh_request_t *req;

    ZSH_EAGER_ALL_OR_SKIP(comm);
    zsh_eager_fill(send, rank, n);
    comm->local.board = false; /* alike on every rank */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ireduce_scatter(send, recv, 2, ZSH_FLOAT32, ZSH_SUM, comm,
                                                  &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, req->algo);
    ZSH_EXPECT_TRUE(req->hs.all);
    ZSH_EXPECT_TRUE(!zsh_hs_shared(&req->hs));
    for (r = 0; r < n; r++) {
        ZSH_EXPECT_TRUE((r == rank) || (req->hs_bufs.xfers[r].is_recv && (req->hs_bufs.xfers[r].peer == r)));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    comm->local.board = board;
    ZSH_EXPECT_EQ(sent, comm->local.sent);
    zsh_eager_check_rs(recv, rank, n);
}

/* Every transfer slot of @req's exchange idle, or a receive from the peer of
 * that slot (the board handshake's probes), never ours, never a send. */
static void zsh_eager_expect_only_probes(const zsh_request_t *req, int rank, int n)
{
    const zsh_xfer_t *x;
    int r;

    ZSH_EXPECT_EQ(n, req->hs.nxfers);
    for (r = 0; r < n; r++) {
        x = &req->hs_bufs.xfers[r];
        if ((x->req != NULL) && ((r == rank) || !x->is_recv || (x->peer != r))) {
            zsh_test_fail(__FILE__, __LINE__, "transfer slot %d holds a %s with rank %d; "
                          "only a probe receive from rank %d may be posted", r,
                          x->is_recv ? "receive" : "send", x->peer, r);
        }
    }
}

/* With boards: the call's descriptor and whole input go once on this rank's
 * board, as one ticket, and nothing goes through the transport. A call that
 * waits ZSH_HS_PROBE for a peer's board message (a slow peer: 5 or 8 ranks
 * under TSan) listens for that peer's descriptor there too, so a receive may
 * be posted, but only that: a probe from the peer of its slot, dropped once
 * the peer's board message is taken. */
ZSH_RANK_TEST(eager, small_calls_on_up_to_eight_ranks_go_once_on_the_board_of_each_rank)
{
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), r;
    float send[2 * ZSH_EAGER_MAX_RANKS], recv[2];
    uint64_t sent = comm->local.sent;
    zsh_request_t *req;

    ZSH_EAGER_ALL_OR_SKIP(comm);
    if (!comm->local.board) {
        ZSH_SKIP("no boards here (ZSH_SHM=0, or cross-memory attach or memfd_create not "
                 "permitted)");
    }
    zsh_eager_fill(send, rank, n);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ireduce_scatter(send, recv, 2, ZSH_FLOAT32, ZSH_SUM, comm,
                                                  &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, req->algo);
    ZSH_EXPECT_TRUE(zsh_hs_shared(&req->hs));
    ZSH_EXPECT_EQ(2 * n * sizeof(float), req->hs.inline_len);
    zsh_eager_expect_only_probes(req, rank, n);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    for (r = 0; r < n; r++) {
        ZSH_EXPECT_TRUE(req->hs_bufs.xfers[r].req == NULL);
    }
    zsh_request_free(req);
    ZSH_EXPECT_EQ(sent + 1, comm->local.sent);
    ZSH_EXPECT_EQ(comm->local.sent, comm->local.tickets);
    zsh_eager_check_rs(recv, rank, n);
}

ZSH_RANK_TEST(eager, more_calls_in_flight_than_board_slots_keep_order_and_data)
{
    ZSH_EAGER_ALL_OR_SKIP(comm);
    if (!comm->local.board) {
        ZSH_SKIP("no boards here (ZSH_SHM=0, or cross-memory attach or memfd_create not "
                 "permitted)");
    }
    zsh_eager_many_in_flight(comm);
}

ZSH_RANK_TEST(eager, many_calls_in_flight_on_up_to_eight_ranks_without_boards_keep_order_and_data)
{
    bool board = comm->local.board;

    ZSH_EAGER_ALL_OR_SKIP(comm);
    comm->local.board = false;
    zsh_eager_many_in_flight(comm);
    comm->local.board = board;
}

/*
 * On boards, calls of up to 16 KiB go eager and each rank reads its peers'
 * inputs where they lie. Nine of them in flight, more than a board has
 * slots, all-reduce in place among them: a message that has to wait for its
 * slot still goes out with the input as it was when the call was made.
 */
ZSH_RANK_TEST(eager, calls_of_up_to_16_kib_on_boards_keep_order_and_data_even_in_place)
{
    enum { CALLS = 9, TOTAL = ZSH_DESC_BOARD_INLINE_MAX / sizeof(float) };
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), k, r;
    size_t blk = TOTAL / (size_t)n, i;
    zsh_request_t *reqs[CALLS];
    float *buf;

    ZSH_EAGER_ALL_OR_SKIP(comm);
    if (!comm->local.board) {
        ZSH_SKIP("no boards here (ZSH_SHM=0, or cross-memory attach or memfd_create not "
                 "permitted)");
    }
    buf = zsh_check_alloc((size_t)CALLS * 2 * TOTAL * sizeof(float));
    for (k = 0; k < CALLS; k++) {
        float *send = buf + (size_t)k * 2 * TOTAL, *recv = send + TOTAL;

        for (i = 0; i < TOTAL; i++) {
            send[i] = (float)(1000 * k + 10 * rank) + (float)(i % 5);
        }
        switch (k % 3) {
        case 0: /* in place: the result overwrites the input the message carries */
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(send, send, TOTAL, ZSH_FLOAT32, ZSH_SUM,
                                                     comm, &reqs[k]));
            break;
        case 1:
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_ireduce_scatter(send, recv, blk, ZSH_FLOAT32, ZSH_SUM,
                                                          comm, &reqs[k]));
            break;
        default:
            ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallgather(send, recv, blk, ZSH_FLOAT32, comm,
                                                     &reqs[k]));
            break;
        }
        /* No check that UCX stays unused here: a call that waits 10 ms for
         * a peer's board message (8 ranks under TSan) listens there too. */
        ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, reqs[k]->algo);
        ZSH_EXPECT_TRUE(zsh_hs_shared(&reqs[k]->hs));
    }
    for (k = CALLS - 1; k >= 0; k--) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[k]));
        zsh_request_free(reqs[k]);
    }
    ZSH_EXPECT_EQ(comm->local.sent, comm->local.tickets);
    for (k = 0; k < CALLS; k++) {
        const float *send = buf + (size_t)k * 2 * TOTAL, *recv = send + TOTAL;

        for (i = 0; i < ((k % 3) ? blk : TOTAL); i++) {
            /* sum over r of 1000k + 10r + x, x the element's pattern */
            float x = (float)(((k % 3 == 1) ? (size_t)rank * blk + i : i) % 5);

            if (k % 3 == 0) {
                ZSH_EXPECT_TRUE(send[i] == (float)(n * 1000 * k + 5 * n * (n - 1)) + n * x);
            } else if (k % 3 == 1) {
                ZSH_EXPECT_TRUE(recv[i] == (float)(n * 1000 * k + 5 * n * (n - 1)) + n * x);
            } else {
                for (r = 0; r < n; r++) {
                    ZSH_EXPECT_TRUE(recv[(size_t)r * blk + i] ==
                                    (float)(1000 * k + 10 * r) + (float)(i % 5));
                }
            }
        }
    }
    free(buf);
}

/*
 * An all-reduce in place whose board slot is still held by a reader of the
 * message four tickets before: it takes every peer's input meanwhile, but
 * must not write its result over its input before its own message went out
 * with that input. Rank 0 holds its own slot with a stand-in for the older
 * message until its call has matched every peer's.
 */
ZSH_RANK_TEST(eager, an_all_reduce_in_place_waiting_for_its_board_slot_sends_its_input_unchanged)
{
    enum { COUNT = 1024 };
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), spins;
    const zsh_box_seg_t *own = &comm->ctx->tl_ctx->box_self;
    uint64_t ticket, hold = 0;
    zsh_box_parts_t parts = {&hold, sizeof(hold), NULL, 0};
    float buf[COUNT] = {0};
    zsh_request_t *req;
    size_t i;

    ZSH_EAGER_ALL_OR_SKIP(comm);
    if (!comm->local.board) {
        ZSH_SKIP("no boards here (ZSH_SHM=0, or cross-memory attach or memfd_create not "
                 "permitted)");
    }
    /* Calls enough that the slot has held an older message. */
    for (spins = 0; spins < ZSH_BOARD_SLOTS; spins++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_allreduce(buf, buf + 1, 1, ZSH_FLOAT32, ZSH_SUM, comm));
    }
    ticket = comm->local.tickets;
    if (rank == 0) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_board_put(own, comm->id, comm->uid,
                                                ticket - ZSH_BOARD_SLOTS, 1, &parts));
    }
    for (i = 0; i < COUNT; i++) {
        buf[i] = (float)(10 * rank) + (float)(i % 3);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(buf, buf, COUNT, ZSH_FLOAT32, ZSH_SUM, comm, &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, req->algo);
    if (rank == 0) {
        for (spins = 0; (!zsh_hs_matched(&req->hs)) && (spins < 100000); spins++) {
            ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_request_test(req));
            usleep(10);
        }
        ZSH_EXPECT_TRUE(zsh_hs_matched(&req->hs));
        ZSH_EXPECT_TRUE(!req->hs.sent);
        ZSH_EXPECT_STATUS(ZSH_INPROGRESS, zsh_request_test(req));
        zsh_board_release(own, comm->id, ticket - ZSH_BOARD_SLOTS);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    for (i = 0; i < COUNT; i++) {
        ZSH_EXPECT_TRUE(buf[i] == (float)(5 * n * (n - 1)) + (float)n * (float)(i % 3));
    }
}
