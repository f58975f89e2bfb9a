/*
 * The chain reduce-scatter (algo/chain.h): the node's input laid out
 * local rank by local rank, each the blocks of its rail in node order, as
 * the hierarchical reduce-scatter lays it, so local rank l's share of the
 * chain is the blocks of the ranks at local rank l on every node. The last
 * node then sends each of them to its owner along the rail, one step a
 * node: a node's link carries in the running sum once and its own blocks.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/chain.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

static zsh_status_t zsh_reduce_scatter_chain_step(zsh_task_t *task, unsigned step,
                                                  zsh_request_t **sub_p)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    size_t count = task->args.count, wsize = zsh_dtype_size(st->wtype);
    int last = t->nnodes - 1, to;

    if (step < ZSH_CHAIN_STEPS) {
        return zsh_chain_step(task, step, (size_t)t->nnodes * count, sub_p);
    }
    to = (int)(step - ZSH_CHAIN_STEPS); /* the node whose blocks go now */
    if (t->node == last) {
        return zsh_isend(st->b + (size_t)to * count * wsize, count, st->wtype, to, 0,
                         task->comm->hier.rail, sub_p);
    }
    return (t->node == to) ? zsh_irecv(st->c, count, st->wtype, last, 0, task->comm->hier.rail,
                                       sub_p)
                           : ZSH_OK;
}

static void zsh_reduce_scatter_chain_finish(zsh_task_t *task)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    size_t count = task->args.count, wsize = zsh_dtype_size(st->wtype);
    const char *mine = (t->node == t->nnodes - 1) ? st->b + (size_t)t->node * count * wsize
                                                  : st->c;

    zsh_reduce_store(task->args.recvbuf, mine, count, task->args.dtype, task->args.op,
                     task->comm->size);
}

zsh_status_t zsh_reduce_scatter_chain_init(zsh_task_t *task)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    size_t count = task->args.count, esize = zsh_task_esize(task), wsize, all;
    zsh_status_t status;
    int node, local;

    zsh_hier_reduction(task);
    wsize  = zsh_dtype_size(st->wtype);
    all    = (size_t)t->size * count * wsize;
    status = zsh_hier_scratch(task, all, (size_t)t->nnodes * count * wsize, all);
    if (status != ZSH_OK) {
        return status;
    }
    for (local = 0; local < t->local_size; local++) {
        for (node = 0; node < t->nnodes; node++) {
            zsh_reduce_load(st->a + (size_t)(local * t->nnodes + node) * count * wsize,
                            (const char *)task->args.sendbuf +
                                (size_t)zsh_topo_rank_at(t, node, local) * count * esize,
                            count, task->args.dtype);
        }
    }
    return zsh_hier_start(task, ZSH_CHAIN_STEPS + (unsigned)t->nnodes - 1,
                          zsh_reduce_scatter_chain_step, zsh_reduce_scatter_chain_finish);
}
