/**
 * @file zeroshard.h
 * @brief ZeroShard public core API: status codes, data types, communicators,
 *        collectives and requests.
 *
 * ZeroShard brings ZeRO (the Zero Redundancy Optimizer) to any framework as
 * MPI-style C middleware. This header is the collective layer: all-gather,
 * reduce-scatter, all-reduce, broadcast, all-to-all and barrier over UCX.
 *
 * Conventions, as in NCCL:
 * - counts are per-rank element counts;
 * - in place is defined by pointer arithmetic, not by a flag:
 *   - allgather: `sendbuf == recvbuf + rank * sendcount`;
 *   - reduce-scatter: `recvbuf == sendbuf + rank * recvcount`;
 *   - allreduce, alltoall: `sendbuf == recvbuf`;
 * - a zero count is a legal no-op: it moves nothing, needs no buffers and
 *   completes at once (a nonblocking call still returns a request).
 *
 * Every call returns a ::zsh_status_t. On failure, zsh_last_error() returns a
 * message written by the code that first detected the failure.
 *
 * Failures: a collective never waits forever and never returns another
 * call's data.
 * - Every collective has a deadline: ZSH_TIMEOUT seconds (300 by default),
 *   zsh_comm_set_timeout() per communicator, zsh_request_set_timeout() per
 *   nonblocking call. ZSH_ERR_TIMEOUT names the call, its sequence number
 *   and the peers not heard from.
 * - A peer that dies is detected by the transport within about twice
 *   ZSH_KEEPALIVE seconds; every pending and later collective on each
 *   communicator it belongs to then fails with ZSH_ERR_PEER_FAILED, naming it.
 * - Each collective's descriptor (sequence number, type, count, dtype, op,
 *   root) is compared between ring neighbours. Ranks that called different
 *   collectives fail with ZSH_ERR_MISMATCH, naming both calls, e.g.
 *   `seq 57 on comm 1: rank 1 called allgather(count=10, fp32) but rank 0
 *   called reduce_scatter(count=12, fp32, sum)`. So every collective, even
 *   one with a zero count, must be called by every rank of the communicator.
 * - A mismatch or zsh_comm_abort() on any member revokes the communicator
 *   on every member: pending and later collectives on it fail with that
 *   status and message. Only zsh_comm_destroy() remains to be called.
 * - Keep the buffers of a collective that failed allocated until the
 *   job's last communicator is destroyed: transfers with live peers that
 *   were already under way cannot be cancelled, and may still read or write
 *   them until then. zsh_comm_free_buffer() frees one when that is safe.
 * - With ZSH_TRACE=1, each communicator keeps a flight recorder of its last
 *   collectives and dumps it on a timeout, abort, mismatch or peer failure.
 *
 * Threads: the communicators of one job (one zsh_comm_init* call and the
 * communicators split from it) must be used by one thread at a time, except
 * zsh_comm_abort(), which any thread may call at any time. Separate jobs in
 * one process are independent.
 */
#ifndef ZEROSHARD_H_
#define ZEROSHARD_H_

#include <stddef.h>
#include <stdint.h>

#include <zeroshard/version.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Status of every ZeroShard call: 0 is success, 1 is "not yet", errors are negative. */
typedef enum {
    ZSH_OK              = 0,   /**< Success. */
    ZSH_INPROGRESS      = 1,   /**< A nonblocking operation has not finished yet. */
    ZSH_ERR_INVALID_ARG = -1,  /**< An argument was rejected; nothing was sent. */
    ZSH_ERR_NO_MEMORY   = -2,  /**< An allocation failed. */
    ZSH_ERR_UNSUPPORTED = -3,  /**< The operation is not supported in this build or setting. */
    ZSH_ERR_TRANSPORT   = -4,  /**< The transport (UCX, sockets) reported a failure. */
    ZSH_ERR_TIMEOUT     = -5,  /**< A deadline passed (see ZSH_TIMEOUT). */
    ZSH_ERR_PEER_FAILED = -6,  /**< A peer process failed or disconnected. */
    ZSH_ERR_MISMATCH    = -7,  /**< Ranks disagree about a call (size, type, order). */
    ZSH_ERR_IO          = -8,  /**< A file or socket I/O error. */
    ZSH_ERR_ABORTED     = -9,  /**< The communicator was aborted. */
    ZSH_ERR_INTERNAL    = -10  /**< A bug in ZeroShard; please report it. */
} zsh_status_t;

/** Element types. fp16 and bf16 reductions accumulate in fp32 and round once. */
typedef enum {
    ZSH_INT8,     /**< int8_t */
    ZSH_UINT8,    /**< uint8_t */
    ZSH_INT32,    /**< int32_t */
    ZSH_UINT32,   /**< uint32_t */
    ZSH_INT64,    /**< int64_t */
    ZSH_UINT64,   /**< uint64_t */
    ZSH_FLOAT16,  /**< IEEE 754 binary16, stored as 16 bits */
    ZSH_BFLOAT16, /**< bfloat16, the upper 16 bits of a binary32 */
    ZSH_FLOAT32,  /**< float */
    ZSH_FLOAT64   /**< double */
} zsh_dtype_t;

/** Reduction operations. ::ZSH_AVG is defined for the floating types only. */
typedef enum {
    ZSH_SUM,  /**< Sum; integers wrap around as two's complement. */
    ZSH_PROD, /**< Product; integers wrap around as two's complement. */
    ZSH_MIN,  /**< Minimum; a NaN in any input gives NaN. */
    ZSH_MAX,  /**< Maximum; a NaN in any input gives NaN. */
    ZSH_AVG   /**< Sum divided by the number of ranks (floating types only); for fp16
                   and bf16 the fp32 sum is divided in fp32, then rounded once. */
} zsh_op_t;

/**
 * A communicator: a group of ranks that run collectives together. Opaque.
 *
 * Handles are checked, not trusted. Every function taking a communicator
 * refuses one that was already destroyed with ZSH_ERR_INVALID_ARG
 * ("zsh_comm_destroy: comm 0x... was already destroyed"), and a pointer to
 * readable memory that holds no communicator with "... is not a
 * communicator"; zsh_comm_rank(), zsh_comm_size() and zsh_comm_get_timeout()
 * answer -1 and say why in zsh_last_error(). The library keeps, rather than
 * frees, the memory of the last 256 communicators and requests whose jobs
 * gave them back (the oldest is freed when a newer one comes, and all at
 * exit), so within that window a stale handle reads no freed memory.
 *
 * What stays undefined: a handle older than that window (its memory may have
 * been reused), a pointer to unmapped memory, and a handle destroyed by one
 * thread while another is still using it.
 */
typedef struct zsh_comm zsh_comm_t;

/**
 * A nonblocking collective in flight. Opaque; owned by the caller until
 * zsh_request_free().
 *
 * A freed request is refused by zsh_request_test(), zsh_request_wait() and
 * zsh_request_set_timeout() with ZSH_ERR_INVALID_ARG ("req 0x... was already
 * freed"), and a second zsh_request_free() leaves it alone and says so in
 * zsh_last_error(). Requests are pooled per job, so this holds until a later
 * nonblocking call of the job takes the same request from the pool: the old
 * handle then names the new call, and using it is undefined.
 */
typedef struct zsh_request zsh_request_t;

/**
 * Caller-supplied out-of-band exchange, used only while a communicator is
 * created (zsh_comm_init_oob() does not keep it). This is the seam through
 * which a framework bootstraps ZeroShard with its own launcher or store;
 * <zeroshard/mpi.h> implements it over MPI_Allgather.
 */
typedef struct zsh_oob {
    int   rank;  /**< This process's rank in [0, size). */
    int   size;  /**< Number of processes taking part. */
    void *ctx;   /**< Passed back to every callback. */
    /**
     * Gather @p len bytes from every rank into @p recv (size * len bytes), in
     * rank order. It may finish later: store a handle in @p *req_p and report
     * completion through @ref test. Return ZSH_OK on a successful start.
     */
    zsh_status_t (*allgather)(const void *send, void *recv, size_t len, void *ctx, void **req_p);
    /** ZSH_OK once the allgather behind @p req is done, ZSH_INPROGRESS before, or an error. */
    zsh_status_t (*test)(void *req);
    /** Release a handle returned by @ref allgather (called once it is done or failed). */
    void         (*free)(void *req);
} zsh_oob_t;

/**
 * @brief Text for a status code.
 * @param status Any value; unknown values give "unknown status".
 * @return A static string, never NULL.
 */
const char *zsh_status_string(zsh_status_t status);

/**
 * @brief The last failure seen by the calling thread.
 *
 * The message names what failed and where, e.g. the rejected argument and its
 * value, or the collective, its sequence number and the silent peers.
 * @return A thread-local string, never NULL ("" if nothing failed yet). It
 *         stays valid until the next failing ZeroShard call on this thread.
 */
const char *zsh_last_error(void);

/**
 * @brief Create a communicator over all processes of the job, bootstrapped
 *        from the environment.
 *
 * With torchrun-style variables (`RANK`, `WORLD_SIZE`, `MASTER_ADDR` and
 * `MASTER_PORT`; `ZSH_RANK`, `ZSH_WORLD_SIZE`, `ZSH_MASTER_ADDR` and
 * `ZSH_MASTER_PORT` win over them), rank 0 hosts a TCP store at
 * MASTER_ADDR:MASTER_PORT through which the ranks exchange transport
 * addresses; the store is shut down before this call returns. Without
 * `RANK`, a process started by a PMIx launcher (mpirun, srun) bootstraps
 * through PMIx instead. `ZSH_BOOTSTRAP=env|pmix` forces one of the two.
 *
 * A job launched for N ranks never becomes N jobs of one: where
 * `WORLD_SIZE` and the size an MPI launcher gave the job
 * (`OMPI_COMM_WORLD_SIZE`, `PMI_SIZE`) are 1 and above 1, the call fails with
 * ZSH_ERR_INVALID_ARG, saying which launcher each expects.
 *
 * Collective over all ranks of the job.
 * @param[out] comm_p The new communicator, set only on success.
 * @return ZSH_OK, or ZSH_ERR_INVALID_ARG naming a missing or malformed
 *         variable, ZSH_ERR_TIMEOUT if the store could not be reached, ...
 */
zsh_status_t zsh_comm_init(zsh_comm_t **comm_p);

/**
 * @brief Check that MPI and the torchrun-style environment agree on the
 *        job's size; zsh_comm_init_mpi() (zeroshard/mpi.h) calls it first.
 *
 * A program that bootstraps through MPI but was started by zshrun or
 * torchrun sees MPI_COMM_WORLD of 1 rank in each of N processes; one started
 * by mpirun with `WORLD_SIZE=1` left in its environment is the reverse. Both
 * would run as N jobs of one rank, so both are refused. Local: nothing is
 * exchanged.
 * @param[in] mpi_world_size The number of processes in MPI_COMM_WORLD.
 * @return ZSH_OK, or ZSH_ERR_INVALID_ARG where `WORLD_SIZE` (or
 *         `ZSH_WORLD_SIZE`) is above 1 and @p mpi_world_size is 1, or 1 and
 *         @p mpi_world_size above 1, with zsh_last_error() saying which
 *         launcher each expects; or ZSH_ERR_INVALID_ARG naming a malformed
 *         bootstrap variable.
 */
zsh_status_t zsh_comm_check_mpi_world(int mpi_world_size);

/**
 * @brief Create a communicator with a caller-supplied out-of-band allgather.
 *
 * Collective over the @p oob->size processes. The OOB callbacks are used only
 * during this call.
 * @param[in]  oob    Rank, size and allgather callbacks; not kept.
 * @param[out] comm_p The new communicator, set only on success.
 */
zsh_status_t zsh_comm_init_oob(const zsh_oob_t *oob, zsh_comm_t **comm_p);

/**
 * @brief Split a communicator by color, ordering the new ranks by (key, old rank).
 *
 * Collective over all ranks of @p comm. Ranks passing a negative @p color get
 * no communicator (*newcomm_p is set to NULL) but must still take part.
 * @param[in]  comm      The parent; it stays valid and independent.
 * @param[in]  color     Ranks with equal color land in the same communicator.
 * @param[in]  key       Orders ranks within the new communicator.
 * @param[out] newcomm_p The new communicator, set only on success.
 */
zsh_status_t zsh_comm_split(zsh_comm_t *comm, int color, int key, zsh_comm_t **newcomm_p);

/**
 * @brief Abort a communicator: pending and future collectives on it fail with
 *        ZSH_ERR_ABORTED. Safe to call from any thread.
 *
 * The next progress pass on this rank tells the other members, whose pending
 * and future collectives on it then fail with ZSH_ERR_ABORTED too, naming
 * this rank. The communicator must still be destroyed with zsh_comm_destroy().
 */
zsh_status_t zsh_comm_abort(zsh_comm_t *comm);

/**
 * @brief Set how long each later collective on @p comm may take before it
 *        fails with ZSH_ERR_TIMEOUT. Local: other ranks keep their own.
 * @param comm    Communicator.
 * @param seconds From 0.001 to 31536000 (a year), the range ZSH_TIMEOUT takes;
 *                the default is ZSH_TIMEOUT.
 */
zsh_status_t zsh_comm_set_timeout(zsh_comm_t *comm, double seconds);

/** @brief The timeout of collectives on @p comm in seconds, or -1 if @p comm is NULL,
 *         destroyed or not a communicator (zsh_last_error() says which). */
double zsh_comm_get_timeout(const zsh_comm_t *comm);

/**
 * @brief Make every later reduce-scatter and all-reduce on @p comm follow
 *        the deterministic order, or stop doing so.
 *
 * The contract, in this mode: each element of the result is
 * \code
 *   acc = A(x[0]);  acc = acc op A(x[1]);  ...;  acc = acc op A(x[N-1]);
 *   result = T(op == ZSH_AVG ? acc / N : acc);
 * \endcode
 * where x[r] is rank r's input at that element, N the communicator's size,
 * A the accumulation type (fp32 for ZSH_FLOAT16, ZSH_BFLOAT16 and
 * ZSH_FLOAT32, fp64 for ZSH_FLOAT64, the type itself for the integers) and
 * T() rounds to nearest even, once. The bits depend only on the inputs, N
 * and each input's rank; not on the algorithm (chosen or forced by
 * ZSH_<COLL>_ALGO), ZSH_CHUNK_SIZE, ZSH_PIPELINE_DEPTH, the message's size
 * or where an element sits in it, the node layout, threads or timing. An
 * algorithm that reduces in another order (recursive doubling, the ring,
 * the hierarchical one) is not run in this mode: "ordered" runs instead,
 * where each block's owner receives every rank's contribution and reduces
 * them in rank order; zsh_info -s lists what runs. Calls on device buffers
 * (NCCL) are refused with ZSH_ERR_UNSUPPORTED in this mode.
 *
 * Every rank of @p comm must make the same setting before its next call:
 * ranks that disagree may choose different algorithms (the call then fails
 * with ZSH_ERR_MISMATCH naming both) or reduce in different orders. A
 * communicator split from @p comm inherits the setting. All-gather,
 * broadcast and all-to-all only move data and are the same in both modes.
 * @param comm Communicator.
 * @param on   1 for the deterministic order, 0 for the fastest; the
 *             default is ZSH_DETERMINISTIC (0).
 * @return ZSH_ERR_INVALID_ARG for a handle that is not a live
 *         communicator or an @p on other than 0 or 1.
 */
zsh_status_t zsh_comm_set_deterministic(zsh_comm_t *comm, int on);

/** @brief 1 if reductions on @p comm follow the deterministic order
 *         (zsh_comm_set_deterministic()), 0 if not, or -1 if @p comm is
 *         NULL, destroyed or not a communicator (zsh_last_error() says which). */
int zsh_comm_get_deterministic(const zsh_comm_t *comm);

/**
 * @brief Destroy a communicator.
 *
 * Every request created on it must have been freed first; otherwise the call
 * fails with ZSH_ERR_INVALID_ARG and the communicator stays usable. When the
 * last communicator of a job is destroyed, the transport is torn down after a
 * fence over all ranks, so this is collective over the ranks of the job.
 * @return ZSH_ERR_INVALID_ARG for NULL, for requests still out, and for a
 *         communicator already destroyed (a second destroy changes nothing).
 */
zsh_status_t zsh_comm_destroy(zsh_comm_t *comm);

/**
 * @brief Free a buffer that collectives of @p comm's job used, once no
 *        transfer can write it any more.
 *
 * A collective that failed may leave receives under way (see above): their
 * data may still land in its buffers until the job's last communicator is
 * destroyed. This hands such a buffer over instead of freeing it:
 * @p release(@p ptr) runs at once when no collective of the job has failed
 * leaving a transfer under way, else right after the job's transport is torn
 * down, in the destroy of its last communicator. A buffer no collective
 * ever used may be freed either way. (Sends left under way count too: they
 * may still read it.)
 * @param comm    A live communicator of the job.
 * @param ptr     The buffer; NULL does nothing.
 * @param release What frees it (free(), or the allocator's own).
 * @return ZSH_ERR_INVALID_ARG, freeing nothing, if @p comm is NULL, destroyed
 *         or not a communicator, or @p release is NULL.
 */
zsh_status_t zsh_comm_free_buffer(zsh_comm_t *comm, void *ptr, void (*release)(void *ptr));

/** @brief This process's rank in @p comm, or -1 if @p comm is NULL, destroyed
 *         or not a communicator (zsh_last_error() says which). */
int zsh_comm_rank(const zsh_comm_t *comm);

/** @brief Number of ranks in @p comm, or -1 if @p comm is NULL, destroyed or
 *         not a communicator (zsh_last_error() says which). */
int zsh_comm_size(const zsh_comm_t *comm);

/**
 * @brief Where this rank sits among the nodes of @p comm (zsh_info -t prints
 *        the map).
 *
 * Two ranks share a node when their host names (or ZSH_NODE_NAME) and their
 * kernels' boot ids match. Nodes are numbered in the order their first rank
 * appears in @p comm; local ranks count only @p comm's ranks on that node, in
 * rank order. zsh_comm_split(comm, node, local_rank, ...) therefore makes one
 * communicator per node, as MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) does.
 * Any output may be NULL. Not collective.
 * @param[in]  comm         The communicator.
 * @param[out] node_p       This rank's node, in [0, *nnodes_p).
 * @param[out] nnodes_p     Nodes @p comm spans.
 * @param[out] local_rank_p This rank among @p comm's ranks on its node.
 * @param[out] local_size_p @p comm's ranks on this rank's node.
 * @return ZSH_ERR_INVALID_ARG if @p comm is NULL, destroyed or not a
 *         communicator; outputs are set only on success.
 */
zsh_status_t zsh_comm_node(const zsh_comm_t *comm, int *node_p, int *nnodes_p, int *local_rank_p,
                           int *local_size_p);

/**
 * @brief Gather @p sendcount elements from every rank into @p recvbuf, in rank order.
 * @param sendbuf   @p sendcount elements; may be `recvbuf + rank * sendcount` (in place).
 * @param recvbuf   size * @p sendcount elements.
 * @param sendcount Elements contributed by each rank.
 * @param dtype     Element type.
 * @param comm      Communicator.
 */
zsh_status_t zsh_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           zsh_dtype_t dtype, zsh_comm_t *comm);

/**
 * @brief Reduce size * @p recvcount elements across ranks and leave block
 *        `rank` of the result in @p recvbuf.
 * @param sendbuf   size * @p recvcount elements.
 * @param recvbuf   @p recvcount elements; may be `sendbuf + rank * recvcount` (in place).
 * @param recvcount Elements each rank receives.
 * @param dtype     Element type.
 * @param op        Reduction operation.
 * @param comm      Communicator.
 */
zsh_status_t zsh_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm);

/**
 * @brief Reduce @p count elements across ranks; every rank gets the result.
 *
 * Every rank receives bitwise-identical results.
 * @param sendbuf @p count elements; may equal @p recvbuf (in place).
 * @param recvbuf @p count elements.
 * @param count   Elements on every rank.
 * @param dtype   Element type.
 * @param op      Reduction operation.
 * @param comm    Communicator.
 */
zsh_status_t zsh_allreduce(const void *sendbuf, void *recvbuf, size_t count,
                           zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm);

/**
 * @brief Copy @p count elements of @p buf on @p root to @p buf on every rank.
 * @param buf   @p count elements: read on @p root, written on the other ranks.
 * @param count Elements to copy.
 * @param dtype Element type.
 * @param root  Rank in [0, size) that holds the data.
 * @param comm  Communicator.
 */
zsh_status_t zsh_broadcast(void *buf, size_t count, zsh_dtype_t dtype, int root, zsh_comm_t *comm);

/**
 * @brief Send block j of @p sendbuf to rank j, which keeps it as block `rank`
 *        of its @p recvbuf (MPI_Alltoall with equal blocks).
 *
 * Every rank passes the same @p count and @p dtype. In place (@p sendbuf ==
 * @p recvbuf) each block is replaced by the one its rank sent, as with
 * MPI_IN_PLACE; the host algorithms then send from a copy of the input, so
 * it costs size * @p count elements of scratch. Buffers that overlap
 * otherwise are refused. On CUDA device buffers the call is a group of
 * ncclSend/ncclRecv; in place there is refused with ZSH_ERR_UNSUPPORTED.
 * @param sendbuf size * @p count elements: block j (elements
 *                [j * count, (j + 1) * count)) goes to rank j.
 * @param recvbuf size * @p count elements: block j comes from rank j.
 * @param count   Elements of each block, the same on every rank; 0 moves
 *                nothing, as for every collective.
 * @param dtype   Element type.
 * @param comm    Communicator.
 * @return ZSH_ERR_INVALID_ARG, before anything is sent, for a NULL buffer
 *         with @p count > 0, overlapping buffers not in place, an invalid
 *         dtype or a size that overflows size_t.
 */
zsh_status_t zsh_alltoall(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                          zsh_comm_t *comm);

/** @brief Return only once every rank of @p comm has entered the barrier. */
zsh_status_t zsh_barrier(zsh_comm_t *comm);

/**
 * @brief Start an all-gather; see zsh_allgather().
 * @param[in]  sendbuf   As for zsh_allgather().
 * @param[out] recvbuf   As for zsh_allgather(); valid once the request completes.
 * @param[in]  sendcount Elements contributed by each rank.
 * @param[in]  dtype     Element type.
 * @param[in]  comm      Communicator.
 * @param[out] req_p The request, set only on success. Complete it with
 *                   zsh_request_test() or zsh_request_wait(), then release it
 *                   with zsh_request_free(). Buffers must stay untouched until
 *                   it completes.
 */
zsh_status_t zsh_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                            zsh_dtype_t dtype, zsh_comm_t *comm, zsh_request_t **req_p);

/** @brief Start a reduce-scatter; see zsh_reduce_scatter() and zsh_iallgather(). */
zsh_status_t zsh_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                 zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                 zsh_request_t **req_p);

/** @brief Start an all-reduce; see zsh_allreduce() and zsh_iallgather(). */
zsh_status_t zsh_iallreduce(const void *sendbuf, void *recvbuf, size_t count,
                            zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                            zsh_request_t **req_p);

/**
 * @brief Start a broadcast; see zsh_broadcast() and zsh_iallgather().
 *
 * It chooses among the algorithms zsh_broadcast() may choose, by the same
 * rule, and takes the device path on device buffers as zsh_broadcast() does.
 * @param[in,out] buf   As for zsh_broadcast(): read on @p root, written on
 *                      the other ranks once the request completes.
 * @param[in]     count Elements to copy.
 * @param[in]     dtype Element type.
 * @param[in]     root  Rank in [0, size) that holds the data.
 * @param[in]     comm  Communicator.
 * @param[out]    req_p The request, set only on success; as for zsh_iallgather().
 *                      On @p root too, @p buf must stay untouched until it
 *                      completes: other ranks may still be reading it.
 * @return ZSH_ERR_INVALID_ARG, before anything is sent, for what
 *         zsh_broadcast() refuses and for a NULL @p req_p.
 */
zsh_status_t zsh_ibroadcast(void *buf, size_t count, zsh_dtype_t dtype, int root,
                            zsh_comm_t *comm, zsh_request_t **req_p);

/**
 * @brief Start an all-to-all; see zsh_alltoall() and zsh_iallgather().
 *
 * It chooses among the algorithms zsh_alltoall() may choose, by the same
 * rule, and takes the device path on device buffers as zsh_alltoall() does.
 * @param[in]  sendbuf As for zsh_alltoall(); read until the request completes.
 * @param[out] recvbuf As for zsh_alltoall(); valid once the request completes.
 * @param[in]  count   Elements of each block.
 * @param[in]  dtype   Element type.
 * @param[in]  comm    Communicator.
 * @param[out] req_p   The request, set only on success; as for zsh_iallgather().
 * @return ZSH_ERR_INVALID_ARG, before anything is sent, for what
 *         zsh_alltoall() refuses and for a NULL @p req_p.
 */
zsh_status_t zsh_ialltoall(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                           zsh_comm_t *comm, zsh_request_t **req_p);

/**
 * @brief Start a barrier; see zsh_barrier() and zsh_iallgather().
 *
 * The request completes once every rank of @p comm has started its barrier.
 * @param[in]  comm  Communicator.
 * @param[out] req_p The request, set only on success; as for zsh_iallgather().
 * @return ZSH_ERR_INVALID_ARG, before anything is sent, if @p comm is not a
 *         live communicator or @p req_p is NULL.
 */
zsh_status_t zsh_ibarrier(zsh_comm_t *comm, zsh_request_t **req_p);

/** Any sender, as the @p peer of zsh_irecv(); zsh_request_source() then names it. */
#define ZSH_ANY_SOURCE (-1)

/** The largest tag of a point-to-point message (tags are 0 .. ZSH_TAG_MAX). */
#define ZSH_TAG_MAX ((1 << 20) - 1)

/**
 * @brief Start sending @p count elements to one rank of @p comm.
 *
 * Point-to-point messages take no part in the collectives' order: only the
 * two ranks call, and a collective in flight on @p comm never matches them.
 * Between two ranks, messages of one tag arrive in the order they were sent.
 * The request completes once @p buf may be reused, which may be before the
 * receiver has posted its receive. It fails with ZSH_ERR_TIMEOUT past the
 * communicator's timeout, as a collective does.
 * @param[in]  buf   The data; read until the request completes. May be NULL
 *                   when @p count is 0.
 * @param[in]  count Elements to send; the receive must ask for exactly as many
 *                   bytes.
 * @param[in]  dtype Element type.
 * @param[in]  peer  The receiver's rank in @p comm, not this rank's.
 * @param[in]  tag   0 .. ZSH_TAG_MAX; the receive names the same.
 * @param[in]  comm  Communicator; host buffers only.
 * @param[out] req_p The request, set only on success; as for zsh_iallgather().
 * @return ZSH_ERR_INVALID_ARG, before anything is sent, naming the argument:
 *         a @p peer out of range or this rank, a @p tag out of range, a NULL
 *         @p buf with elements, a bad @p dtype, a NULL @p req_p, a @p comm
 *         that is not live. ZSH_ERR_UNSUPPORTED for a device buffer.
 */
zsh_status_t zsh_isend(const void *buf, size_t count, zsh_dtype_t dtype, int peer, int tag,
                       zsh_comm_t *comm, zsh_request_t **req_p);

/**
 * @brief Start receiving @p count elements from one rank of @p comm, or from
 *        whichever sends first.
 *
 * The message must be exactly @p count elements' bytes: a longer or shorter
 * one fails the request with ZSH_ERR_MISMATCH naming both lengths, and the
 * communicator stays usable.
 * @param[out] buf   Where the message lands; valid once the request completes.
 * @param[in]  count Elements to receive.
 * @param[in]  dtype Element type.
 * @param[in]  peer  The sender's rank in @p comm (not this rank's), or
 *                   ZSH_ANY_SOURCE for the first message of @p tag from any
 *                   other member.
 * @param[in]  tag   0 .. ZSH_TAG_MAX, as the sender gave it.
 * @param[in]  comm  Communicator; host buffers only.
 * @param[out] req_p The request, set only on success; as for zsh_iallgather().
 * @return As for zsh_isend().
 */
zsh_status_t zsh_irecv(void *buf, size_t count, zsh_dtype_t dtype, int peer, int tag,
                       zsh_comm_t *comm, zsh_request_t **req_p);

/**
 * @brief The rank in its communicator that sent what a completed receive got.
 *
 * For a receive from ZSH_ANY_SOURCE this is who sent first; for one from a
 * named rank, that rank.
 * @param[in]  req      A request of zsh_irecv() that completed with ZSH_OK.
 * @param[out] source_p The sender's rank, set only on success.
 * @return ZSH_ERR_INVALID_ARG if @p req is not a live request, is not a
 *         receive, has not completed or failed, or @p source_p is NULL.
 */
zsh_status_t zsh_request_source(const zsh_request_t *req, int *source_p);

/**
 * @brief Drive progress and report the state of @p req without blocking.
 * @return ZSH_OK when done, ZSH_INPROGRESS before, or the error it failed with;
 *         zsh_last_error() then names the failure on the calling thread, whichever
 *         thread's call found it.
 */
zsh_status_t zsh_request_test(zsh_request_t *req);

/**
 * @brief Wait until @p req completes or its deadline (ZSH_TIMEOUT) passes.
 *
 * The waiter polls briefly, then yields its core for up to ZSH_YIELD_TIME,
 * then sleeps on the transport's event descriptor, so ranks that outnumber
 * cores do not starve each other. When they do outnumber the node's
 * processors it yields from the first poll on.
 * @return ZSH_OK, or the error the request failed with (ZSH_ERR_TIMEOUT names
 *         the collective, its sequence number and the silent peers), named by
 *         zsh_last_error() as for zsh_request_test().
 */
zsh_status_t zsh_request_wait(zsh_request_t *req);

/**
 * @brief Give one nonblocking collective its own deadline: @p seconds after it
 *        was posted, instead of its communicator's timeout.
 *
 * A deadline already past fails the request with ZSH_ERR_TIMEOUT at its next
 * test or wait.
 * @param req     A request still in progress.
 * @param seconds More than 0.
 */
zsh_status_t zsh_request_set_timeout(zsh_request_t *req, double seconds);

/**
 * @brief Release a request. A request still in progress is cancelled first:
 *        its communicator should then be considered broken. NULL is ignored;
 *        a request already freed is left alone, with the reason in
 *        zsh_last_error().
 */
void zsh_request_free(zsh_request_t *req);

/**
 * @brief The library version at run time, to compare with ZSH_VERSION_* from
 *        <zeroshard/version.h>. Any pointer may be NULL.
 */
void zsh_get_version(int *major_p, int *minor_p, int *patch_p);

#ifdef __cplusplus
}
#endif

#endif /* ZEROSHARD_H_ */
