/*
 * A transport that fills only the required part of tl.h (no one-sided
 * access, no node-local shortcuts) runs every collective: the collective
 * layer does without the optional groups, so a second transport fits
 * without it changing. Here, the UCX transport's table with both groups
 * left out.
 */
#include "coll/check.h"
#include "harness/inproc.h"

#include "api/comm.h"
#include "api/config.h"
#include "tl.h"

#include <stdlib.h>
#include <string.h>

static zsh_status_t zsh_required_init(const zsh_oob_t *oob, void *arg, zsh_comm_t **comm_p)
{
    zsh_coll_config_t cfg;
    zsh_status_t status;

    status = zsh_coll_config_read(&cfg);
    return (status == ZSH_OK) ? zsh_comm_init_with(oob, &cfg, arg, NULL, comm_p) : status;
}

/* Every collective on @comm for @count fp32 per rank, against the exact
 * reference. */
static void zsh_required_collectives(zsh_comm_t *comm, size_t count)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t total = count * (size_t)n;
    float *send  = zsh_check_alloc(total * sizeof(float));
    float *recv  = zsh_check_alloc(total * sizeof(float));
    int r;

    zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, (size_t)rank * count, count);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(send, recv, count, ZSH_FLOAT32, comm));
    for (r = 0; r < n; r++) {
        zsh_check_buf(recv + (size_t)r * count, ZSH_FLOAT32, ZSH_SUM, n, r, (size_t)r * count,
                      count, "allgather", __FILE__, __LINE__);
    }
    zsh_check_fill(send, ZSH_FLOAT32, ZSH_SUM, rank, n, 0, total);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_reduce_scatter(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm));
    zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, (size_t)rank * count, count,
                  "reduce_scatter", __FILE__, __LINE__);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, total, ZSH_FLOAT32, ZSH_SUM, comm));
    zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, -1, 0, total, "allreduce", __FILE__, __LINE__);
    zsh_check_fill(recv, ZSH_FLOAT32, ZSH_SUM, 0, n, 0, count);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_broadcast(recv, count, ZSH_FLOAT32, 0, comm));
    zsh_check_buf(recv, ZSH_FLOAT32, ZSH_SUM, n, 0, 0, count, "broadcast", __FILE__, __LINE__);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
    free(recv);
    free(send);
}

static void zsh_required_body(zsh_comm_t *comm, void *arg)
{
    static const size_t counts[] = {1, 7, 1031, 70001};
    zsh_coll_config_t saved = *zsh_check_cfg(comm);
    float send[1] = {1}, recv[8];
    zsh_comm_t *half;
    size_t c;

    (void)arg;
    ZSH_EXPECT_TRUE(!comm->local.direct && !comm->local.box && !comm->local.board);
    for (c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
        zsh_required_collectives(comm, counts[c]);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, zsh_comm_rank(comm) % 2, 0, &half));
    zsh_required_collectives(half, 61);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(half));
    if (zsh_comm_size(comm) > 1) {
        /* What needs an optional group is refused, by name, and loses nothing. */
        zsh_check_cfg(comm)->allgather_algo = ZSH_ALGO_RMA;
        ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_allgather(send, recv, 1, ZSH_FLOAT32, comm));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_ALLGATHER_ALGO=rma needs one-sided");
        zsh_check_cfg(comm)->allgather_algo = ZSH_ALGO_DIRECT;
        ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_allgather(send, recv, 1, ZSH_FLOAT32, comm));
        *zsh_check_cfg(comm) = saved;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_barrier(comm));
    }
}

ZSH_TEST(transport, a_transport_with_only_the_required_part_runs_every_collective)
{
    static const int nranks[] = {1, 2, 3, 5};
    zsh_tl_ops_t required = zsh_tl_ucx_ops;
    size_t i;

    required.rma   = NULL;
    required.local = NULL;
    for (i = 0; i < sizeof(nranks) / sizeof(nranks[0]); i++) {
        zsh_inproc_run_with(nranks[i], zsh_required_init, &required, zsh_required_body, NULL);
    }
}
