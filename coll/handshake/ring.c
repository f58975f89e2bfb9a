/*
 * The ring handshake: each rank sends its descriptor to its right
 * neighbour and compares its left neighbour's, one small message each way
 * through the transport. The ring closes, so a disagreement anywhere shows
 * between some pair of neighbours.
 */
#include "handshake/variant.h"

#include "base/tag.h"

#include <string.h>

enum { ZSH_HS_RING_RECV, ZSH_HS_RING_SEND };

static int zsh_hs_ring_left(const zsh_hs_t *hs)
{
    return (hs->comm->rank + hs->comm->size - 1) % hs->comm->size;
}

static zsh_status_t zsh_hs_ring_post(zsh_hs_t *hs)
{
    zsh_hs_bufs_t *b = hs->bufs;
    zsh_status_t status;

    status = zsh_hs_xfers(hs, 2);
    if (status != ZSH_OK) {
        return status;
    }
    /* A message shorter than a descriptor must not leave an earlier call's behind. */
    memset(&b->in.desc, 0, sizeof(b->in.desc));
    status = zsh_xfer_recv_upto(hs->comm, hs->seq, &b->xfers[ZSH_HS_RING_RECV],
                                zsh_hs_ring_left(hs), ZSH_TAG_STEP_DESC, &b->in, sizeof(b->in));
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_xfer_send(hs->comm, hs->seq, &b->xfers[ZSH_HS_RING_SEND],
                         (hs->comm->rank + 1) % hs->comm->size, ZSH_TAG_STEP_DESC, &b->out,
                         sizeof(b->out.desc) + hs->inline_len);
}

static zsh_status_t zsh_hs_ring_progress(zsh_hs_t *hs)
{
    zsh_hs_bufs_t *b = hs->bufs;
    zsh_status_t status;

    if (hs->state == ZSH_HS_POSTED) {
        status = zsh_xfer_test(hs->comm, &b->xfers[ZSH_HS_RING_RECV]);
        if (status != ZSH_OK) {
            return status;
        }
        status = zsh_hs_compare(hs, zsh_hs_ring_left(hs), &b->in.desc);
        if (status != ZSH_OK) {
            return status;
        }
        hs->state = ZSH_HS_MATCHED;
    }
    /* Our descriptor lives in the task: it must be sent before the task is reused. */
    status = zsh_xfer_test(hs->comm, &b->xfers[ZSH_HS_RING_SEND]);
    if (status != ZSH_OK) {
        return status;
    }
    hs->state = ZSH_HS_VERIFIED;
    return ZSH_OK;
}

static const void *zsh_hs_ring_data(const zsh_hs_t *hs, int peer)
{
    (void)peer; /* the left neighbour's */
    return hs->bufs->in.data;
}

static bool zsh_hs_ring_waits_for(const zsh_hs_t *hs, int peer)
{
    (void)hs;
    (void)peer; /* its receive says so itself */
    return false;
}

const zsh_hs_ops_t zsh_hs_ring_ops = {
    .name      = "ring",
    .post      = zsh_hs_ring_post,
    .progress  = zsh_hs_ring_progress,
    .data      = zsh_hs_ring_data,
    .waits_for = zsh_hs_ring_waits_for,
};
