/*
 * Direct reduce-scatter (algo/direct.h): this rank reads its block of every
 * peer's input and reduces it into recvbuf; nothing is written to a peer.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/direct.h"

static zsh_status_t zsh_reduce_scatter_direct_step(zsh_task_t *task)
{
    return zsh_direct_reduce_step(task, task->args.recvbuf, false);
}

zsh_status_t zsh_reduce_scatter_direct_init(zsh_task_t *task)
{
    return zsh_direct_init(task, zsh_reduce_scatter_direct_step);
}
