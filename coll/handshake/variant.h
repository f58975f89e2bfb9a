/*
 * What the handshake's variants share (handshake.c) and the tables each
 * fills (ring.c, all.c, box.c, board.c).
 */
#ifndef ZSH_COLL_HANDSHAKE_VARIANT_H_
#define ZSH_COLL_HANDSHAKE_VARIANT_H_

#include "handshake/handshake.h"

extern const zsh_hs_ops_t zsh_hs_ring_ops;
extern const zsh_hs_ops_t zsh_hs_all_ops;
extern const zsh_hs_ops_t zsh_hs_box_ops;
extern const zsh_hs_ops_t zsh_hs_board_ops;

/* At least @n idle transfer slots, in use from now on (hs->nxfers). */
zsh_status_t zsh_hs_xfers(zsh_hs_t *hs, unsigned n);

/* Compare @peer's descriptor with ours. */
zsh_status_t zsh_hs_compare(const zsh_hs_t *hs, int peer, const zsh_desc_t *theirs);

/* What @peer sent through the transport while we waited for its message in
 * shared memory: it chose another algorithm for this call, or sends these
 * calls through the transport. Always an error: the mismatch, or which way
 * each rank sent. */
zsh_status_t zsh_hs_probed(const zsh_hs_t *hs, int peer, const zsh_desc_t *theirs);

/* Write message @ticket of the communicator's line, made of @parts, to the
 * peer's mailbox (a mailbox message is the head alone) or onto our board,
 * once every earlier one has gone, since peers take them in ticket order
 * and a line holds only so many; *@sent says it went. */
zsh_status_t zsh_hs_shm_put(zsh_hs_t *hs, uint64_t ticket, const zsh_tl_parts_t *parts,
                            bool *sent);

/* Our descriptor message, through the mailbox or onto the board: on a board
 * the data follows from where it lies (hs->body). */
zsh_status_t zsh_hs_shm_send(zsh_hs_t *hs);

/* A mailbox or board exchange's progress: ours goes (in ticket order), then
 * @take takes the peers' and compares them, then it is verified once ours
 * went, since our descriptor lives in the task. Inline, so that each
 * variant's pass calls its own @take directly: a waiter runs it on every
 * pass, and a small call's latency is a few of them. */
static inline zsh_status_t zsh_hs_shm_progress(zsh_hs_t *hs,
                                               zsh_status_t (*take)(zsh_hs_t *hs))
{
    zsh_status_t status;

    if (!hs->sent) {
        status = zsh_hs_shm_send(hs);
        if ((status != ZSH_OK) && (status != ZSH_INPROGRESS)) {
            return status;
        }
    }
    if (hs->state == ZSH_HS_POSTED) {
        status = take(hs);
        if (status != ZSH_OK) {
            return status;
        }
        hs->state = ZSH_HS_MATCHED;
    }
    if (!hs->sent) {
        return ZSH_INPROGRESS; /* our descriptor lives in the task, an eager call's data maybe
                                  in the caller's buffer */
    }
    hs->state = ZSH_HS_VERIFIED;
    return ZSH_OK;
}

/* A direct call's "done" message: empty, the ticket after its descriptor. */
zsh_status_t zsh_hs_shm_done_send(zsh_hs_t *hs);

/* The peer whose mailbox or board message we take @k-th: rank + 1,
 * rank + 2, ... (on two ranks, the other one). */
static inline int zsh_hs_shm_peer(const zsh_hs_t *hs, unsigned k)
{
    return (hs->comm->rank + (int)k + 1) % hs->comm->size;
}

/* Whether a mailbox or board exchange still waits for @peer's descriptor,
 * or once ours went, its "done" message; @taken / @done_taken peers done. */
bool zsh_hs_shm_waits_for(const zsh_hs_t *hs, int peer);

#endif
