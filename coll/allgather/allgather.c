/*
 * zsh_allgather and zsh_iallgather: check, choose an algorithm, run.
 */
#include "allgather/allgather.h"

#include "select/prepare.h"

#include <string.h>

#include <zeroshard/device.h>

/* Bytes of one rank's block. */
static size_t zsh_allgather_block(const zsh_task_t *task)
{
    return task->args.count * zsh_task_esize(task);
}

/* One rank: its block is the whole result. */
static zsh_status_t zsh_allgather_local(zsh_task_t *task)
{
    if (task->args.sendbuf != task->args.recvbuf) {
        memcpy(task->args.recvbuf, task->args.sendbuf, zsh_allgather_block(task));
    }
    return ZSH_OK;
}

/* The ring over recvbuf, this rank's block copied in first. */
static zsh_status_t zsh_allgather_ring(zsh_task_t *task)
{
    size_t blk = zsh_allgather_block(task), n = (size_t)task->comm->size;
    char *own  = (char *)task->args.recvbuf + blk * (size_t)task->comm->rank;
    zsh_part_t part = zsh_part_make(task->args.count * n, n);

    if (own != task->args.sendbuf) {
        memcpy(own, task->args.sendbuf, blk);
    }
    return zsh_ring_ag_init(task, task->args.recvbuf, &part, 0);
}

static const zsh_coll_init_t zsh_allgather_algos[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_AUTO]   = zsh_allgather_local,
    [ZSH_ALGO_RING]   = zsh_allgather_ring,
    [ZSH_ALGO_BRUCK]  = zsh_bruck_init,
    [ZSH_ALGO_RMA]    = zsh_rma_ag_init,
    [ZSH_ALGO_DIRECT] = zsh_allgather_direct_init,
    [ZSH_ALGO_EAGER]  = zsh_allgather_eager_init,
    [ZSH_ALGO_HIER]   = zsh_allgather_hier_init,
};

zsh_status_t zsh_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           zsh_dtype_t dtype, zsh_comm_t *comm)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, ZSH_SUM, 0);

    return zsh_coll_call("zsh_allgather", &args, comm, zsh_allgather_algos, false, NULL);
}

zsh_status_t zsh_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                            zsh_dtype_t dtype, zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, ZSH_SUM, 0);

    return zsh_coll_call("zsh_iallgather", &args, comm, zsh_allgather_algos, true, req_p);
}

zsh_status_t zsh_allgather_stream(const void *sendbuf, void *recvbuf, size_t sendcount,
                                  zsh_dtype_t dtype, zsh_comm_t *comm, void *stream)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, ZSH_SUM, 0);

    args.stream     = stream;
    args.stream_set = true;
    return zsh_coll_call("zsh_allgather_stream", &args, comm, zsh_allgather_algos, false, NULL);
}
