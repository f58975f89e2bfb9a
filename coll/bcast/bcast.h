/*
 * The broadcast algorithm: a pipelined binomial tree (bcast_binomial.c).
 */
#ifndef ZSH_COLL_BCAST_BCAST_H_
#define ZSH_COLL_BCAST_BCAST_H_

#include "task/task.h"

zsh_status_t zsh_bcast_binomial_init(zsh_task_t *task);

#endif
