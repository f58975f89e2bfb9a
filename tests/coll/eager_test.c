/*
 * The eager algorithm on two ranks of one node, through shared-memory
 * mailboxes (transports/shm): that it is what runs, and that many calls in
 * flight at once, more than a box has slots, keep their order and their
 * data. The reference matrices check every type and op through it too.
 */
#include "coll/check.h"

#include "coll/task.h"

#include <stdlib.h>

/* A communicator whose eager calls use mailboxes, or a skip saying why not. */
#define ZSH_EAGER_BOX_OR_SKIP(_comm) \
    do { \
        if (zsh_comm_size(_comm) != 2) { \
            ZSH_SKIP("the eager algorithm runs on two ranks"); \
        } \
        if (zsh_check_cfg(_comm)->shm == 0) { \
            ZSH_SKIP("ZSH_SHM=0 turns mailboxes off"); \
        } \
        if (!(_comm)->box) { \
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
    sent = comm->box_sent;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallgather(send, recv, 4, ZSH_FLOAT32, comm, &req));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, req->algo);
    ZSH_EXPECT_TRUE(req->desc_box);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    ZSH_EXPECT_EQ(sent + 1, comm->box_sent);
    for (i = 0; i < 8; i++) {
        ZSH_EXPECT_TRUE(recv[i] == (float)(10 * (i / 4) + i % 4));
    }
}

ZSH_RANK_TEST(eager, more_calls_in_flight_than_mailbox_slots_keep_order_and_data)
{
    enum { CALLS = 19 };
    float send[CALLS][3], recv[CALLS][6];
    zsh_request_t *reqs[CALLS];
    int rank = zsh_comm_rank(comm), k, i;

    ZSH_EAGER_BOX_OR_SKIP(comm);
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
    for (k = CALLS - 1; k >= 0; k--) { /* newest first: the oldest must progress meanwhile */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[k]));
        zsh_request_free(reqs[k]);
    }
    for (k = 0; k < CALLS; k++) {
        for (i = 0; i < 3; i++) {
            if (k % 2) {
                ZSH_EXPECT_TRUE(recv[k][i] == (float)(200 * k + 10 + 2 * i));
            } else {
                ZSH_EXPECT_TRUE(recv[k][i] == (float)(100 * k + i));
                ZSH_EXPECT_TRUE(recv[k][3 + i] == (float)(100 * k + 10 + i));
            }
        }
    }
}
