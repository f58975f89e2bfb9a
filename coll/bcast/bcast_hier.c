/*
 * The hierarchical broadcast: the root's rail carries the buffer to one
 * rank of each node, the rank of the root's local rank, which the node's
 * broadcast then starts from. Each node's link carries the buffer in once.
 */
#include "bcast/bcast.h"

#include "algo/hier.h"

static zsh_status_t zsh_bcast_hier_step(zsh_task_t *task, unsigned step, zsh_request_t **sub_p)
{
    const zsh_topo_t *t        = task->comm->topo;
    const zsh_topo_rank_t *root = &t->ranks[task->args.root];

    if (step == 0) {
        if (t->local_rank != root->local_rank) {
            return ZSH_OK; /* not on the root's rail */
        }
        return zsh_broadcast_post(task->args.recvbuf, task->args.count, task->args.dtype,
                                  root->node, task->comm->hier.rail, sub_p);
    }
    return zsh_broadcast_post(task->args.recvbuf, task->args.count, task->args.dtype,
                              root->local_rank, task->comm->hier.node, sub_p);
}

zsh_status_t zsh_bcast_hier_init(zsh_task_t *task)
{
    return zsh_hier_start(task, 2, zsh_bcast_hier_step, NULL);
}
