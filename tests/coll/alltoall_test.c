/*
 * All-to-all against the reference: rank r's block j holds r's inputs at
 * indexes [j * count, (j + 1) * count), so block j of rank r's result must
 * be rank j's inputs at [r * count, (r + 1) * count), by every algorithm,
 * dtype and count, in place and not; then the nonblocking form among
 * other calls in flight, and the arguments it refuses.
 */
#include "coll/check.h"

#include "core/dtype.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether block k of @recv, on rank @rank of @n, is rank k's block for it. */
static bool zsh_alltoall_check(const char *recv, zsh_dtype_t dtype, size_t count, int rank,
                               int n, const char *what)
{
    size_t blk = count * zsh_dtype_size(dtype);
    char block[200];
    int k;

    for (k = 0; k < n; k++) {
        snprintf(block, sizeof(block), "%s: block from rank %d", what, k);
        if (!zsh_check_buf(recv + blk * (size_t)k, dtype, ZSH_MIN, n, k, count * (size_t)rank,
                           count, block, __FILE__, __LINE__)) {
            return false;
        }
    }
    return true;
}

void zsh_alltoall_case(zsh_comm_t *comm, zsh_dtype_t dtype, zsh_op_t op, size_t count,
                       bool inplace, zsh_algo_t algo)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    size_t bytes = count * zsh_dtype_size(dtype) * (size_t)n;
    char *recv = zsh_check_alloc(bytes);
    char *send = inplace ? recv : zsh_check_alloc(bytes);
    zsh_check_call_t call;
    char what[160];

    (void)op;
    if (!inplace) {
        memset(recv, 0x5a, bytes);
    }
    zsh_check_fill(send, dtype, ZSH_MIN, rank, n, 0, count * (size_t)n);
    snprintf(what, sizeof(what), "alltoall %s %s count=%zu %s", zsh_algo_name(algo),
             zsh_dtype_name(dtype), count, inplace ? "in place" : "out of place");
    zsh_check_call_begin(&call, comm, algo, bytes, recv, bytes);
    if (zsh_check_call_end(&call, zsh_alltoall(send, recv, count, dtype, comm), what, __FILE__,
                           __LINE__)) {
        zsh_alltoall_check(recv, dtype, count, rank, n, what);
    }
    if (!inplace) {
        free(send);
    }
    free(recv);
}

ZSH_RANK_TEST(alltoall, pairwise_matches_reference_for_every_dtype_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLTOALL, ZSH_ALGO_PAIRWISE, zsh_alltoall_case);
}

ZSH_RANK_TEST(alltoall, direct_matches_reference_for_every_dtype_and_count)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLTOALL, ZSH_ALGO_DIRECT, zsh_alltoall_case);
}

/* Counts past what an eager call may move are refused, recvbuf untouched. */
ZSH_RANK_TEST(alltoall, eager_matches_reference_where_it_fits_and_refuses_larger_calls)
{
    zsh_check_matrix(comm, ZSH_COLL_ALLTOALL, ZSH_ALGO_EAGER, zsh_alltoall_case);
}

/* The automatic choice, from a few bytes (eager) to blocks past the default
 * chunk size (direct or pairwise), with a pipeline shallower than the
 * ranks so that the pairwise window wraps. */
ZSH_RANK_TEST(alltoall, default_selection_handles_small_and_large_blocks)
{
    zsh_coll_config_t *cfg = zsh_check_cfg(comm), saved = *cfg;

    zsh_alltoall_case(comm, ZSH_UINT8, ZSH_MIN, 3, true, ZSH_ALGO_AUTO);
    zsh_alltoall_case(comm, ZSH_FLOAT32, ZSH_MIN, 70001, false, ZSH_ALGO_AUTO);
    zsh_alltoall_case(comm, ZSH_BFLOAT16, ZSH_MIN, 5003, true, ZSH_ALGO_AUTO);
    cfg->pipeline_depth = 2;
    cfg->alltoall_algo  = ZSH_ALGO_PAIRWISE;
    zsh_alltoall_case(comm, ZSH_INT64, ZSH_MIN, 3001, false, ZSH_ALGO_PAIRWISE);
    zsh_alltoall_case(comm, ZSH_INT64, ZSH_MIN, 3001, true, ZSH_ALGO_PAIRWISE);
    *cfg = saved;
}

/* Several all-to-alls in flight with an all-reduce and a broadcast between
 * them, completed newest first on odd ranks and oldest first on even ones. */
ZSH_RANK_TEST(alltoall, nonblocking_calls_overlap_the_others_in_any_order)
{
    static const size_t counts[3] = {5, 20011, 1};
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), odd = rank % 2, i, j;
    size_t big = 0, k;
    zsh_request_t *reqs[5];
    char *send[3], *recv[3];
    float *ar_in, *ar_out, *bc;
    char what[64];

    for (i = 0; i < 3; i++) {
        big     = counts[i] * sizeof(float) * (size_t)n;
        send[i] = zsh_check_alloc(big);
        recv[i] = zsh_check_alloc(big);
        zsh_check_fill(send[i], ZSH_FLOAT32, ZSH_MIN, rank, n, 0, counts[i] * (size_t)n);
    }
    ar_in  = zsh_check_alloc(1000 * sizeof(float));
    ar_out = zsh_check_alloc(1000 * sizeof(float));
    bc     = zsh_check_alloc(300 * sizeof(float));
    zsh_check_fill(ar_in, ZSH_FLOAT32, ZSH_MAX, rank, n, 0, 1000);
    zsh_check_fill(bc, ZSH_FLOAT32, ZSH_MIN, rank, n, 0, 300);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ialltoall(send[0], recv[0], counts[0], ZSH_FLOAT32, comm,
                                            &reqs[0]));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_iallreduce(ar_in, ar_out, 1000, ZSH_FLOAT32, ZSH_MAX, comm,
                                             &reqs[1]));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ialltoall(send[1], recv[1], counts[1], ZSH_FLOAT32, comm,
                                            &reqs[2]));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ibroadcast(bc, 300, ZSH_FLOAT32, n - 1, comm, &reqs[3]));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ialltoall(send[2], send[2], counts[2], ZSH_FLOAT32, comm,
                                            &reqs[4]));
    for (i = 0; i < 5; i++) {
        j = odd ? 4 - i : i;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[j]));
        zsh_request_free(reqs[j]);
    }
    for (i = 0; i < 2; i++) {
        snprintf(what, sizeof(what), "ialltoall count=%zu", counts[i]);
        zsh_alltoall_check(recv[i], ZSH_FLOAT32, counts[i], rank, n, what);
    }
    zsh_alltoall_check(send[2], ZSH_FLOAT32, counts[2], rank, n, "ialltoall in place");
    zsh_check_buf(ar_out, ZSH_FLOAT32, ZSH_MAX, n, -1, 0, 1000, "iallreduce", __FILE__, __LINE__);
    zsh_check_buf(bc, ZSH_FLOAT32, ZSH_MIN, n, n - 1, 0, 300, "ibroadcast", __FILE__, __LINE__);
    for (k = 0; k < 3; k++) {
        free(send[k]);
        free(recv[k]);
    }
    free(ar_in);
    free(ar_out);
    free(bc);
}

#define ZSH_A2A_REJECTED(_call, _needle) \
    do { \
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, (_call)); \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), (_needle)); \
    } while (0)

/* Bad arguments fail before anything is sent, on every rank alike, so the
 * communicator still works after them; no request is handed out. */
ZSH_RANK_TEST(alltoall, bad_arguments_are_refused_before_posting)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm);
    float *buf = zsh_check_alloc(4 * sizeof(float) * (size_t)(n + 1));
    zsh_request_t *req = NULL;

    ZSH_A2A_REJECTED(zsh_alltoall(NULL, buf, 2, ZSH_FLOAT32, comm),
                     "zsh_alltoall: sendbuf is NULL with count=2");
    ZSH_A2A_REJECTED(zsh_alltoall(buf, NULL, 2, ZSH_FLOAT32, comm), "recvbuf is NULL");
    ZSH_A2A_REJECTED(zsh_alltoall(buf, buf + 1, 2, ZSH_FLOAT32, comm), "overlaps recvbuf");
    ZSH_A2A_REJECTED(zsh_alltoall(buf, buf, 1, (zsh_dtype_t)99, comm), "dtype=99");
    ZSH_A2A_REJECTED(zsh_alltoall(buf, buf, SIZE_MAX / 2, ZSH_FLOAT32, comm), "overflows");
    ZSH_A2A_REJECTED(zsh_alltoall(buf, buf, 1, ZSH_FLOAT32, NULL), "comm is NULL");
    ZSH_A2A_REJECTED(zsh_ialltoall(buf, buf, 1, ZSH_FLOAT32, comm, NULL),
                     "zsh_ialltoall: req_p is NULL");
    ZSH_A2A_REJECTED(zsh_ialltoall(NULL, buf, 1, ZSH_FLOAT32, comm, &req), "sendbuf is NULL");
    ZSH_EXPECT_TRUE(req == NULL);
    /* A zero count needs no buffers, and still returns a request. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_alltoall(NULL, NULL, 0, ZSH_FLOAT32, comm));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ialltoall(NULL, NULL, 0, ZSH_INT8, comm, &req));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(req));
    zsh_request_free(req);
    /* Still in step: a call that moves data. */
    zsh_check_fill(buf, ZSH_FLOAT32, ZSH_MIN, rank, n, 0, 4 * (size_t)n);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_alltoall(buf, buf, 4, ZSH_FLOAT32, comm));
    zsh_alltoall_check((const char *)buf, ZSH_FLOAT32, 4, rank, n, "after the refusals");
    free(buf);
}
