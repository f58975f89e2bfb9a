/*
 * The rings go around the ranks in node order (algo/ring.h): on maps made
 * to look like several nodes, their neighbours follow the nodes, and every
 * ring collective stays correct for every dtype and op, its data laid out
 * by rank. Each rank thread swaps its communicator's map for one built from
 * made-up node names, as the ranks of such a job would build it.
 */
#include "coll/check.h"
#include "harness/inproc.h"

#include "algo/ring.h"
#include "topo/topo.h"

#include <string.h>

#define RING_MAX 8

/* A shape: the node of each rank as a letter, and the ring order it must give. */
typedef struct ring_shape {
    const char *hosts;
    int         order[RING_MAX];
} ring_shape_t;

/* Replace @comm's map with the one rank @rank of a job on @shape->hosts
 * builds; the old one into *@old_p. */
static bool ring_fake_map(zsh_comm_t *comm, const ring_shape_t *shape, zsh_topo_t **old_p)
{
    zsh_topo_id_t ids[RING_MAX];
    zsh_topo_t *fake = NULL;
    int i, n = (int)strlen(shape->hosts);

    if (n != zsh_comm_size(comm)) {
        zsh_test_fail(__FILE__, __LINE__, "shape %s for %d ranks", shape->hosts,
                      zsh_comm_size(comm));
        return false;
    }
    for (i = 0; i < n; i++) {
        memset(&ids[i], 0, sizeof(ids[i]));
        ids[i].host[0] = shape->hosts[i];
        strcpy(ids[i].machine, "boot-1");
        ids[i].numa    = -1;
        ids[i].package = -1;
    }
    if (!zsh_test_status_is(__FILE__, __LINE__, "zsh_topo_create", ZSH_OK,
                            zsh_topo_create(zsh_comm_rank(comm), n, ids, &fake))) {
        return false;
    }
    *old_p     = comm->topo;
    comm->topo = fake;
    return true;
}

static void ring_restore_map(zsh_comm_t *comm, zsh_topo_t *old)
{
    zsh_topo_destroy(comm->topo);
    comm->topo = old;
}

/* Every rank's position and neighbours follow @shape's order. */
static void ring_check_order(zsh_comm_t *comm, const ring_shape_t *shape)
{
    int n = zsh_comm_size(comm), p;

    for (p = 0; p < n; p++) {
        ZSH_EXPECT_EQ(shape->order[p], zsh_ring_rank_at(comm, p));
        ZSH_EXPECT_EQ(p, zsh_ring_pos(comm, shape->order[p]));
    }
    p = zsh_ring_pos(comm, zsh_comm_rank(comm));
    ZSH_EXPECT_EQ(shape->order[(p + 1) % n], zsh_ring_rank_at(comm, p + 1));
    ZSH_EXPECT_EQ(shape->order[(p + n - 1) % n], zsh_ring_rank_at(comm, p - 1));
}

static void ring_order_body(zsh_comm_t *comm, void *arg)
{
    const ring_shape_t *shape = arg;
    zsh_topo_t *old;

    if (!ring_fake_map(comm, shape, &old)) {
        return;
    }
    ring_check_order(comm, shape);
    ring_restore_map(comm, old);
}

static void ring_collectives_body(zsh_comm_t *comm, void *arg)
{
    const ring_shape_t *shape = arg;
    zsh_topo_t *old;

    if (!ring_fake_map(comm, shape, &old)) {
        return;
    }
    zsh_check_matrix(comm, ZSH_COLL_ALLGATHER, ZSH_ALGO_RING, zsh_allgather_case);
    zsh_check_matrix(comm, ZSH_COLL_REDUCE_SCATTER, ZSH_ALGO_RING, zsh_reduce_scatter_case);
    zsh_check_matrix(comm, ZSH_COLL_ALLREDUCE, ZSH_ALGO_RING, zsh_allreduce_case);
    zsh_allreduce_bitwise(comm, ZSH_ALGO_RING, 4099);
    ring_restore_map(comm, old);
}

/* 2 nodes x 2 ranks, round-robin: rank r on node r % 2. */
static const ring_shape_t ring_2x2_rr = {"ABAB", {0, 2, 1, 3}};
/* 3 nodes of 2 + 2 + 1 ranks, round-robin. */
static const ring_shape_t ring_221_rr = {"ABCAB", {0, 3, 1, 4, 2}};
/* 2 + 2 + 1 scattered. */
static const ring_shape_t ring_221_sc = {"BACBA", {0, 3, 1, 4, 2}};
/* Block placements and one node keep rank order. */
static const ring_shape_t ring_2x2_block = {"AABB", {0, 1, 2, 3}};
static const ring_shape_t ring_one_node  = {"AAAAA", {0, 1, 2, 3, 4}};

ZSH_TEST(ring_order, goes_node_by_node_in_local_rank_order)
{
    zsh_inproc_run(4, ring_order_body, (void *)&ring_2x2_rr);
    zsh_inproc_run(5, ring_order_body, (void *)&ring_221_rr);
    zsh_inproc_run(5, ring_order_body, (void *)&ring_221_sc);
}

ZSH_TEST(ring_order, is_rank_order_on_one_node_and_with_block_placement)
{
    zsh_inproc_run(4, ring_order_body, (void *)&ring_2x2_block);
    zsh_inproc_run(5, ring_order_body, (void *)&ring_one_node);
}

ZSH_TEST(ring_order, rings_match_reference_on_2x2_round_robin)
{
    zsh_inproc_run(4, ring_collectives_body, (void *)&ring_2x2_rr);
}

ZSH_TEST(ring_order, rings_match_reference_on_2_2_1_round_robin)
{
    zsh_inproc_run(5, ring_collectives_body, (void *)&ring_221_rr);
}

ZSH_TEST(ring_order, rings_match_reference_on_2_2_1_scattered)
{
    zsh_inproc_run(5, ring_collectives_body, (void *)&ring_221_sc);
}
