/*
 * Eager all-reduce (algo/eager.h): the whole input goes with the
 * descriptor, and every rank reduces all inputs in rank order, so that all
 * hold identical bits.
 */
#include "allreduce/allreduce.h"

#include "algo/eager.h"

static zsh_status_t zsh_allreduce_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    int rank = task->comm->rank, n = task->comm->size, peer;
    const void *src[ZSH_EAGER_MAX_RANKS];

    if (!zsh_eager_ready(task)) {
        return ZSH_INPROGRESS;
    }
    for (peer = 0; peer < n; peer++) {
        src[peer] = (peer == rank) ? a->sendbuf : zsh_hs_data(&task->hs, peer);
    }
    zsh_eager_reduce(task, a->recvbuf, src, n);
    return ZSH_OK;
}

zsh_status_t zsh_allreduce_eager_init(zsh_task_t *task)
{
    return zsh_eager_setup(task, task->args.sendbuf, task->args.count * zsh_task_esize(task), 0,
                           zsh_allreduce_eager_progress);
}
