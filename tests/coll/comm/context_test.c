/*
 * What a job context derives from the topology: the node map seen from
 * every rank, how long waiters spin, and the streaming threshold.
 */
#include "harness/zsh_test.h"

#include "comm/comm.h"
#include "comm/context.h"
#include "topo/topo.h"

#include <stdint.h>

ZSH_RANK_TEST(context, every_rank_of_a_one_host_job_is_on_the_same_node)
{
    const zsh_ctx_t *ctx = comm->ctx;

    ZSH_EXPECT_EQ(1, ctx->topo->nnodes);
    ZSH_EXPECT_EQ(zsh_comm_size(comm), ctx->topo->local_size);
    ZSH_EXPECT_EQ(zsh_comm_rank(comm), ctx->topo->local_rank);
    /* Ranks that outnumber the processors give their core away at once. */
    ZSH_EXPECT_EQ((ctx->topo->local_size > ctx->topo->node_cpus) ? 0 : ctx->cfg.spin_count,
                  ctx->spin_count);
}

ZSH_RANK_TEST(context, automatic_stream_threshold_is_this_cores_private_cache)
{
    const zsh_ctx_t *ctx = comm->ctx;
    size_t bytes;

    if (ctx->cfg.stream_min_size != ZSH_CONFIG_AUTO_SIZE) {
        ZSH_EXPECT_EQ(ctx->cfg.stream_min_size, ctx->stream_min);
        ZSH_SKIP("ZSH_STREAM_MIN_SIZE is set");
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_private_cache(NULL, &bytes));
    ZSH_EXPECT_EQ(bytes, ctx->topo->private_cache);
    ZSH_EXPECT_EQ((bytes > 0) ? bytes : SIZE_MAX, ctx->stream_min);
}
