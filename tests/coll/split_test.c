#include "coll/check.h"

#include <stdlib.h>

/* Split by parity, with keys that reverse the order inside each half. */
ZSH_RANK_TEST(split, ranks_follow_color_and_key)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    int color = rank % 2, members = (n + 1 - color) / 2;
    zsh_comm_t *half = NULL;
    int sum = 0, one = 1;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, color, -rank, &half));
    ZSH_ASSERT_TRUE(half != NULL);
    ZSH_EXPECT_EQ(members, zsh_comm_size(half));
    ZSH_EXPECT_EQ(members - 1 - rank / 2, zsh_comm_rank(half));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&one, &sum, 1, ZSH_INT32, ZSH_SUM, half));
    ZSH_EXPECT_EQ(members, sum);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(half));
}

/* Collectives on a child and its parent in flight at once do not mix. */
ZSH_RANK_TEST(split, parent_and_child_collectives_in_flight_together_stay_separate)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    int color = (rank < n / 2) ? 0 : 1;
    int child_size = color ? n - n / 2 : n / 2;
    zsh_request_t *req_parent, *req_child;
    int64_t mine = rank + 1, total = 0, child_total = 0, expected_child = 0;
    zsh_comm_t *child;
    int r;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, color, 0, &child));
    ZSH_EXPECT_EQ(child_size, zsh_comm_size(child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(&mine, &child_total, 1, ZSH_INT64, ZSH_SUM, child,
                                             &req_child));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(&mine, &total, 1, ZSH_INT64, ZSH_SUM, comm,
                                             &req_parent));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req_parent));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req_child));
    zsh_request_free(req_parent);
    zsh_request_free(req_child);
    for (r = 0; r < n; r++) {
        expected_child += (((r < n / 2) ? 0 : 1) == color) ? r + 1 : 0;
    }
    ZSH_EXPECT_EQ((int64_t)n * (n + 1) / 2, total);
    ZSH_EXPECT_EQ(expected_child, child_total);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
}

ZSH_RANK_TEST(split, negative_color_gives_no_communicator)
{
    int rank = zsh_comm_rank(comm);
    zsh_comm_t *child = (zsh_comm_t *)&rank; /* must be overwritten */

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, (rank == 0) ? -1 : 7, rank, &child));
    if (rank == 0) {
        ZSH_EXPECT_TRUE(child == NULL);
        return;
    }
    ZSH_ASSERT_TRUE(child != NULL);
    ZSH_EXPECT_EQ(zsh_comm_size(comm) - 1, zsh_comm_size(child));
    ZSH_EXPECT_EQ(rank - 1, zsh_comm_rank(child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
}

/* Splitting a split, and freeing the communicators in different orders on
 * different ranks, leaves every communicator working. */
ZSH_RANK_TEST(split, nested_splits_work_and_free_in_any_order)
{
    int rank = zsh_comm_rank(comm);
    zsh_comm_t *a, *b;
    int one = 1, sum_a = 0, sum_b = 0;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, rank, &a));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(a, zsh_comm_rank(a) % 3, 0, &b));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&one, &sum_b, 1, ZSH_INT32, ZSH_SUM, b));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&one, &sum_a, 1, ZSH_INT32, ZSH_SUM, a));
    ZSH_EXPECT_EQ(zsh_comm_size(b), sum_b);
    ZSH_EXPECT_EQ(zsh_comm_size(comm), sum_a);
    if (rank % 2) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(a));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(b));
    } else {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(b));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(a));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
}

/* A child's rank map is of its own members, in its own ranks: two members
 * share a node in it exactly when they do in the job's, and local ranks
 * count the members on that node only. */
ZSH_RANK_TEST(split, a_child_maps_its_own_members_on_their_nodes)
{
    int rank = zsh_comm_rank(comm), i, j, local;
    const zsh_topo_t *job, *map;
    const int *of;
    zsh_comm_t *half;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, rank % 2, -rank, &half));
    job = half->ctx->topo;
    map = half->topo;
    of  = half->ctx_ranks;
    ZSH_EXPECT_EQ(zsh_comm_size(half), map->size);
    ZSH_EXPECT_EQ(zsh_comm_rank(half), map->rank);
    ZSH_EXPECT_EQ(job->node_of[of[half->rank]] == job->node_of[of[0]], map->node == map->node_of[0]);
    for (i = 0; i < map->size; i++) {
        local = 0;
        for (j = 0; j < map->size; j++) {
            ZSH_EXPECT_EQ(job->node_of[of[i]] == job->node_of[of[j]],
                          map->node_of[i] == map->node_of[j]);
            local += ((j < i) && (job->node_of[of[i]] == job->node_of[of[j]])) ? 1 : 0;
        }
        ZSH_EXPECT_EQ(local, map->ranks[i].local_rank);
        ZSH_EXPECT_EQ(job->ranks[of[i]].numa, map->ranks[i].numa);
        ZSH_EXPECT_EQ(job->ranks[of[i]].package, map->ranks[i].package);
    }
    ZSH_EXPECT_EQ(map->ranks[map->rank].local_rank, map->local_rank);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(half));
}
