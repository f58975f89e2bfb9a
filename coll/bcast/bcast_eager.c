/*
 * Eager broadcast (algo/eager.h): the root's buffer goes with its
 * descriptor (onto its board, read where it lies, on more ranks of one
 * node); the other ranks' descriptors carry no data, and each copies the
 * root's out once the calls have matched.
 */
#include "bcast/bcast.h"

#include "algo/eager.h"

#include <string.h>

static zsh_status_t zsh_bcast_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;

    if (!zsh_eager_ready(task)) {
        return ZSH_INPROGRESS;
    }
    if (task->comm->rank != a->root) {
        memcpy(a->recvbuf, zsh_hs_data(&task->hs, a->root), a->count * zsh_task_esize(task));
    }
    return ZSH_OK;
}

zsh_status_t zsh_bcast_eager_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    bool root = task->comm->rank == a->root;

    return zsh_eager_setup(task, a->recvbuf, root ? a->count * zsh_task_esize(task) : 0, 0,
                           zsh_bcast_eager_progress);
}
