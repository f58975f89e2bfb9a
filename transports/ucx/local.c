/*
 * The UCX transport's node-local group (zsh_tl_local_ops_t): single-copy
 * access to a peer's memory (cross-memory attach, cma/) and mailboxes and
 * boards in shared memory (shm/). Neither goes through UCX: its own CMA
 * transport is left out of endpoints that report peer failures, and its
 * shared-memory messages cost more than a few bytes between two ranks
 * should (docs/DECISIONS.md, "Node-local shortcuts").
 */
#include "ucx/ucx.h"

#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zsh_ucx_local_init(zsh_tl_ctx_t *ctx, const zsh_ucx_config_t *cfg, zsh_ucx_addr_hdr_t *hdr)
{
    memset(hdr, 0, sizeof(*hdr));
    zsh_cma_local_id(cfg->cma != 0, &ctx->cma_self);
    memset(&ctx->box_self, 0, sizeof(ctx->box_self));
    ctx->box_self.fd      = -1;
    ctx->box_budget.max   = cfg->shm_max;
    ctx->box_budget.used  = 0;
    /* Peers map the segment with the permission cross-memory attach needs. */
    if (cfg->shm && ctx->cma_self.usable &&
        ((zsh_box_create(&ctx->box_self, &ctx->box_budget, "this process") != ZSH_OK) ||
         (zsh_box_check_shareable(&ctx->box_self) != ZSH_OK))) {
        zsh_log(ZSH_LOG_INFO, "mailboxes off: %s", zsh_last_error());
        zsh_box_release(&ctx->box_self);
    }
    hdr->cma    = ctx->cma_self;
    hdr->box_fd = zsh_box_on(&ctx->box_self) ? ctx->box_self.fd : -1;
}

zsh_status_t zsh_ucx_local_connect(zsh_tl_ctx_t *ctx, const zsh_ucx_addr_hdr_t *hdrs)
{
    int i, n = ctx->nranks;

    ctx->cma_ids   = calloc((size_t)n, sizeof(*ctx->cma_ids));
    ctx->box_fds   = calloc((size_t)n, sizeof(*ctx->box_fds));
    ctx->box_peers = calloc((size_t)n, sizeof(*ctx->box_peers));
    if ((ctx->cma_ids == NULL) || (ctx->box_fds == NULL) || (ctx->box_peers == NULL)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate what %d ranks published", n);
    }
    for (i = 0; i < n; i++) {
        ctx->cma_ids[i]      = hdrs[i].cma;
        ctx->box_peers[i].fd = -1;
    }
    /* Mailboxes with a peer need ours, its, and leave to map it: decided
     * here once, the same from both sides. */
    for (i = 0; i < n; i++) {
        ctx->box_fds[i] = (zsh_box_on(&ctx->box_self) && zsh_ucx_peer_copy_reachable(ctx, i))
                              ? hdrs[i].box_fd : -1;
    }
    return ZSH_OK;
}

void zsh_ucx_local_destroy(zsh_tl_ctx_t *ctx)
{
    int i;

    if (ctx->box_peers != NULL) {
        for (i = 0; i < ctx->nranks; i++) {
            zsh_box_release(&ctx->box_peers[i]);
        }
    }
    zsh_box_release(&ctx->box_self);
    free(ctx->box_peers);
    free(ctx->box_fds);
    free(ctx->cma_ids);
    ctx->box_peers = NULL;
    ctx->box_fds   = NULL;
    ctx->cma_ids   = NULL;
}

bool zsh_ucx_peer_copy_reachable(zsh_tl_ctx_t *ctx, int peer)
{
    return (ctx->cma_ids != NULL) && (peer >= 0) && (peer < ctx->nranks) &&
           zsh_cma_reachable(&ctx->cma_self, &ctx->cma_ids[peer]);
}

zsh_status_t zsh_ucx_peer_copy(zsh_tl_ctx_t *ctx, int peer, void *local, uint64_t raddr,
                               size_t len, bool write)
{
    char who[32];

    if (!zsh_ucx_peer_copy_reachable(ctx, peer)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "rank %d cannot access the memory of rank %d "
                         "(cross-memory attach, ZSH_CMA)", ctx->self, peer);
    }
    if (ctx->peers[peer].failed) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d has failed", peer);
    }
    snprintf(who, sizeof(who), "rank %d", peer);
    return zsh_cma_copy(ctx->cma_ids[peer].pid, local, raddr, len, write, who);
}

bool zsh_ucx_box_reachable(zsh_tl_ctx_t *ctx, int peer)
{
    return (ctx->box_fds != NULL) && (peer >= 0) && (peer < ctx->nranks) &&
           (ctx->box_fds[peer] >= 0);
}

/* @peer's segment, attached on first use. */
static zsh_status_t zsh_ucx_box_peer(zsh_tl_ctx_t *ctx, int peer, zsh_box_seg_t **seg_p)
{
    zsh_box_seg_t *seg;
    char who[32];
    zsh_status_t status;

    if (!zsh_ucx_box_reachable(ctx, peer)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "rank %d shares no mailboxes with rank %d "
                         "(ZSH_SHM)", ctx->self, peer);
    }
    if (ctx->peers[peer].failed) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d has failed", peer);
    }
    seg = &ctx->box_peers[peer];
    if (!zsh_box_on(seg)) {
        snprintf(who, sizeof(who), "rank %d", peer);
        status = zsh_box_attach(ctx->cma_ids[peer].pid, ctx->box_fds[peer], seg,
                                &ctx->box_budget, who);
        if (status == ZSH_ERR_PEER_FAILED) {
            /* Report it as the endpoint's failure would be, so that later
             * calls fail at once rather than post without it. */
            zsh_ucx_peer_gone(ctx, peer, zsh_last_error());
        }
        if (status != ZSH_OK) {
            return status;
        }
    }
    *seg_p = seg;
    return ZSH_OK;
}

zsh_status_t zsh_ucx_box_send(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                              uint64_t ticket, const void *buf, size_t len)
{
    zsh_box_seg_t *seg;
    zsh_status_t status;

    status = zsh_ucx_box_peer(ctx, peer, &seg);
    return (status == ZSH_OK) ? zsh_box_put(seg, box, key, ticket, buf, len) : status;
}

zsh_status_t zsh_ucx_box_recv(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                              uint64_t ticket, void *buf, size_t cap, size_t *len_p)
{
    zsh_status_t status;

    if (!zsh_ucx_box_reachable(ctx, peer)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "rank %d has no mailbox for rank %d (ZSH_SHM)",
                         ctx->self, peer);
    }
    status = zsh_box_take(&ctx->box_self, box, key, ticket, buf, cap, len_p);
    if (status == ZSH_ERR_MISMATCH) {
        zsh_error_prefix("from rank %d: ", peer);
    }
    return status;
}

zsh_status_t zsh_ucx_board_put(zsh_tl_ctx_t *ctx, unsigned box, uint64_t key, uint64_t ticket,
                               uint32_t readers, const zsh_tl_parts_t *parts)
{
    zsh_box_parts_t shm = {parts->head, parts->head_len, parts->body, parts->body_len};

    if (!zsh_box_on(&ctx->box_self)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "rank %d has no boards (ZSH_SHM)", ctx->self);
    }
    return zsh_board_put(&ctx->box_self, box, key, ticket, readers, &shm);
}

zsh_status_t zsh_ucx_board_peek(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t key,
                                uint64_t ticket, const void **msg_p, size_t *len_p)
{
    zsh_box_seg_t *seg;
    zsh_status_t status;

    status = zsh_ucx_box_peer(ctx, peer, &seg);
    if (status == ZSH_OK) {
        status = zsh_board_peek(seg, box, key, ticket, msg_p, len_p);
    }
    if (status == ZSH_ERR_MISMATCH) {
        zsh_error_prefix("from rank %d: ", peer);
    }
    return status;
}

void zsh_ucx_board_release(zsh_tl_ctx_t *ctx, int peer, unsigned box, uint64_t ticket)
{
    /* Peeked at, so the peer's segment is mapped. */
    zsh_board_release(&ctx->box_peers[peer], box, ticket);
}

/* Unmap line @line of ours and of @peers' segments (those mapped). */
void zsh_ucx_lines_close(zsh_tl_ctx_t *ctx, unsigned line, const int *peers, int npeers)
{
    int i;

    for (i = 0; i < npeers; i++) {
        if ((peers[i] >= 0) && (peers[i] < ctx->nranks) && (ctx->box_peers != NULL)) {
            zsh_box_line_close(&ctx->box_peers[peers[i]], line);
        }
    }
    zsh_box_line_close(&ctx->box_self, line);
}

zsh_status_t zsh_ucx_lines_open(zsh_tl_ctx_t *ctx, unsigned line, const int *peers, int npeers)
{
    zsh_box_seg_t *seg;
    zsh_status_t status;
    int i;

    status = zsh_box_line_open(&ctx->box_self, line);
    for (i = 0; (i < npeers) && (status == ZSH_OK); i++) {
        if (peers[i] != ctx->self) {
            status = zsh_ucx_box_peer(ctx, peers[i], &seg);
            status = (status == ZSH_OK) ? zsh_box_line_open(seg, line) : status;
        }
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("rank %d: ", ctx->self);
        zsh_ucx_lines_close(ctx, line, peers, npeers);
    }
    return status;
}

const zsh_tl_local_ops_t zsh_ucx_local_ops = {
    .lines          = ZSH_BOX_COUNT,
    .box_msg_max    = ZSH_BOX_MSG_MAX,
    .board_msg_max  = ZSH_BOARD_MSG_MAX,
    .copy_reachable = zsh_ucx_peer_copy_reachable,
    .copy           = zsh_ucx_peer_copy,
    .box_reachable  = zsh_ucx_box_reachable,
    .box_send       = zsh_ucx_box_send,
    .box_recv       = zsh_ucx_box_recv,
    .board_put      = zsh_ucx_board_put,
    .board_peek     = zsh_ucx_board_peek,
    .board_release  = zsh_ucx_board_release,
    .lines_open     = zsh_ucx_lines_open,
    .lines_close    = zsh_ucx_lines_close,
};
