/*
 * The hierarchical all-gather: each rank's block first crosses the nodes
 * on its rail, then each node gathers its rails' results. A node's link
 * carries each other node's blocks into it once, what the node lacks.
 * The node's result comes in local-rank then node order: the receive
 * buffer's own order under round-robin placement, else scratch copied
 * into place at the end.
 */
#include "allgather/allgather.h"

#include "algo/hier.h"

#include <string.h>

static zsh_status_t zsh_allgather_hier_step(zsh_task_t *task, unsigned step,
                                            zsh_request_t **sub_p)
{
    zsh_hier_t *st        = zsh_hier(task);
    const zsh_topo_t *t   = task->comm->topo;
    size_t count          = task->args.count, nnodes = (size_t)t->nnodes;
    char *rail            = st->a + (size_t)t->local_rank * nnodes * count * zsh_task_esize(task);

    if (step == 0) {
        return zsh_iallgather(task->args.sendbuf, rail, count, task->args.dtype,
                              task->comm->hier.rail, sub_p);
    }
    return zsh_iallgather(rail, st->a, nnodes * count, task->args.dtype, task->comm->hier.node,
                          sub_p);
}

/* Blocks from local-rank then node order into rank order. */
static void zsh_allgather_hier_finish(zsh_task_t *task)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    size_t blk          = task->args.count * zsh_task_esize(task);
    int node, local;

    if (st->a == task->args.recvbuf) {
        return;
    }
    for (local = 0; local < t->local_size; local++) {
        for (node = 0; node < t->nnodes; node++) {
            memcpy((char *)task->args.recvbuf + (size_t)zsh_topo_rank_at(t, node, local) * blk,
                   st->a + (size_t)(local * t->nnodes + node) * blk, blk);
        }
    }
}

zsh_status_t zsh_allgather_hier_init(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);
    zsh_status_t status;

    if (zsh_hier_rank_order(task->comm)) {
        st->a = task->args.recvbuf;
    } else {
        status = zsh_hier_scratch(task, task->args.count * zsh_task_esize(task) *
                                            (size_t)task->comm->size, 0, 0);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return zsh_hier_start(task, 2, zsh_allgather_hier_step, zsh_allgather_hier_finish);
}
