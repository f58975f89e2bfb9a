/*
 * zsh_comm_node: each rank's node, the node count, its local rank and its
 * node's size, from the communicator's own map; a split on (node, local
 * rank) makes one communicator per node. Bad handles are refused.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "comm/comm.h"
#include "topo/topo.h"

#include <string.h>

static void node_one_machine(zsh_comm_t *comm, void *arg)
{
    int node = -2, nnodes = -2, local = -2, lsize = -2;

    (void)arg;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_node(comm, &node, &nnodes, &local, &lsize));
    ZSH_EXPECT_EQ(0, node);
    ZSH_EXPECT_EQ(1, nnodes);
    ZSH_EXPECT_EQ(zsh_comm_rank(comm), local);
    ZSH_EXPECT_EQ(zsh_comm_size(comm), lsize);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_node(comm, NULL, NULL, NULL, NULL));
}

ZSH_TEST(comm_node, ranks_of_one_machine_are_one_node_in_rank_order)
{
    int np;

    for (np = 1; np <= 4; np++) {
        zsh_inproc_run(np, node_one_machine, NULL);
    }
}

/* Rank r's node is letter hosts[r], as a job on those machines maps it. */
static void node_fake_hosts(zsh_comm_t *comm, void *arg)
{
    const char *hosts = arg;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), i, before = 0, same = 0, seen = 0;
    int node = -2, nnodes = -2, local = -2, lsize = -2;
    zsh_topo_id_t ids[8];
    zsh_topo_t *fake = NULL, *old;
    char letters[8] = {0};

    for (i = 0; i < n; i++) {
        memset(&ids[i], 0, sizeof(ids[i]));
        ids[i].host[0] = hosts[i];
        strcpy(ids[i].machine, "boot-1");
        ids[i].numa    = -1;
        ids[i].package = -1;
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_create(rank, n, ids, &fake));
    old        = comm->topo;
    comm->topo = fake;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_node(comm, &node, &nnodes, &local, &lsize));
    comm->topo = old;
    zsh_topo_destroy(fake);
    /* Nodes in order of first appearance; local ranks in rank order. */
    for (i = 0; i < n; i++) {
        if (strchr(letters, hosts[i]) == NULL) {
            letters[seen++] = hosts[i];
        }
        before += (i < rank) && (hosts[i] == hosts[rank]);
        same += hosts[i] == hosts[rank];
    }
    ZSH_EXPECT_EQ((int)(strchr(letters, hosts[rank]) - letters), node);
    ZSH_EXPECT_EQ(seen, nnodes);
    ZSH_EXPECT_EQ(before, local);
    ZSH_EXPECT_EQ(same, lsize);
}

ZSH_TEST(comm_node, made_up_nodes_number_in_first_appearance_order_and_count_their_own_ranks)
{
    zsh_inproc_run(4, node_fake_hosts, (void *)"abab");
    zsh_inproc_run(4, node_fake_hosts, (void *)"aabb");
    zsh_inproc_run(5, node_fake_hosts, (void *)"babca");
}

static void node_split(zsh_comm_t *comm, void *arg)
{
    zsh_comm_t *child = NULL;
    int node, local, lsize;

    (void)arg;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_node(comm, &node, NULL, &local, &lsize));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, node, local, &child));
    ZSH_EXPECT_EQ(lsize, zsh_comm_size(child));
    ZSH_EXPECT_EQ(local, zsh_comm_rank(child));
    zsh_comm_destroy(child);
}

ZSH_TEST(comm_node, a_split_on_node_and_local_rank_gives_the_node_communicator)
{
    zsh_inproc_run(3, node_split, NULL);
}

ZSH_TEST(comm_node, null_is_refused_and_outputs_stay)
{
    int node = 7;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_node(NULL, &node, NULL, NULL, NULL));
    ZSH_EXPECT_EQ(7, node);
}
