/*
 * The transport interface: the one ops table through which the collective
 * layer moves bytes, whatever moves them.
 *
 * A transport knows ranks, tags and buffers, never collectives. Every
 * operation either finishes at once (ZSH_OK, no handle), is started
 * (ZSH_INPROGRESS, a handle to test and release), or fails. Completion is
 * polled with test() rather than reported by callbacks, so a collective's
 * state machine only advances inside its own progress function and never
 * re-enters itself.
 *
 * The table has a required part, which every transport fills: set-up and
 * failure reports, tagged messages, completion and progress. Two groups are
 * optional, and NULL where a transport lacks them; the collective layer then
 * does without what they give:
 *
 *   rma    one-sided reads and writes of registered memory
 *   local  shortcuts between processes of one node: single-copy access to a
 *          peer's memory, and mailboxes and boards (small ordered messages
 *          in memory both processes map)
 *
 * Which transports exist, and what each fills:
 *
 *   zsh_tl_ucx_ops (transports/ucx)  host memory over UCX; all three parts.
 *       Its local group is its own, not UCX's: cross-memory attach
 *       (transports/ucx/cma) and shared-memory segments (transports/ucx/shm),
 *       whose identities ride in its address.
 *
 * Device memory has a table of its own kind, zsh_tl_dev_ops_t below: a
 * library that runs whole collectives on GPU buffers (NCCL,
 * transports/nccl). It is the one place a transport knows collectives, as
 * NCCL does; the collective layer still checks and describes each call and
 * exchanges its descriptor over the host transport before it enqueues it.
 *
 * A new transport is a folder here with an ops table of typed functions,
 * declared below and chosen in tl.c; nothing above this folder changes.
 */
#ifndef ZSH_TRANSPORTS_TL_H_
#define ZSH_TRANSPORTS_TL_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zsh_tl_ctx  zsh_tl_ctx_t;   /* one per process: worker, endpoints */
typedef struct zsh_tl_req  zsh_tl_req_t;   /* one operation in flight */
typedef struct zsh_tl_mem  zsh_tl_mem_t;   /* local memory registered for RMA */
typedef struct zsh_tl_rkey zsh_tl_rkey_t;  /* a peer's registered memory */

/*
 * Called from inside progress() when the transport learns that rank @peer
 * has failed (died, or became unreachable). From then on operations with it
 * fail with ZSH_ERR_PEER_FAILED. Receives are not tied to a peer's
 * connection, so the caller must fail the ones that wait on @peer itself.
 */
typedef void (*zsh_tl_failure_cb_t)(void *arg, int peer, const char *reason);

/* A message of two pieces, sent as one: a head (a descriptor, say) and a
 * body (its data, straight from where it lies; may be empty). */
typedef struct zsh_tl_parts {
    const void *head;
    size_t      head_len;
    const void *body;
    size_t      body_len;
} zsh_tl_parts_t;

/* Optional: one-sided access to registered memory. */
typedef struct zsh_tl_rma_ops {
    zsh_status_t (*mem_reg)(zsh_tl_ctx_t *ctx, void *buf, size_t len, zsh_tl_mem_t **mem_p);
    void         (*mem_dereg)(zsh_tl_ctx_t *ctx, zsh_tl_mem_t *mem);
    /* A descriptor of @mem for peers; free it with rkey_buf_free(). */
    zsh_status_t (*rkey_pack)(zsh_tl_ctx_t *ctx, zsh_tl_mem_t *mem, void **buf_p, size_t *len_p);
    void         (*rkey_buf_free)(zsh_tl_ctx_t *ctx, void *buf);
    zsh_status_t (*rkey_unpack)(zsh_tl_ctx_t *ctx, int peer, const void *buf,
                                zsh_tl_rkey_t **rkey_p);
    void         (*rkey_destroy)(zsh_tl_ctx_t *ctx, zsh_tl_rkey_t *rkey);
    zsh_status_t (*put)(zsh_tl_ctx_t *ctx, int peer, const void *buf, size_t len,
                        uint64_t raddr, zsh_tl_rkey_t *rkey, zsh_tl_req_t **req_p);
    zsh_status_t (*get)(zsh_tl_ctx_t *ctx, int peer, void *buf, size_t len, uint64_t raddr,
                        zsh_tl_rkey_t *rkey, zsh_tl_req_t **req_p);
    /* Completes once earlier puts to @peer are visible there. */
    zsh_status_t (*flush)(zsh_tl_ctx_t *ctx, int peer, zsh_tl_req_t **req_p);
} zsh_tl_rma_ops_t;

/*
 * Optional: shortcuts to processes of this node. Each answers the same
 * from either side of a pair, so ranks that ask about the same peers reach
 * the same verdict.
 *
 * Single-copy access: whether this process and @peer may read and write
 * each other's memory, and a synchronous copy of @len bytes between @local
 * and address @raddr of @peer, into @local, or with @write out of it. A copy
 * fails with ZSH_ERR_PEER_FAILED if @peer is gone.
 *
 * Mailboxes and boards: numbered lines (0 .. lines - 1) of small messages,
 * each line used by one caller at a time, who names itself with a @key
 * (a stale message of an earlier user of the line has another) and numbers
 * its messages with tickets 0, 1, 2, ... that sender and receivers agree on.
 * A line holds a few messages not yet taken; a send whose ticket's slot is
 * still full returns ZSH_INPROGRESS, to be tried again in ticket order.
 * Nothing wakes wait() for them: waiters poll.
 *
 *   mailbox  box_send writes message @ticket of line @box into @peer's
 *            memory; the peer's box_recv copies it out, ZSH_INPROGRESS until
 *            it is there, ZSH_ERR_MISMATCH if it is longer than @cap.
 *   board    board_put writes message @ticket of line @box once, into this
 *            process's memory, for @readers peers; each reader board_peeks
 *            at it where it lies (ZSH_INPROGRESS until it is there) and
 *            board_releases it when done, after which the slot may be
 *            written again. Each reader peeks at and releases each message
 *            once.
 *   lines    lines_open makes line @line ready, of this process and of each
 *            of @peers (this process may be among them), for a caller that
 *            will use it with them: what it costs (shared memory mapped) is
 *            taken then, and a line that cannot be had fails there, naming
 *            why, rather than in a call. lines_close gives it back once the
 *            caller is done with it. Optional (NULL) for a transport whose
 *            lines cost nothing until used.
 */
typedef struct zsh_tl_local_ops {
    unsigned lines;          /* mailbox (and board) lines per process */
    size_t   box_msg_max;    /* longest mailbox message */
    size_t   board_msg_max;  /* longest board message */

    bool         (*copy_reachable)(zsh_tl_ctx_t *ctx, int peer);
    zsh_status_t (*copy)(zsh_tl_ctx_t *ctx, int peer, void *local, uint64_t raddr, size_t len,
                         bool write);

    bool         (*box_reachable)(zsh_tl_ctx_t *ctx, int peer);
    zsh_status_t (*box_send)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                             uint64_t ticket, const void *buf, size_t len);
    zsh_status_t (*box_recv)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                             uint64_t ticket, void *buf, size_t cap, size_t *len_p);
    zsh_status_t (*board_put)(zsh_tl_ctx_t *ctx, unsigned box, uint64_t key, uint64_t ticket,
                              uint32_t readers, const zsh_tl_parts_t *parts);
    zsh_status_t (*board_peek)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                               uint64_t ticket, const void **msg_p, size_t *len_p);
    void         (*board_release)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t ticket);
    zsh_status_t (*lines_open)(zsh_tl_ctx_t *ctx, unsigned line, const int *peers, int npeers);
    void         (*lines_close)(zsh_tl_ctx_t *ctx, unsigned line, const int *peers, int npeers);
} zsh_tl_local_ops_t;

typedef struct zsh_tl_ops {
    const char *name;

    /* @options: the transport's own options struct, as its ZSH_* table
     * fills it; NULL reads them from the environment. */
    zsh_status_t (*create)(const void *options, zsh_tl_ctx_t **ctx_p);
    /* Releases everything; call after a fence so no peer still sends to us. */
    void         (*destroy)(zsh_tl_ctx_t *ctx);
    /* This process's address, for the out-of-band exchange; owned by @ctx. */
    zsh_status_t (*address)(zsh_tl_ctx_t *ctx, const void **addr_p, size_t *len_p);
    /* Report peer failures to @cb; set before connect(). */
    void         (*on_failure)(zsh_tl_ctx_t *ctx, zsh_tl_failure_cb_t cb, void *arg);
    /* Treat @peer as failed, as another rank reported: no more operations
     * with it, and its connection is torn down without flushing. */
    void         (*mark_failed)(zsh_tl_ctx_t *ctx, int peer);
    /* Seconds between the transport's checks that its peers live: a death
     * is noticed within about two of them. */
    double       (*liveness_period)(zsh_tl_ctx_t *ctx);
    /* Connect to @nranks ranks; rank i's address starts at addrs + i * stride. */
    zsh_status_t (*connect)(zsh_tl_ctx_t *ctx, int self, int nranks, const void *addrs,
                            size_t stride);

    /* Tagged messages; a receive matches exactly @tag and must get exactly @len bytes. */
    zsh_status_t (*isend)(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, const void *buf, size_t len,
                          zsh_tl_req_t **req_p);
    zsh_status_t (*irecv)(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                          zsh_tl_req_t **req_p);
    /* Like irecv, but any message of at most @len bytes completes it: the
     * caller learns the length from what the message says. */
    zsh_status_t (*irecv_upto)(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                               zsh_tl_req_t **req_p);
    /* A receive of any tag t with (t & @mask) == (@tag & @mask), from any peer. */
    zsh_status_t (*irecv_any)(zsh_tl_ctx_t *ctx, uint64_t tag, uint64_t mask, void *buf,
                              size_t len, zsh_tl_req_t **req_p);

    /* ZSH_OK once @req is done, ZSH_INPROGRESS before, or the error it failed with. */
    zsh_status_t (*test)(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
    /* The tag a receive matched, once test() found it done and before
     * release(): what irecv_any learns about its sender. */
    uint64_t     (*recv_tag)(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
    /* Ask a pending receive to stop if it has not matched yet; it then
     * completes with ZSH_ERR_ABORTED. No effect on anything else. */
    void         (*cancel)(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
    /* Give @req back; a receive still pending is cancelled first. An
     * operation still in flight is kept until it ends, but its buffer may be
     * read or written until then: callers drain before giving buffers back. */
    void         (*release)(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);

    /* Advance communication; returns how many events were processed. */
    unsigned     (*progress)(zsh_tl_ctx_t *ctx);
    /* Sleep until the transport has something to process or @timeout_ms passes. */
    zsh_status_t (*wait)(zsh_tl_ctx_t *ctx, int timeout_ms);

    const zsh_tl_rma_ops_t   *rma;    /* optional: NULL without one-sided access */
    const zsh_tl_local_ops_t *local;  /* optional: NULL without node-local shortcuts */
} zsh_tl_ops_t;

/* The transports this library has (see the list at the top). */
extern const zsh_tl_ops_t zsh_tl_ucx_ops;

/* The transport for host memory. */
const zsh_tl_ops_t *zsh_tl_host(void);

/*
 * Device memory: collectives run whole by a device library on a stream.
 *
 * A device communicator is created by every member from one id, made on one
 * member and carried to the others by the caller (over the host transport);
 * creation is nonblocking: dev_test() says when it is ready. Calls are
 * posted in the same order on every member, one at a time: post() answers
 * ZSH_INPROGRESS, having done nothing, while the previous call is still
 * being enqueued. A posted call is an op: op_test() says when it has been
 * enqueued (@done false) or when its stream work has completed (@done true),
 * and reports the device library's asynchronous errors. abort() may be
 * called from any thread at any time: it stops the device library's work
 * of the communicator, after which its ops complete (their stream work
 * killed) and every call fails with ZSH_ERR_ABORTED. Errors carry the device
 * library's own text.
 */
typedef struct zsh_tl_dev    zsh_tl_dev_t;     /* a device communicator */
typedef struct zsh_tl_dev_op zsh_tl_dev_op_t;  /* one posted call */

typedef enum {
    ZSH_TL_DEV_ALLGATHER,
    ZSH_TL_DEV_REDUCE_SCATTER,
    ZSH_TL_DEV_ALLREDUCE,
    ZSH_TL_DEV_BROADCAST,
    ZSH_TL_DEV_ALLTOALL
} zsh_tl_dev_coll_t;

/* One call, in NCCL's conventions (counts per rank for allgather and
 * reduce-scatter, per block for alltoall, which is never in place;
 * broadcast in place in recvbuf). */
typedef struct zsh_tl_dev_call {
    zsh_tl_dev_coll_t coll;
    const void       *sendbuf;
    void             *recvbuf;
    size_t            count;
    zsh_dtype_t       dtype;
    zsh_op_t          op;
    int               root;
    void             *stream;   /* a cudaStream_t; NULL for the default stream */
    bool              track;    /* op_test(done) will be asked: mark its completion */
} zsh_tl_dev_call_t;

typedef struct zsh_tl_dev_ops {
    const char *name;
    size_t      id_len;          /* bytes of a communicator id */
    /* Whether a device can be used in this process: asked once, then
     * remembered; the error says what is missing. */
    zsh_status_t (*probe)(void);
    /* Whether @ptr is device memory, and of which device. Host memory,
     * pinned or not, and every pointer in a process without a device, is not. */
    zsh_status_t (*mem_query)(const void *ptr, bool *device_p, int *dev_p);
    /* The calling thread's current device. */
    zsh_status_t (*current)(int *dev_p);
    /* A stream that is not one of the device's: ZSH_ERR_INVALID_ARG. */
    zsh_status_t (*stream_check)(void *stream, int dev);

    zsh_status_t (*id_make)(void *id);
    zsh_status_t (*dev_start)(const void *id, int nranks, int rank, int dev,
                              zsh_tl_dev_t **dc_p);
    zsh_status_t (*dev_test)(zsh_tl_dev_t *dc);
    int          (*dev_device)(const zsh_tl_dev_t *dc);
    void         (*dev_abort)(zsh_tl_dev_t *dc);
    /* Frees @dc: finalised if healthy, else aborted first. */
    zsh_status_t (*dev_destroy)(zsh_tl_dev_t *dc);

    zsh_status_t (*post)(zsh_tl_dev_t *dc, const zsh_tl_dev_call_t *call, zsh_tl_dev_op_t **op_p);
    zsh_status_t (*op_test)(zsh_tl_dev_t *dc, zsh_tl_dev_op_t *op, bool done);
    void         (*op_release)(zsh_tl_dev_t *dc, zsh_tl_dev_op_t *op);
} zsh_tl_dev_ops_t;

/* The transport for device memory, or NULL in a build without one. */
const zsh_tl_dev_ops_t *zsh_tl_device(void);

#endif
