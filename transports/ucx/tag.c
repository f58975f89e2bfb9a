/*
 * Tagged messages over UCX, and the request bookkeeping shared with RMA.
 */
#include "transports/ucx/ucx.h"

#include "core/status.h"

/* A receive must get exactly what it asked for: a shorter or longer message
 * means the ranks disagree about the call. */
static zsh_status_t zsh_ucx_check_length(int peer, size_t length, size_t expected)
{
    if (length != expected) {
        return zsh_error(ZSH_ERR_MISMATCH, "received %zu bytes from rank %d, expected %zu",
                         length, peer, expected);
    }
    return ZSH_OK;
}

static zsh_status_t zsh_ucx_failed(int peer, bool is_recv, size_t expected, ucs_status_t status)
{
    if (status == UCS_ERR_MESSAGE_TRUNCATED) {
        return zsh_error(ZSH_ERR_MISMATCH,
                         "a message from rank %d is longer than the %zu-byte receive", peer,
                         expected);
    }
    if (status == UCS_ERR_CANCELED) {
        return zsh_error(ZSH_ERR_ABORTED, "%s rank %d was cancelled", is_recv ? "receive from" : "send to", peer);
    }
    if ((status == UCS_ERR_CONNECTION_RESET) || (status == UCS_ERR_ENDPOINT_TIMEOUT) ||
        (status == UCS_ERR_UNREACHABLE)) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d is unreachable: %s", peer,
                         ucs_status_string(status));
    }
    return zsh_error(ZSH_ERR_TRANSPORT, "UCX %s rank %d failed: %s",
                     is_recv ? "receive from" : "operation to", peer, ucs_status_string(status));
}

zsh_status_t zsh_ucx_posted(ucs_status_ptr_t ptr, const char *what, int peer, bool is_recv,
                            size_t expected, zsh_tl_req_t **req_p)
{
    zsh_tl_req_t *req;

    if (ptr == NULL) {
        *req_p = NULL;
        return ZSH_OK;
    }
    if (UCS_PTR_IS_ERR(ptr)) {
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
    return zsh_ucx_posted(ucp_tag_send_nbx(ctx->eps[peer], buf, len, tag, &param),
                          "ucp_tag_send_nbx", peer, false, len, req_p);
}

zsh_status_t zsh_ucx_irecv(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                           zsh_tl_req_t **req_p)
{
    /* Always get a request back: its length is then reported reliably by
     * ucp_tag_recv_request_test(), which is where mismatches show. */
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};

    return zsh_ucx_posted(ucp_tag_recv_nbx(ctx->worker, buf, len, tag, UINT64_MAX, &param),
                          "ucp_tag_recv_nbx", peer, true, len, req_p);
}

zsh_status_t zsh_ucx_irecv_any(zsh_tl_ctx_t *ctx, uint64_t tag, uint64_t mask, void *buf,
                               size_t len, zsh_tl_req_t **req_p)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FLAG_NO_IMM_CMPL};

    return zsh_ucx_posted(ucp_tag_recv_nbx(ctx->worker, buf, len, tag, mask, &param),
                          "ucp_tag_recv_nbx", -1, true, len, req_p);
}

/* Completion is read from UCX's own request state: with no callbacks there
 * is nothing to race with. */
zsh_status_t zsh_ucx_test(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    ucp_tag_recv_info_t info = {.length = 0};
    ucs_status_t status;

    (void)ctx;
    status = req->is_recv ? ucp_tag_recv_request_test(req, &info)
                          : ucp_request_check_status(req);
    if (status == UCS_INPROGRESS) {
        return ZSH_INPROGRESS;
    }
    if (status != UCS_OK) {
        return zsh_ucx_failed(req->peer, req->is_recv, req->expected, status);
    }
    return req->is_recv ? zsh_ucx_check_length(req->peer, info.length, req->expected) : ZSH_OK;
}

void zsh_ucx_release(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    if (req->is_recv && (ucp_request_check_status(req) == UCS_INPROGRESS)) {
        ucp_request_cancel(ctx->worker, req);
    }
    ucp_request_free(req); /* UCX recycles it once the operation has completed */
}
