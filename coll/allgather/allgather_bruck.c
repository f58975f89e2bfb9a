/*
 * Bruck all-gather: ceil(log2 size) rounds for any rank count. In round k a
 * rank sends the first min(2^k, size - 2^k) blocks it holds to rank - 2^k
 * and appends as many from rank + 2^k; a final rotation puts the blocks in
 * rank order. Latency-optimal, so it serves small messages.
 */
#include "allgather/allgather.h"

#include "algo/rounds.h"

#include <string.h>

/* Round k: send our first min(2^k, size - 2^k) blocks to rank - 2^k and
 * append as many from rank + 2^k. */
static zsh_status_t zsh_bruck_post(zsh_task_t *task)
{
    zsh_rounds_t *st = zsh_rounds(task);
    size_t n = (size_t)task->comm->size, rank = (size_t)task->comm->rank;
    size_t blk  = task->args.count * zsh_task_esize(task);
    size_t dist = (size_t)1 << st->round;
    size_t nblk = (n - dist < dist) ? n - dist : dist;

    return zsh_task_sendrecv(task, (uint32_t)st->round, (int)((rank + dist) % n),
                             st->tmp + dist * blk, nblk * blk, (int)((rank + n - dist) % n),
                             st->tmp, nblk * blk);
}

static zsh_status_t zsh_bruck_progress(zsh_task_t *task)
{
    zsh_rounds_t *st = zsh_rounds(task);
    int n = task->comm->size, rank = task->comm->rank;
    size_t blk = task->args.count * zsh_task_esize(task);
    zsh_status_t status;
    int i;

    status = zsh_rounds_run(task, st->nrounds, zsh_bruck_post, NULL);
    if (status != ZSH_OK) {
        return status;
    }
    for (i = 0; i < n; i++) {
        memcpy((char *)task->args.recvbuf + (size_t)((rank + i) % n) * blk,
               st->tmp + (size_t)i * blk, blk);
    }
    return ZSH_OK;
}

zsh_status_t zsh_bruck_init(zsh_task_t *task)
{
    zsh_rounds_t *st = zsh_rounds(task);
    size_t blk       = task->args.count * zsh_task_esize(task);
    zsh_status_t status;
    void *tmp;

    status = zsh_task_scratch(task, blk * (size_t)task->comm->size, &tmp);
    if (status != ZSH_OK) {
        return status;
    }
    st->tmp     = tmp;
    st->round   = 0;
    st->posted  = false;
    st->nrounds = zsh_ceil_log2(task->comm->size);
    memcpy(st->tmp, task->args.sendbuf, blk);
    task->run.progress = zsh_bruck_progress;
    return zsh_task_ops(task, 2);
}
