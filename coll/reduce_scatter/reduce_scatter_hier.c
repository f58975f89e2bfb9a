/*
 * The hierarchical reduce-scatter: each node first reduces its ranks'
 * inputs, local rank l keeping the node's sums of the blocks of rail l,
 * then each rail reduces those across the nodes. A node's link carries
 * out each other node's share once, what the node owes.
 *
 * The node's step wants its input in local-rank then node order: the
 * input's own order under round-robin placement, else gathered into
 * scratch (in the accumulation type where that differs) first.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/hier.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

static zsh_status_t zsh_reduce_scatter_hier_step(zsh_task_t *task, unsigned step,
                                                 zsh_request_t **sub_p)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    size_t count        = task->args.count;

    if (step == 0) {
        return zsh_ireduce_scatter(st->a, st->b, (size_t)t->nnodes * count, st->wtype, st->wop,
                                   task->comm->hier.node, sub_p);
    }
    return zsh_ireduce_scatter(st->b, st->c, count, st->wtype, st->wop, task->comm->hier.rail,
                               sub_p);
}

static void zsh_reduce_scatter_hier_finish(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);

    if (st->convert) {
        zsh_reduce_store(task->args.recvbuf, st->c, task->args.count, task->args.dtype,
                         task->args.op, task->comm->size);
    }
}

zsh_status_t zsh_reduce_scatter_hier_init(zsh_task_t *task)
{
    zsh_hier_t *st      = zsh_hier(task);
    const zsh_topo_t *t = task->comm->topo;
    size_t count = task->args.count, esize = zsh_task_esize(task), wsize;
    bool in_place_order;
    zsh_status_t status;
    int node, local;

    zsh_hier_reduction(task);
    wsize          = zsh_dtype_size(st->wtype);
    in_place_order = !st->convert && zsh_hier_rank_order(task->comm);
    status = zsh_hier_scratch(task, in_place_order ? 0 : (size_t)t->size * count * wsize,
                              (size_t)t->nnodes * count * wsize, st->convert ? count * wsize : 0);
    if (status != ZSH_OK) {
        return status;
    }
    if (in_place_order) {
        st->a = (char *)task->args.sendbuf;
    } else {
        for (local = 0; local < t->local_size; local++) {
            for (node = 0; node < t->nnodes; node++) {
                zsh_reduce_load(st->a + (size_t)(local * t->nnodes + node) * count * wsize,
                                (const char *)task->args.sendbuf +
                                    (size_t)zsh_topo_rank_at(t, node, local) * count * esize,
                                count, task->args.dtype);
            }
        }
    }
    if (!st->convert) {
        st->c = task->args.recvbuf;
    }
    return zsh_hier_start(task, 2, zsh_reduce_scatter_hier_step, zsh_reduce_scatter_hier_finish);
}
