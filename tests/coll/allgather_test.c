#include "coll/check.h"

#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A zsh_check_case_t (check.h). Data movement uses the MIN inputs:
 * distinct per rank, exact in every dtype. */
void zsh_allgather_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                        bool inplace, zsh_algo_t algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k;
    size_t blk = count * zsh_dtype_size(dtype);
    char *recv = zsh_check_alloc(blk * (size_t)n);
    char *send = inplace ? recv + blk * (size_t)rank : zsh_check_alloc(blk);
    char what[160], block[200];
    zsh_check_call_t call;

    memset(recv, 0x5a, blk * (size_t)n);
    zsh_check_fill(send, dtype, op, rank, n, 0, count);
    snprintf(what, sizeof(what), "allgather %s %s count=%zu %s", zsh_algo_name(algo),
             zsh_dtype_name(dtype), count, inplace ? "in place" : "out of place");
    zsh_check_call_begin(&call, comm, algo, blk * (size_t)n, recv, blk * (size_t)n);
    if (zsh_check_call_end(&call, zsh_allgather(send, recv, count, dtype, comm), what, __FILE__,
                           __LINE__)) {
        for (k = 0; k < n; k++) {
            snprintf(block, sizeof(block), "%s: block of rank %d", what, k);
            if (!zsh_check_buf(recv + blk * (size_t)k, dtype, op, n, k, 0, count, block,
                               __FILE__, __LINE__)) {
                break;
            }
        }
    }
    if (!inplace) {
        free(send);
    }
    free(recv);
}

ZSH_RANK_TEST(allgather, ring_matches_reference_for_every_dtype_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLGATHER, ZSH_ALGO_RING, zsh_allgather_case);
}

ZSH_RANK_TEST(allgather, bruck_matches_reference_for_every_dtype_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLGATHER, ZSH_ALGO_BRUCK, zsh_allgather_case);
}

ZSH_RANK_TEST(allgather, rma_matches_reference_for_every_dtype_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLGATHER, ZSH_ALGO_RMA, zsh_allgather_case);
}

ZSH_RANK_TEST(allgather, direct_matches_reference_for_every_dtype_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLGATHER, ZSH_ALGO_DIRECT, zsh_allgather_case);
}

/* Counts past what an eager call may move are refused, recvbuf untouched. */
ZSH_RANK_TEST(allgather, eager_matches_reference_where_it_fits_and_refuses_larger_calls)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLGATHER, ZSH_ALGO_EAGER, zsh_allgather_case);
}

ZSH_RANK_TEST(allgather, default_selection_handles_blocks_larger_than_the_chunk_size)
{
    /* 70001 fp32 per rank is 280 KB, above the default 256 KiB chunk. */
    zsh_allgather_case(comm, ZSH_FLOAT32, ZSH_MIN, 70001, false, ZSH_ALGO_AUTO);
    zsh_allgather_case(comm, ZSH_UINT8, ZSH_MIN, 3, true, ZSH_ALGO_AUTO);
}
