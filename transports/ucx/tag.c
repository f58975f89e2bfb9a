/*
 * Tagged messages over UCX, and the request bookkeeping shared with RMA.
 */
#include "ucx/ucx.h"

#include "core/status.h"

#include <stdint.h>
#include <stdlib.h>

/* A receive must get exactly what it asked for: a shorter or longer message
 * means the ranks disagree about the call. (Longer ones fail in UCX, as
 * truncated; SIZE_MAX takes any that fits.) */
static zsh_status_t zsh_ucx_check_length(int peer, size_t length, size_t expected)
{
    if ((length != expected) && (expected != SIZE_MAX)) {
        return zsh_error(ZSH_ERR_MISMATCH, "received %zu bytes from rank %d, expected %zu",
                         length, peer, expected);
    }
    return ZSH_OK;
}

/* Errors that mean the peer process is gone or cannot be reached. */
static bool zsh_ucx_is_peer_failure(ucs_status_t status)
{
    return (status == UCS_ERR_CONNECTION_RESET) || (status == UCS_ERR_ENDPOINT_TIMEOUT) ||
           (status == UCS_ERR_UNREACHABLE) || (status == UCS_ERR_SHMEM_SEGMENT);
}

static zsh_status_t zsh_ucx_failed(zsh_tl_ctx_t *ctx, int peer, bool is_recv, size_t expected,
                                   ucs_status_t status)
{
    if (zsh_ucx_is_peer_failure(status) && (peer >= 0)) {
        zsh_ucx_peer_failed(ctx, peer, status);
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d is unreachable: %s", peer,
                         ucs_status_string(status));
    }
    if (status == UCS_ERR_MESSAGE_TRUNCATED) {
        return zsh_error(ZSH_ERR_MISMATCH,
                         "a message from rank %d is longer than the %zu-byte receive", peer,
                         expected);
    }
    if (status == UCS_ERR_CANCELED) {
        return zsh_error(ZSH_ERR_ABORTED, "%s rank %d was cancelled",
                         is_recv ? "receive from" : "send to", peer);
    }
    return zsh_error(ZSH_ERR_TRANSPORT, "UCX %s rank %d failed: %s",
                     is_recv ? "receive from" : "operation to", peer, ucs_status_string(status));
}

zsh_status_t zsh_ucx_posted(zsh_tl_ctx_t *ctx, ucs_status_ptr_t ptr, const char *what, int peer,
                            bool is_recv, size_t expected, zsh_tl_req_t **req_p)
{
    zsh_tl_req_t *req;

    if (ptr == NULL) {
        *req_p = NULL;
        return ZSH_OK;
    }
    if (UCS_PTR_IS_ERR(ptr)) {
        if (zsh_ucx_is_peer_failure(UCS_PTR_STATUS(ptr))) {
            return zsh_ucx_failed(ctx, peer, is_recv, expected, UCS_PTR_STATUS(ptr));
        }
        return zsh_error(ZSH_ERR_TRANSPORT, "UCX %s (rank %d) failed: %s", what, peer,
                         ucs_status_string(UCS_PTR_STATUS(ptr)));
    }
    /* No completion callback is registered, so UCX never writes this space. */
    req           = ptr;
    req->is_recv  = is_recv;
    req->expected = expected;
    req->peer     = peer;
    *req_p        = req;
    return ZSH_INPROGRESS;
}

zsh_status_t zsh_ucx_isend(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, const void *buf, size_t len,
                           zsh_tl_req_t **req_p)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    if (ctx->peers[peer].failed) {
        return zsh_ucx_check_peer(ctx, peer);
    }
    return zsh_ucx_posted(ctx, ucp_tag_send_nbx(ctx->eps[peer], buf, len, tag, &param),
                          "ucp_tag_send_nbx", peer, false, len, req_p);
}

zsh_status_t zsh_ucx_irecv(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                           zsh_tl_req_t **req_p)
{
    /* Always get a request back: its length is then reported reliably by
     * ucp_tag_recv_request_test(), which is where mismatches show. */
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};

    return zsh_ucx_posted(ctx, ucp_tag_recv_nbx(ctx->worker, buf, len, tag, UINT64_MAX, &param),
                          "ucp_tag_recv_nbx", peer, true, len, req_p);
}

zsh_status_t zsh_ucx_irecv_upto(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                                zsh_tl_req_t **req_p)
{
    zsh_status_t status = zsh_ucx_irecv(ctx, peer, tag, buf, len, req_p);

    if (status == ZSH_INPROGRESS) {
        (*req_p)->expected = SIZE_MAX;
    }
    return status;
}

zsh_status_t zsh_ucx_irecv_any(zsh_tl_ctx_t *ctx, uint64_t tag, uint64_t mask, void *buf,
                               size_t len, zsh_tl_req_t **req_p)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};

    return zsh_ucx_posted(ctx, ucp_tag_recv_nbx(ctx->worker, buf, len, tag, mask, &param),
                          "ucp_tag_recv_nbx", -1, true, len, req_p);
}

/* Completion is read from UCX's own request state: with no callbacks there
 * is nothing to race with. */
zsh_status_t zsh_ucx_test(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    ucp_tag_recv_info_t info = {.length = 0};
    ucs_status_t status;

    status = req->is_recv ? ucp_tag_recv_request_test(req, &info)
                          : ucp_request_check_status(req);
    if (status == UCS_INPROGRESS) {
        return ZSH_INPROGRESS;
    }
    if (status != UCS_OK) {
        return zsh_ucx_failed(ctx, req->peer, req->is_recv, req->expected, status);
    }
    req->tag = info.sender_tag;
    return req->is_recv ? zsh_ucx_check_length(req->peer, info.length, req->expected) : ZSH_OK;
}

uint64_t zsh_ucx_recv_tag(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    (void)ctx;
    return req->tag;
}

void zsh_ucx_cancel(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    if (req->is_recv && (ucp_request_check_status(req) == UCS_INPROGRESS)) {
        ucp_request_cancel(ctx->worker, req);
    }
}

void zsh_ucx_release(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    void **orphans;

    if (ucp_request_check_status(req) == UCS_INPROGRESS) {
        if (req->is_recv) {
            ucp_request_cancel(ctx->worker, req);
        } else {
            if (ctx->norphans == ctx->orphans_cap) {
                orphans = realloc(ctx->orphans, (ctx->orphans_cap * 2 + 16) * sizeof(void *));
                if (orphans == NULL) {
                    ucp_request_free(req);
                    return;
                }
                ctx->orphans     = orphans;
                ctx->orphans_cap = ctx->orphans_cap * 2 + 16;
            }
            ctx->orphans[ctx->norphans++] = req;
            return;
        }
    }
    ucp_request_free(req); /* UCX recycles it once the operation has completed */
}

unsigned zsh_ucx_reap_orphans(zsh_tl_ctx_t *ctx)
{
    unsigned i = 0;

    while (i < ctx->norphans) {
        if (ucp_request_check_status(ctx->orphans[i]) == UCS_INPROGRESS) {
            i++;
            continue;
        }
        ucp_request_free(ctx->orphans[i]);
        ctx->orphans[i] = ctx->orphans[--ctx->norphans];
    }
    return ctx->norphans;
}
