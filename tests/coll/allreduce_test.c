#include "coll/check.h"

#include "core/dtype.h"
#include "core/half.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A zsh_check_case_t (check.h). */
void zsh_allreduce_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                        bool inplace, zsh_algo_t algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t bytes = count * zsh_dtype_size(dtype);
    char *send   = zsh_check_alloc(bytes);
    char *recv   = inplace ? send : zsh_check_alloc(bytes);
    char what[160];
    zsh_check_call_t call;

    zsh_check_fill(send, dtype, op, rank, n, 0, count);
    if (!inplace) {
        memset(recv, 0x5a, bytes);
    }
    snprintf(what, sizeof(what), "allreduce %s %s %s count=%zu %s", zsh_algo_name(algo),
             zsh_dtype_name(dtype), zsh_op_name(op), count, inplace ? "in place" : "out of place");
    zsh_check_call_begin(&call, comm, algo, bytes, recv, bytes);
    if (zsh_check_call_end(&call, zsh_allreduce(send, recv, count, dtype, op, comm), what,
                           __FILE__, __LINE__)) {
        zsh_check_buf(recv, dtype, op, n, -1, 0, count, what, __FILE__, __LINE__);
    }
    if (!inplace) {
        free(recv);
    }
    free(send);
}

ZSH_RANK_TEST(allreduce, ring_matches_reference_for_every_dtype_op_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLREDUCE, ZSH_ALGO_RING, zsh_allreduce_case);
}

ZSH_RANK_TEST(allreduce, rd_matches_reference_for_every_dtype_op_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLREDUCE, ZSH_ALGO_RD, zsh_allreduce_case);
}

ZSH_RANK_TEST(allreduce, direct_matches_reference_for_every_dtype_op_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLREDUCE, ZSH_ALGO_DIRECT, zsh_allreduce_case);
}

/* Counts past what an eager call may move are refused, recvbuf untouched. */
ZSH_RANK_TEST(allreduce, eager_matches_reference_where_it_fits_and_refuses_larger_calls)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLREDUCE, ZSH_ALGO_EAGER, zsh_allreduce_case);
}

ZSH_RANK_TEST(allreduce, default_selection_handles_vectors_larger_than_the_chunk_size)
{
    zsh_allreduce_case(comm, ZSH_FLOAT32, ZSH_SUM, 300007, false, ZSH_ALGO_AUTO);
    zsh_allreduce_case(comm, ZSH_FLOAT64, ZSH_MAX, 70001, true, ZSH_ALGO_AUTO);
    zsh_allreduce_case(comm, ZSH_INT8, ZSH_PROD, 3, true, ZSH_ALGO_AUTO);
}

/* Rank 0 gives 2048 (fp16) or 256 (bf16) and the others 1: exact in fp32,
 * rounded once, where adding one step at a time would stay put. */
static void zsh_allreduce_halves_round_once(zsh_comm_t *comm, zsh_algo_t algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    uint16_t send[2], recv[2];
    zsh_coll_config_t saved;
    const char *why;

    why = zsh_check_force(comm, ZSH_COLL_ALLREDUCE, algo, &saved);
    if (why != NULL) {
        ZSH_SKIP(why);
    }
    send[0] = zsh_float_to_fp16((rank == 0) ? 2048.0f : 1.0f);
    send[1] = send[0];
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, 2, ZSH_FLOAT16, ZSH_SUM, comm));
    ZSH_EXPECT_EQ(zsh_float_to_fp16(2048.0f + (float)(n - 1)), recv[0]);
    send[0] = zsh_float_to_bf16((rank == 0) ? 256.0f : 1.0f);
    send[1] = send[0];
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, 2, ZSH_BFLOAT16, ZSH_SUM, comm));
    ZSH_EXPECT_EQ(zsh_float_to_bf16(256.0f + (float)(n - 1)), recv[1]);
    zsh_check_restore(comm, &saved);
}

ZSH_RANK_TEST(allreduce, ring_accumulates_fp16_and_bf16_in_fp32_and_rounds_once)
{
    zsh_allreduce_halves_round_once(comm, ZSH_ALGO_RING);
}

ZSH_RANK_TEST(allreduce, rd_accumulates_fp16_and_bf16_in_fp32_and_rounds_once)
{
    zsh_allreduce_halves_round_once(comm, ZSH_ALGO_RD);
}

ZSH_RANK_TEST(allreduce, direct_accumulates_fp16_and_bf16_in_fp32_and_rounds_once)
{
    zsh_allreduce_halves_round_once(comm, ZSH_ALGO_DIRECT);
}

ZSH_RANK_TEST(allreduce, eager_accumulates_fp16_and_bf16_in_fp32_and_rounds_once)
{
    zsh_allreduce_halves_round_once(comm, ZSH_ALGO_EAGER);
}

/* ZeRO relies on every rank holding the same bits after an all-reduce,
 * whichever algorithm ran: @count floats whose sum depends on its order
 * (check.h). */
void zsh_allreduce_bitwise(zsh_comm_t *comm, zsh_algo_t algo, size_t count)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), r;
    uint32_t seed = 12345u + 7919u * (uint32_t)rank;
    zsh_coll_config_t saved;
    float *send, *recv, *all;
    const char *why;
    size_t i;

    why = zsh_check_force(comm, ZSH_COLL_ALLREDUCE, algo, &saved);
    if (why != NULL) {
        ZSH_SKIP(why);
    }
    send = zsh_check_alloc(count * sizeof(float));
    recv = zsh_check_alloc(count * sizeof(float));
    all  = zsh_check_alloc(count * sizeof(float) * (size_t)n);
    for (i = 0; i < count; i++) {
        seed    = seed * 1664525u + 1013904223u;
        send[i] = (float)(seed >> 8) / 16777216.0f - 0.5f; /* not exact: order matters */
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(send, recv, count, ZSH_FLOAT32, ZSH_SUM, comm));
    zsh_check_cfg(comm)->allgather_algo = ZSH_ALGO_RING;
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allgather(recv, all, count, ZSH_FLOAT32, comm));
    for (r = 0; r < n; r++) {
        if (memcmp(all + (size_t)r * count, recv, count * sizeof(float)) != 0) {
            zsh_test_fail(__FILE__, __LINE__, "%s: rank %d's all-reduce result differs "
                          "from ours", zsh_algo_name(algo), r);
            break;
        }
    }
    zsh_check_restore(comm, &saved);
    free(all);
    free(recv);
    free(send);
}

ZSH_RANK_TEST(allreduce, ring_gives_every_rank_bitwise_identical_float_results)
{
    zsh_allreduce_bitwise(comm, ZSH_ALGO_RING, 4099);
}

ZSH_RANK_TEST(allreduce, rd_gives_every_rank_bitwise_identical_float_results)
{
    zsh_allreduce_bitwise(comm, ZSH_ALGO_RD, 4099);
}

ZSH_RANK_TEST(allreduce, direct_gives_every_rank_bitwise_identical_float_results)
{
    zsh_allreduce_bitwise(comm, ZSH_ALGO_DIRECT, 4099);
}

/* 1000 floats: within the 4 KiB an eager call takes without boards. */
ZSH_RANK_TEST(allreduce, eager_gives_every_rank_bitwise_identical_float_results)
{
    zsh_allreduce_bitwise(comm, ZSH_ALGO_EAGER, 1000);
}
