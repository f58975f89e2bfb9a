/*
 * The hierarchical broadcast. Where every node has a rank of the root's
 * local rank, the root's rail carries the buffer to one rank of each node,
 * which the node's broadcast then starts from. Where the root's rail
 * misses a node (uneven nodes, the root among a larger node's extra
 * ranks), the root's node broadcasts first, the node leaders' rail (local
 * rank 0, on every node) carries the buffer across, and each other node's
 * leader broadcasts it there. Either way each node's link carries the
 * buffer in once.
 */
#include "bcast/bcast.h"

#include "algo/hier.h"

static zsh_status_t zsh_bcast_hier_rail_step(zsh_task_t *task, unsigned step,
                                             zsh_request_t **sub_p)
{
    const zsh_topo_t *t        = task->comm->topo;
    const zsh_topo_rank_t *root = &t->ranks[task->args.root];

    if (step == 0) {
        if (t->local_rank != root->local_rank) {
            return ZSH_OK; /* not on the root's rail */
        }
        return zsh_ibroadcast(task->args.recvbuf, task->args.count, task->args.dtype,
                              root->node, task->comm->hier.rail, sub_p);
    }
    return zsh_ibroadcast(task->args.recvbuf, task->args.count, task->args.dtype,
                          root->local_rank, task->comm->hier.node, sub_p);
}

/* Steps: 0 the root's node from the root, 1 the leaders' rail from the
 * root's node, 2 every other node from its leader. */
static zsh_status_t zsh_bcast_hier_leaders_step(zsh_task_t *task, unsigned step,
                                                zsh_request_t **sub_p)
{
    const zsh_topo_t *t        = task->comm->topo;
    const zsh_topo_rank_t *root = &t->ranks[task->args.root];
    bool root_node             = (t->node == root->node);

    if (step == 1) {
        if (t->local_rank != 0) {
            return ZSH_OK; /* not a leader */
        }
        return zsh_ibroadcast(task->args.recvbuf, task->args.count, task->args.dtype,
                              root->node, task->comm->hier.rail, sub_p);
    }
    if (root_node != (step == 0)) {
        return ZSH_OK; /* the other nodes' step */
    }
    return zsh_ibroadcast(task->args.recvbuf, task->args.count, task->args.dtype,
                          root_node ? root->local_rank : 0, task->comm->hier.node, sub_p);
}

zsh_status_t zsh_bcast_hier_init(zsh_task_t *task)
{
    const zsh_topo_t *t = task->comm->topo;

    if (t->ranks[task->args.root].local_rank < t->min_local) {
        return zsh_hier_start(task, 2, zsh_bcast_hier_rail_step, NULL);
    }
    return zsh_hier_start(task, 3, zsh_bcast_hier_leaders_step, NULL);
}
