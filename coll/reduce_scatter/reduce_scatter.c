/*
 * zsh_reduce_scatter and zsh_ireduce_scatter: check, choose an algorithm, run.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/rd.h"
#include "select/prepare.h"

#include <zeroshard/device.h>

/* Recursive doubling over the whole input, keeping this rank's block; on
 * one rank, the reduction of one input. */
static zsh_status_t zsh_reduce_scatter_rd(zsh_task_t *task)
{
    return zsh_rd_init(task, task->args.count * (size_t)task->comm->size);
}

static zsh_status_t zsh_reduce_scatter_ring(zsh_task_t *task)
{
    size_t n        = (size_t)task->comm->size;
    zsh_part_t part = zsh_part_make(task->args.count * n, n);

    return zsh_ring_rs_init(task, task->args.sendbuf, task->args.recvbuf, &part, 0);
}

static const zsh_coll_init_t zsh_reduce_scatter_algos[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_AUTO]   = zsh_reduce_scatter_rd,
    [ZSH_ALGO_RD]     = zsh_reduce_scatter_rd,
    [ZSH_ALGO_RING]   = zsh_reduce_scatter_ring,
    [ZSH_ALGO_DIRECT] = zsh_reduce_scatter_direct_init,
    [ZSH_ALGO_EAGER]  = zsh_reduce_scatter_eager_init,
    [ZSH_ALGO_HIER]   = zsh_reduce_scatter_hier_init,
    [ZSH_ALGO_ORDERED] = zsh_reduce_scatter_ordered_init,
    [ZSH_ALGO_CHAIN]   = zsh_reduce_scatter_chain_init,
};

zsh_status_t zsh_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0);

    return zsh_coll_call("zsh_reduce_scatter", &args, comm, zsh_reduce_scatter_algos, false,
                         NULL);
}

zsh_status_t zsh_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                 zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                 zsh_request_t **req_p)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0);

    return zsh_coll_call("zsh_ireduce_scatter", &args, comm, zsh_reduce_scatter_algos, true,
                         req_p);
}

zsh_status_t zsh_reduce_scatter_stream(const void *sendbuf, void *recvbuf, size_t recvcount,
                                       zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                       void *stream)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0);

    args.stream     = stream;
    args.stream_set = true;
    return zsh_coll_call("zsh_reduce_scatter_stream", &args, comm, zsh_reduce_scatter_algos,
                         false, NULL);
}
