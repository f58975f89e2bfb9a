#include "coll/check.h"

#include "core/half.h"
#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zsh_reduce_scatter_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op,
                                    size_t count, bool inplace, const char *algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t blk = count * zsh_dtype_size(dtype);
    char *send = zsh_check_alloc(blk * (size_t)n);
    char *recv = inplace ? send + blk * (size_t)rank : zsh_check_alloc(blk);
    char what[160];

    zsh_check_fill(send, dtype, op, rank, n, 0, count * (size_t)n);
    if (!inplace) {
        memset(recv, 0x5a, blk);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_reduce_scatter(send, recv, count, dtype, op, comm));
    snprintf(what, sizeof(what), "reduce_scatter %s %s %s count=%zu %s", algo,
             zsh_dtype_name(dtype), zsh_op_name(op), count, inplace ? "in place" : "out of place");
    zsh_check_buf(recv, dtype, op, n, -1, count * (size_t)rank, count, what, __FILE__, __LINE__);
    if (!inplace) {
        free(recv);
    }
    free(send);
}

ZSH_RANK_TEST(reduce_scatter, every_algorithm_matches_reference_for_every_dtype_op_and_count)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT,
                                       ZSH_ALGO_EAGER};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    size_t a, d, o, c;
    int inplace;

    cfg->chunk_size = ZSH_CHECK_CHUNK;
    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        cfg->reduce_scatter_algo = algos[a];
        for (d = 0; d < ZSH_CHECK_NDTYPES; d++) {
            for (o = 0; o < ZSH_CHECK_NOPS; o++) {
                if (!zsh_op_supports(zsh_check_ops[o], zsh_check_dtypes[d])) {
                    continue;
                }
                for (c = 0; c < zsh_check_ncounts; c++) {
                    if (!zsh_check_algo_runs(comm, algos[a], zsh_check_counts[c] *
                                             zsh_dtype_size(zsh_check_dtypes[d]) * (size_t)zsh_comm_size(comm))) {
                        continue;
                    }
                    for (inplace = 0; inplace < 2; inplace++) {
                        zsh_reduce_scatter_case(comm, zsh_check_dtypes[d], zsh_check_ops[o],
                                                zsh_check_counts[c], inplace,
                                                zsh_algo_name(algos[a]));
                    }
                }
            }
        }
    }
    *cfg = saved;
}

ZSH_RANK_TEST(reduce_scatter, default_selection_handles_blocks_larger_than_the_chunk_size)
{
    zsh_reduce_scatter_case(comm, ZSH_FLOAT32, ZSH_SUM, 70001, false, "auto");
    zsh_reduce_scatter_case(comm, ZSH_BFLOAT16, ZSH_AVG, 140003, true, "auto");
}

/* Rank 0 gives 2048 and the others 1: in fp32 the sum is exact and rounds
 * once to fp16, while adding in fp16 one step at a time would stay at 2048. */
ZSH_RANK_TEST(reduce_scatter, fp16_accumulates_in_fp32_and_rounds_once)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT,
                                       ZSH_ALGO_EAGER};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), i;
    uint16_t *send = zsh_check_alloc(sizeof(uint16_t) * (size_t)n), recv;
    uint16_t expected = zsh_float_to_fp16(2048.0f + (float)(n - 1));
    size_t a;

    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        if (!zsh_check_algo_runs(comm, algos[a], sizeof(uint16_t) * (size_t)n)) {
            continue;
        }
        cfg->reduce_scatter_algo = algos[a];
        for (i = 0; i < n; i++) {
            send[i] = zsh_float_to_fp16((rank == 0) ? 2048.0f : 1.0f);
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_reduce_scatter(send, &recv, 1, ZSH_FLOAT16, ZSH_SUM, comm));
        if (recv != expected) {
            zsh_test_fail(__FILE__, __LINE__, "%s: expected fp16 %g, actual %g",
                          zsh_algo_name(algos[a]), zsh_fp16_to_float(expected),
                          zsh_fp16_to_float(recv));
        }
    }
    *cfg = saved;
    free(send);
}
