#include "algo/chain.h"

#include "reduce/kernels.h"

/* The rail's messages of the chain: hierarchical calls post their steps in
 * turn, and messages of one tag keep their order, so one tag serves all. */
#define ZSH_CHAIN_TAG 0

bool zsh_chain_runs(const zsh_comm_t *comm)
{
    return (comm->hier.node != NULL) && comm->hier.even &&
           (zsh_topo_placement(comm->topo) == ZSH_TOPO_BLOCK);
}

/* The node's reduce-scatter in rank order: its child runs in the mode for
 * this call only (the call's task keeps it, zsh_task_t::deterministic),
 * since the default mode's hierarchical calls use it too. */
static zsh_status_t zsh_chain_node_reduce(zsh_task_t *task, size_t share, zsh_request_t **sub_p)
{
    zsh_hier_t *st   = zsh_hier(task);
    zsh_comm_t *node = task->comm->hier.node;
    bool saved       = node->deterministic;
    zsh_status_t status;

    node->deterministic = true;
    status = zsh_ireduce_scatter(st->a, st->b, share, st->wtype, st->wop, node, sub_p);
    node->deterministic = saved;
    return status;
}

zsh_status_t zsh_chain_step(zsh_task_t *task, unsigned step, size_t share,
                            zsh_request_t **sub_p)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    bool first          = (t->node == 0);
    bool last           = (t->node == t->nnodes - 1);

    switch (step) {
    case 0:
        return first ? ZSH_OK
                     : zsh_irecv(st->b, share, st->wtype, t->node - 1, ZSH_CHAIN_TAG,
                                 task->comm->hier.rail, sub_p);
    case 1:
        return first ? ZSH_OK
                     : zsh_iallgather(st->b, st->c, share, st->wtype, task->comm->hier.node,
                                      sub_p);
    case 2:
        /* Local rank 0's input after the sum of the nodes before: the
         * node's fold then goes on from there in rank order. Its operands
         * commute, so which side is which changes no bit. */
        if (!first && (t->local_rank == 0)) {
            zsh_reduce_acc_acc(st->a, st->c, share * (size_t)t->local_size, st->wtype, st->wop);
        }
        return zsh_chain_node_reduce(task, share, sub_p);
    default:
        return last ? ZSH_OK
                    : zsh_isend(st->b, share, st->wtype, t->node + 1, ZSH_CHAIN_TAG,
                                task->comm->hier.rail, sub_p);
    }
}
