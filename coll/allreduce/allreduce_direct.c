/*
 * Direct all-reduce (algo/direct.h): this rank reduces its block of the
 * vector from every peer's input into its recvbuf, and writes each reduced
 * chunk into every peer's recvbuf while it is in cache.
 */
#include "allreduce/allreduce.h"

#include "algo/direct.h"

static zsh_status_t zsh_allreduce_direct_step(zsh_task_t *task)
{
    zsh_direct_t *d = zsh_direct(task);
    size_t first    = zsh_part_offset(&d->part, (size_t)task->comm->rank);

    return zsh_direct_reduce_step(task, (char *)task->args.recvbuf +
                                            first * zsh_task_esize(task), true);
}

zsh_status_t zsh_allreduce_direct_init(zsh_task_t *task)
{
    return zsh_direct_init(task, zsh_allreduce_direct_step);
}
