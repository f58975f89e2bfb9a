#include "coll/check.h"

#include "core/half.h"
#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zsh_allreduce_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                               bool inplace, const char *algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t bytes = count * zsh_dtype_size(dtype);
    char *send   = zsh_check_alloc(bytes);
    char *recv   = inplace ? send : zsh_check_alloc(bytes);
    char what[160];

    zsh_check_fill(send, dtype, op, rank, n, 0, count);
    if (!inplace) {
        memset(recv, 0x5a, bytes);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, count, dtype, op, comm));
    snprintf(what, sizeof(what), "allreduce %s %s %s count=%zu %s", algo, zsh_dtype_name(dtype),
             zsh_op_name(op), count, inplace ? "in place" : "out of place");
    zsh_check_buf(recv, dtype, op, n, -1, 0, count, what, __FILE__, __LINE__);
    if (!inplace) {
        free(recv);
    }
    free(send);
}

ZSH_RANK_TEST(allreduce, every_algorithm_matches_reference_for_every_dtype_op_and_count)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT,
                                       ZSH_ALGO_EAGER};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    size_t a, d, o, c;
    int inplace;

    cfg->chunk_size = ZSH_CHECK_CHUNK;
    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        cfg->allreduce_algo = algos[a];
        for (d = 0; d < ZSH_CHECK_NDTYPES; d++) {
            for (o = 0; o < ZSH_CHECK_NOPS; o++) {
                if (!zsh_op_supports(zsh_check_ops[o], zsh_check_dtypes[d])) {
                    continue;
                }
                for (c = 0; c < zsh_check_ncounts; c++) {
                    if (!zsh_check_algo_runs(comm, algos[a], zsh_check_counts[c] *
                                             zsh_dtype_size(zsh_check_dtypes[d]) * 1)) {
                        continue;
                    }
                    for (inplace = 0; inplace < 2; inplace++) {
                        zsh_allreduce_case(comm, zsh_check_dtypes[d], zsh_check_ops[o],
                                           zsh_check_counts[c], inplace, zsh_algo_name(algos[a]));
                    }
                }
            }
        }
    }
    *cfg = saved;
}

ZSH_RANK_TEST(allreduce, default_selection_handles_vectors_larger_than_the_chunk_size)
{
    zsh_allreduce_case(comm, ZSH_FLOAT32, ZSH_SUM, 300007, false, "auto");
    zsh_allreduce_case(comm, ZSH_FLOAT64, ZSH_MAX, 70001, true, "auto");
    zsh_allreduce_case(comm, ZSH_INT8, ZSH_PROD, 3, true, "auto");
}

ZSH_RANK_TEST(allreduce, fp16_and_bf16_accumulate_in_fp32_and_round_once)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT,
                                       ZSH_ALGO_EAGER};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    uint16_t send[2], recv[2];
    size_t a;

    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        if (!zsh_check_algo_runs(comm, algos[a], sizeof(send))) {
            continue;
        }
        cfg->allreduce_algo = algos[a];
        send[0] = zsh_float_to_fp16((rank == 0) ? 2048.0f : 1.0f);
        send[1] = zsh_float_to_fp16((rank == 0) ? 2048.0f : 1.0f);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, 2, ZSH_FLOAT16, ZSH_SUM, comm));
        ZSH_EXPECT_EQ(zsh_float_to_fp16(2048.0f + (float)(n - 1)), recv[0]);
        send[0] = zsh_float_to_bf16((rank == 0) ? 256.0f : 1.0f);
        send[1] = send[0];
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, 2, ZSH_BFLOAT16, ZSH_SUM, comm));
        ZSH_EXPECT_EQ(zsh_float_to_bf16(256.0f + (float)(n - 1)), recv[1]);
    }
    *cfg = saved;
}

/* ZeRO relies on every rank holding the same bits after an all-reduce,
 * whichever algorithm ran. */
ZSH_RANK_TEST(allreduce, every_rank_gets_bitwise_identical_float_results)
{
    static const zsh_algo_t algos[] = {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT,
                                       ZSH_ALGO_EAGER};
    zsh_coll_config_t *cfg  = zsh_check_cfg(comm);
    zsh_coll_config_t saved = *cfg;
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), r;
    size_t count = 4099, i, a;
    float *send  = zsh_check_alloc(count * sizeof(float));
    float *recv  = zsh_check_alloc(count * sizeof(float));
    float *all   = zsh_check_alloc(count * sizeof(float) * (size_t)n);
    uint32_t seed = 12345u + 7919u * (uint32_t)rank;

    for (i = 0; i < count; i++) {
        seed    = seed * 1664525u + 1013904223u;
        send[i] = (float)(seed >> 8) / 16777216.0f - 0.5f; /* not exact: order matters */
    }
    cfg->chunk_size = ZSH_CHECK_CHUNK;
    for (a = 0; a < sizeof(algos) / sizeof(algos[0]); a++) {
        /* The eager algorithm takes at most 4 KiB. */
        size_t cnt = (algos[a] == ZSH_ALGO_EAGER) ? 1000 : count;

        if (!zsh_check_algo_runs(comm, algos[a], cnt * sizeof(float))) {
            continue;
        }
        cfg->allreduce_algo = algos[a];
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, cnt, ZSH_FLOAT32, ZSH_SUM, comm));
        cfg->allgather_algo = ZSH_ALGO_RING;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(recv, all, cnt, ZSH_FLOAT32, comm));
        cfg->allgather_algo = saved.allgather_algo;
        for (r = 0; r < n; r++) {
            if (memcmp(all + (size_t)r * cnt, recv, cnt * sizeof(float)) != 0) {
                zsh_test_fail(__FILE__, __LINE__, "%s: rank %d's all-reduce result differs "
                              "from ours", zsh_algo_name(algos[a]), r);
                break;
            }
        }
    }
    *cfg = saved;
    free(all);
    free(recv);
    free(send);
}
