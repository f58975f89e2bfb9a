/*
 * Direct broadcast (algo/direct.h): every rank but the root reads the
 * root's buffer straight into its own by cross-memory attach, a step of
 * chunks per progress call, the readers all at once. Each byte is copied
 * once per reader, where the binomial tree over the transport copies it
 * into and out of shared memory at every hop. The root copies nothing; its
 * call returns once every reader has said it is done with the buffer.
 */
#include "bcast/bcast.h"

#include "algo/direct.h"

static zsh_status_t zsh_bcast_direct_step(zsh_task_t *task)
{
    zsh_direct_t *d = zsh_direct(task);
    size_t bytes = task->args.count * zsh_task_esize(task);
    size_t chunk = task->comm->ctx->cfg.chunk_size, len, moved = 0;
    char *buf    = task->args.recvbuf;
    zsh_status_t status;

    if (task->comm->rank == task->args.root) {
        return ZSH_OK;
    }
    while (d->done < bytes) {
        if (moved >= ZSH_DIRECT_STEP_MIN) {
            return ZSH_INPROGRESS;
        }
        len    = ((chunk == 0) || (bytes - d->done < chunk)) ? bytes - d->done : chunk;
        status = zsh_direct_fetch(task, task->args.root, buf + d->done, d->done, len);
        if (status != ZSH_OK) {
            return status;
        }
        d->done += len;
        moved += len;
    }
    return ZSH_OK;
}

zsh_status_t zsh_bcast_direct_init(zsh_task_t *task)
{
    return zsh_direct_init(task, zsh_bcast_direct_step);
}
