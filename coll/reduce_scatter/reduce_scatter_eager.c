/*
 * Eager reduce-scatter (algo/eager.h): each peer gets its block of this
 * rank's input with our descriptor, and this rank reduces the peers' copies
 * of its own block with its own. On a board the message is the whole input,
 * written once, and each peer reduces its block straight from it.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/eager.h"

static zsh_status_t zsh_reduce_scatter_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    int rank = task->comm->rank, n = task->comm->size, peer;
    size_t blk = a->count * zsh_task_esize(task);
    const void *src[ZSH_EAGER_MAX_RANKS];

    if (!zsh_eager_ready(task)) {
        return ZSH_INPROGRESS;
    }
    for (peer = 0; peer < n; peer++) {
        if (peer == rank) {
            src[peer] = (const char *)a->sendbuf + (size_t)rank * blk;
        } else if (task->comm->local.board) {
            src[peer] = (const char *)zsh_hs_data(&task->hs, peer) + (size_t)rank * blk;
        } else {
            src[peer] = zsh_hs_data(&task->hs, peer);
        }
    }
    zsh_eager_reduce(task, a->recvbuf, src, n);
    return ZSH_OK;
}

zsh_status_t zsh_reduce_scatter_eager_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t n = (size_t)task->comm->size, blk = a->count * zsh_task_esize(task);
    const char *in = a->sendbuf;

    if (task->comm->local.board) {
        /* once, for every peer to take its block from */
        return zsh_eager_setup(task, in, n * blk, 0, zsh_reduce_scatter_eager_progress);
    }
    if (n == 2) {
        return zsh_eager_setup(task, in + (size_t)(1 - task->comm->rank) * blk, blk, 0,
                               zsh_reduce_scatter_eager_progress);
    }
    return zsh_eager_setup(task, in, blk, blk, zsh_reduce_scatter_eager_progress);
}
