/*
 * The reduce-scatter algorithms, one per file of this folder;
 * reduce_scatter.c picks one (select/) and runs it. Recursive doubling is
 * shared with all-reduce (algo/rd.h).
 */
#ifndef ZSH_COLL_REDUCE_SCATTER_REDUCE_SCATTER_H_
#define ZSH_COLL_REDUCE_SCATTER_REDUCE_SCATTER_H_

#include "base/partition.h"
#include "task/task.h"

/* Pipelined ring reduce-scatter of the vector @src into @dst, this rank's
 * block; also the all-reduce ring's first phase. */
zsh_status_t zsh_ring_rs_init(zsh_task_t *task, const char *src, char *dst,
                              const zsh_part_t *part, uint32_t step_base);
zsh_status_t zsh_ring_rs_progress(zsh_task_t *task);

/* The deterministic mode's: each block's owner reduces every rank's
 * contribution in rank order (reduce_scatter_ordered.c); also the ordered
 * all-reduce's first phase. */
zsh_status_t zsh_ordered_rs_init(zsh_task_t *task, const char *src, char *dst,
                                 const zsh_part_t *part, uint32_t step_base);
zsh_status_t zsh_ordered_rs_progress(zsh_task_t *task);
zsh_status_t zsh_reduce_scatter_ordered_init(zsh_task_t *task);

/* The deterministic mode's across nodes in blocks: the running sum passed
 * from node to node in rank order (algo/chain.h). */
zsh_status_t zsh_reduce_scatter_chain_init(zsh_task_t *task);

/* Reads of this rank's block from every peer's input on one node (algo/direct.h). */
zsh_status_t zsh_reduce_scatter_direct_init(zsh_task_t *task);

/* The data in the descriptor messages (algo/eager.h). */
zsh_status_t zsh_reduce_scatter_eager_init(zsh_task_t *task);

/* Within each node, then along the rails across nodes (algo/hier.h). */
zsh_status_t zsh_reduce_scatter_hier_init(zsh_task_t *task);

#endif
