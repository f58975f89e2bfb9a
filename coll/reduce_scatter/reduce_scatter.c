/*
 * zsh_reduce_scatter and zsh_ireduce_scatter: validate, pick an algorithm, run.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/rd.h"
#include "core/status.h"
#include "select/select.h"
#include "task/validate.h"

static zsh_status_t zsh_reduce_scatter_prepare(const char *fn, const void *sendbuf,
                                               void *recvbuf, size_t recvcount,
                                               zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                               zsh_task_t **task_p)
{
    zsh_coll_args_t args = {ZSH_COLL_REDUCE_SCATTER, sendbuf, recvbuf, recvcount, dtype, op, 0};
    size_t n = (comm != NULL) ? (size_t)comm->size : 0;
    zsh_status_t status = ZSH_OK;
    zsh_task_t *task;
    zsh_part_t part;
    zsh_algo_t algo = ZSH_ALGO_RD;

    status = zsh_validate(fn, comm, &args);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_task_get(comm, &args, "reduce_scatter", &task);
    if (status != ZSH_OK) {
        return status;
    }
    if ((recvcount > 0) && (n > 1)) {
        status = zsh_select(comm, ZSH_COLL_REDUCE_SCATTER, recvcount * n * zsh_task_esize(task),
                            &algo);
    }
    task->algo = algo;
    if ((recvcount == 0) || (status != ZSH_OK)) {
        /* nothing to move, or no way to move it */
    } else if (algo == ZSH_ALGO_RD) {
        status = zsh_rd_init(task, recvcount * n);
    } else if (algo == ZSH_ALGO_DIRECT) {
        status = zsh_reduce_scatter_direct_init(task);
    } else if (algo == ZSH_ALGO_EAGER) {
        status = zsh_reduce_scatter_eager_init(task);
    } else {
        part   = zsh_part_make(recvcount * n, n);
        status = zsh_ring_rs_init(task, sendbuf, recvbuf, &part, 0);
    }
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    *task_p = task;
    return ZSH_OK;
}

zsh_status_t zsh_reduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm)
{
    zsh_status_t status;
    zsh_task_t *task;

    status = zsh_reduce_scatter_prepare("zsh_reduce_scatter", sendbuf, recvbuf, recvcount, dtype,
                                        op, comm, &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, NULL) : status;
}

zsh_status_t zsh_ireduce_scatter(const void *sendbuf, void *recvbuf, size_t recvcount,
                                 zsh_dtype_t dtype, zsh_op_t op, zsh_comm_t *comm,
                                 zsh_request_t **req_p)
{
    zsh_status_t status;
    zsh_task_t *task;

    if (req_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_ireduce_scatter: req_p is NULL");
    }
    status = zsh_reduce_scatter_prepare("zsh_ireduce_scatter", sendbuf, recvbuf, recvcount,
                                        dtype, op, comm, &task);
    return (status == ZSH_OK) ? zsh_coll_launch(task, req_p) : status;
}
