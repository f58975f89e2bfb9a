/*
 * Collectives on device buffers (<zeroshard/device.h>).
 *
 * NCCL refuses two ranks of one communicator on one GPU, so the device
 * cases run on one-rank communicators split from the test's, one per rank:
 * as many concurrent jobs as the runner has ranks, each through NCCL. The
 * same case bodies run on host buffers over the whole communicator, so the
 * multi-rank logic they check is exercised on every run. Without a device
 * (or a build without CUDA and NCCL) the device cases skip, saying why.
 */
#include "coll/check.h"

#include "core/dtype.h"

#include <zeroshard/device.h>

#include <config.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ZSH_HAVE_NCCL
#include <cuda_runtime.h>
#endif

/* Where a case's buffers are. */
typedef struct zsh_dev_mem {
    bool device;
} zsh_dev_mem_t;

static void *zsh_dev_alloc(const zsh_dev_mem_t *m, size_t bytes)
{
#ifdef ZSH_HAVE_NCCL
    if (m->device) {
        void *p = NULL;

        if (cudaMalloc(&p, bytes ? bytes : 1) != cudaSuccess) {
            zsh_test_fail(__FILE__, __LINE__, "cudaMalloc(%zu) failed", bytes);
            return NULL;
        }
        return p;
    }
#endif
    return zsh_check_alloc(bytes ? bytes : 1);
}

static void zsh_dev_free(const zsh_dev_mem_t *m, void *p)
{
#ifdef ZSH_HAVE_NCCL
    if (m->device) {
        cudaFree(p);
        return;
    }
#endif
    free(p);
}

/* Copy @n bytes between host and the case's memory (@in: into it). */
static void zsh_dev_copy(const zsh_dev_mem_t *m, void *dst, const void *src, size_t n, bool in)
{
#ifdef ZSH_HAVE_NCCL
    if (m->device) {
        if (cudaMemcpy(dst, src, n, in ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost) !=
            cudaSuccess) {
            zsh_test_fail(__FILE__, __LINE__, "cudaMemcpy of %zu bytes failed", n);
        }
        return;
    }
#endif
    (void)in;
    memcpy(dst, src, n);
}

/* The reason device cases cannot run here, or NULL. */
static const char *zsh_dev_skip(void)
{
#ifdef ZSH_HAVE_NCCL
    static __thread char why[512]; /* ranks are threads of one process */

    if (!zsh_device_available()) {
        snprintf(why, sizeof(why), "no CUDA device here: %s", zsh_last_error());
        return why;
    }
    return NULL;
#else
    return "built without CUDA and NCCL (configure --with-cuda --with-nccl)";
#endif
}

/* One call of @coll on @comm: inputs made on the host, copied in, the call
 * made, the result copied out and checked against the reference. */
static void zsh_dev_case(zsh_comm_t *comm, const zsh_dev_mem_t *m, zsh_coll_type_t coll,
                         zsh_dtype_t dtype, zsh_op_t op, size_t count, bool inplace)
{
    int n = zsh_comm_size(comm), rank = zsh_comm_rank(comm), k;
    size_t es = zsh_dtype_size(dtype), blk = count * es, nb = blk * (size_t)n;
    size_t send_len = 0, recv_len = 0, send_off = 0;
    char *host, *send, *recv, what[200], block[240];
    zsh_status_t status = ZSH_OK;

    switch (coll) {
    case ZSH_COLL_ALLGATHER:      send_len = blk; recv_len = nb; send_off = blk * (size_t)rank;
                                  break;
    case ZSH_COLL_REDUCE_SCATTER: send_len = nb; recv_len = blk; break;
    default:                      send_len = blk; recv_len = blk; break;
    }
    host = zsh_check_alloc(nb + 1);
    recv = zsh_dev_alloc(m, (coll == ZSH_COLL_REDUCE_SCATTER) ? nb : recv_len);
    send = inplace ? ((coll == ZSH_COLL_ALLGATHER) ? recv + send_off : recv)
                   : zsh_dev_alloc(m, send_len);
    if ((recv == NULL) || (send == NULL)) {
        free(host);
        return;
    }
    snprintf(what, sizeof(what), "%s on %s memory: %s %s count=%zu %s",
             zsh_desc_type_name(coll), m->device ? "device" : "host", zsh_dtype_name(dtype),
             zsh_op_name(op), count, inplace ? "in place" : "out of place");
    /* Inputs: the reduce-scatter's whole vector, else this rank's block
     * (the broadcast's from root 0, which the others overwrite). */
    zsh_check_fill(host, dtype, op, rank, n, 0, (coll == ZSH_COLL_REDUCE_SCATTER) ? count * n
                                                                                   : count);
    if (coll == ZSH_COLL_BROADCAST) {
        if (rank != 0) {
            memset(host, 0x5a, blk);
        }
        zsh_dev_copy(m, recv, host, blk, true);
        status = zsh_broadcast(recv, count, dtype, 0, comm);
    } else {
        zsh_dev_copy(m, send, host, send_len, true);
        switch (coll) {
        case ZSH_COLL_ALLGATHER:
            status = zsh_allgather(send, recv, count, dtype, comm);
            break;
        case ZSH_COLL_REDUCE_SCATTER:
            status = zsh_reduce_scatter(send, inplace ? send + blk * (size_t)rank : recv, count,
                                        dtype, op, comm);
            break;
        default:
            status = zsh_allreduce(send, recv, count, dtype, op, comm);
            break;
        }
    }
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s: %s: %s", what, zsh_status_string(status),
                      zsh_last_error());
        goto out;
    }
    if ((coll == ZSH_COLL_REDUCE_SCATTER) && inplace) {
        zsh_dev_copy(m, host, send + blk * (size_t)rank, blk, false);
    } else {
        zsh_dev_copy(m, host, recv, recv_len, false);
    }
    switch (coll) {
    case ZSH_COLL_ALLGATHER:
        for (k = 0; k < n; k++) {
            snprintf(block, sizeof(block), "%s: block of rank %d", what, k);
            if (!zsh_check_buf(host + blk * (size_t)k, dtype, op, n, k, 0, count, block,
                               __FILE__, __LINE__)) {
                break;
            }
        }
        break;
    case ZSH_COLL_REDUCE_SCATTER:
        zsh_check_buf(host, dtype, op, n, -1, count * (size_t)rank, count, what, __FILE__,
                      __LINE__);
        break;
    case ZSH_COLL_BROADCAST:
        zsh_check_buf(host, dtype, op, n, 0, 0, count, what, __FILE__, __LINE__);
        break;
    default:
        zsh_check_buf(host, dtype, op, n, -1, 0, count, what, __FILE__, __LINE__);
        break;
    }
out:
    if (!inplace) {
        zsh_dev_free(m, send);
    }
    zsh_dev_free(m, recv);
    free(host);
}

/* Every collective, dtype, op (for the reductions) and count, in place and not. */
static void zsh_dev_matrix(zsh_comm_t *comm, const zsh_dev_mem_t *m)
{
    static const zsh_coll_type_t colls[] = {ZSH_COLL_ALLGATHER, ZSH_COLL_REDUCE_SCATTER,
                                            ZSH_COLL_ALLREDUCE, ZSH_COLL_BROADCAST};
    size_t c, d, o, k;
    int ip;

    for (c = 0; c < sizeof(colls) / sizeof(colls[0]); c++) {
        bool reduces = (colls[c] == ZSH_COLL_REDUCE_SCATTER) || (colls[c] == ZSH_COLL_ALLREDUCE);

        for (d = 0; d < ZSH_CHECK_NDTYPES; d++) {
            for (o = 0; o < (reduces ? ZSH_CHECK_NOPS : 1); o++) {
                zsh_op_t op = reduces ? zsh_check_ops[o] : ZSH_MIN;

                if (!zsh_op_supports(op, zsh_check_dtypes[d])) {
                    continue;
                }
                for (k = 0; k < zsh_check_ncounts; k++) {
                    for (ip = 0; ip < ((colls[c] == ZSH_COLL_BROADCAST) ? 1 : 2); ip++) {
                        zsh_dev_case(comm, m, colls[c], zsh_check_dtypes[d], op,
                                     zsh_check_counts[k], ip == 1);
                    }
                }
            }
        }
    }
}

/* A one-rank communicator of this rank's own, split from @comm. */
static zsh_comm_t *zsh_dev_self(zsh_comm_t *comm)
{
    zsh_comm_t *self = NULL;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_split(comm, zsh_comm_rank(comm), 0, &self));
    return self;
}

ZSH_RANK_TEST(device, every_collective_dtype_op_and_count_is_right_on_host_buffers)
{
    zsh_dev_mem_t host = {false};

    zsh_dev_matrix(comm, &host);
}

ZSH_RANK_TEST(device, every_collective_dtype_op_and_count_is_right_on_device_buffers)
{
    const char *why = zsh_dev_skip();
    zsh_dev_mem_t dev = {true};
    zsh_comm_t *self;

    if (why != NULL) {
        ZSH_SKIP(why);
    }
    self = zsh_dev_self(comm);
    if (self != NULL) {
        zsh_dev_matrix(self, &dev);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
    }
}

/* Refusals that hold with or without a device. */
ZSH_RANK_TEST(device, a_stream_call_on_host_buffers_is_refused)
{
    float a[4] = {0}, b[4] = {0};
    zsh_status_t status = zsh_allreduce_stream(a, b, 4, ZSH_FLOAT32, ZSH_SUM, comm, NULL);

#ifdef ZSH_HAVE_NCCL
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, status);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "takes CUDA device buffers");
#else
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, status);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "no device transport");
#endif
}

ZSH_RANK_TEST(device, memory_type_and_stream_settings_refuse_bad_values)
{
    zsh_mem_type_t type = ZSH_MEM_CUDA;
    int x = 0;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_mem_type(&x, &type));
    ZSH_EXPECT_EQ(ZSH_MEM_HOST, type);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_mem_type(&x, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_mem_type(comm, (zsh_mem_type_t)7));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_mem_type(NULL, ZSH_MEM_HOST));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_set_stream(comm, NULL, 0x10));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "flags=0x10");
#ifndef ZSH_HAVE_NCCL
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_comm_set_mem_type(comm, ZSH_MEM_CUDA));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_comm_set_stream(comm, NULL, 0));
    ZSH_EXPECT_EQ(0, zsh_device_available());
#endif
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_set_mem_type(comm, ZSH_MEM_HOST));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&x, &x, 1, ZSH_INT32, ZSH_SUM, comm));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_set_mem_type(comm, ZSH_MEM_AUTO));
}

#ifdef ZSH_HAVE_NCCL
ZSH_RANK_TEST(device, a_call_mixing_host_and_device_buffers_is_refused_naming_both)
{
    const char *why = zsh_dev_skip();
    float host[8] = {0};
    void *dev = NULL;
    zsh_comm_t *self;

    if (why != NULL) {
        ZSH_SKIP(why);
    }
    self = zsh_dev_self(comm);
    ZSH_ASSERT_TRUE(cudaMalloc(&dev, sizeof(host)) == cudaSuccess);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_allreduce(host, dev, 8, ZSH_FLOAT32, ZSH_SUM, self));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "is host memory but recvbuf");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "is CUDA memory of device");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_allgather(dev, host, 8, ZSH_FLOAT32, self));
    /* Refused before anything was taken: the communicator still works. */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(dev, dev, 8, ZSH_FLOAT32, ZSH_SUM, self));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_allreduce(dev, NULL, 8, ZSH_FLOAT32, ZSH_SUM, self));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "recvbuf is NULL");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_allreduce(dev, dev, 8, (zsh_dtype_t)99, ZSH_SUM, self));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "dtype=99");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_allreduce(dev, dev, 8, ZSH_INT32, ZSH_AVG, self));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_allreduce_stream(dev, dev, 8, ZSH_FLOAT32, ZSH_SUM, self,
                                           (void *)&host[0]));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "is not a CUDA stream");
    cudaFree(dev);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* A stream of the caller's: work before the call on it is seen by the
 * call, work after it sees the result; ZSH_STREAM_ENQUEUE returns before. */
ZSH_RANK_TEST(device, calls_on_a_stream_keep_stream_order)
{
    const char *why = zsh_dev_skip();
    const size_t count = 1 << 20;
    cudaStream_t stream = NULL;
    float *buf = NULL, *host;
    zsh_comm_t *self;
    int round;
    size_t i;

    if (why != NULL) {
        ZSH_SKIP(why);
    }
    self = zsh_dev_self(comm);
    host = zsh_check_alloc(count * sizeof(float));
    ZSH_ASSERT_TRUE(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess);
    ZSH_ASSERT_TRUE(cudaMalloc((void **)&buf, count * sizeof(float)) == cudaSuccess);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_set_stream(self, stream, ZSH_STREAM_ENQUEUE));
    for (round = 0; round < 3; round++) {
        for (i = 0; i < count; i++) {
            host[i] = (float)(i % 1000) + (float)round;
        }
        cudaMemcpyAsync(buf, host, count * sizeof(float), cudaMemcpyHostToDevice, stream);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(buf, buf, count, ZSH_FLOAT32, ZSH_MAX, self));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_broadcast_stream(buf, count, ZSH_FLOAT32, 0, self,
                                                       stream));
        memset(host, 0, count * sizeof(float));
        cudaMemcpyAsync(host, buf, count * sizeof(float), cudaMemcpyDeviceToHost, stream);
        ZSH_ASSERT_TRUE(cudaStreamSynchronize(stream) == cudaSuccess);
        for (i = 0; i < count; i++) {
            if (host[i] != (float)(i % 1000) + (float)round) {
                zsh_test_fail(__FILE__, __LINE__, "round %d: element %zu is %g, expected %g",
                              round, i, (double)host[i], (double)((float)(i % 1000) + round));
                break;
            }
        }
    }
    cudaFree(buf);
    cudaStreamDestroy(stream);
    free(host);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* Requests complete when their stream work is done, in any number in flight. */
ZSH_RANK_TEST(device, nonblocking_device_calls_complete_with_their_stream_work)
{
    enum { CALLS = 16 };
    const char *why = zsh_dev_skip();
    const size_t count = 1 << 18;
    zsh_request_t *reqs[CALLS];
    int32_t *bufs[CALLS], *host;
    zsh_comm_t *self;
    size_t i;
    int c;

    if (why != NULL) {
        ZSH_SKIP(why);
    }
    self = zsh_dev_self(comm);
    host = zsh_check_alloc(count * sizeof(int32_t));
    for (c = 0; c < CALLS; c++) {
        for (i = 0; i < count; i++) {
            host[i] = (int32_t)(i * 7 + (size_t)c);
        }
        ZSH_ASSERT_TRUE(cudaMalloc((void **)&bufs[c], count * sizeof(int32_t)) == cudaSuccess);
        cudaMemcpy(bufs[c], host, count * sizeof(int32_t), cudaMemcpyHostToDevice);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_iallreduce(bufs[c], bufs[c], count, ZSH_INT32, ZSH_SUM,
                                                 self, &reqs[c]));
    }
    for (c = CALLS - 1; c >= 0; c--) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_request_wait(reqs[c]));
        zsh_request_free(reqs[c]);
        cudaMemcpy(host, bufs[c], count * sizeof(int32_t), cudaMemcpyDeviceToHost);
        for (i = 0; i < count; i++) {
            if (host[i] != (int32_t)(i * 7 + (size_t)c)) {
                zsh_test_fail(__FILE__, __LINE__, "call %d: element %zu is %d", c, i, host[i]);
                break;
            }
        }
        cudaFree(bufs[c]);
    }
    free(host);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* A child split from a communicator with a NCCL communicator gets its own;
 * an abort fails its later device calls without touching the parent's. */
ZSH_RANK_TEST(device, a_split_gets_its_own_nccl_communicator_and_abort_stops_it)
{
    const char *why = zsh_dev_skip();
    zsh_comm_t *self, *child = NULL;
    double *buf = NULL, one = 1.0;

    if (why != NULL) {
        ZSH_SKIP(why);
    }
    self = zsh_dev_self(comm);
    ZSH_ASSERT_TRUE(cudaMalloc((void **)&buf, sizeof(double)) == cudaSuccess);
    cudaMemcpy(buf, &one, sizeof(double), cudaMemcpyHostToDevice);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(buf, buf, 1, ZSH_FLOAT64, ZSH_SUM, self));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_split(self, 0, 0, &child));
    ZSH_ASSERT_TRUE(child != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(buf, buf, 1, ZSH_FLOAT64, ZSH_SUM, child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_abort(child));
    ZSH_EXPECT_STATUS(ZSH_ERR_ABORTED, zsh_allreduce(buf, buf, 1, ZSH_FLOAT64, ZSH_SUM, child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(buf, buf, 1, ZSH_FLOAT64, ZSH_SUM, self));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
    cudaFree(buf);
}
#endif

/* A rank whose buffers are on the device and ranks whose are on the host
 * disagree by name, on the host path, before anything reaches NCCL. */
ZSH_RANK_TEST(device, device_and_host_ranks_of_one_call_are_told_apart_before_nccl)
{
    const char *why = zsh_dev_skip();
    float host[4] = {1, 2, 3, 4};
    zsh_comm_t *child = NULL;
    void *buf = host;
    zsh_status_t status;

    if (zsh_comm_size(comm) < 2) {
        ZSH_SKIP("needs 2 ranks");
    }
    if (why != NULL) {
        ZSH_SKIP(why);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_comm_split(comm, 0, 0, &child));
    zsh_comm_set_timeout(child, 20);
#ifdef ZSH_HAVE_NCCL
    if (zsh_comm_rank(child) == 0) {
        ZSH_ASSERT_TRUE(cudaMalloc(&buf, sizeof(host)) == cudaSuccess);
    }
#endif
    status = zsh_allreduce(buf, buf, 4, ZSH_FLOAT32, ZSH_SUM, child);
    ZSH_EXPECT_STATUS(ZSH_ERR_MISMATCH, status);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "nccl");
#ifdef ZSH_HAVE_NCCL
    if (buf != host) {
        cudaFree(buf);
    }
#endif
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(child));
}
