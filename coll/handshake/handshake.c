/*
 * Choosing the variant of a call's handshake, and what the variants share.
 */
#include "handshake/variant.h"

#include "comm/health.h"
#include "core/array.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>

zsh_status_t zsh_hs_xfers(zsh_hs_t *hs, unsigned n)
{
    zsh_hs_bufs_t *b = hs->bufs;
    void *xfers      = b->xfers;
    zsh_status_t status;

    /* Every reader stops at nxfers. */
    status   = zsh_array_use(&xfers, &b->xfers_cap, n, sizeof(*b->xfers),
                             "handshake transfer slots");
    b->xfers = xfers;
    hs->nxfers = (status == ZSH_OK) ? n : 0;
    return status;
}

zsh_status_t zsh_hs_want_all(zsh_hs_t *hs)
{
    zsh_hs_bufs_t *b = hs->bufs;
    unsigned n       = (unsigned)hs->comm->size;
    zsh_desc_msg_t *in;

    hs->all = true;
    if (n > b->all_in_cap) {
        in = realloc(b->all_in, n * sizeof(*in));
        if (in == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_%s: cannot allocate %u descriptor "
                             "messages", hs->name, n);
        }
        b->all_in     = in;
        b->all_in_cap = n;
    }
    return ZSH_OK;
}

/* Mailboxes and boards carry eager and direct calls, where the
 * communicator has them; every other call goes through the transport. */
static const zsh_hs_ops_t *zsh_hs_choose(const zsh_hs_t *hs, zsh_algo_t algo)
{
    const zsh_comm_local_t *local = &hs->comm->local;

    if ((local->box || local->board) && ((algo == ZSH_ALGO_EAGER) || (algo == ZSH_ALGO_DIRECT))) {
        return local->board ? &zsh_hs_board_ops : &zsh_hs_box_ops;
    }
    return hs->all ? &zsh_hs_all_ops : &zsh_hs_ring_ops;
}

zsh_status_t zsh_hs_post(zsh_hs_t *hs, zsh_algo_t algo, double posted_at)
{
    if (hs->comm->size < 2) {
        hs->state = ZSH_HS_VERIFIED;
        return ZSH_OK;
    }
    hs->ops       = zsh_hs_choose(hs, algo);
    hs->state     = ZSH_HS_POSTED;
    hs->posted_at = posted_at;
    return hs->ops->post(hs);
}

const void *zsh_hs_data(const zsh_hs_t *hs, int peer)
{
    return hs->ops->data(hs, peer);
}

bool zsh_hs_waits_for(const zsh_hs_t *hs, int peer)
{
    return (hs->ops != NULL) && (peer != hs->comm->rank) && hs->ops->waits_for(hs, peer);
}

zsh_status_t zsh_hs_done_send(zsh_hs_t *hs)
{
    return hs->ops->done_send(hs);
}

zsh_status_t zsh_hs_done_recv(zsh_hs_t *hs)
{
    return hs->ops->done_recv(hs);
}

void zsh_hs_release(zsh_hs_t *hs)
{
    if ((hs->ops != NULL) && (hs->ops->release != NULL)) {
        hs->ops->release(hs);
    }
}

void zsh_hs_abandon(zsh_hs_t *hs, zsh_status_t status)
{
    char why[ZSH_ERROR_MSG_MAX + 64], where[48];

    if (!zsh_hs_shared(hs) || (hs->sent && (!hs->done || hs->done_sent)) ||
        (status == ZSH_ERR_PEER_FAILED)) {
        return; /* nobody waits for it, or nobody is left to */
    }
    if (hs->comm->local.board) {
        snprintf(where, sizeof(where), "went on rank %d's board", hs->comm->rank);
    } else {
        snprintf(where, sizeof(where), "reached rank %d's mailbox", 1 - hs->comm->rank);
    }
    snprintf(why, sizeof(why), "%s seq %u failed before its %s %s: %s", hs->name, hs->seq,
             hs->sent ? "\"done\" message" : "descriptor", where, zsh_last_error());
    zsh_comm_revoke(hs->comm, ZSH_ERR_ABORTED, hs->seq, why);
}

zsh_status_t zsh_hs_compare(const zsh_hs_t *hs, int peer, const zsh_desc_t *theirs)
{
    return zsh_desc_compare(&hs->bufs->out.desc, theirs, hs->comm->id, hs->comm->rank, peer);
}

zsh_status_t zsh_hs_probed(const zsh_hs_t *hs, int peer, const zsh_desc_t *theirs)
{
    zsh_status_t status;

    status = zsh_hs_compare(hs, peer, theirs);
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_error(ZSH_ERR_MISMATCH, "seq %u on comm %u: rank %d sent its %s descriptor "
                     "through the %s transport, rank %d through shared memory; is ZSH_SHM set "
                     "alike on every rank?", hs->seq, hs->comm->id, peer, hs->name,
                     hs->comm->ctx->tl->name, hs->comm->rank);
}

zsh_status_t zsh_hs_shm_put(zsh_hs_t *hs, uint64_t ticket, const zsh_tl_parts_t *parts,
                            bool *sent)
{
    zsh_comm_t *comm = hs->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_status_t status;

    if (*sent) {
        return ZSH_OK;
    }
    if (comm->local.sent != ticket) {
        return ZSH_INPROGRESS;
    }
    status = comm->local.board
                 ? ctx->tl->local->board_put(ctx->tl_ctx, comm->id, comm->uid, ticket,
                                             (uint32_t)comm->size - 1, parts)
                 : ctx->tl->local->box_send(ctx->tl_ctx, comm->ctx_ranks[1 - comm->rank],
                                            comm->id, comm->uid, ticket, parts->head,
                                            parts->head_len);
    if (status == ZSH_OK) {
        *sent = true;
        comm->local.sent++;
    }
    return status;
}

zsh_status_t zsh_hs_shm_send(zsh_hs_t *hs)
{
    zsh_desc_msg_t *out   = &hs->bufs->out;
    zsh_tl_parts_t parts = {out, sizeof(out->desc) + hs->inline_len, NULL, 0};

    if (hs->body != NULL) {
        parts.head_len = sizeof(out->desc);
        parts.body     = hs->body;
        parts.body_len = hs->inline_len;
    }
    return zsh_hs_shm_put(hs, hs->ticket, &parts, &hs->sent);
}

zsh_status_t zsh_hs_shm_done_send(zsh_hs_t *hs)
{
    static const char none = 0; /* the message is empty; memcpy wants a pointer all the same */
    zsh_tl_parts_t parts   = {&none, 0, NULL, 0};

    return zsh_hs_shm_put(hs, hs->ticket + 1, &parts, &hs->done_sent);
}

bool zsh_hs_shm_waits_for(const zsh_hs_t *hs, int peer)
{
    unsigned k, taken;

    if (hs->state == ZSH_HS_POSTED) {
        taken = hs->taken; /* stays 0 through a mailbox: one peer */
    } else if (hs->done && hs->done_sent) {
        taken = hs->done_taken;
    } else {
        return false;
    }
    for (k = taken; k < (unsigned)hs->comm->size - 1; k++) {
        if (zsh_hs_shm_peer(hs, k) == peer) {
            return true;
        }
    }
    return false;
}
