/*
 * zsh_barrier and zsh_ibarrier: validate, choose (eager, dissemination or
 * hier) and run.
 * The dissemination barrier is ceil(log2 size) rounds of empty messages; in
 * round k a rank signals rank + 2^k and waits for rank - 2^k. The same
 * task, on the job's communicator, is the fence before teardown.
 */
#include "barrier/barrier.h"

#include "algo/rounds.h"
#include "core/status.h"
#include "select/prepare.h"
#include "select/select.h"
#include "task/validate.h"

static zsh_status_t zsh_dissemination_post(zsh_task_t *task)
{
    int n = task->comm->size, rank = task->comm->rank;
    int round = zsh_rounds(task)->round, dist = 1 << round;

    return zsh_task_sendrecv(task, (uint32_t)round, (rank - dist + n) % n, NULL, 0,
                             (rank + dist) % n, NULL, 0);
}

static zsh_status_t zsh_dissemination_progress(zsh_task_t *task)
{
    return zsh_rounds_run(task, zsh_rounds(task)->nrounds, zsh_dissemination_post, NULL);
}

zsh_status_t zsh_barrier_dissemination_init(zsh_task_t *task)
{
    zsh_rounds_t *st = zsh_rounds(task);

    st->round   = 0;
    st->posted  = false;
    st->nrounds = zsh_ceil_log2(task->comm->size);
    task->run.progress = zsh_dissemination_progress;
    return zsh_task_ops(task, 2);
}

static const zsh_coll_init_t zsh_barrier_algos[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_DISSEMINATION] = zsh_barrier_dissemination_init,
    [ZSH_ALGO_EAGER]         = zsh_barrier_eager_init,
    [ZSH_ALGO_HIER]          = zsh_barrier_hier_init,
};

zsh_status_t zsh_barrier_run(zsh_comm_t *comm, zsh_coll_type_t type, zsh_request_t **req_p)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(type, NULL, NULL, 0, ZSH_UINT8, ZSH_SUM, 0);
    zsh_status_t status;
    zsh_task_t *task;

    args.blocking = (req_p == NULL);
    status = zsh_task_get(comm, &args, (type == ZSH_COLL_FENCE) ? "fence" : "barrier", &task);
    if (status != ZSH_OK) {
        return status;
    }
    /* The fence runs as a context goes, its communicators' children
     * perhaps already gone: never through them. */
    task->algo = ZSH_ALGO_DISSEMINATION;
    if (type == ZSH_COLL_BARRIER) {
        status = zsh_select(comm, type, 0, &task->algo);
    }
    if (status == ZSH_OK) {
        status = zsh_barrier_algos[task->algo](task); /* the rule allows only these */
    }
    if (status != ZSH_OK) {
        zsh_task_put(task);
        return status;
    }
    return zsh_coll_launch(task, req_p);
}

zsh_status_t zsh_barrier(zsh_comm_t *comm)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(ZSH_COLL_BARRIER, NULL, NULL, 0, ZSH_UINT8, ZSH_SUM, 0);
    zsh_status_t status;

    status = zsh_validate("zsh_barrier", comm, &args);
    return (status == ZSH_OK) ? zsh_barrier_run(comm, ZSH_COLL_BARRIER, NULL) : status;
}

zsh_status_t zsh_ibarrier(zsh_comm_t *comm, zsh_request_t **req_p)
{
    zsh_coll_args_t args = ZSH_COLL_ARGS(ZSH_COLL_BARRIER, NULL, NULL, 0, ZSH_UINT8, ZSH_SUM, 0);
    zsh_status_t status;

    if (req_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_ibarrier: req_p is NULL");
    }
    status = zsh_validate("zsh_ibarrier", comm, &args);
    return (status == ZSH_OK) ? zsh_barrier_run(comm, ZSH_COLL_BARRIER, req_p) : status;
}
