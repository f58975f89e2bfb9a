/*
 * zsh_alltoall and zsh_ialltoall: check, choose an algorithm, run.
 */
#include "alltoall/alltoall.h"

#include "select/prepare.h"

#include <string.h>

#include <zeroshard/device.h>

/* One rank: its own block is the whole exchange. */
static zsh_status_t zsh_alltoall_local(zsh_task_t *task)
{
    if (task->args.sendbuf != task->args.recvbuf) {
        memcpy(task->args.recvbuf, task->args.sendbuf, zsh_alltoall_block(task));
    }
    return ZSH_OK;
}

static const zsh_coll_init_t zsh_alltoall_algos[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_AUTO]     = zsh_alltoall_local,
    [ZSH_ALGO_PAIRWISE] = zsh_alltoall_pairwise_init,
    [ZSH_ALGO_DIRECT]   = zsh_alltoall_direct_init,
    [ZSH_ALGO_EAGER]    = zsh_alltoall_eager_init,
};

zsh_status_t zsh_alltoall(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                          zsh_comm_t *comm)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, ZSH_SUM, 0);

    return zsh_coll_call("zsh_alltoall", &args, comm, zsh_alltoall_algos, false, NULL);
}

zsh_status_t zsh_ialltoall(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                           zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, ZSH_SUM, 0);

    return zsh_coll_call("zsh_ialltoall", &args, comm, zsh_alltoall_algos, true, req_p);
}

zsh_status_t zsh_alltoall_stream(const void *sendbuf, void *recvbuf, size_t count,
                                 zsh_dtype_t dtype, zsh_comm_t *comm, void *stream)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_ALLTOALL, sendbuf, recvbuf, count, dtype, ZSH_SUM, 0);

    args.stream     = stream;
    args.stream_set = true;
    return zsh_coll_call("zsh_alltoall_stream", &args, comm, zsh_alltoall_algos, false, NULL);
}
