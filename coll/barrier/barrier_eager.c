/*
 * The eager barrier: the descriptor exchange every call makes is itself a
 * barrier, since a call completes only once it has every peer's descriptor
 * (or its left neighbour's, round a closed ring), so on 2 to 8 ranks the
 * barrier is that exchange alone, all to all: one message time, read off
 * the peers' boards where they share them (written once, no transport),
 * through the mailbox on two ranks of one node, else sent to every peer.
 * The dissemination barrier needs ceil(log2 n) message times.
 */
#include "barrier/barrier.h"

#include "handshake/handshake.h"

static zsh_status_t zsh_barrier_eager_progress(zsh_task_t *task)
{
    (void)task;
    return ZSH_OK; /* the task completes once the exchange has every peer's */
}

zsh_status_t zsh_barrier_eager_init(zsh_task_t *task)
{
    zsh_status_t status = ZSH_OK;

    /* Every peer's descriptor, not the ring neighbour's (on boards too,
     * where each is copied out to be compared). */
    if (task->comm->size > 2) {
        status = zsh_hs_want_all(&task->hs);
    }
    task->hs.inline_len = 0;
    task->run.progress  = zsh_barrier_eager_progress;
    return status;
}
