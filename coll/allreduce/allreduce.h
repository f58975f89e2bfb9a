/*
 * The all-reduce algorithms, one per file of this folder; allreduce.c picks
 * one (select/) and runs it. Recursive doubling is shared with
 * reduce-scatter (algo/rd.h).
 */
#ifndef ZSH_COLL_ALLREDUCE_ALLREDUCE_H_
#define ZSH_COLL_ALLREDUCE_ALLREDUCE_H_

#include "task/task.h"

/* A schedule: the ring reduce-scatter, then the ring all-gather in place. */
zsh_status_t zsh_allreduce_ring_init(zsh_task_t *task);

/* Reductions of this rank's block from every peer's input, written into
 * every peer's output, on one node (algo/direct.h). */
zsh_status_t zsh_allreduce_direct_init(zsh_task_t *task);

/* The data in the descriptor messages (algo/eager.h). */
zsh_status_t zsh_allreduce_eager_init(zsh_task_t *task);

/* Within each node, along the rails across nodes, within each node again
 * (algo/hier.h). */
zsh_status_t zsh_allreduce_hier_init(zsh_task_t *task);

/* A schedule: the ordered reduce-scatter (the deterministic mode's, rank
 * order per element), then the ring all-gather in place. */
zsh_status_t zsh_allreduce_ordered_init(zsh_task_t *task);

/* The chain across nodes in blocks (algo/chain.h), then the result from
 * the last node along the rails and within each node. */
zsh_status_t zsh_allreduce_chain_init(zsh_task_t *task);

#endif
