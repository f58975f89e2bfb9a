/*
 * The rank map built from made-up identities: any shape of nodes and
 * placements, as every rank of such a job would build it.
 */
#include "harness/zsh_test.h"

#include "topo/topo.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define MAP_MAX 8

/* Identities of @n ranks on the hosts named by the letters of @hosts, all
 * of one machine, their NUMA node and package unknown. */
static void map_ids(const char *hosts, zsh_topo_id_t *ids)
{
    size_t i;

    for (i = 0; hosts[i] != '\0'; i++) {
        memset(&ids[i], 0, sizeof(ids[i]));
        ids[i].host[0] = hosts[i];
        strcpy(ids[i].machine, "boot-1");
        ids[i].numa    = -1;
        ids[i].package = -1;
    }
}

/* The map that rank @rank of a job on @hosts builds. */
static zsh_topo_t *map_of(const char *hosts, int rank)
{
    zsh_topo_id_t ids[MAP_MAX];
    zsh_topo_t *topo = NULL;

    map_ids(hosts, ids);
    if (zsh_topo_create(rank, (int)strlen(hosts), ids, &topo) != ZSH_OK) {
        return NULL;
    }
    return topo;
}

/* A rank list as "0,2" for comparing. */
static const char *map_list(const int *ranks, int n)
{
    static char buf[64];
    size_t used = 0;
    int i;

    buf[0] = '\0';
    for (i = 0; i < n; i++) {
        used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%d", i ? "," : "", ranks[i]);
    }
    return buf;
}

static const char *map_node(const zsh_topo_t *topo, int node)
{
    const int *ranks;
    int n;

    ranks = zsh_topo_node_ranks(topo, node, &n);
    return map_list(ranks, n);
}

static const char *map_rail(const zsh_topo_t *topo, int local_rank)
{
    int ranks[MAP_MAX];

    return map_list(ranks, zsh_topo_rail(topo, local_rank, ranks));
}

ZSH_TEST(topo_map, two_nodes_in_blocks_give_each_node_consecutive_ranks)
{
    char line[256];
    zsh_topo_t *topo;
    int rank;

    for (rank = 0; rank < 4; rank++) {
        topo = map_of("aabb", rank);
        ZSH_ASSERT_TRUE(topo != NULL);
        ZSH_EXPECT_EQ(2, topo->nnodes);
        ZSH_EXPECT_EQ(rank / 2, topo->node);
        ZSH_EXPECT_EQ(rank % 2, topo->local_rank);
        ZSH_EXPECT_EQ(2, topo->local_size);
        zsh_topo_destroy(topo);
    }
    topo = map_of("aabb", 0);
    ZSH_ASSERT_TRUE(topo != NULL);
    ZSH_EXPECT_EQ(ZSH_TOPO_BLOCK, zsh_topo_placement(topo));
    ZSH_EXPECT_TRUE(!zsh_topo_uneven(topo));
    ZSH_EXPECT_STR_CONTAINS(map_node(topo, 0), "0,1");
    ZSH_EXPECT_STR_CONTAINS(map_node(topo, 1), "2,3");
    ZSH_EXPECT_EQ(0, zsh_topo_leader(topo, 0));
    ZSH_EXPECT_EQ(2, zsh_topo_leader(topo, 1));
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 0), "0,2");
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 1), "1,3");
    zsh_topo_format(topo, line, sizeof(line));
    ZSH_EXPECT_STR_CONTAINS(line, "4 ranks on 2 nodes, 2 per node, block; a=0-1 b=2-3");
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, two_nodes_round_robin_alternate_ranks_between_nodes)
{
    char line[256];
    zsh_topo_t *topo;
    int rank;

    for (rank = 0; rank < 4; rank++) {
        topo = map_of("abab", rank);
        ZSH_ASSERT_TRUE(topo != NULL);
        ZSH_EXPECT_EQ(rank % 2, topo->node);
        ZSH_EXPECT_EQ(rank / 2, topo->local_rank);
        ZSH_EXPECT_EQ(2, topo->local_size);
        ZSH_EXPECT_EQ(rank / 2, topo->ranks[rank].local_rank);
        zsh_topo_destroy(topo);
    }
    topo = map_of("abab", 3);
    ZSH_ASSERT_TRUE(topo != NULL);
    ZSH_EXPECT_EQ(ZSH_TOPO_ROUND_ROBIN, zsh_topo_placement(topo));
    ZSH_EXPECT_STR_CONTAINS(map_node(topo, 0), "0,2");
    ZSH_EXPECT_STR_CONTAINS(map_node(topo, 1), "1,3");
    ZSH_EXPECT_EQ(1, zsh_topo_leader(topo, 1));
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 0), "0,1");
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 1), "2,3");
    ZSH_EXPECT_EQ(3, zsh_topo_rank_at(topo, 1, 1));
    ZSH_EXPECT_EQ(-1, zsh_topo_rank_at(topo, 1, 2));
    zsh_topo_format(topo, line, sizeof(line));
    ZSH_EXPECT_STR_CONTAINS(line, "4 ranks on 2 nodes, 2 per node, round-robin; a=0,2 b=1,3");
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, three_nodes_of_two_two_and_one_are_uneven_and_the_short_rail_skips_a_node)
{
    char line[256];
    zsh_topo_t *topo;

    topo = map_of("aabbc", 4);
    ZSH_ASSERT_TRUE(topo != NULL);
    ZSH_EXPECT_EQ(3, topo->nnodes);
    ZSH_EXPECT_EQ(2, topo->node);
    ZSH_EXPECT_EQ(0, topo->local_rank);
    ZSH_EXPECT_EQ(1, topo->local_size);
    ZSH_EXPECT_TRUE(zsh_topo_uneven(topo));
    ZSH_EXPECT_EQ(1, topo->min_local);
    ZSH_EXPECT_EQ(2, topo->max_local);
    ZSH_EXPECT_EQ(1, zsh_topo_node_size(topo, 2));
    ZSH_EXPECT_EQ(4, zsh_topo_leader(topo, 2));
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 0), "0,2,4");
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 1), "1,3");
    ZSH_EXPECT_EQ(0, zsh_topo_rail(topo, 2, NULL));
    ZSH_EXPECT_EQ(ZSH_TOPO_BLOCK, zsh_topo_placement(topo));
    zsh_topo_format(topo, line, sizeof(line));
    ZSH_EXPECT_STR_CONTAINS(line, "5 ranks on 3 nodes, 2+2+1 per node, block; a=0-1 b=2-3 c=4");
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, one_rank_is_one_node_and_its_own_leader)
{
    char line[256];
    zsh_topo_t *topo;

    topo = map_of("a", 0);
    ZSH_ASSERT_TRUE(topo != NULL);
    ZSH_EXPECT_EQ(1, topo->nnodes);
    ZSH_EXPECT_EQ(0, topo->node);
    ZSH_EXPECT_EQ(1, topo->local_size);
    ZSH_EXPECT_EQ(0, zsh_topo_leader(topo, 0));
    ZSH_EXPECT_TRUE(!zsh_topo_uneven(topo));
    ZSH_EXPECT_EQ(ZSH_TOPO_ONE_NODE, zsh_topo_placement(topo));
    zsh_topo_format(topo, line, sizeof(line));
    ZSH_EXPECT_STR_CONTAINS(line, "1 rank on 1 node, 1 per node, one node; a=0; numa/package "
                                  "unknown");
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, uneven_interleaved_nodes_are_scattered_and_keep_local_order)
{
    zsh_topo_t *topo;

    topo = map_of("abbaa", 3);
    ZSH_ASSERT_TRUE(topo != NULL);
    ZSH_EXPECT_EQ(ZSH_TOPO_SCATTERED, zsh_topo_placement(topo));
    ZSH_EXPECT_TRUE(zsh_topo_uneven(topo));
    ZSH_EXPECT_EQ(3, zsh_topo_node_size(topo, 0));
    ZSH_EXPECT_STR_CONTAINS(map_node(topo, 0), "0,3,4");
    ZSH_EXPECT_STR_CONTAINS(map_node(topo, 1), "1,2");
    ZSH_EXPECT_EQ(1, topo->local_rank);
    ZSH_EXPECT_EQ(3, topo->local_size);
    ZSH_EXPECT_STR_CONTAINS(map_rail(topo, 2), "4");
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, a_node_is_its_host_name_and_its_machine_together)
{
    zsh_topo_id_t ids[4];
    zsh_topo_t *topo;

    /* Two machines that share a name; two namespaces of one machine with
     * names of their own. */
    map_ids("aabc", ids);
    strcpy(ids[1].machine, "boot-2");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_create(0, 4, ids, &topo));
    ZSH_EXPECT_EQ(4, topo->nnodes);
    ZSH_EXPECT_EQ(1, topo->local_size);
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, numa_node_and_package_of_every_rank_are_in_the_map)
{
    static const char *const binds[4] = {"0-1", "2-3", "4", "6-7"};
    zsh_topo_id_t ids[4];
    char line[256];
    zsh_topo_t *topo;
    int numa, package, i;

    map_ids("aaaa", ids);
    for (i = 0; i < 4; i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_place("package:2 numa:2 core:2 pu:1", binds[i], &numa,
                                                 &package));
        ids[i].numa    = numa;
        ids[i].package = package;
    }
    ids[3].numa = -1;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_create(1, 4, ids, &topo));
    ZSH_EXPECT_EQ(1, topo->ranks[1].numa);
    ZSH_EXPECT_EQ(0, topo->ranks[1].package);
    ZSH_EXPECT_EQ(2, topo->ranks[2].numa);
    ZSH_EXPECT_EQ(1, topo->ranks[2].package);
    zsh_topo_format(topo, line, sizeof(line));
    ZSH_EXPECT_STR_CONTAINS(line, "numa/package by rank: 0/0 1/0 2/1 -/1");
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo_map, a_split_maps_its_members_among_themselves)
{
    static const int same_node[2] = {2, 0}, mixed[3] = {3, 1, 2}, ends[2] = {4, 0};
    zsh_topo_t *parent, *sub;

    parent = map_of("abab", 0);
    ZSH_ASSERT_TRUE(parent != NULL);
    /* Ranks 2 and 0, both on a, in that order. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_sub(parent, 1, 2, same_node, &sub));
    ZSH_EXPECT_EQ(1, sub->nnodes);
    ZSH_EXPECT_EQ(1, sub->local_rank);
    ZSH_EXPECT_EQ(2, sub->local_size);
    ZSH_EXPECT_EQ(ZSH_TOPO_ONE_NODE, zsh_topo_placement(sub));
    ZSH_EXPECT_STR_CONTAINS(sub->node_id[0].host, "a");
    zsh_topo_destroy(sub);
    /* Ranks 3, 1 (both b) and 2 (a): b is the group's node 0. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_sub(parent, 2, 3, mixed, &sub));
    ZSH_EXPECT_EQ(2, sub->nnodes);
    ZSH_EXPECT_EQ(1, sub->node);
    ZSH_EXPECT_EQ(0, sub->local_rank);
    ZSH_EXPECT_EQ(1, sub->local_size);
    ZSH_EXPECT_EQ(1, sub->ranks[1].local_rank);
    ZSH_EXPECT_STR_CONTAINS(sub->node_id[0].host, "b");
    ZSH_EXPECT_TRUE(zsh_topo_uneven(sub));
    ZSH_EXPECT_EQ(ZSH_TOPO_BLOCK, zsh_topo_placement(sub));
    zsh_topo_destroy(sub);
    zsh_topo_destroy(parent);

    parent = map_of("aabbc", 0);
    ZSH_ASSERT_TRUE(parent != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_sub(parent, 0, 2, ends, &sub));
    ZSH_EXPECT_EQ(2, sub->nnodes);
    ZSH_EXPECT_EQ(1, sub->max_local);
    ZSH_EXPECT_STR_CONTAINS(sub->node_id[0].host, "c");
    ZSH_EXPECT_STR_CONTAINS(map_rail(sub, 0), "0,1");
    zsh_topo_destroy(sub);
    zsh_topo_destroy(parent);
}

ZSH_TEST(topo_map, ranks_outside_the_map_are_refused)
{
    static const int outside[2] = {0, 4};
    zsh_topo_id_t ids[2];
    zsh_topo_t *parent, *sub = NULL;

    map_ids("ab", ids);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_create(2, 2, ids, &parent));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_create(0, 0, ids, &parent));
    parent = map_of("abab", 0);
    ZSH_ASSERT_TRUE(parent != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_sub(parent, 0, 2, outside, &sub));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "member 1 is rank 4");
    ZSH_EXPECT_TRUE(sub == NULL);
    zsh_topo_destroy(parent);
}

ZSH_TEST(topo_map, a_line_too_short_for_the_map_ends_in_dots)
{
    char line[24];
    zsh_topo_t *topo;

    topo = map_of("abab", 0);
    ZSH_ASSERT_TRUE(topo != NULL);
    zsh_topo_format(topo, line, sizeof(line));
    ZSH_EXPECT_EQ(sizeof(line) - 1, strlen(line));
    ZSH_EXPECT_STR_CONTAINS(line + sizeof(line) - 4, "...");
    zsh_topo_destroy(topo);
}
