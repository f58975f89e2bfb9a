/*
 * zsh_allreduce and zsh_iallreduce: validate, pick an algorithm, run.
 */
#include "allreduce/allreduce.h"

#include "algo/rd.h"
#include "core/status.h"
#include "select/select.h"
#include "task/validate.h"

static zsh_status_t zsh_allreduce_prepare(const char *fn, const void *sendbuf, void *recvbuf,
                                          size_t count, zsh_dtype_t dtype, zsh_op_t op,
                                          zsh_comm_t *comm, zsh_task_t **task_p)
{
    zsh_coll_args_t args = {ZSH_COLL_ALLREDUCE, sendbuf, recvbuf, count, dtype, op, 0};
    zsh_status_t status  = ZSH_OK;
    zsh_algo_t algo      = ZSH_ALGO_RD;
    zsh_task_t *task;

    status = zsh_validate(fn, comm, &args);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_task_get(comm, &args, "allreduce", &task);
    if (status != ZSH_OK) {
        return status;
    }
    if ((count > 0) && (comm->size > 1)) {
        status = zsh_select(comm, ZSH_COLL_ALLREDUCE, count * zsh_task_esize(task), &algo);
    }
    task->algo = algo;
    if ((count == 0) || (status != ZSH_OK)) {
        /* nothing to move, or no way to move it */
    } else if (algo == ZSH_ALGO_RD) {
        status = zsh_rd_init(task, count);
    } else if (algo == ZSH_ALGO_DIRECT) {
        status = zsh_allreduce_direct_init(task);
    } else if (algo == ZSH_ALGO_EAGER) {
        status = zsh_allreduce_eager_init(task);
    } else {
        status = zsh_allreduce_ring_init(task);
    }
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    *task_p = task;
    return ZSH_OK;
}

zsh_status_t zsh_allreduce(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                           zsh_op_t op, zsh_comm_t *comm)
{
    zsh_status_t status;
    zsh_task_t *task;

    status = zsh_allreduce_prepare("zsh_allreduce", sendbuf, recvbuf, count, dtype, op, comm,
                                   &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, NULL) : status;
}

zsh_status_t zsh_iallreduce(const void *sendbuf, void *recvbuf, size_t count, zsh_dtype_t dtype,
                            zsh_op_t op, zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_status_t status;
    zsh_task_t *task;

    if (req_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_iallreduce: req_p is NULL");
    }
    status = zsh_allreduce_prepare("zsh_iallreduce", sendbuf, recvbuf, count, dtype, op, comm,
                                   &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, req_p) : status;
}
