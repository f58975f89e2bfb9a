/*
 * The chain all-reduce (algo/chain.h): the vector in equal shares, one a
 * local rank (padded to a count the local ranks divide; what the padding
 * reduces to is never read), folded along the chain, then broadcast from
 * the last node along each rail and all-gathered within each node. A
 * node's link carries the running sum in and the result in, once each,
 * as the hierarchical all-reduce's rails do.
 */
#include "allreduce/allreduce.h"

#include "algo/chain.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

#include <string.h>

static size_t zsh_allreduce_chain_share(const zsh_task_t *task)
{
    size_t local = (size_t)task->comm->topo->local_size;

    return (task->args.count + local - 1) / local;
}

static zsh_status_t zsh_allreduce_chain_step(zsh_task_t *task, unsigned step,
                                             zsh_request_t **sub_p)
{
    zsh_hier_t *st = zsh_hier(task);
    size_t share   = zsh_allreduce_chain_share(task);

    if (step < ZSH_CHAIN_STEPS) {
        return zsh_chain_step(task, step, share, sub_p);
    }
    if (step == ZSH_CHAIN_STEPS) {
        return zsh_ibroadcast(st->b, share, st->wtype, task->comm->topo->nnodes - 1,
                              task->comm->hier.rail, sub_p);
    }
    return zsh_iallgather(st->b, st->c, share, st->wtype, task->comm->hier.node, sub_p);
}

static void zsh_allreduce_chain_finish(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);

    zsh_reduce_store(task->args.recvbuf, st->c, task->args.count, task->args.dtype,
                     task->args.op, task->comm->size);
}

zsh_status_t zsh_allreduce_chain_init(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);
    size_t share   = zsh_allreduce_chain_share(task), count = task->args.count, padded, wsize;
    zsh_status_t status;

    zsh_hier_reduction(task);
    wsize  = zsh_dtype_size(st->wtype);
    padded = share * (size_t)task->comm->topo->local_size;
    status = zsh_hier_scratch(task, padded * wsize, share * wsize, padded * wsize);
    if (status != ZSH_OK) {
        return status;
    }
    zsh_reduce_load(st->a, task->args.sendbuf, count, task->args.dtype);
    memset(st->a + count * wsize, 0, (padded - count) * wsize);
    return zsh_hier_start(task, ZSH_CHAIN_STEPS + 2, zsh_allreduce_chain_step,
                          zsh_allreduce_chain_finish);
}
