/*
 * The hierarchical all-reduce: a reduce-scatter within each node, an
 * all-reduce of each rank's share along its rail across the nodes, and an
 * all-gather within each node. A node's link carries its share of the
 * vector out and the other nodes' in, once each way per rail.
 *
 * The node's steps split the vector into equal shares, so a count that
 * does not divide by the ranks per node runs on a copy padded to one that
 * does (what the padding reduces to is never read), as does a call whose
 * steps run in the accumulation type.
 */
#include "allreduce/allreduce.h"

#include "algo/hier.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

#include <string.h>

/* Elements of each rank's share within its node. */
static size_t zsh_allreduce_hier_share(const zsh_task_t *task)
{
    size_t local = (size_t)task->comm->topo->local_size;

    return (task->args.count + local - 1) / local;
}

static zsh_status_t zsh_allreduce_hier_step(zsh_task_t *task, unsigned step,
                                            zsh_request_t **sub_p)
{
    zsh_hier_t *st = zsh_hier(task);
    size_t share   = zsh_allreduce_hier_share(task);

    switch (step) {
    case 0:
        return zsh_ireduce_scatter(st->a, st->b, share, st->wtype, st->wop,
                                   task->comm->hier.node, sub_p);
    case 1:
        return zsh_iallreduce(st->b, st->b, share, st->wtype, st->wop, task->comm->hier.rail,
                              sub_p);
    default:
        return zsh_iallgather(st->b, st->c, share, st->wtype, task->comm->hier.node, sub_p);
    }
}

static void zsh_allreduce_hier_finish(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);

    if (st->c != task->args.recvbuf) {
        zsh_reduce_store(task->args.recvbuf, st->c, task->args.count, task->args.dtype,
                         task->args.op, task->comm->size);
    }
}

zsh_status_t zsh_allreduce_hier_init(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);
    size_t share   = zsh_allreduce_hier_share(task), count = task->args.count, padded, wsize;
    bool copy;
    zsh_status_t status;

    zsh_hier_reduction(task);
    wsize  = zsh_dtype_size(st->wtype);
    padded = share * (size_t)task->comm->topo->local_size;
    copy   = st->convert || (padded != count);
    status = zsh_hier_scratch(task, copy ? padded * wsize : 0, share * wsize, 0);
    if (status != ZSH_OK) {
        return status;
    }
    if (copy) {
        zsh_reduce_load(st->a, task->args.sendbuf, count, task->args.dtype);
        memset(st->a + count * wsize, 0, (padded - count) * wsize);
        st->c = st->a;
    } else {
        st->a = (char *)task->args.sendbuf;
        st->c = task->args.recvbuf;
    }
    return zsh_hier_start(task, 3, zsh_allreduce_hier_step, zsh_allreduce_hier_finish);
}
