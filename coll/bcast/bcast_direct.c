/*
 * Direct broadcast (algo/direct.h), a scatter and an all-gather in one
 * pass: the buffer is split into a block per rank, each rank but the root
 * reads its block from the root's buffer a chunk at a time, and writes
 * each chunk, still in cache, into the buffers of every rank but the root;
 * the root writes its own block the same way. Every rank copies about
 * (ranks - 1) / ranks of the buffer, all at once, where reads of the
 * whole buffer by every reader would leave the root idle (on two ranks,
 * half the copying on each core instead of all of it on one).
 */
#include "bcast/bcast.h"

#include "algo/direct.h"

static zsh_status_t zsh_bcast_direct_step(zsh_task_t *task)
{
    zsh_direct_t *d = zsh_direct(task);
    int rank = task->comm->rank, root = task->args.root;
    size_t esize = zsh_task_esize(task);
    size_t first = zsh_part_offset(&d->part, (size_t)rank) * esize;
    size_t bytes = zsh_part_count(&d->part, (size_t)rank) * esize;
    size_t chunk = task->comm->ctx->cfg.chunk_size, len, moved = 0;
    char *own    = (char *)task->args.recvbuf + first;
    zsh_status_t status = ZSH_OK;

    while (d->done < bytes) {
        if (moved >= ZSH_DIRECT_STEP_MIN) {
            return ZSH_INPROGRESS;
        }
        len = ((chunk == 0) || (bytes - d->done < chunk)) ? bytes - d->done : chunk;
        if (rank != root) {
            status = zsh_direct_fetch(task, root, own + d->done, first + d->done, len);
        }
        if (status == ZSH_OK) {
            status = zsh_direct_spread_but(task, own + d->done, first + d->done, len, root);
        }
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
