#include "coll/check.h"

#include "core/dtype.h"
#include "core/half.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A zsh_check_case_t (check.h). */
void zsh_reduce_scatter_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op,
                             size_t count, bool inplace, zsh_algo_t algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t blk = count * zsh_dtype_size(dtype);
    char *send = zsh_check_alloc(blk * (size_t)n);
    char *recv = inplace ? send + blk * (size_t)rank : zsh_check_alloc(blk);
    char what[160];
    zsh_check_call_t call;

    zsh_check_fill(send, dtype, op, rank, n, 0, count * (size_t)n);
    if (!inplace) {
        memset(recv, 0x5a, blk);
    }
    snprintf(what, sizeof(what), "reduce_scatter %s %s %s count=%zu %s", zsh_algo_name(algo),
             zsh_dtype_name(dtype), zsh_op_name(op), count, inplace ? "in place" : "out of place");
    zsh_check_call_begin(&call, comm, algo, blk * (size_t)n, recv, blk);
    if (zsh_check_call_end(&call, zsh_reduce_scatter(send, recv, count, dtype, op, comm), what,
                           __FILE__, __LINE__)) {
        zsh_check_buf(recv, dtype, op, n, -1, count * (size_t)rank, count, what, __FILE__,
                      __LINE__);
    }
    if (!inplace) {
        free(recv);
    }
    free(send);
}

ZSH_RANK_TEST(reduce_scatter, ring_matches_reference_for_every_dtype_op_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_REDUCE_SCATTER, ZSH_ALGO_RING, zsh_reduce_scatter_case);
}

ZSH_RANK_TEST(reduce_scatter, rd_matches_reference_for_every_dtype_op_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_REDUCE_SCATTER, ZSH_ALGO_RD, zsh_reduce_scatter_case);
}

ZSH_RANK_TEST(reduce_scatter, direct_matches_reference_for_every_dtype_op_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_REDUCE_SCATTER, ZSH_ALGO_DIRECT, zsh_reduce_scatter_case);
}

/* Counts past what an eager call may move are refused, recvbuf untouched. */
ZSH_RANK_TEST(reduce_scatter, eager_matches_reference_where_it_fits_and_refuses_larger_calls)
{
    zsh_check_matrix(comm, ZSH_COLL_REDUCE_SCATTER, ZSH_ALGO_EAGER, zsh_reduce_scatter_case);
}

ZSH_RANK_TEST(reduce_scatter, default_selection_handles_blocks_larger_than_the_chunk_size)
{
    zsh_reduce_scatter_case(comm, ZSH_FLOAT32, ZSH_SUM, 70001, false, ZSH_ALGO_AUTO);
    zsh_reduce_scatter_case(comm, ZSH_BFLOAT16, ZSH_AVG, 140003, true, ZSH_ALGO_AUTO);
}

/* Rank 0 gives 2048 and the others 1: in fp32 the sum is exact and rounds
 * once to fp16, while adding in fp16 one step at a time would stay at 2048. */
static void zsh_reduce_scatter_fp16_rounds_once(zsh_comm_t *comm, zsh_algo_t algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), i;
    uint16_t expected = zsh_float_to_fp16(2048.0f + (float)(n - 1)), recv, *send;
    zsh_coll_config_t saved;
    const char *why;

    why = zsh_check_force(comm, ZSH_COLL_REDUCE_SCATTER, algo, &saved);
    if (why != NULL) {
        ZSH_SKIP(why);
    }
    send = zsh_check_alloc(sizeof(uint16_t) * (size_t)n);
    for (i = 0; i < n; i++) {
        send[i] = zsh_float_to_fp16((rank == 0) ? 2048.0f : 1.0f);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_reduce_scatter(send, &recv, 1, ZSH_FLOAT16, ZSH_SUM, comm));
    if (recv != expected) {
        zsh_test_fail(__FILE__, __LINE__, "%s: expected fp16 %g, actual %g", zsh_algo_name(algo),
                      zsh_fp16_to_float(expected), zsh_fp16_to_float(recv));
    }
    zsh_check_restore(comm, &saved);
    free(send);
}

ZSH_RANK_TEST(reduce_scatter, ring_accumulates_fp16_in_fp32_and_rounds_once)
{
    zsh_reduce_scatter_fp16_rounds_once(comm, ZSH_ALGO_RING);
}

ZSH_RANK_TEST(reduce_scatter, rd_accumulates_fp16_in_fp32_and_rounds_once)
{
    zsh_reduce_scatter_fp16_rounds_once(comm, ZSH_ALGO_RD);
}

ZSH_RANK_TEST(reduce_scatter, direct_accumulates_fp16_in_fp32_and_rounds_once)
{
    zsh_reduce_scatter_fp16_rounds_once(comm, ZSH_ALGO_DIRECT);
}

ZSH_RANK_TEST(reduce_scatter, eager_accumulates_fp16_in_fp32_and_rounds_once)
{
    zsh_reduce_scatter_fp16_rounds_once(comm, ZSH_ALGO_EAGER);
}
