/*
 * The all-gather algorithms, one per file of this folder; allgather.c picks
 * one (select/) and runs it.
 */
#ifndef ZSH_COLL_ALLGATHER_ALLGATHER_H_
#define ZSH_COLL_ALLGATHER_ALLGATHER_H_

#include "base/partition.h"
#include "task/task.h"

/* Pipelined ring over @buf, whose block `rank` already holds this rank's
 * data; also the all-reduce ring's second phase (tag steps from @step_base). */
zsh_status_t zsh_ring_ag_init(zsh_task_t *task, char *buf, const zsh_part_t *part,
                              uint32_t step_base);
zsh_status_t zsh_ring_ag_progress(zsh_task_t *task);

/* Bruck: log-latency, for small messages. */
zsh_status_t zsh_bruck_init(zsh_task_t *task);

/* One-sided reads of every peer's block from its registered receive buffer
 * (the transport's rma group). */
zsh_status_t zsh_rma_ag_init(zsh_task_t *task);

/* Copies between the ranks' buffers on one node (algo/direct.h). */
zsh_status_t zsh_allgather_direct_init(zsh_task_t *task);

/* The data in the descriptor messages (algo/eager.h). */
zsh_status_t zsh_allgather_eager_init(zsh_task_t *task);

/* Along the rails across nodes, then within each node (algo/hier.h). */
zsh_status_t zsh_allgather_hier_init(zsh_task_t *task);

#endif
