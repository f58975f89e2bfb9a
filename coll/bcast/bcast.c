/*
 * zsh_broadcast and zsh_ibroadcast: validate, run the algorithm the rule
 * picks (or, on device buffers, the device path).
 */
#include "bcast/bcast.h"

#include "select/prepare.h"

#include <zeroshard/device.h>

/* One rank: the buffer already holds the result. */
static zsh_status_t zsh_bcast_local(zsh_task_t *task)
{
    (void)task;
    return ZSH_OK;
}

static const zsh_coll_init_t zsh_bcast_algos[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_AUTO]     = zsh_bcast_local,
    [ZSH_ALGO_BINOMIAL] = zsh_bcast_binomial_init,
    [ZSH_ALGO_DIRECT]   = zsh_bcast_direct_init,
    [ZSH_ALGO_EAGER]    = zsh_bcast_eager_init,
    [ZSH_ALGO_HIER]     = zsh_bcast_hier_init,
};

zsh_status_t zsh_broadcast(void *buf, size_t count, zsh_dtype_t dtype, int root,
                           zsh_comm_t *comm)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_BROADCAST, NULL, buf, count, dtype, ZSH_SUM, root);

    return zsh_coll_call("zsh_broadcast", &args, comm, zsh_bcast_algos, false, NULL);
}

zsh_status_t zsh_ibroadcast(void *buf, size_t count, zsh_dtype_t dtype, int root,
                            zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_BROADCAST, NULL, buf, count, dtype, ZSH_SUM, root);

    return zsh_coll_call("zsh_ibroadcast", &args, comm, zsh_bcast_algos, true, req_p);
}

zsh_status_t zsh_broadcast_stream(void *buf, size_t count, zsh_dtype_t dtype, int root,
                                  zsh_comm_t *comm, void *stream)
{
    zsh_coll_args_t args =
        ZSH_COLL_ARGS(ZSH_COLL_BROADCAST, NULL, buf, count, dtype, ZSH_SUM, root);

    args.stream     = stream;
    args.stream_set = true;
    return zsh_coll_call("zsh_broadcast_stream", &args, comm, zsh_bcast_algos, false, NULL);
}
