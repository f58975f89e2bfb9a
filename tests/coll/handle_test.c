/*
 * Handles are checked, not trusted: a communicator used after it was
 * destroyed, or a request after it was freed, is refused with
 * ZSH_ERR_INVALID_ARG naming the handle, and reads no freed memory (the
 * shells are retired, not freed: coll/comm/retire.h).
 */
#include "coll/check.h"

#include <stdint.h>
#include <string.h>

#define ZSH_EXPECT_REJECTED(_call, _needle) \
    do { \
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, (_call)); \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), (_needle)); \
    } while (0)

static void zsh_handle_still_works(zsh_comm_t *comm)
{
    int one = 1, sum = 0;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&one, &sum, 1, ZSH_INT32, ZSH_SUM, comm));
    ZSH_EXPECT_EQ(zsh_comm_size(comm), sum);
}

ZSH_RANK_TEST(handle, destroyed_communicator_is_refused_by_every_entry)
{
    const char *gone = "was already destroyed";
    zsh_request_t *req = NULL;
    zsh_comm_t *child, *grandchild = NULL;
    float x[8] = {1}, y[64] = {0};

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, zsh_comm_rank(comm), &child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_destroy(child));
    ZSH_EXPECT_REJECTED(zsh_comm_destroy(child), "zsh_comm_destroy: comm 0x");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), gone);
    ZSH_EXPECT_REJECTED(zsh_allreduce(x, y, 1, ZSH_FLOAT32, ZSH_SUM, child), gone);
    ZSH_EXPECT_REJECTED(zsh_allgather(x, y, 1, ZSH_FLOAT32, child), gone);
    ZSH_EXPECT_REJECTED(zsh_reduce_scatter(y, x, 1, ZSH_FLOAT32, ZSH_SUM, child), gone);
    ZSH_EXPECT_REJECTED(zsh_broadcast(x, 1, ZSH_FLOAT32, 0, child), gone);
    ZSH_EXPECT_REJECTED(zsh_barrier(child), gone);
    ZSH_EXPECT_REJECTED(zsh_iallreduce(x, y, 1, ZSH_FLOAT32, ZSH_SUM, child, &req), gone);
    ZSH_EXPECT_REJECTED(zsh_iallgather(x, y, 1, ZSH_FLOAT32, child, &req), gone);
    ZSH_EXPECT_REJECTED(zsh_ireduce_scatter(y, x, 1, ZSH_FLOAT32, ZSH_SUM, child, &req), gone);
    ZSH_EXPECT_TRUE(req == NULL);
    ZSH_EXPECT_REJECTED(zsh_comm_split(child, 0, 0, &grandchild), gone);
    ZSH_EXPECT_TRUE(grandchild == NULL);
    ZSH_EXPECT_REJECTED(zsh_comm_abort(child), gone);
    ZSH_EXPECT_EQ(-1, zsh_comm_rank(child));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_comm_rank: comm 0x");
    ZSH_EXPECT_EQ(-1, zsh_comm_size(child));
    ZSH_EXPECT_TRUE(zsh_comm_get_timeout(child) == -1);
    ZSH_EXPECT_REJECTED(zsh_comm_set_timeout(child, 1.0), gone);
    zsh_handle_still_works(comm);
}

ZSH_RANK_TEST(handle, memory_that_is_not_a_communicator_is_refused)
{
    uint64_t junk[64];
    float x = 1, y = 0;

    memset(junk, 0x5a, sizeof(junk));
    ZSH_EXPECT_REJECTED(zsh_comm_destroy((zsh_comm_t *)junk), "is not a communicator");
    ZSH_EXPECT_REJECTED(zsh_allreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, (zsh_comm_t *)junk),
                        "is not a communicator");
    ZSH_EXPECT_EQ(-1, zsh_comm_rank((zsh_comm_t *)junk));
    zsh_handle_still_works(comm);
}

ZSH_RANK_TEST(handle, freed_request_is_refused_by_every_entry)
{
    const char *gone = "was already freed";
    zsh_request_t *req = NULL;
    float x = 1, y = 0;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, comm, &req));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    zsh_request_free(req);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_request_free: req 0x");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), gone);
    ZSH_EXPECT_REJECTED(zsh_request_wait(req), gone);
    ZSH_EXPECT_REJECTED(zsh_request_test(req), gone);
    ZSH_EXPECT_REJECTED(zsh_request_set_timeout(req, 1.0), gone);
    /* The communicator has no request left out: it would refuse to go. */
    zsh_handle_still_works(comm);
}

/* A request freed, then its communicator destroyed: the request still
 * reads as freed, and the next request of the job works. */
ZSH_RANK_TEST(handle, request_freed_before_its_communicator_is_destroyed_stays_refused)
{
    zsh_request_t *req = NULL;
    zsh_comm_t *child;
    float x = 1, y = 0;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, 0, &child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(&x, &y, 1, ZSH_FLOAT32, ZSH_SUM, child, &req));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
    ZSH_EXPECT_REJECTED(zsh_request_wait(req), "was already freed");
    zsh_handle_still_works(comm);
}
