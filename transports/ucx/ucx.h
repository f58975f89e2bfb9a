/*
 * UCX transport internals shared by its files: context/worker/endpoints
 * (ctx.c), tagged messages (tag.c), RMA (rma.c), and the node-local group
 * (local.c) built from cross-memory attach (cma/) and shared-memory
 * mailboxes and boards (shm/), which are this transport's own, not UCX's.
 */
#ifndef ZSH_TRANSPORTS_UCX_UCX_H_
#define ZSH_TRANSPORTS_UCX_UCX_H_

#include "tl.h"
#include "ucx/cma/cma.h"
#include "ucx/config.h"
#include "ucx/shm/board.h"
#include "ucx/shm/box.h"

#include <ucp/api/ucp.h>

#include <stdbool.h>

/* What a process publishes ahead of its UCX worker address. */
typedef struct zsh_ucx_addr_hdr {
    zsh_cma_id_t cma;
    int64_t      box_fd;       /* its mailbox segment, or -1 */
} zsh_ucx_addr_hdr_t;

/* What a peer's endpoint error handler needs to know. */
typedef struct zsh_ucx_peer {
    struct zsh_tl_ctx *ctx;
    int                rank;
    bool               failed;     /* no more operations with it */
} zsh_ucx_peer_t;

struct zsh_tl_ctx {
    ucp_context_h  context;
    ucp_worker_h   worker;
    ucp_address_t *ucp_address;
    /* What address() publishes: a zsh_ucx_addr_hdr_t, then the worker's
     * address. */
    void          *address;
    size_t         address_len;
    zsh_cma_id_t   cma_self;
    zsh_cma_id_t  *cma_ids;    /* by rank, from connect() */
    zsh_box_budget_t box_budget; /* what our segments and our maps of peers' may map */
    zsh_box_seg_t  box_self;   /* our mailboxes; off when ZSH_SHM is */
    int64_t       *box_fds;    /* by rank: their segments' descriptors, -1 where no
                                  mailboxes are shared with them */
    zsh_box_seg_t *box_peers;  /* by rank: their segments, attached on first use,
                                  their lines mapped while a communicator uses them */
    int            efd;        /* worker event descriptor for sleeping waits */
    int            self;
    int            nranks;
    ucp_ep_h      *eps;        /* by rank */
    zsh_ucx_peer_t *peers;     /* by rank */
    zsh_tl_failure_cb_t on_failure;
    void          *on_failure_arg;
    double         keepalive;  /* seconds between UCX's liveness checks */
    /* Sends and RMA given back while still in flight, after a failed
     * collective: UCX cannot cancel them, and a rendezvous send whose
     * receiver gave up never completes. They are kept until they do. */
    void         **orphans;
    unsigned       norphans, orphans_cap;
};

/*
 * The space UCX reserves in each of its requests for us (request_size).
 * Operations are posted without completion callbacks and polled through
 * UCX's own request state, so only we write here, right after posting.
 */
struct zsh_tl_req {
    size_t   expected;   /* receives: bytes the caller asked for; SIZE_MAX: up to the buffer */
    bool     is_recv;
    int      peer;
    uint64_t tag;        /* receives: the tag matched, once test() found them done */
};

/* Log-and-return for a failed UCX call, naming the callee and UCX's reason. */
zsh_status_t zsh_ucx_error(const char *what, ucs_status_t status);

/* Turn what an nbx call returned into (status, *req_p). */
zsh_status_t zsh_ucx_posted(zsh_tl_ctx_t *ctx, ucs_status_ptr_t ptr, const char *what, int peer,
                            bool is_recv, size_t expected, zsh_tl_req_t **req_p);

zsh_status_t zsh_ucx_isend(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, const void *buf, size_t len,
                           zsh_tl_req_t **req_p);
zsh_status_t zsh_ucx_irecv(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                           zsh_tl_req_t **req_p);
zsh_status_t zsh_ucx_irecv_upto(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                                zsh_tl_req_t **req_p);
zsh_status_t zsh_ucx_irecv_any(zsh_tl_ctx_t *ctx, uint64_t tag, uint64_t mask, void *buf,
                               size_t len, zsh_tl_req_t **req_p);
/* ZSH_ERR_PEER_FAILED, with a message, if @peer is known to have failed. */
zsh_status_t zsh_ucx_check_peer(zsh_tl_ctx_t *ctx, int peer);
/* Record that @peer failed, as UCX reported with @status; tells the failure handler. */
void         zsh_ucx_peer_failed(zsh_tl_ctx_t *ctx, int peer, ucs_status_t status);
/* ... or found gone some other way (@reason says how). */
void         zsh_ucx_peer_gone(zsh_tl_ctx_t *ctx, int peer, const char *reason);
zsh_status_t zsh_ucx_test(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
uint64_t     zsh_ucx_recv_tag(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
void         zsh_ucx_release(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
void         zsh_ucx_cancel(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req);
/* Free the orphans that have completed; returns how many are left. */
unsigned     zsh_ucx_reap_orphans(zsh_tl_ctx_t *ctx);

zsh_status_t zsh_ucx_mem_reg(zsh_tl_ctx_t *ctx, void *buf, size_t len, zsh_tl_mem_t **mem_p);
void         zsh_ucx_mem_dereg(zsh_tl_ctx_t *ctx, zsh_tl_mem_t *mem);
zsh_status_t zsh_ucx_rkey_pack(zsh_tl_ctx_t *ctx, zsh_tl_mem_t *mem, void **buf_p, size_t *len_p);
void         zsh_ucx_rkey_buf_free(zsh_tl_ctx_t *ctx, void *buf);
zsh_status_t zsh_ucx_rkey_unpack(zsh_tl_ctx_t *ctx, int peer, const void *buf,
                                 zsh_tl_rkey_t **rkey_p);
void         zsh_ucx_rkey_destroy(zsh_tl_ctx_t *ctx, zsh_tl_rkey_t *rkey);
zsh_status_t zsh_ucx_put(zsh_tl_ctx_t *ctx, int peer, const void *buf, size_t len, uint64_t raddr,
                         zsh_tl_rkey_t *rkey, zsh_tl_req_t **req_p);
zsh_status_t zsh_ucx_get(zsh_tl_ctx_t *ctx, int peer, void *buf, size_t len, uint64_t raddr,
                         zsh_tl_rkey_t *rkey, zsh_tl_req_t **req_p);
zsh_status_t zsh_ucx_flush(zsh_tl_ctx_t *ctx, int peer, zsh_tl_req_t **req_p);

/* Node-local access (local.c): cross-memory attach and mailboxes. init
 * fills what this process publishes; connect reads every rank's. */
void         zsh_ucx_local_init(zsh_tl_ctx_t *ctx, const zsh_ucx_config_t *cfg,
                                zsh_ucx_addr_hdr_t *hdr);
zsh_status_t zsh_ucx_local_connect(zsh_tl_ctx_t *ctx, const zsh_ucx_addr_hdr_t *hdrs);
void         zsh_ucx_local_destroy(zsh_tl_ctx_t *ctx);
bool         zsh_ucx_peer_copy_reachable(zsh_tl_ctx_t *ctx, int peer);
zsh_status_t zsh_ucx_peer_copy(zsh_tl_ctx_t *ctx, int peer, void *local, uint64_t raddr,
                               size_t len, bool write);
bool         zsh_ucx_box_reachable(zsh_tl_ctx_t *ctx, int peer);
zsh_status_t zsh_ucx_box_send(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                              uint64_t ticket, const void *buf, size_t len);
zsh_status_t zsh_ucx_box_recv(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                              uint64_t ticket, void *buf, size_t cap, size_t *len_p);
zsh_status_t zsh_ucx_board_put(zsh_tl_ctx_t *ctx, unsigned box, uint64_t key, uint64_t ticket,
                               uint32_t readers, const zsh_tl_parts_t *parts);
zsh_status_t zsh_ucx_board_peek(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                                uint64_t ticket, const void **msg_p, size_t *len_p);
void         zsh_ucx_board_release(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t ticket);
zsh_status_t zsh_ucx_lines_open(zsh_tl_ctx_t *ctx, unsigned line, const int *peers, int npeers);
void         zsh_ucx_lines_close(zsh_tl_ctx_t *ctx, unsigned line, const int *peers, int npeers);

/* The optional groups of zsh_tl_ucx_ops. */
extern const zsh_tl_rma_ops_t   zsh_ucx_rma_ops;
extern const zsh_tl_local_ops_t zsh_ucx_local_ops;

#endif
