/*
 * Eager all-to-all (algo/eager.h): each peer's block goes with our
 * descriptor, in a message of its own; on a board the message is the whole
 * input, written once, and each peer takes its block from it where it
 * lies. The data is in the messages before recvbuf is written, so a call
 * in place needs no copy of its own.
 */
#include "alltoall/alltoall.h"

#include "algo/eager.h"

#include <string.h>

static zsh_status_t zsh_alltoall_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t blk = zsh_alltoall_block(task), rank = (size_t)task->comm->rank;
    const char *from;
    int peer;

    if (!zsh_eager_ready(task)) {
        return ZSH_INPROGRESS;
    }
    for (peer = 0; peer < task->comm->size; peer++) {
        if ((size_t)peer == rank) {
            continue;
        }
        from = zsh_hs_data(&task->hs, peer);
        if (task->comm->local.board) {
            from += rank * blk;
        }
        memcpy((char *)a->recvbuf + (size_t)peer * blk, from, blk);
    }
    return ZSH_OK;
}

zsh_status_t zsh_alltoall_eager_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t n = (size_t)task->comm->size, blk = zsh_alltoall_block(task);
    size_t own = blk * (size_t)task->comm->rank;
    const char *in = a->sendbuf;
    zsh_status_t status;

    if (task->comm->local.board) {
        status = zsh_eager_setup(task, in, n * blk, 0, zsh_alltoall_eager_progress);
    } else if (n == 2) {
        status = zsh_eager_setup(task, in + (size_t)(1 - task->comm->rank) * blk, blk, 0,
                                 zsh_alltoall_eager_progress);
    } else {
        status = zsh_eager_setup(task, in, blk, blk, zsh_alltoall_eager_progress);
    }
    /* In place the own block is already there; on a board the input stays
     * the message's body until it is sent, and the own block is its own. */
    if ((status == ZSH_OK) && (a->sendbuf != a->recvbuf)) {
        memcpy((char *)a->recvbuf + own, in + own, blk);
    }
    return status;
}
