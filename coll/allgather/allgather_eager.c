/*
 * Eager all-gather (algo/eager.h): this rank's input goes with its
 * descriptor; each peer's lands in its block of recvbuf.
 */
#include "allgather/allgather.h"

#include "algo/eager.h"

#include <string.h>

static zsh_status_t zsh_allgather_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t blk = a->count * zsh_task_esize(task);
    int peer;

    if (!zsh_eager_ready(task)) {
        return ZSH_INPROGRESS;
    }
    for (peer = 0; peer < task->comm->size; peer++) {
        if (peer != task->comm->rank) {
            memcpy((char *)a->recvbuf + (size_t)peer * blk, zsh_hs_data(&task->hs, peer), blk);
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_allgather_eager_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t blk = a->count * zsh_task_esize(task);
    char *own  = (char *)a->recvbuf + (size_t)task->comm->rank * blk;

    if (own != a->sendbuf) {
        memcpy(own, a->sendbuf, blk);
    }
    return zsh_eager_setup(task, a->sendbuf, blk, 0, zsh_allgather_eager_progress);
}
