/*
 * Tagged messages over UCX, and the request bookkeeping shared with RMA.
 */
#include "transports/ucx/ucx.h"

#include "core/status.h"

void zsh_ucx_send_cb(void *request, ucs_status_t status, void *user_data)
{
    zsh_tl_req_t *req = request;

    (void)user_data;
    req->status = status;
    req->done   = true;
}

static void zsh_ucx_recv_cb(void *request, ucs_status_t status, const ucp_tag_recv_info_t *info,
                            void *user_data)
{
    zsh_tl_req_t *req = request;

    (void)user_data;
    req->status = status;
    req->length = (status == UCS_OK) ? info->length : 0;
    req->done   = true;
}

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
    /* Callbacks only run inside UCX progress, so nothing has touched this
     * request since it was posted; a recycled one may still hold the fields of
     * its previous (cancelled) use. */
    req           = ptr;
    req->done     = false;
    req->status   = UCS_OK;
    req->length   = 0;
    req->is_recv  = is_recv;
    req->expected = expected;
    req->peer     = peer;
    *req_p        = req;
    return ZSH_INPROGRESS;
}

zsh_status_t zsh_ucx_isend(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, const void *buf, size_t len,
                           zsh_tl_req_t **req_p)
{
    ucp_request_param_t param;

    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param.cb.send      = zsh_ucx_send_cb;
    return zsh_ucx_posted(ucp_tag_send_nbx(ctx->eps[peer], buf, len, tag, &param),
                          "ucp_tag_send_nbx", peer, false, len, req_p);
}

zsh_status_t zsh_ucx_irecv(zsh_tl_ctx_t *ctx, int peer, uint64_t tag, void *buf, size_t len,
                           zsh_tl_req_t **req_p)
{
    ucp_tag_recv_info_t info;
    ucp_request_param_t param;
    ucs_status_ptr_t ptr;

    param.op_attr_mask        = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_RECV_INFO;
    param.cb.recv             = zsh_ucx_recv_cb;
    param.recv_info.tag_info  = &info;
    ptr = ucp_tag_recv_nbx(ctx->worker, buf, len, tag, UINT64_MAX, &param);
    if (ptr == NULL) {
        *req_p = NULL;
        return zsh_ucx_check_length(peer, info.length, len);
    }
    return zsh_ucx_posted(ptr, "ucp_tag_recv_nbx", peer, true, len, req_p);
}

zsh_status_t zsh_ucx_test(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    (void)ctx;
    if (!req->done) {
        return ZSH_INPROGRESS;
    }
    if (req->status != UCS_OK) {
        return zsh_ucx_failed(req->peer, req->is_recv, req->expected, req->status);
    }
    return req->is_recv ? zsh_ucx_check_length(req->peer, req->length, req->expected) : ZSH_OK;
}

void zsh_ucx_release(zsh_tl_ctx_t *ctx, zsh_tl_req_t *req)
{
    if (!req->done && req->is_recv) {
        ucp_request_cancel(ctx->worker, req);
    }
    ucp_request_free(req); /* UCX recycles it once the operation has completed */
}
