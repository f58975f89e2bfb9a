/**
 * @file zeroshard/device.h
 * @brief Collectives on GPU memory: memory types, CUDA streams, per-call streams.
 *
 * The collectives of zeroshard.h take CUDA device buffers as they take host
 * buffers. A call whose buffers are device memory runs over NCCL on a NCCL
 * communicator that ZeroShard creates for the communicator on its first such
 * call (collective; the NCCL unique id travels over the host path, so a
 * communicator from zsh_comm_split() gets a NCCL communicator of exactly its
 * own ranks). A call mixing host and device buffers is refused with
 * ZSH_ERR_INVALID_ARG. Before a device call is enqueued, the ranks exchange
 * its descriptor on the host path, so a mismatch is reported as on the host
 * and never reaches NCCL.
 *
 * Where the memory is: ZeroShard asks CUDA (cudaPointerGetAttributes) unless
 * told with zsh_comm_set_mem_type(). A process with no CUDA device never asks
 * (the answer "host" is taken once, at the first call).
 *
 * Streams and ordering, as in NCCL:
 * - a device call is enqueued on the communicator's stream
 *   (zsh_comm_set_stream(); the CUDA default stream until set) or on the
 *   stream a `_stream` call names; it runs after the work enqueued on that
 *   stream before it, and work enqueued after it on that stream sees its
 *   result;
 * - a blocking call returns once the work is enqueued and complete, or, with
 *   ::ZSH_STREAM_ENQUEUE, once it is enqueued (then synchronise the stream
 *   before reading the result on the host);
 * - a nonblocking call (zsh_iallgather() and the others) returns a request
 *   that completes when its stream work is done;
 * - device calls on one communicator are enqueued in the order they were
 *   made, on every rank (NCCL needs that), whatever order their descriptor
 *   exchanges finish in.
 *
 * Failures keep the promises of zeroshard.h: a NCCL error is returned as a
 * ZeroShard status with NCCL's own text in zsh_last_error(); a call past its
 * deadline fails with ZSH_ERR_TIMEOUT and aborts the NCCL communicator, so no
 * stream waits forever; zsh_comm_abort() aborts it too. After a device call
 * failed, later device calls on that communicator fail; host calls do not.
 *
 * One NCCL rule stays: two ranks of one communicator cannot use the same GPU.
 */
#ifndef ZEROSHARD_DEVICE_H_
#define ZEROSHARD_DEVICE_H_

#include <zeroshard.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Where a collective's buffers are. */
typedef enum {
    ZSH_MEM_AUTO = 0, /**< Ask CUDA for each call's buffers (the default). */
    ZSH_MEM_HOST = 1, /**< Host memory: never ask. */
    ZSH_MEM_CUDA = 2  /**< CUDA device memory of the current device. */
} zsh_mem_type_t;

/** Flags of zsh_comm_set_stream(). */
enum {
    ZSH_STREAM_WAIT    = 0, /**< Blocking device calls return once their work is complete. */
    ZSH_STREAM_ENQUEUE = 1  /**< Blocking device calls return once their work is enqueued. */
};

/**
 * @brief Whether this build and this process can run collectives on device memory.
 * @return 1 with CUDA and NCCL built in and at least one CUDA device visible,
 *         else 0 (zsh_last_error() says which part is missing).
 */
int zsh_device_available(void);

/**
 * @brief Where @p ptr points, as ZeroShard sees it.
 * @param[in]  ptr     Any address.
 * @param[out] type_p  ::ZSH_MEM_HOST or ::ZSH_MEM_CUDA.
 * @return ZSH_OK, or ZSH_ERR_INVALID_ARG for a NULL @p type_p.
 */
zsh_status_t zsh_mem_type(const void *ptr, zsh_mem_type_t *type_p);

/**
 * @brief Tell @p comm where its later collectives' buffers are, instead of asking CUDA.
 *
 * Local. ::ZSH_MEM_CUDA in a build without CUDA and NCCL is refused with
 * ZSH_ERR_UNSUPPORTED.
 */
zsh_status_t zsh_comm_set_mem_type(zsh_comm_t *comm, zsh_mem_type_t type);

/**
 * @brief Set the CUDA stream that @p comm's later device calls are enqueued on,
 *        and how blocking calls end. Local.
 * @param[in] comm   The communicator.
 * @param[in] stream A cudaStream_t of the buffers' device; NULL for the default stream.
 * @param[in] flags  ::ZSH_STREAM_WAIT or ::ZSH_STREAM_ENQUEUE.
 * @return ZSH_OK; ZSH_ERR_UNSUPPORTED in a build without CUDA and NCCL;
 *         ZSH_ERR_INVALID_ARG for unknown flags.
 */
zsh_status_t zsh_comm_set_stream(zsh_comm_t *comm, void *stream, unsigned flags);

/** @brief zsh_allgather() on device buffers, enqueued on @p stream (a cudaStream_t). */
zsh_status_t zsh_allgather_stream(const void *sendbuf, void *recvbuf, size_t sendcount,
                                  zsh_dtype_t dtype, zsh_comm_t *comm, void *stream);

/** @brief zsh_reduce_scatter() on device buffers, enqueued on @p stream. */
zsh_status_t zsh_reduce_scatter_stream(const void *sendbuf, void *recvbuf, size_t recvcount,
                                       zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                       void *stream);

/** @brief zsh_allreduce() on device buffers, enqueued on @p stream. */
zsh_status_t zsh_allreduce_stream(const void *sendbuf, void *recvbuf, size_t count,
                                  zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                  void *stream);

/** @brief zsh_broadcast() on a device buffer, enqueued on @p stream. */
zsh_status_t zsh_broadcast_stream(void *buf, size_t count, zsh_dtype_t dtype, int root,
                                  zsh_comm_t *comm, void *stream);

/** @brief zsh_alltoall() on device buffers (not in place), enqueued on @p stream. */
zsh_status_t zsh_alltoall_stream(const void *sendbuf, void *recvbuf, size_t count,
                                 zsh_dtype_t dtype, zsh_comm_t *comm, void *stream);

#ifdef __cplusplus
}
#endif

#endif
