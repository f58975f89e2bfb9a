/*
 * Direct all-gather (algo/direct.h): this rank's input into its block of
 * recvbuf and every peer's. The peers' copies read the input chunk, which
 * the copy into recvbuf has just brought into cache; when that copy streams
 * (d->stream), recvbuf's block is not in cache, and the input is the only
 * copy that is.
 */
#include "allgather/allgather.h"

#include "algo/copy.h"
#include "algo/direct.h"

#include <string.h>

static zsh_status_t zsh_allgather_direct_step(zsh_task_t *task)
{
    zsh_direct_t *d = zsh_direct(task);
    size_t blk = task->args.count * zsh_task_esize(task), base = blk * (size_t)task->comm->rank;
    size_t chunk = task->comm->ctx->cfg.chunk_size, len, moved = 0;
    const char *in = task->args.sendbuf;
    char *own = (char *)task->args.recvbuf + base;
    zsh_status_t status;

    while (d->done < blk) {
        if (moved >= ZSH_DIRECT_STEP_MIN) {
            return ZSH_INPROGRESS;
        }
        len = ((chunk == 0) || (blk - d->done < chunk)) ? blk - d->done : chunk;
        if (own == in) {
            /* in place: the block is already there */
        } else if (d->stream) {
            zsh_copy_stream(own + d->done, in + d->done, len);
        } else {
            memcpy(own + d->done, in + d->done, len);
        }
        status = zsh_direct_spread(task, in + d->done, base + d->done, len);
        if (status != ZSH_OK) {
            return status;
        }
        d->done += len;
        moved += len;
    }
    return ZSH_OK;
}

zsh_status_t zsh_allgather_direct_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t bytes = a->count * zsh_task_esize(task), n = (size_t)task->comm->size;
    const char *own = (const char *)a->recvbuf + bytes * (size_t)task->comm->rank;
    zsh_status_t status;

    status = zsh_direct_init(task, zsh_allgather_direct_step);
    /* Not in place, with send and receive buffers together past what stays
     * in cache: copy the own block by streaming. */
    zsh_direct(task)->stream = (a->sendbuf != own) &&
                               ((n + 1) * bytes > task->comm->ctx->stream_min);
    return status;
}
