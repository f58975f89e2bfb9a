#include "coll/check.h"

#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Data movement uses the MIN inputs: distinct per rank, exact in every dtype. */
static void zsh_allgather_case(zsh_comm_t *comm, zsh_dtype_t dtype, size_t count, bool inplace,
                               const char *algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k;
    size_t blk = count * zsh_dtype_size(dtype);
    char *recv = zsh_check_alloc(blk * (size_t)n);
    char *send = inplace ? recv + blk * (size_t)rank : zsh_check_alloc(blk);
    char what[160];

    memset(recv, 0x5a, blk * (size_t)n);
    zsh_check_fill(send, dtype, ZSH_MIN, rank, n, 0, count);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(send, recv, count, dtype, comm));
    for (k = 0; k < n; k++) {
        snprintf(what, sizeof(what), "allgather %s %s count=%zu %s: block of rank %d", algo,
                 zsh_dtype_name(dtype), count, inplace ? "in place" : "out of place", k);
        if (!zsh_check_buf(recv + blk * (size_t)k, dtype, ZSH_MIN, n, k, 0, count, what,
                           __FILE__, __LINE__)) {
            break;
        }
    }
    if (!inplace) {
        free(send);
    }
    free(recv);
}

ZSH_RANK_TEST(allgather, every_algorithm_matches_reference_for_every_dtype_and_count)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_RING, ZSH_ALGO_BRUCK, ZSH_ALGO_RMA,
                                       ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    size_t a, d, c;
    int inplace;

    cfg->chunk_size = ZSH_CHECK_CHUNK;
    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        cfg->allgather_algo = algos[a];
        for (d = 0; d < ZSH_CHECK_NDTYPES; d++) {
            for (c = 0; c < zsh_check_ncounts; c++) {
                if (!zsh_check_algo_runs(comm, algos[a], zsh_check_counts[c] *
                                         zsh_dtype_size(zsh_check_dtypes[d]) *
                                         (size_t)zsh_comm_size(comm))) {
                    continue;
                }
                for (inplace = 0; inplace < 2; inplace++) {
                    zsh_allgather_case(comm, zsh_check_dtypes[d], zsh_check_counts[c], inplace,
                                       zsh_algo_name(algos[a]));
                }
            }
        }
    }
    *cfg = saved;
}

ZSH_RANK_TEST(allgather, default_selection_handles_blocks_larger_than_the_chunk_size)
{
    /* 70001 fp32 per rank is 280 KB, above the default 256 KiB chunk. */
    zsh_allgather_case(comm, ZSH_FLOAT32, 70001, false, "auto");
    zsh_allgather_case(comm, ZSH_UINT8, 3, true, "auto");
}
