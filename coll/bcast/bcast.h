/*
 * The broadcast algorithms: a pipelined binomial tree (bcast_binomial.c),
 * reads of the root's buffer on one node (bcast_direct.c), the root's data
 * in its descriptor message (bcast_eager.c), and the hierarchical one
 * across nodes (bcast_hier.c).
 */
#ifndef ZSH_COLL_BCAST_BCAST_H_
#define ZSH_COLL_BCAST_BCAST_H_

#include "task/task.h"

zsh_status_t zsh_bcast_binomial_init(zsh_task_t *task);

/* A block per rank, read from the root and written into the other ranks'
 * buffers by cross-memory attach (algo/direct.h). */
zsh_status_t zsh_bcast_direct_init(zsh_task_t *task);

/* The root's buffer rides in its descriptor message (algo/eager.h). */
zsh_status_t zsh_bcast_eager_init(zsh_task_t *task);

/* Along the root's rail across nodes, then within each node (algo/hier.h). */
zsh_status_t zsh_bcast_hier_init(zsh_task_t *task);

#endif
