/*
 * The selection rule on made-up communicators: across even nodes (a
 * communicator with node and rail children) the automatic choice is the
 * hierarchical algorithm for every collective past ZSH_SMALL_MSG_SIZE,
 * and the eager and log-latency ones up to it; the barrier is the
 * descriptor exchange alone (eager) on up to 8 ranks, above that hier
 * across nodes and dissemination elsewhere;
 * without children (one node, one rank per node) it is the node-ordered
 * ring and binomial; across uneven nodes the broadcast is hierarchical and
 * the others keep the ring; an override of hier where there are no
 * children, or for an all-gather across uneven nodes, gives way to the
 * automatic choice, hier forced for the barrier across even and uneven
 * nodes runs, and an algorithm the barrier lacks is refused by name.
 */
#include "harness/zsh_test.h"

#include "api/config.h"
#include "comm/context.h"
#include "select/select.h"

#include <string.h>

typedef struct {
    zsh_ctx_t  ctx;
    zsh_comm_t comm, child;
} select_fixture_t;

/* @size ranks, with children (across even nodes) or without; no shared
 * memory or cross-memory attach between them, as across nodes. */
static void select_setup(select_fixture_t *f, int size, bool children)
{
    memset(f, 0, sizeof(*f));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_coll_config_read(&f->ctx.cfg));
    f->ctx.cfg.allgather_algo      = ZSH_ALGO_AUTO;
    f->ctx.cfg.reduce_scatter_algo = ZSH_ALGO_AUTO;
    f->ctx.cfg.allreduce_algo      = ZSH_ALGO_AUTO;
    f->ctx.cfg.broadcast_algo      = ZSH_ALGO_AUTO;
    f->ctx.cfg.barrier_algo        = ZSH_ALGO_AUTO;
    f->ctx.cfg.small_msg_size      = 16 * 1024;
    f->comm.ctx                    = &f->ctx;
    f->comm.size                   = size;
    f->comm.hier.node              = children ? &f->child : NULL;
    f->comm.hier.rail              = children ? &f->child : NULL;
    f->comm.hier.even              = children;
}

static zsh_algo_t select_pick(select_fixture_t *f, zsh_coll_type_t type, size_t bytes)
{
    zsh_algo_t algo = ZSH_ALGO_LAST;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_select(&f->comm, type, bytes, &algo));
    return algo;
}

ZSH_TEST(select, auto_chooses_hier_across_even_nodes_for_every_collective_past_the_small_sizes)
{
    static select_fixture_t f;
    size_t sizes[] = {16 * 1024 + 1, 64 * 1024, 1 << 20, 64u << 20};
    size_t i;

    select_setup(&f, 4, true);
    for (i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_ALLGATHER, sizes[i]));
        ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_REDUCE_SCATTER, sizes[i]));
        ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_ALLREDUCE, sizes[i]));
        ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_BROADCAST, sizes[i]));
    }
}

ZSH_TEST(select, across_even_nodes_latency_bound_calls_keep_the_eager_and_log_latency_algorithms)
{
    static select_fixture_t f;

    select_setup(&f, 4, true);
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_ALLREDUCE, 8));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_ALLGATHER, 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_BRUCK, select_pick(&f, ZSH_COLL_ALLGATHER, 16 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_RD, select_pick(&f, ZSH_COLL_REDUCE_SCATTER, 8 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_RD, select_pick(&f, ZSH_COLL_ALLREDUCE, 16 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_BINOMIAL, select_pick(&f, ZSH_COLL_BROADCAST, 16 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_BARRIER, 0));
    f.ctx.cfg.small_msg_size = 0; /* log-latency algorithms never */
    ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_ALLGATHER, 16 * 1024));
}

ZSH_TEST(select, without_node_children_auto_keeps_the_flat_algorithms)
{
    static select_fixture_t f;

    select_setup(&f, 4, false);
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLGATHER, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_REDUCE_SCATTER, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLREDUCE, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_RD, select_pick(&f, ZSH_COLL_ALLREDUCE, 16 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_BRUCK, select_pick(&f, ZSH_COLL_ALLGATHER, 8 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_BINOMIAL, select_pick(&f, ZSH_COLL_BROADCAST, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_BARRIER, 0));
}

ZSH_TEST(select, across_uneven_nodes_the_broadcast_is_hier_and_the_others_keep_the_ring)
{
    static select_fixture_t f;

    select_setup(&f, 4, true);
    f.comm.hier.even = false; /* 3 + 1, say */
    ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_BROADCAST, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_BINOMIAL, select_pick(&f, ZSH_COLL_BROADCAST, 16 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLGATHER, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_REDUCE_SCATTER, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLREDUCE, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_BARRIER, 0));

    f.ctx.cfg.allgather_algo = ZSH_ALGO_HIER; /* gives way: a rail misses the small node */
    f.ctx.cfg.allreduce_algo = ZSH_ALGO_HIER;
    f.ctx.cfg.barrier_algo   = ZSH_ALGO_HIER; /* runs: the leaders' rail spans every node */
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLGATHER, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_RD, select_pick(&f, ZSH_COLL_ALLREDUCE, 16 * 1024));
    ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_BARRIER, 0));
}

ZSH_TEST(select, barrier_is_the_descriptor_exchange_on_up_to_8_ranks_then_hier_across_nodes_else_dissemination)
{
    static select_fixture_t f;

    select_setup(&f, 2, false);
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_BARRIER, 0));
    select_setup(&f, 8, true);
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_BARRIER, 0));
    select_setup(&f, 9, false);
    ZSH_EXPECT_EQ(ZSH_ALGO_DISSEMINATION, select_pick(&f, ZSH_COLL_BARRIER, 0));
    select_setup(&f, 16, true);
    ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_BARRIER, 0));
    f.comm.hier.even = false; /* 9 + 7, say: the leaders' rail still spans every node */
    ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_BARRIER, 0));
    f.comm.hier.even = true;
    f.ctx.cfg.barrier_algo = ZSH_ALGO_EAGER; /* forced past 8 ranks: refused by name */
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_select(&f.comm, ZSH_COLL_BARRIER, 0,
                                                      &(zsh_algo_t){ZSH_ALGO_AUTO}));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_BARRIER_ALGO=eager needs 2 to 8 ranks");
}

ZSH_TEST(select, hier_forced_without_children_gives_way_and_forced_across_even_nodes_runs)
{
    static select_fixture_t f;

    select_setup(&f, 4, false);
    f.ctx.cfg.allgather_algo = ZSH_ALGO_HIER;
    f.ctx.cfg.barrier_algo   = ZSH_ALGO_HIER;
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLGATHER, 1 << 20));
    ZSH_EXPECT_EQ(ZSH_ALGO_EAGER, select_pick(&f, ZSH_COLL_BARRIER, 0));

    select_setup(&f, 4, true);
    f.ctx.cfg.barrier_algo   = ZSH_ALGO_HIER;
    f.ctx.cfg.allgather_algo = ZSH_ALGO_RING;
    ZSH_EXPECT_EQ(ZSH_ALGO_HIER, select_pick(&f, ZSH_COLL_BARRIER, 0));
    ZSH_EXPECT_EQ(ZSH_ALGO_RING, select_pick(&f, ZSH_COLL_ALLGATHER, 1 << 20));
}

ZSH_TEST(select, barrier_algorithm_of_another_collective_is_refused_by_name)
{
    static select_fixture_t f;

    select_setup(&f, 4, true);
    f.ctx.cfg.barrier_algo = ZSH_ALGO_RING;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_select_check_config(&f.ctx.cfg));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_BARRIER_ALGO=ring");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "auto, eager, hier or dissemination");
}
