/*
 * The mailbox handshake, for eager and direct calls of a two-rank
 * communicator whose ranks share mailboxes: our descriptor message goes
 * into the peer's mailbox as the call's ticket, and the peer's comes out of
 * ours. A direct call's "done" message follows as the next ticket.
 *
 * Transfer slot 0 is the probe: after ZSH_HS_PROBE seconds without the
 * peer's message, a receive of its descriptor through the transport, which
 * a peer whose call went another way sends instead.
 */
#include "handshake/variant.h"

#include "base/tag.h"
#include "core/clock.h"
#include "core/status.h"

#include <stdlib.h>
#include <string.h>

static int zsh_hs_box_peer(const zsh_hs_t *hs)
{
    return 1 - hs->comm->rank;
}

static zsh_status_t zsh_hs_box_post(zsh_hs_t *hs)
{
    zsh_comm_t *comm = hs->comm;
    zsh_status_t status;

    hs->ticket = comm->local.tickets;
    comm->local.tickets += hs->done ? 2 : 1;
    /* A message shorter than a descriptor must not leave an earlier call's behind. */
    memset(&hs->bufs->in.desc, 0, sizeof(hs->bufs->in.desc));
    /* After taking the tickets: a failure from here on revokes the
     * communicator (zsh_hs_abandon), as the peer expects this call's message. */
    status = zsh_hs_xfers(hs, 1);
    if (status == ZSH_OK) {
        status = zsh_hs_shm_send(hs);
    }
    return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
}

/* The peer's message, out of our mailbox; after ZSH_HS_PROBE seconds, listen
 * on the transport too, so that a peer whose call went another way is
 * reported instead of waited out. */
static zsh_status_t zsh_hs_box_recv(zsh_hs_t *hs)
{
    zsh_comm_t *comm  = hs->comm;
    zsh_ctx_t *ctx    = comm->ctx;
    zsh_hs_bufs_t *b  = hs->bufs;
    zsh_xfer_t *probe = &b->xfers[0];
    int peer          = zsh_hs_box_peer(hs);
    zsh_status_t status;
    size_t len;

    status = ctx->tl->local->box_recv(ctx->tl_ctx, comm->ctx_ranks[peer], comm->id, comm->uid,
                                      hs->ticket, &b->in, sizeof(b->in), &len);
    if (status == ZSH_OK) {
        zsh_xfer_drop(comm, probe);
    }
    if (status != ZSH_INPROGRESS) {
        return status;
    }
    if (probe->req != NULL) {
        status = zsh_xfer_test(comm, probe);
        return (status == ZSH_OK) ? zsh_hs_probed(hs, peer, &b->probe->desc) : status;
    }
    if (hs->probing || (zsh_clock_coarse() - hs->posted_at < ZSH_HS_PROBE)) {
        return ZSH_INPROGRESS;
    }
    if (b->probe == NULL) {
        b->probe = malloc(sizeof(*b->probe));
        if (b->probe == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a descriptor buffer");
        }
    }
    hs->probing = true; /* posted once */
    status = zsh_xfer_recv_upto(comm, hs->seq, probe, peer, ZSH_TAG_STEP_DESC, b->probe,
                                sizeof(*b->probe));
    return (status == ZSH_OK) ? ZSH_INPROGRESS : status;
}

/* The peer's descriptor message, compared with ours. */
static zsh_status_t zsh_hs_box_take(zsh_hs_t *hs)
{
    zsh_status_t status = zsh_hs_box_recv(hs);

    return (status == ZSH_OK) ? zsh_hs_compare(hs, zsh_hs_box_peer(hs), &hs->bufs->in.desc)
                              : status;
}

static zsh_status_t zsh_hs_box_progress(zsh_hs_t *hs)
{
    return zsh_hs_shm_progress(hs, zsh_hs_box_take);
}

static const void *zsh_hs_box_data(const zsh_hs_t *hs, int peer)
{
    (void)peer;
    return hs->bufs->in.data;
}

static zsh_status_t zsh_hs_box_done_recv(zsh_hs_t *hs)
{
    zsh_comm_t *comm = hs->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    char none;
    size_t len;

    return ctx->tl->local->box_recv(ctx->tl_ctx, comm->ctx_ranks[zsh_hs_box_peer(hs)], comm->id,
                                    comm->uid, hs->ticket + 1, &none, 0, &len);
}

const zsh_hs_ops_t zsh_hs_box_ops = {
    .name      = "mailbox",
    .post      = zsh_hs_box_post,
    .progress  = zsh_hs_box_progress,
    .data      = zsh_hs_box_data,
    .waits_for = zsh_hs_shm_waits_for,
    .done_send = zsh_hs_shm_done_send,
    .done_recv = zsh_hs_box_done_recv,
};
