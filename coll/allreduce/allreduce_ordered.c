/*
 * The ordered all-reduce, the deterministic mode's over messages: the
 * ordered reduce-scatter leaves each rank its block of recvbuf reduced in
 * rank order (reduce_scatter/reduce_scatter_ordered.c), then the ring
 * all-gather copies the blocks in place. Copies change no bits, so every
 * rank holds the same, in zeroshard.h's order.
 */
#include "allreduce/allreduce.h"

#include "algo/ring.h"
#include "allgather/allgather.h"
#include "reduce_scatter/reduce_scatter.h"

/* The all-gather phase's tags use the upper half of the step space. */
#define ZSH_ALLREDUCE_ORDERED_AG_STEPS (ZSH_TAG_DATA_STEPS / 2)

static zsh_status_t zsh_allreduce_ordered_progress(zsh_task_t *task)
{
    size_t n = (size_t)task->comm->size;
    zsh_part_t part;
    zsh_status_t status;

    if (task->run.phase == 0) {
        status = zsh_ordered_rs_progress(task);
        if (status != ZSH_OK) {
            return status;
        }
        part            = zsh_part_make(task->args.count, n);
        task->run.phase = 1;
        status = zsh_ring_ag_init(task, task->args.recvbuf, &part, ZSH_ALLREDUCE_ORDERED_AG_STEPS);
        task->run.progress = zsh_allreduce_ordered_progress;
        if (status != ZSH_OK) {
            return status;
        }
        zsh_ring(task)->own_first = false; /* it sends the reduced block */
    }
    return zsh_ring_ag_progress(task);
}

zsh_status_t zsh_allreduce_ordered_init(zsh_task_t *task)
{
    size_t n        = (size_t)task->comm->size;
    zsh_part_t part = zsh_part_make(task->args.count, n);
    char *own       = (char *)task->args.recvbuf +
                zsh_part_offset(&part, (size_t)task->comm->rank) * zsh_task_esize(task);
    zsh_status_t status;

    status = zsh_ordered_rs_init(task, task->args.sendbuf, own, &part, 0);
    task->run.progress = zsh_allreduce_ordered_progress;
    return status;
}
