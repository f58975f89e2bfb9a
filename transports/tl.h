/*
 * The transport interface: the one ops table through which coll/ moves bytes.
 *
 * A transport knows ranks, tags and buffers, never collectives. Every
 * operation either finishes at once (ZSH_OK, no handle), is started
 * (ZSH_INPROGRESS, a handle to test and release), or fails. Completion is
 * polled with test() rather than reported by callbacks, so a collective's
 * state machine only advances inside its own progress function and never
 * re-enters itself.
 */
#ifndef ZSH_TRANSPORTS_TL_H_
#define ZSH_TRANSPORTS_TL_H_

#include "core/config.h"
#include "ucx/shm/box.h" /* zsh_box_parts_t */

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Mailboxes per process, and the longest message one carries (box_send);
 * boards per process (one per communicator id, as mailboxes), and the
 * longest message one carries (board_put). */
#define ZSH_TL_BOXES         4096
#define ZSH_TL_BOX_MSG_MAX   4224
#define ZSH_TL_BOARD_MSG_MAX (16384 + 64)

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

typedef struct zsh_tl_ops {
    const char *name;

    zsh_status_t (*create)(const zsh_config_t *cfg, zsh_tl_ctx_t **ctx_p);
    /* Releases everything; call after a fence so no peer still sends to us. */
    void         (*destroy)(zsh_tl_ctx_t *ctx);
    /* This process's address, for the out-of-band exchange; owned by @ctx. */
    zsh_status_t (*address)(zsh_tl_ctx_t *ctx, const void **addr_p, size_t *len_p);
    /* Report peer failures to @cb; set before connect(). */
    void         (*on_failure)(zsh_tl_ctx_t *ctx, zsh_tl_failure_cb_t cb, void *arg);
    /* Treat @peer as failed, as another rank reported: no more operations
     * with it, and its connection is torn down without flushing. */
    void         (*mark_failed)(zsh_tl_ctx_t *ctx, int peer);
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

    /* One-sided access to registered memory. */
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

    /*
     * Single-copy access to another process of this node (cross-memory
     * attach), for the node-local algorithms: whether this process and
     * @peer may read and write each other's memory, and a synchronous copy
     * of @len bytes between @local and address @raddr of @peer, into @local,
     * or with @write out of it. Reachability is the same seen from either
     * side, so ranks that read the same addresses reach the same verdict.
     * A copy fails with ZSH_ERR_PEER_FAILED if @peer is gone.
     */
    bool         (*peer_copy_reachable)(zsh_tl_ctx_t *ctx, int peer);
    zsh_status_t (*peer_copy)(zsh_tl_ctx_t *ctx, int peer, void *local, uint64_t raddr,
                              size_t len, bool write);

    /*
     * Mailboxes (transports/shm/box.h): small messages to a process of this
     * node through shared memory, where box_reachable says both sides have
     * them (the same answer from either side). Box @box of a pair carries
     * messages with tickets 0, 1, 2, ... under @key; the sender writes them
     * in ticket order. box_send returns ZSH_INPROGRESS while the ticket's
     * slot still holds an earlier message, box_recv until the message is
     * there. Nothing wakes wait() for them: waiters poll.
     */
    bool         (*box_reachable)(zsh_tl_ctx_t *ctx, int peer);
    zsh_status_t (*box_send)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                             uint64_t ticket, const void *buf, size_t len);
    zsh_status_t (*box_recv)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                             uint64_t ticket, void *buf, size_t cap, size_t *len_p);
    /*
     * Boards (transports/shm/board.h): one message that @readers processes
     * of this node each read, written once into this process's own board
     * @box, for peers that box_reachable says share mailboxes with it.
     * board_put returns ZSH_INPROGRESS while the ticket's slot still holds
     * an earlier message not every reader has released. board_peek returns
     * ZSH_INPROGRESS until @peer has put the message, then where it lies in
     * @peer's memory; it stays there until this reader board_releases it.
     * Each reader peeks at and releases each message once.
     */
    zsh_status_t (*board_put)(zsh_tl_ctx_t *ctx, unsigned box, uint64_t key, uint64_t ticket,
                              uint32_t readers, const zsh_box_parts_t *parts);
    zsh_status_t (*board_peek)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                               uint64_t ticket, const void **msg_p, size_t *len_p);
    void         (*board_release)(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t ticket);

    /* ZSH_OK once @req is done, ZSH_INPROGRESS before, or the error it failed with. */
    zsh_status_t (*test)(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
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
} zsh_tl_ops_t;

extern const zsh_tl_ops_t zsh_tl_ucx_ops;

#endif
