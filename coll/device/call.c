/*
 * A device call as a task. The engine exchanges its descriptor as for any
 * call; once the peers' matched ours it is enqueued, in call order (NCCL
 * needs every member to enqueue a communicator's calls in the same order,
 * and descriptor exchanges may finish in any order), then watched until
 * its stream work is done. The waiter spins while it runs: the work needs
 * nobody else, and a sleep would only add to its latency.
 */
#include "device/device.h"

#include "core/status.h"

#include <zeroshard/device.h>

typedef struct zsh_dev_task {
    zsh_tl_dev_t    *dc;
    zsh_tl_dev_op_t *op;
    uint64_t         order;     /* this call's number among the communicator's device calls */
    void            *stream;
    bool             enqueued;
    bool             wait_done; /* complete when the stream work is, not when enqueued */
    bool             finished;
} zsh_dev_task_t;

_Static_assert(sizeof(zsh_dev_task_t) <= ZSH_TASK_STATE_BYTES, "the device state fits a task");

static const zsh_tl_dev_coll_t zsh_dev_colls[] = {
    [ZSH_COLL_ALLGATHER]      = ZSH_TL_DEV_ALLGATHER,
    [ZSH_COLL_REDUCE_SCATTER] = ZSH_TL_DEV_REDUCE_SCATTER,
    [ZSH_COLL_ALLREDUCE]      = ZSH_TL_DEV_ALLREDUCE,
    [ZSH_COLL_BROADCAST]      = ZSH_TL_DEV_BROADCAST,
    [ZSH_COLL_ALLTOALL]       = ZSH_TL_DEV_ALLTOALL,
};

static zsh_status_t zsh_dev_enqueue(zsh_task_t *task, zsh_dev_task_t *st)
{
    const zsh_coll_args_t *a = &task->args;
    zsh_tl_dev_call_t call = {zsh_dev_colls[a->type], a->sendbuf, a->recvbuf, a->count,
                              a->dtype, a->op, a->root, st->stream, st->wait_done};
    zsh_status_t status;

    status = zsh_tl_device()->post(st->dc, &call, &st->op);
    if (status == ZSH_OK) {
        st->enqueued = true;
        task->comm->dev.enqueued++;
    }
    return status;
}

static zsh_status_t zsh_dev_progress(zsh_task_t *task)
{
    zsh_dev_task_t *st = zsh_task_state(task);
    zsh_status_t status;

    if (task->comm->dev.failed != ZSH_OK) {
        return zsh_error(task->comm->dev.failed, "an earlier device call on comm %u failed: %s",
                         task->comm->id, task->comm->dev.why);
    }
    if (!st->enqueued) {
        if (!zsh_hs_matched(&task->hs) || (task->comm->dev.enqueued != st->order)) {
            return ZSH_INPROGRESS; /* the descriptors, or an earlier device call, first */
        }
        status = zsh_dev_enqueue(task, st);
        if (status == ZSH_INPROGRESS) {
            task->run.busy = true; /* the previous call is still being enqueued */
        }
        if (status != ZSH_OK) {
            return status;
        }
    }
    status = zsh_tl_device()->op_test(st->dc, st->op, st->wait_done);
    if (status == ZSH_INPROGRESS) {
        task->run.busy = true;
    } else if (status == ZSH_OK) {
        st->finished = true;
    }
    return status;
}

static void zsh_dev_cleanup(zsh_task_t *task, zsh_status_t status)
{
    (void)status;
    zsh_dev_task_t *st = zsh_task_state(task);

    if (!st->finished) {
        /* Failed, timed out or aborted: what NCCL holds may never finish,
         * and the call order is broken for the later calls. */
        zsh_dev_comm_fail(task->comm, ZSH_ERR_ABORTED);
    }
    if (st->op != NULL) {
        zsh_tl_device()->op_release(st->dc, st->op);
        st->op = NULL;
    }
}

zsh_status_t zsh_dev_init(zsh_task_t *task)
{
    zsh_dev_task_t *st = zsh_task_state(task);
    zsh_comm_t *comm   = task->comm;

    st->dc        = atomic_load(&comm->dev.tl);
    st->op        = NULL;
    st->order     = comm->dev.posted++;
    st->stream    = task->args.stream_set ? task->args.stream : comm->dev.stream;
    st->enqueued  = false;
    st->finished  = false;
    st->wait_done = !(task->args.blocking && (comm->dev.flags & ZSH_STREAM_ENQUEUE));
    task->run.progress = zsh_dev_progress;
    task->run.cleanup  = zsh_dev_cleanup;
    return ZSH_OK;
}
