/*
 * --device cuda: the collectives on CUDA device memory, timed against the
 * bare NCCL calls on the same buffers and the same stream.
 *
 * Both sides enqueue on one stream: ZeroShard's communicator is told to
 * return once its work is enqueued (ZSH_STREAM_ENQUEUE), as NCCL does, and a
 * timed block stops its clock after cudaStreamSynchronize(), so both are
 * timed the same way. The NCCL communicator of the baseline is the bench's
 * own, made over ZeroShard's communicator (rank 0's unique id goes out with
 * zsh_broadcast() on a host buffer), so the baseline does not depend on how
 * ZeroShard creates its own.
 *
 * Inputs are set and results checked on a host copy of the buffers
 * (bench_dtype.c's exact values), moved with copies on the same stream.
 *
 * Nothing here touches CUDA before zsh_bench_cuda_open(), which only
 * --device cuda calls: the host path runs where CUDA is installed but no
 * driver or device is.
 */
#include "config.h"

#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(ZSH_HAVE_CUDA) && defined(ZSH_HAVE_NCCL)

#include <zeroshard/device.h>

#include <cuda_runtime.h>
#include <nccl.h>

struct zsh_bench_cuda {
    zsh_comm_t      *comm;     /* whose stream was set */
    int              device;
    cudaStream_t     stream;
    ncclComm_t       nccl;     /* the baseline's own; NULL until made */
    char             describe[256];
    zsh_bench_bufs_t host;     /* one set: where inputs are set and results checked */
    char            *dev;      /* the device copy of host.arena, same layout */
};

int zsh_bench_cuda_built(void)
{
    return 1;
}

static int zsh_bench_cuda_ok(cudaError_t e, const char *what, char *err, size_t errlen)
{
    if (e == cudaSuccess) {
        return 1;
    }
    snprintf(err, errlen, "%s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
    return 0;
}

static int zsh_bench_nccl_ok(ncclResult_t r, const char *what, char *err, size_t errlen)
{
    if (r == ncclSuccess) {
        return 1;
    }
    snprintf(err, errlen, "%s: %s", what, ncclGetErrorString(r));
    return 0;
}

/* The node-local rank the launcher gave, or -1. */
static int zsh_bench_local_rank(void)
{
    static const char *const vars[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                       "SLURM_LOCALID"};
    size_t i;

    for (i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);

        if ((v != NULL) && (*v >= '0') && (*v <= '9')) {
            return atoi(v);
        }
    }
    return -1;
}

/* The local part of opening: the GPU, the stream, the communicator's stream. */
static int zsh_bench_cuda_local(zsh_bench_cuda_t *cuda, char *err, size_t errlen)
{
    int local = zsh_bench_local_rank(), count = 0;
    zsh_status_t st;

    if (!zsh_device_available()) {
        snprintf(err, errlen, "no device path here (zsh_device_available() is 0): %s", zsh_last_error());
        return 0;
    }
    if (!zsh_bench_cuda_ok(cudaGetDeviceCount(&count), "cudaGetDeviceCount", err, errlen)) {
        return 0;
    }
    if (local >= 0) {
        cuda->device = local % count;
        if (!zsh_bench_cuda_ok(cudaSetDevice(cuda->device), "cudaSetDevice", err, errlen)) {
            return 0;
        }
    } else if (!zsh_bench_cuda_ok(cudaGetDevice(&cuda->device), "cudaGetDevice", err, errlen)) {
        return 0;
    }
    if (!zsh_bench_cuda_ok(cudaStreamCreateWithFlags(&cuda->stream, cudaStreamNonBlocking),
                           "cudaStreamCreateWithFlags", err, errlen)) {
        return 0;
    }
    st = zsh_comm_set_stream(cuda->comm, (void *)cuda->stream, ZSH_STREAM_ENQUEUE);
    if (st != ZSH_OK) {
        snprintf(err, errlen, "zsh_comm_set_stream: %s", zsh_last_error());
        return 0;
    }
    return 1;
}

/* The baseline's NCCL communicator, collectively; 0 on this rank's failure. */
static int zsh_bench_cuda_nccl(zsh_bench_cuda_t *cuda, char *err, size_t errlen)
{
    struct {
        int          ok;
        ncclUniqueId id;
    } msg;
    int          rank = zsh_comm_rank(cuda->comm), size = zsh_comm_size(cuda->comm);
    zsh_status_t st;

    memset(&msg, 0, sizeof(msg));
    if (rank == 0) {
        msg.ok = zsh_bench_nccl_ok(ncclGetUniqueId(&msg.id), "ncclGetUniqueId", err, errlen);
    }
    st = zsh_broadcast(&msg, sizeof(msg), ZSH_UINT8, 0, cuda->comm);
    if (st != ZSH_OK) {
        snprintf(err, errlen, "zsh_broadcast of the NCCL unique id: %s", zsh_last_error());
        return 0;
    }
    if (!msg.ok) {
        if (rank != 0) {
            snprintf(err, errlen, "rank 0 could not make a NCCL unique id");
        }
        return 0;
    }
    return zsh_bench_nccl_ok(ncclCommInitRank(&cuda->nccl, size, msg.id, rank), "ncclCommInitRank", err,
                             errlen);
}

int zsh_bench_cuda_open(zsh_comm_t *comm, zsh_bench_cuda_t **cuda_p, char *err, size_t errlen)
{
    zsh_bench_cuda_t *cuda = calloc(1, sizeof(*cuda));
    struct cudaDeviceProp prop;
    long  ok;
    int   version = 0;

    err[0] = '\0';
    if (cuda == NULL) {
        snprintf(err, errlen, "out of memory");
    } else {
        cuda->comm = comm;
    }
    /* each step agreed on by every rank, so no rank waits for one that failed */
    ok = (cuda != NULL) && zsh_bench_cuda_local(cuda, err, errlen);
    zsh_bench_world_allreduce_long(&ok, ZSH_MIN);
    if (ok) {
        ok = zsh_bench_cuda_nccl(cuda, err, errlen);
        zsh_bench_world_allreduce_long(&ok, ZSH_MIN);
    }
    if (!ok) {
        zsh_bench_cuda_close(cuda);
        return -1;
    }
    if (cudaGetDeviceProperties(&prop, cuda->device) != cudaSuccess) {
        snprintf(prop.name, sizeof(prop.name), "?");
    }
    ncclGetVersion(&version);
    snprintf(cuda->describe, sizeof(cuda->describe), "rank 0 on GPU %d (%.128s), NCCL %d.%d.%d", cuda->device,
             prop.name, version / 10000, version / 100 % 100, version % 100);
    *cuda_p = cuda;
    return 0;
}

void zsh_bench_cuda_close(zsh_bench_cuda_t *cuda)
{
    if (cuda == NULL) {
        return;
    }
    zsh_bench_cuda_bufs_free(cuda);
    if (cuda->nccl != NULL) {
        ncclCommDestroy(cuda->nccl);
    }
    if (cuda->stream != NULL) {
        /* the communicator outlives the stream: give it back the default one */
        zsh_comm_set_stream(cuda->comm, NULL, ZSH_STREAM_WAIT);
        cudaStreamDestroy(cuda->stream);
    }
    free(cuda);
}

const char *zsh_bench_cuda_describe(const zsh_bench_cuda_t *cuda)
{
    return cuda->describe;
}

static char *zsh_bench_dev(const zsh_bench_cuda_t *cuda, const char *host_ptr)
{
    return cuda->dev + (host_ptr - cuda->host.arena);
}

/* Copy the whole set between host and device, on the stream, and wait. */
static void zsh_bench_cuda_copy(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, int to_device)
{
    size_t      bytes = zsh_bench_set_bytes(&cuda->host);
    cudaError_t e;
    char        err[256];

    e = to_device ? cudaMemcpyAsync(cuda->dev, cuda->host.arena, bytes, cudaMemcpyHostToDevice, cuda->stream)
                  : cudaMemcpyAsync(cuda->host.arena, cuda->dev, bytes, cudaMemcpyDeviceToHost, cuda->stream);
    if (e == cudaSuccess) {
        e = cudaStreamSynchronize(cuda->stream);
    }
    if (!zsh_bench_cuda_ok(e, to_device ? "copy to the device" : "copy from the device", err, sizeof(err))) {
        fprintf(stderr, "zsh_bench: rank %d: %s %s\n", zsh_bench_world_rank(), opts->coll->name, err);
        zsh_bench_world_abort(1);
    }
}

int zsh_bench_cuda_bufs_init(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, size_t count, int size,
                             int rank)
{
    if (!zsh_bench_bufs_init(&cuda->host, opts, count, size)) {
        return 0;
    }
    if (cudaMalloc((void **)&cuda->dev, zsh_bench_set_bytes(&cuda->host)) != cudaSuccess) {
        (void)cudaGetLastError(); /* not sticky: the next size may fit */
        cuda->dev = NULL;
        zsh_bench_bufs_free(&cuda->host);
        return 0;
    }
    zsh_bench_fill(opts, &cuda->host, 0, rank);
    zsh_bench_cuda_copy(cuda, opts, 1);
    return 1;
}

void zsh_bench_cuda_bufs_free(zsh_bench_cuda_t *cuda)
{
    if (cuda->dev != NULL) {
        cudaFree(cuda->dev);
        cuda->dev = NULL;
    }
    zsh_bench_bufs_free(&cuda->host);
}

static ncclDataType_t zsh_bench_nccl_type(zsh_dtype_t dt)
{
    switch (dt) {
    case ZSH_INT8:     return ncclInt8;
    case ZSH_UINT8:    return ncclUint8;
    case ZSH_INT32:    return ncclInt32;
    case ZSH_UINT32:   return ncclUint32;
    case ZSH_INT64:    return ncclInt64;
    case ZSH_UINT64:   return ncclUint64;
    case ZSH_FLOAT16:  return ncclFloat16;
    case ZSH_BFLOAT16: return ncclBfloat16;
    case ZSH_FLOAT64:  return ncclFloat64;
    default:           return ncclFloat32;
    }
}

static void zsh_bench_cuda_fail(const zsh_bench_opts_t *opts, const char *what, const char *why)
{
    fprintf(stderr, "zsh_bench: rank %d: %s %s on device buffers failed: %s\n", zsh_bench_world_rank(), what,
            opts->coll->name, why);
    zsh_bench_world_abort(1);
}

/* NCCL's all-to-all: a send and a receive per rank in one group. */
static ncclResult_t zsh_bench_cuda_alltoall(const zsh_bench_cuda_t *cuda, char *send, char *recv,
                                            size_t count, ncclDataType_t dt, size_t esize)
{
    ncclResult_t r, end;
    int n = 0, p;

    r = ncclCommCount(cuda->nccl, &n);
    if (r != ncclSuccess) {
        return r;
    }
    r = ncclGroupStart();
    for (p = 0; (p < n) && (r == ncclSuccess); p++) {
        r = ncclSend(send + (size_t)p * count * esize, count, dt, p, cuda->nccl, cuda->stream);
        if (r == ncclSuccess) {
            r = ncclRecv(recv + (size_t)p * count * esize, count, dt, p, cuda->nccl, cuda->stream);
        }
    }
    end = ncclGroupEnd();
    return (r != ncclSuccess) ? r : end;
}

static void zsh_bench_cuda_call_nccl(const zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, char *send,
                                     char *recv, size_t count)
{
    ncclDataType_t dt = zsh_bench_nccl_type(opts->dtype->dtype);
    ncclResult_t   r  = ncclSuccess;

    switch (opts->coll->coll) {
    case ZSH_BUSBW_ALLGATHER:
        r = ncclAllGather(send, recv, count, dt, cuda->nccl, cuda->stream);
        break;
    case ZSH_BUSBW_REDUCE_SCATTER:
        r = ncclReduceScatter(send, recv, count, dt, ncclSum, cuda->nccl, cuda->stream);
        break;
    case ZSH_BUSBW_ALLREDUCE:
        r = ncclAllReduce(send, recv, count, dt, ncclSum, cuda->nccl, cuda->stream);
        break;
    case ZSH_BUSBW_BROADCAST:
        r = ncclBroadcast(send, send, count, dt, 0, cuda->nccl, cuda->stream);
        break;
    case ZSH_BUSBW_ALLTOALL:
        r = zsh_bench_cuda_alltoall(cuda, send, recv, count, dt, opts->dtype->esize);
        break;
    case ZSH_BUSBW_BARRIER:
        break; /* refused with --device cuda when the options are read */
    }
    if (r != ncclSuccess) {
        char why[512];

        snprintf(why, sizeof(why), "%s: %s", ncclGetErrorString(r), ncclGetLastError(cuda->nccl));
        zsh_bench_cuda_fail(opts, "NCCL", why);
    }
}

/* ZeroShard's blocking call: with ZSH_STREAM_ENQUEUE it returns once enqueued on the stream. */
static void zsh_bench_cuda_call_zsh(const zsh_bench_opts_t *opts, char *send, char *recv, size_t count,
                                    zsh_comm_t *comm)
{
    zsh_status_t st = zsh_bench_zsh_call(opts, send, recv, count, comm);

    if (st != ZSH_OK) {
        zsh_bench_cuda_fail(opts, "zsh", zsh_last_error());
    }
}

static void zsh_bench_cuda_call(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, zsh_comm_t *comm,
                                int nccl)
{
    char *send = zsh_bench_dev(cuda, zsh_bench_send(&cuda->host, 0));
    char *recv = zsh_bench_dev(cuda, zsh_bench_recv(&cuda->host, 0));

    if (nccl) {
        zsh_bench_cuda_call_nccl(cuda, opts, send, recv, cuda->host.count);
    } else {
        zsh_bench_cuda_call_zsh(opts, send, recv, cuda->host.count, comm);
    }
}

static void zsh_bench_cuda_sync(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, int nccl)
{
    cudaError_t e = cudaStreamSynchronize(cuda->stream);

    if (e != cudaSuccess) {
        zsh_bench_cuda_fail(opts, nccl ? "NCCL" : "zsh", cudaGetErrorString(e));
    }
}

zsh_bench_time_t zsh_bench_cuda_time(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, zsh_comm_t *comm,
                                     int nccl, int iters)
{
    double start;
    int    i;

    zsh_bench_world_barrier();
    start = zsh_bench_world_time();
    for (i = 0; i < iters; i++) {
        zsh_bench_cuda_call(cuda, opts, comm, nccl);
    }
    zsh_bench_cuda_sync(cuda, opts, nccl);
    return zsh_bench_time_over_ranks((zsh_bench_world_time() - start) / iters);
}

size_t zsh_bench_cuda_validate(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, zsh_comm_t *comm, int rank,
                               int size)
{
    zsh_bench_fill(opts, &cuda->host, 0, rank);
    zsh_bench_cuda_copy(cuda, opts, 1);
    zsh_bench_cuda_call(cuda, opts, comm, 0);
    zsh_bench_cuda_sync(cuda, opts, 0);
    zsh_bench_cuda_copy(cuda, opts, 0);
    return zsh_bench_verify(opts, &cuda->host, 0, rank, size);
}

#else /* a build without CUDA and NCCL: the options refuse --device cuda */

int zsh_bench_cuda_built(void)
{
    return 0;
}

int zsh_bench_cuda_open(zsh_comm_t *comm, zsh_bench_cuda_t **cuda_p, char *err, size_t errlen)
{
    (void)comm;
    (void)cuda_p;
    snprintf(err, errlen, "this zsh_bench was built without CUDA/NCCL");
    return -1;
}

void zsh_bench_cuda_close(zsh_bench_cuda_t *cuda)
{
    (void)cuda;
}

const char *zsh_bench_cuda_describe(const zsh_bench_cuda_t *cuda)
{
    (void)cuda;
    return "built without CUDA/NCCL";
}

int zsh_bench_cuda_bufs_init(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, size_t count, int size,
                             int rank)
{
    (void)cuda, (void)opts, (void)count, (void)size, (void)rank;
    return 0;
}

void zsh_bench_cuda_bufs_free(zsh_bench_cuda_t *cuda)
{
    (void)cuda;
}

zsh_bench_time_t zsh_bench_cuda_time(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, zsh_comm_t *comm,
                                     int nccl, int iters)
{
    zsh_bench_time_t t = {0.0, 0.0, 0.0};

    (void)cuda, (void)opts, (void)comm, (void)nccl, (void)iters;
    return t;
}

size_t zsh_bench_cuda_validate(zsh_bench_cuda_t *cuda, const zsh_bench_opts_t *opts, zsh_comm_t *comm, int rank,
                               int size)
{
    (void)cuda, (void)opts, (void)comm, (void)rank, (void)size;
    return 0;
}

#endif
