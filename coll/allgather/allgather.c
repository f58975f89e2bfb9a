/*
 * zsh_allgather and zsh_iallgather: validate, pick an algorithm, run.
 */
#include "allgather/allgather.h"

#include "core/status.h"
#include "select/select.h"
#include "task/validate.h"

#include <string.h>

static zsh_status_t zsh_allgather_prepare(const char *fn, const void *sendbuf, void *recvbuf,
                                          size_t sendcount, zsh_dtype_t dtype, zsh_comm_t *comm,
                                          zsh_task_t **task_p)
{
    zsh_coll_args_t args = {ZSH_COLL_ALLGATHER, sendbuf, recvbuf, sendcount, dtype, ZSH_SUM, 0};
    zsh_status_t status;
    zsh_task_t *task;
    zsh_part_t part;
    zsh_algo_t algo;
    char *own;
    size_t blk;

    status = zsh_validate(fn, comm, &args);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_task_get(comm, &args, "allgather", &task);
    if (status != ZSH_OK) {
        return status;
    }
    blk = sendcount * zsh_task_esize(task);
    if ((sendcount == 0) || (comm->size == 1)) {
        if ((sendcount > 0) && (sendbuf != recvbuf)) {
            memcpy(recvbuf, sendbuf, blk);
        }
    } else if ((status = zsh_select(comm, ZSH_COLL_ALLGATHER, blk * (size_t)comm->size,
                                    &algo)) == ZSH_OK) {
        task->algo = algo;
        switch (algo) {
        case ZSH_ALGO_BRUCK:
            status = zsh_bruck_init(task);
            break;
        case ZSH_ALGO_RMA:
            status = zsh_rma_ag_init(task);
            break;
        case ZSH_ALGO_DIRECT:
            status = zsh_allgather_direct_init(task);
            break;
        case ZSH_ALGO_EAGER:
            status = zsh_allgather_eager_init(task);
            break;
        default:
            own = (char *)recvbuf + blk * (size_t)comm->rank;
            if (own != sendbuf) {
                memcpy(own, sendbuf, blk);
            }
            part   = zsh_part_make(sendcount * (size_t)comm->size, (size_t)comm->size);
            status = zsh_ring_ag_init(task, recvbuf, &part, 0);
            break;
        }
    }
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    *task_p = task;
    return ZSH_OK;
}

zsh_status_t zsh_allgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                           zsh_dtype_t dtype, zsh_comm_t *comm)
{
    zsh_status_t status;
    zsh_task_t *task;

    status = zsh_allgather_prepare("zsh_allgather", sendbuf, recvbuf, sendcount, dtype, comm,
                                   &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, NULL) : status;
}

zsh_status_t zsh_iallgather(const void *sendbuf, void *recvbuf, size_t sendcount,
                            zsh_dtype_t dtype, zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_status_t status;
    zsh_task_t *task;

    if (req_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_iallgather: req_p is NULL");
    }
    status = zsh_allgather_prepare("zsh_iallgather", sendbuf, recvbuf, sendcount, dtype, comm,
                                   &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, req_p) : status;
}
