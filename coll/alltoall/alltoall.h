/*
 * The all-to-all algorithms, one per file of this folder; alltoall.c picks
 * one (select/) and runs it. Block j of a rank's sendbuf goes to rank j,
 * which keeps it as block `rank` of its recvbuf. In place (sendbuf ==
 * recvbuf) a block would be overwritten before it is sent, so the
 * algorithms that could do that send from a copy of the input.
 */
#ifndef ZSH_COLL_ALLTOALL_ALLTOALL_H_
#define ZSH_COLL_ALLTOALL_ALLTOALL_H_

#include "task/task.h"

/* Bytes of one block: what a rank sends to each rank. */
static inline size_t zsh_alltoall_block(const zsh_task_t *task)
{
    return task->args.count * zsh_task_esize(task);
}

/* Pairwise exchange over the transport's point-to-point transfers. */
zsh_status_t zsh_alltoall_pairwise_init(zsh_task_t *task);

/* Writes into the peers' recvbufs on one node (algo/direct.h). */
zsh_status_t zsh_alltoall_direct_init(zsh_task_t *task);

/* The blocks in the descriptor messages (algo/eager.h). */
zsh_status_t zsh_alltoall_eager_init(zsh_task_t *task);

#endif
