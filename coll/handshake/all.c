/*
 * The all-to-all handshake, for eager and direct calls on more than two
 * ranks without boards: the descriptor, with the data (eager) or the
 * addresses (direct) each peer needs, goes to every peer through the
 * transport, and every peer's is compared with ours before any of it is
 * used. A small call then costs one round of messages that all travel at
 * once, where the ring followed by a log-latency algorithm costs several
 * rounds, each waiting for a peer to be scheduled; a direct call needs
 * every peer's addresses anyway.
 *
 * Transfer slots: receives from each peer at [peer], sends at [n + peer].
 */
#include "handshake/variant.h"

#include "base/tag.h"

#include <string.h>

static zsh_status_t zsh_hs_all_post(zsh_hs_t *hs)
{
    zsh_comm_t *comm = hs->comm;
    zsh_hs_bufs_t *b = hs->bufs;
    size_t len       = sizeof(b->out.desc) + hs->inline_len;
    int n = comm->size, i, peer;
    zsh_desc_msg_t *msg;
    zsh_status_t status;

    status = zsh_hs_xfers(hs, 2 * (unsigned)n);
    for (peer = 0; (peer < n) && (status == ZSH_OK); peer++) {
        if (peer == comm->rank) {
            continue;
        }
        /* A message shorter than a descriptor leaves zeros, which fail as malformed. */
        memset(&b->all_in[peer].desc, 0, sizeof(b->all_in[peer].desc));
        status = zsh_xfer_recv_upto(comm, hs->seq, &b->xfers[peer], peer, ZSH_TAG_STEP_DESC,
                                    &b->all_in[peer], sizeof(b->all_in[peer]));
    }
    /* Each rank starts with its right neighbour, so that no rank takes
     * everyone's first message. */
    for (i = 1; (i < n) && (status == ZSH_OK); i++) {
        peer = (comm->rank + i) % n;
        msg  = &b->out;
        if (hs->all_out != NULL) {
            msg       = (zsh_desc_msg_t *)(void *)(hs->all_out + (size_t)peer * hs->all_stride);
            msg->desc = b->out.desc;
        }
        status = zsh_xfer_send(comm, hs->seq, &b->xfers[n + peer], peer, ZSH_TAG_STEP_DESC, msg,
                               len);
    }
    return status;
}

static zsh_status_t zsh_hs_all_progress(zsh_hs_t *hs)
{
    zsh_comm_t *comm = hs->comm;
    zsh_hs_bufs_t *b = hs->bufs;
    bool waiting     = false;
    int n = comm->size, peer;
    zsh_status_t status;

    if (hs->state == ZSH_HS_POSTED) {
        for (peer = 0; peer < n; peer++) {
            if (peer == comm->rank) {
                continue;
            }
            status = zsh_xfer_test(comm, &b->xfers[peer]);
            if (status == ZSH_INPROGRESS) {
                waiting = true;
                continue;
            }
            if (status == ZSH_OK) {
                status = zsh_hs_compare(hs, peer, &b->all_in[peer].desc);
            }
            if (status != ZSH_OK) {
                return status;
            }
        }
        if (waiting) {
            return ZSH_INPROGRESS;
        }
        hs->state = ZSH_HS_MATCHED;
    }
    status = zsh_xfer_test_all(comm, b->xfers + n, (unsigned)n);
    if (status != ZSH_OK) {
        return status;
    }
    hs->state = ZSH_HS_VERIFIED;
    return ZSH_OK;
}

static const void *zsh_hs_all_data(const zsh_hs_t *hs, int peer)
{
    return hs->bufs->all_in[peer].data;
}

static bool zsh_hs_all_waits_for(const zsh_hs_t *hs, int peer)
{
    (void)hs;
    (void)peer; /* its receives say so themselves */
    return false;
}

const zsh_hs_ops_t zsh_hs_all_ops = {
    .name      = "all",
    .post      = zsh_hs_all_post,
    .progress  = zsh_hs_all_progress,
    .data      = zsh_hs_all_data,
    .waits_for = zsh_hs_all_waits_for,
};
