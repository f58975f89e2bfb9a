/*
 * zsh_allreduce and zsh_iallreduce: check, choose an algorithm, run.
 */
#include "allreduce/allreduce.h"

#include "algo/rd.h"
#include "select/prepare.h"

#include <zeroshard/device.h>

/* Recursive doubling; on one rank, the reduction of one input. */
static zsh_status_t zsh_allreduce_rd(zsh_task_t *task)
{
    return zsh_rd_init(task, task->args.count);
}

static const zsh_coll_init_t zsh_allreduce_algos[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_AUTO]   = zsh_allreduce_rd,
    [ZSH_ALGO_RD]     = zsh_allreduce_rd,
    [ZSH_ALGO_RING]   = zsh_allreduce_ring_init,
    [ZSH_ALGO_DIRECT] = zsh_allreduce_direct_init,
    [ZSH_ALGO_EAGER]  = zsh_allreduce_eager_init,
    [ZSH_ALGO_HIER]   = zsh_allreduce_hier_init,
    [ZSH_ALGO_ORDERED] = zsh_allreduce_ordered_init,
    [ZSH_ALGO_CHAIN]   = zsh_allreduce_chain_init,
};

zsh_status_t zsh_allreduce(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                           zsh_op_t op, zsh_comm_t *comm)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(ZSH_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0);

    return zsh_coll_call("zsh_allreduce", &args, comm, zsh_allreduce_algos, false, NULL);
}

zsh_status_t zsh_iallreduce(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                            zsh_op_t op, zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(ZSH_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0);

    return zsh_coll_call("zsh_iallreduce", &args, comm, zsh_allreduce_algos, true, req_p);
}

zsh_status_t zsh_allreduce_stream(const void *sendbuf, void *recvbuf, size_t count,
                                  zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                  void *stream)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(ZSH_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0);

    args.stream     = stream;
    args.stream_set = true;
    return zsh_coll_call("zsh_allreduce_stream", &args, comm, zsh_allreduce_algos, false, NULL);
}
