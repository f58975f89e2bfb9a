/*
 * The board handshake, for eager and direct calls on more than two ranks of
 * one node that share mailboxes: our descriptor message goes once onto our
 * own board as the call's ticket, and every peer's is read off its board
 * where it lies. A reader holds each peer's message until its call is done
 * with the data in it (zsh_hs_release()), so eager calls reduce or copy
 * straight from their peers' boards. A direct call's "done" message follows
 * as the next ticket.
 *
 * Transfer slots: the probe of each peer at [peer], posted for every peer
 * not heard from after ZSH_HS_PROBE seconds of waiting.
 */
#include "handshake/variant.h"

#include "base/tag.h"
#include "core/array.h"
#include "core/clock.h"
#include "core/status.h"

#include <string.h>

static zsh_status_t zsh_hs_board_post(zsh_hs_t *hs)
{
    zsh_comm_t *comm = hs->comm;
    zsh_hs_bufs_t *b = hs->bufs;
    void *held       = b->held;
    zsh_status_t status;

    hs->ticket = comm->local.tickets;
    comm->local.tickets += hs->done ? 2 : 1;
    /* After taking the tickets: a failure from here on revokes the
     * communicator (zsh_hs_abandon), as the peers expect this call's message. */
    status  = zsh_array_reset(&held, &b->held_cap, (unsigned)comm->size, sizeof(*b->held),
                              "board pointers");
    b->held = held;
    if (status == ZSH_OK) {
        status = zsh_hs_xfers(hs, (unsigned)comm->size);
    }
    if (status == ZSH_OK) {
        status = zsh_hs_shm_send(hs);
    }
    return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
}

/*
 * Look at message @ticket on every peer's board, in order; *@taken counts
 * the peers done. With @check it is a descriptor: it is compared with ours
 * and held where it lies until zsh_hs_release(). After ZSH_HS_PROBE seconds,
 * listen for the descriptor of every peer not heard from through the
 * transport too.
 * Without @check it is a "done" message, which says nothing more than that
 * it came.
 */
static zsh_status_t zsh_hs_board_take(zsh_hs_t *hs, uint64_t ticket, unsigned *taken, bool check)
{
    zsh_comm_t *comm = hs->comm;
    zsh_ctx_t *ctx   = comm->ctx;
    zsh_hs_bufs_t *b = hs->bufs;
    zsh_xfer_t *probe;
    zsh_status_t status;
    const void *msg;
    size_t len;
    unsigned k;
    int peer;

    for (; *taken < (unsigned)comm->size - 1; (*taken)++) {
        peer   = zsh_hs_shm_peer(hs, *taken);
        probe  = &b->xfers[peer];
        status = ctx->tl->local->board_peek(ctx->tl_ctx, comm->ctx_ranks[peer], comm->id,
                                            comm->uid, ticket, &msg, &len);
        if (status == ZSH_INPROGRESS) {
            break;
        }
        zsh_xfer_drop(comm, probe);
        if (status != ZSH_OK) {
            return status;
        }
        if (!check) {
            ctx->tl->local->board_release(ctx->tl_ctx, comm->ctx_ranks[peer], comm->id, ticket);
            continue;
        }
        b->held[peer] = msg;
        /* Ours to compare, however short: a message that is no descriptor
         * leaves zeros, which fail as a malformed one. */
        memset(&b->all_in[peer].desc, 0, sizeof(b->all_in[peer].desc));
        memcpy(&b->all_in[peer].desc, msg, (len < sizeof(zsh_desc_t)) ? len : sizeof(zsh_desc_t));
        status = zsh_hs_compare(hs, peer, &b->all_in[peer].desc);
        if (status != ZSH_OK) {
            return status;
        }
    }
    if (*taken == (unsigned)comm->size - 1) {
        return ZSH_OK;
    }
    if (!check) {
        return ZSH_INPROGRESS;
    }
    if (zsh_clock_coarse() - hs->posted_at < ZSH_HS_PROBE) {
        return ZSH_INPROGRESS;
    }
    /* Every peer not heard from yet, not only the one we wait for: a peer
     * that runs another call with the ring handshake sends its descriptor
     * only to its right neighbour, which may be any of them. */
    for (k = *taken; k < (unsigned)comm->size - 1; k++) {
        peer  = zsh_hs_shm_peer(hs, k);
        probe = &b->xfers[peer];
        if (probe->req == NULL) {
            /* The peer's message, if it comes this way, is the only thing
             * that lands in its slot: it never puts this call on its board
             * as well. */
            memset(&b->all_in[peer].desc, 0, sizeof(b->all_in[peer].desc));
            status = zsh_xfer_recv_upto(comm, hs->seq, probe, peer, ZSH_TAG_STEP_DESC,
                                        &b->all_in[peer], sizeof(b->all_in[peer]));
            if (status != ZSH_OK) {
                return status;
            }
        }
        status = zsh_xfer_test(comm, probe);
        if (status != ZSH_INPROGRESS) {
            return (status == ZSH_OK) ? zsh_hs_probed(hs, peer, &b->all_in[peer].desc) : status;
        }
    }
    return ZSH_INPROGRESS;
}

/* Every peer's descriptor message, compared with ours and held. */
static zsh_status_t zsh_hs_board_take_all(zsh_hs_t *hs)
{
    return zsh_hs_board_take(hs, hs->ticket, &hs->taken, true);
}

static zsh_status_t zsh_hs_board_progress(zsh_hs_t *hs)
{
    return zsh_hs_shm_progress(hs, zsh_hs_board_take_all);
}

static const void *zsh_hs_board_data(const zsh_hs_t *hs, int peer)
{
    return (const uint8_t *)hs->bufs->held[peer] + sizeof(zsh_desc_t); /* on its board */
}

static zsh_status_t zsh_hs_board_done_recv(zsh_hs_t *hs)
{
    return zsh_hs_board_take(hs, hs->ticket + 1, &hs->done_taken, false);
}

static void zsh_hs_board_release(zsh_hs_t *hs)
{
    zsh_comm_t *comm = hs->comm;
    zsh_hs_bufs_t *b = hs->bufs;
    int peer;

    if (b->held_cap < (unsigned)comm->size) {
        return; /* no room was had to hold anything */
    }
    for (peer = 0; peer < comm->size; peer++) {
        if (b->held[peer] != NULL) {
            comm->ctx->tl->local->board_release(comm->ctx->tl_ctx, comm->ctx_ranks[peer],
                                                comm->id, hs->ticket);
            b->held[peer] = NULL;
        }
    }
}

const zsh_hs_ops_t zsh_hs_board_ops = {
    .name      = "board",
    .post      = zsh_hs_board_post,
    .progress  = zsh_hs_board_progress,
    .data      = zsh_hs_board_data,
    .waits_for = zsh_hs_shm_waits_for,
    .done_send = zsh_hs_shm_done_send,
    .done_recv = zsh_hs_board_done_recv,
    .release   = zsh_hs_board_release,
};
