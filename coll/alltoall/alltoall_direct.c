/*
 * Direct all-to-all (algo/direct.h): this rank writes its block for each
 * peer p straight into block `rank` of p's recvbuf, a chunk at a time, in
 * the order rank + 1, rank + 2, ... so that at any moment the ranks write
 * into different peers. Every byte crosses once; nobody forwards anything.
 * In place, the peers would overwrite blocks this rank has yet to send, so
 * the input is copied aside first (the extra scratch) and sent from there.
 */
#include "alltoall/alltoall.h"

#include "algo/direct.h"

#include <string.h>

static zsh_status_t zsh_alltoall_direct_step(zsh_task_t *task)
{
    zsh_direct_t *d = zsh_direct(task);
    size_t blk = zsh_alltoall_block(task), n = (size_t)task->comm->size;
    size_t rank = (size_t)task->comm->rank, share = (n - 1) * blk;
    size_t chunk = task->comm->ctx->cfg.chunk_size, len, moved = 0, k, at;
    const char *in = (d->extra != NULL) ? d->extra : task->args.sendbuf;
    zsh_status_t status;
    int peer;

    /* d->done counts bytes of the share: peer rank + 1's block first. */
    while (d->done < share) {
        if (moved >= ZSH_DIRECT_STEP_MIN) {
            return ZSH_INPROGRESS;
        }
        k    = d->done / blk + 1;
        at   = d->done % blk;
        peer = (int)((rank + k) % n);
        len  = ((chunk == 0) || (blk - at < chunk)) ? blk - at : chunk;
        status = zsh_direct_put(task, peer, in + (size_t)peer * blk + at, rank * blk + at, len);
        if (status != ZSH_OK) {
            return status;
        }
        d->done += len;
        moved += len;
    }
    return ZSH_OK;
}

zsh_status_t zsh_alltoall_direct_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    size_t blk = zsh_alltoall_block(task), n = (size_t)task->comm->size;
    size_t own = blk * (size_t)task->comm->rank;
    bool inplace = (a->sendbuf == a->recvbuf);
    zsh_status_t status;
    zsh_direct_t *d;

    status = zsh_direct_init_extra(task, zsh_alltoall_direct_step, inplace ? n * blk : 0);
    if (status != ZSH_OK) {
        return status;
    }
    d = zsh_direct(task);
    /* Before the descriptor goes: no peer writes into recvbuf until it has ours. */
    if (inplace) {
        memcpy(d->extra, a->sendbuf, n * blk);
    } else {
        memcpy((char *)a->recvbuf + own, (const char *)a->sendbuf + own, blk);
    }
    return ZSH_OK;
}
