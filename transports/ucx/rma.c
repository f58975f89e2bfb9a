/*
 * One-sided access over UCX: registration, remote keys, put/get and flush.
 */
#include "ucx/ucx.h"

#include "core/status.h"

#include <stdlib.h>

struct zsh_tl_mem {
    ucp_mem_h memh;
};

struct zsh_tl_rkey {
    ucp_rkey_h rkey;
};

zsh_status_t zsh_ucx_mem_reg(zsh_tl_ctx_t *ctx, void *buf, size_t len, zsh_tl_mem_t **mem_p)
{
    ucp_mem_map_params_t params = {0};
    ucs_status_t status;
    zsh_tl_mem_t *mem;

    mem = malloc(sizeof(*mem));
    if (mem == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a memory registration");
    }
    params.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH;
    params.address    = buf;
    params.length     = len;
    status = ucp_mem_map(ctx->context, &params, &mem->memh);
    if (status != UCS_OK) {
        free(mem);
        return zsh_error(ZSH_ERR_TRANSPORT, "UCX ucp_mem_map of %zu bytes at %p failed: %s", len,
                         buf, ucs_status_string(status));
    }
    *mem_p = mem;
    return ZSH_OK;
}

void zsh_ucx_mem_dereg(zsh_tl_ctx_t *ctx, zsh_tl_mem_t *mem)
{
    ucp_mem_unmap(ctx->context, mem->memh);
    free(mem);
}

zsh_status_t zsh_ucx_rkey_pack(zsh_tl_ctx_t *ctx, zsh_tl_mem_t *mem, void **buf_p, size_t *len_p)
{
    ucs_status_t status = ucp_rkey_pack(ctx->context, mem->memh, buf_p, len_p);

    return (status == UCS_OK) ? ZSH_OK : zsh_ucx_error("ucp_rkey_pack", status);
}

void zsh_ucx_rkey_buf_free(zsh_tl_ctx_t *ctx, void *buf)
{
    (void)ctx;
    ucp_rkey_buffer_release(buf);
}

zsh_status_t zsh_ucx_rkey_unpack(zsh_tl_ctx_t *ctx, int peer, const void *buf,
                                 zsh_tl_rkey_t **rkey_p)
{
    ucs_status_t status;
    zsh_tl_rkey_t *rkey;

    rkey = malloc(sizeof(*rkey));
    if (rkey == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a remote key");
    }
    status = ucp_ep_rkey_unpack(ctx->eps[peer], buf, &rkey->rkey);
    if (status != UCS_OK) {
        free(rkey);
        return zsh_error(ZSH_ERR_TRANSPORT, "UCX ucp_ep_rkey_unpack from rank %d failed: %s", peer,
                         ucs_status_string(status));
    }
    *rkey_p = rkey;
    return ZSH_OK;
}

void zsh_ucx_rkey_destroy(zsh_tl_ctx_t *ctx, zsh_tl_rkey_t *rkey)
{
    (void)ctx;
    ucp_rkey_destroy(rkey->rkey);
    free(rkey);
}

zsh_status_t zsh_ucx_put(zsh_tl_ctx_t *ctx, int peer, const void *buf, size_t len, uint64_t raddr,
                         zsh_tl_rkey_t *rkey, zsh_tl_req_t **req_p)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    if (ctx->peers[peer].failed) {
        return zsh_ucx_check_peer(ctx, peer);
    }
    return zsh_ucx_posted(ctx, ucp_put_nbx(ctx->eps[peer], buf, len, raddr, rkey->rkey, &param),
                          "ucp_put_nbx", peer, false, len, req_p);
}

zsh_status_t zsh_ucx_get(zsh_tl_ctx_t *ctx, int peer, void *buf, size_t len, uint64_t raddr,
                         zsh_tl_rkey_t *rkey, zsh_tl_req_t **req_p)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    if (ctx->peers[peer].failed) {
        return zsh_ucx_check_peer(ctx, peer);
    }
    return zsh_ucx_posted(ctx, ucp_get_nbx(ctx->eps[peer], buf, len, raddr, rkey->rkey, &param),
                          "ucp_get_nbx", peer, false, len, req_p);
}

zsh_status_t zsh_ucx_flush(zsh_tl_ctx_t *ctx, int peer, zsh_tl_req_t **req_p)
{
    ucp_request_param_t param = {.op_attr_mask = 0};

    if (ctx->peers[peer].failed) {
        return zsh_ucx_check_peer(ctx, peer);
    }
    return zsh_ucx_posted(ctx, ucp_ep_flush_nbx(ctx->eps[peer], &param), "ucp_ep_flush_nbx", peer,
                          false, 0, req_p);
}

const zsh_tl_rma_ops_t zsh_ucx_rma_ops = {
    .mem_reg       = zsh_ucx_mem_reg,
    .mem_dereg     = zsh_ucx_mem_dereg,
    .rkey_pack     = zsh_ucx_rkey_pack,
    .rkey_buf_free = zsh_ucx_rkey_buf_free,
    .rkey_unpack   = zsh_ucx_rkey_unpack,
    .rkey_destroy  = zsh_ucx_rkey_destroy,
    .put           = zsh_ucx_put,
    .get           = zsh_ucx_get,
    .flush         = zsh_ucx_flush,
};
