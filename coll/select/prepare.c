#include "select/prepare.h"

#include "core/dtype.h"
#include "core/status.h"
#include "device/device.h"
#include "select/select.h"
#include "task/validate.h"

#include <string.h>

/* A communicator of one rank: every collective's result is its input, for
 * every op (a sum, product, minimum, maximum or average of one value is that
 * value). Copying it once beats running an algorithm that widens and
 * narrows it through an accumulator; in place there is nothing to do. */
static void zsh_coll_self(const zsh_coll_args_t *args)
{
    bool moves = (args->type == ZSH_COLL_ALLGATHER) || (args->type == ZSH_COLL_REDUCE_SCATTER) ||
                 (args->type == ZSH_COLL_ALLREDUCE) || (args->type == ZSH_COLL_ALLTOALL);

    if (moves && (args->sendbuf != args->recvbuf)) {
        memmove(args->recvbuf, args->sendbuf, args->count * zsh_dtype_size(args->dtype));
    }
}

/* Bytes a call moves in all, as nccl-tests counts them: the gathered buffer, the input
 * vector, the vector, the broadcast buffer, an all-to-all's send buffer. */
static size_t zsh_coll_bytes(const zsh_coll_args_t *args, int nranks)
{
    size_t bytes = args->count * zsh_dtype_size(args->dtype);

    return zsh_coll_count_per_rank(args->type) ? bytes * (size_t)nranks : bytes;
}

static zsh_status_t zsh_coll_init(zsh_task_t *task, const zsh_coll_init_t *algos)
{
    zsh_coll_init_t init = (task->algo < ZSH_ALGO_LAST) ? algos[task->algo] : NULL;

    if (init != NULL) {
        return init(task);
    }
    return zsh_error(ZSH_ERR_INTERNAL, "%s has no algorithm %s", task->name,
                     zsh_algo_name(task->algo));
}

zsh_status_t zsh_coll_prepare(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                              const zsh_coll_init_t *algos, zsh_task_t **task_p)
{
    zsh_status_t status;
    zsh_task_t *task;
    bool device;
    int dev;

    status = zsh_validate(fn, comm, args);
    if (status == ZSH_OK) {
        status = zsh_dev_classify(fn, comm, args, &device, &dev);
    }
    if ((status == ZSH_OK) && device && comm->deterministic && zsh_coll_reduces(args->type)) {
        status = zsh_error(ZSH_ERR_UNSUPPORTED, "%s: comm %u is deterministic "
                           "(zsh_comm_set_deterministic), and NCCL's reductions on device "
                           "buffers follow no fixed order; reduce host buffers instead", fn,
                           comm->id);
    }
    if ((status == ZSH_OK) && device) {
        status = zsh_dev_comm_ready(fn, comm, args, dev);
    }
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_task_get(comm, args, zsh_desc_type_name(args->type), &task);
    if (status != ZSH_OK) {
        return status;
    }
    if (device) {
        task->algo = ZSH_ALGO_NCCL;
        status     = zsh_dev_init(task);
    } else if ((args->count > 0) && (comm->size == 1)) {
        zsh_coll_self(args);
    } else if (args->count > 0) {
        status = zsh_select(comm, args->type, zsh_coll_bytes(args, comm->size), &task->algo);
        status = (status == ZSH_OK) ? zsh_coll_init(task, algos) : status;
    }
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    *task_p = task;
    return ZSH_OK;
}

zsh_status_t zsh_coll_call(const char *fn, const zsh_coll_args_t *args, zsh_comm_t *comm,
                           const zsh_coll_init_t *algos, bool nonblocking, zsh_request_t **req_p)
{
    zsh_coll_args_t call = *args;
    zsh_status_t status;
    zsh_task_t *task;

    if (nonblocking && (req_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: req_p is NULL", fn);
    }
    call.blocking = !nonblocking;
    status = zsh_coll_prepare(fn, &call, comm, algos, &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, nonblocking ? req_p : NULL) : status;
}
