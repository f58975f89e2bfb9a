/*
 * A communicator's node and rail children on made-up nodes of uneven
 * sizes, the smaller node first among them (1 + 2, 1 + 3, 1 + 1 + 2) as
 * well as after (2 + 1, 3 + 1): every rank gets both children, at its
 * place in each, and the collectives forced hierarchical (the broadcast
 * from every root, the barrier; the others give way on uneven nodes) give
 * every rank the right result over them. A split of 2 + 2 that leaves
 * 1 + 2 gets its children the same way.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "comm/comm.h"
#include "comm/context.h"
#include "comm/hier.h"
#include "topo/topo.h"

#include <string.h>

#define HIER_COUNT 3000 /* past ZSH_SMALL_MSG_SIZE's default in int32 */

/* The map of a job whose rank r is on node letter @hosts[r]. */
static zsh_topo_t *hier_fake_map(const char *hosts, int rank)
{
    zsh_topo_id_t ids[8];
    zsh_topo_t *topo = NULL;
    int n = (int)strlen(hosts), i;

    for (i = 0; i < n; i++) {
        memset(&ids[i], 0, sizeof(ids[i]));
        ids[i].host[0] = hosts[i];
        strcpy(ids[i].machine, "boot-1");
        ids[i].numa    = -1;
        ids[i].package = -1;
    }
    if (zsh_topo_create(rank, n, ids, &topo) != ZSH_OK) {
        return NULL;
    }
    return topo;
}

/* Rank r's expected place in its rail: how many earlier nodes have a rank
 * of its local rank. */
static int hier_expected_rail_rank(const zsh_topo_t *t, int *size_p)
{
    int node, rank = 0, size = 0;

    for (node = 0; node < t->nnodes; node++) {
        if (zsh_topo_node_size(t, node) > t->local_rank) {
            rank += (node < t->node);
            size++;
        }
    }
    *size_p = size;
    return rank;
}

/* The collectives over the children, forced hierarchical. */
static void hier_collectives(zsh_comm_t *comm)
{
    int32_t buf[HIER_COUNT], out[HIER_COUNT]; /* per rank thread */
    int n = zsh_comm_size(comm), me = zsh_comm_rank(comm), root, r, i, bad = 0;

    comm->ctx->cfg.broadcast_algo      = ZSH_ALGO_HIER;
    comm->ctx->cfg.barrier_algo        = ZSH_ALGO_HIER;
    comm->ctx->cfg.allreduce_algo      = ZSH_ALGO_HIER;
    comm->ctx->cfg.allgather_algo      = ZSH_ALGO_HIER;
    comm->ctx->cfg.reduce_scatter_algo = ZSH_ALGO_HIER;
    for (root = 0; root < n; root++) {
        for (i = 0; i < HIER_COUNT; i++) {
            buf[i] = (me == root) ? root * 100000 + i : -1;
        }
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_broadcast(buf, HIER_COUNT, ZSH_INT32, root, comm));
        for (i = 0; i < HIER_COUNT; i++) {
            bad += buf[i] != root * 100000 + i;
        }
        ZSH_EXPECT_EQ(0, bad);
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_barrier(comm));
    }
    for (i = 0; i < HIER_COUNT; i++) {
        buf[i] = me + i;
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_allreduce(buf, out, HIER_COUNT, ZSH_INT32, ZSH_SUM, comm));
    for (i = 0; i < HIER_COUNT; i++) {
        bad += out[i] != n * (n - 1) / 2 + n * i;
    }
    ZSH_EXPECT_EQ(0, bad);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_allgather(buf, out, HIER_COUNT / n, ZSH_INT32, comm));
    for (r = 0; r < n; r++) {
        for (i = 0; i < HIER_COUNT / n; i++) {
            bad += out[r * (HIER_COUNT / n) + i] != r + i;
        }
    }
    ZSH_EXPECT_EQ(0, bad);
}

/* Whether every rank says @ok, over a ring: a rank without children would
 * leave the others waiting in their first hierarchical call. */
static int hier_all_ok(zsh_comm_t *comm, int ok)
{
    int saved = comm->ctx->cfg.allreduce_algo, all_ok = 0;

    comm->ctx->cfg.allreduce_algo = ZSH_ALGO_RING;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&ok, &all_ok, 1, ZSH_INT32, ZSH_MIN, comm));
    comm->ctx->cfg.allreduce_algo = saved;
    return all_ok;
}

static void hier_uneven(zsh_comm_t *comm, void *arg)
{
    const char *hosts = arg;
    zsh_topo_t *fake_ctx, *fake, *ctx_topo = comm->ctx->topo, *topo = comm->topo;
    zsh_coll_config_t cfg = comm->ctx->cfg;
    int me = zsh_comm_rank(comm), ok, node_id, rail_id, rail_size = 0, rail_rank;
    uint8_t used[ZSH_MAX_COMMS / 8];
    zsh_status_t status;

    fake_ctx = hier_fake_map(hosts, me);
    fake     = hier_fake_map(hosts, me);
    ZSH_ASSERT_TRUE((fake_ctx != NULL) && (fake != NULL));
    comm->ctx->topo = fake_ctx;
    comm->topo      = fake;
    memcpy(used, comm->ctx->ids_used, sizeof(used));
    node_id = zsh_comm_hier_pick(used, ZSH_COMM_ID_WORLD + 1);
    rail_id = zsh_comm_hier_pick(used, ZSH_COMM_ID_WORLD + 1);
    status  = zsh_comm_hier_create(comm, (uint32_t)node_id, (uint32_t)rail_id);
    ZSH_EXPECT_STATUS(ZSH_OK, status);
    ok = (status == ZSH_OK) && (comm->hier.node != NULL);
    if (ok) {
        rail_rank = hier_expected_rail_rank(fake, &rail_size);
        ZSH_EXPECT_EQ(fake->local_rank, zsh_comm_rank(comm->hier.node));
        ZSH_EXPECT_EQ(fake->local_size, zsh_comm_size(comm->hier.node));
        ZSH_EXPECT_EQ(rail_rank, zsh_comm_rank(comm->hier.rail));
        ZSH_EXPECT_EQ(rail_size, zsh_comm_size(comm->hier.rail));
        ZSH_EXPECT_TRUE(!comm->hier.even);
    }
    if (hier_all_ok(comm, ok)) {
        hier_collectives(comm);
    }
    comm->ctx->cfg = cfg;
    zsh_comm_hier_free(comm);
    comm->ctx->topo = ctx_topo;
    comm->topo      = topo;
    zsh_topo_destroy(fake);
    zsh_topo_destroy(fake_ctx);
}

ZSH_TEST(comm_hier, uneven_nodes_with_the_smaller_node_first_get_every_rank_its_node_and_rail)
{
    zsh_inproc_run(3, hier_uneven, (void *)"abb");
    zsh_inproc_run(4, hier_uneven, (void *)"abbb");
    zsh_inproc_run(4, hier_uneven, (void *)"abcc");
}

ZSH_TEST(comm_hier, uneven_nodes_with_the_larger_node_first_get_every_rank_its_node_and_rail)
{
    zsh_inproc_run(3, hier_uneven, (void *)"aab");
    zsh_inproc_run(4, hier_uneven, (void *)"aaab");
    zsh_inproc_run(4, hier_uneven, (void *)"abaa");
}

/* On 2 + 2 (aabb) rank 1 leaves: the others' child is 1 + 2. */
static void hier_split_uneven(zsh_comm_t *comm, void *arg)
{
    zsh_topo_t *fake_ctx, *fake, *ctx_topo = comm->ctx->topo, *topo = comm->topo;
    zsh_coll_config_t cfg = comm->ctx->cfg;
    int me = zsh_comm_rank(comm), ok;
    zsh_comm_t *child = NULL;
    zsh_status_t status;

    (void)arg;
    fake_ctx = hier_fake_map("aabb", me);
    fake     = hier_fake_map("aabb", me);
    ZSH_ASSERT_TRUE((fake_ctx != NULL) && (fake != NULL));
    comm->ctx->topo = fake_ctx;
    comm->topo      = fake;
    status          = zsh_comm_split(comm, me == 1, me, &child);
    ZSH_EXPECT_STATUS(ZSH_OK, status);
    ok = (status == ZSH_OK);
    if (ok && (me != 1)) {
        ZSH_EXPECT_EQ(2, child->topo->nnodes);
        ZSH_EXPECT_TRUE(child->hier.node != NULL);
        ok = (child->hier.node != NULL);
        if (ok) {
            ZSH_EXPECT_EQ(me == 3, zsh_comm_rank(child->hier.node));
            ZSH_EXPECT_EQ(me == 3 ? 1 : 2, zsh_comm_size(child->hier.rail));
            ZSH_EXPECT_EQ(me == 2, zsh_comm_rank(child->hier.rail));
        }
    }
    if (hier_all_ok(comm, ok) && (me != 1)) {
        hier_collectives(child);
    }
    comm->ctx->cfg = cfg;
    zsh_comm_destroy(child);
    comm->ctx->topo = ctx_topo;
    comm->topo      = topo;
    zsh_topo_destroy(fake);
    zsh_topo_destroy(fake_ctx);
}

ZSH_TEST(comm_hier, a_split_leaving_uneven_nodes_gets_every_rank_its_node_and_rail)
{
    zsh_inproc_run(4, hier_split_uneven, NULL);
}
