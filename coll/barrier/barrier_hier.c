/*
 * The hierarchical barrier: each node's ranks meet, the node leaders
 * (local rank 0) meet on their rail, and each node's ranks meet again,
 * which lets them go. Only the leaders' empty messages cross the nodes:
 * one rank per node, where the dissemination barrier has every rank send
 * ceil(log2 size) messages, most of them to other nodes.
 */
#include "barrier/barrier.h"

#include "algo/hier.h"

static zsh_status_t zsh_barrier_hier_step(zsh_task_t *task, unsigned step, zsh_request_t **sub_p)
{
    zsh_comm_t *comm = task->comm;

    if (step == 1) {
        if (comm->topo->local_rank != 0) {
            return ZSH_OK; /* not a leader */
        }
        return zsh_barrier_run(comm->hier.rail, ZSH_COLL_BARRIER, sub_p);
    }
    return zsh_barrier_run(comm->hier.node, ZSH_COLL_BARRIER, sub_p);
}

zsh_status_t zsh_barrier_hier_init(zsh_task_t *task)
{
    return zsh_hier_start(task, 3, zsh_barrier_hier_step, NULL);
}
