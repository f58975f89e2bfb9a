/*
 * Recursive doubling over a whole vector, for small all-reduces and
 * reduce-scatters (which keep only their block of the result).
 */
#ifndef ZSH_COLL_ALGO_RD_H_
#define ZSH_COLL_ALGO_RD_H_

#include "task/task.h"

/* Recursive-doubling all-reduce of @count elements of args.sendbuf, storing
 * all of it (all-reduce) or this rank's block (reduce-scatter) in recvbuf. */
zsh_status_t zsh_rd_init(zsh_task_t *task, size_t count);

#endif
