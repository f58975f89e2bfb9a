/*
 * The "zsh_task" pool of a job context: tasks are taken for a call and given
 * back when its request is freed, keeping their transfer slots, scratch and
 * handshake buffers for the next call.
 */
#include "task/task.h"

#include "comm/retire.h"
#include "core/array.h"
#include "core/dtype.h"
#include "core/log.h"
#include "core/status.h"

#include <stdlib.h>

/* What a task's algorithm state starts as. Copied rather than memset: for
 * this constant size compilers emit a string store (rep stos) whose start-up
 * costs more than the stores, and every small call takes a task. */
static const zsh_task_state_t zsh_task_state_zero;

/* Until an algorithm says otherwise, a task has nothing to do. */
static zsh_status_t zsh_task_done_progress(zsh_task_t *task)
{
    (void)task;
    return ZSH_OK;
}

zsh_status_t zsh_task_get(zsh_comm_t *comm, const zsh_coll_args_t *args, const char *name,
                          zsh_task_t **task_p)
{
    zsh_ctx_t *ctx = comm->ctx;
    zsh_task_t *task;

    if (!zsh_list_empty(&ctx->free_tasks)) {
        task = zsh_container_of(ctx->free_tasks.next, zsh_task_t, link);
        zsh_list_del(&task->link);
    } else {
        task = calloc(1, sizeof(*task));
        if (task == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_%s: cannot allocate a task", name);
        }
        zsh_list_init(&task->link);
    }
    task->comm = comm;
    task->args = *args;
    task->name = name;
    /* A point-to-point call is checked against the collectives' next
     * number, so a revocation from there on stops it too, and takes none. */
    task->seq  = zsh_coll_is_p2p(args->type) ? comm->seq : comm->seq++;
    task->algo = ZSH_ALGO_AUTO;
    task->deterministic = comm->deterministic;
    task->run  = (zsh_task_run_t){.progress = zsh_task_done_progress,
                                  .status   = ZSH_INPROGRESS,
                                  .timeout  = comm->timeout};
    task->hs   = zsh_hs_init(&task->hs_bufs, comm, name, task->seq);
    task->state = zsh_task_state_zero;
    task->magic = ZSH_REQUEST_MAGIC;
    ctx->tasks_out++;
    comm->requests++;
    *task_p = task;
    return ZSH_OK;
}

/* Free a task's buffers and retire its handle. */
static void zsh_task_release(void *obj)
{
    zsh_task_t *task = obj;

    free(task->ops);
    free(task->scratch);
    free(task->hs_bufs.probe);
    free(task->hs_bufs.all_in);
    free(task->hs_bufs.held);
    free(task->hs_bufs.xfers);
    task->magic = ZSH_MAGIC_RETIRED;
    zsh_retire(task); /* a freed request's handle stays detectable */
}

void zsh_task_put(zsh_task_t *task)
{
    zsh_ctx_t *ctx = task->comm->ctx;

    task->comm->requests--;
    ctx->tasks_out--;
    free(task->run.error);
    task->run.error = NULL;
    task->magic = ZSH_REQUEST_FREED;
    task->comm  = NULL;
    if (task->orphan) {
        /* Its scratch, handshake buffers and the descriptor inside it may
         * still be written: no later call gets them, and they are freed
         * only once the transport is gone. */
        zsh_ctx_orphan(ctx, task, zsh_task_release);
        return;
    }
    zsh_list_push_tail(&ctx->free_tasks, &task->link);
}

void zsh_task_pool_free(zsh_ctx_t *ctx)
{
    zsh_task_t *task;

    if (ctx->tasks_out > 0) {
        zsh_log(ZSH_LOG_WARN, "pool zsh_task: %u task(s) still out at teardown", ctx->tasks_out);
    }
    while (!zsh_list_empty(&ctx->free_tasks)) {
        task = zsh_container_of(ctx->free_tasks.next, zsh_task_t, link);
        zsh_list_del(&task->link);
        zsh_task_release(task);
    }
}

zsh_status_t zsh_task_ops(zsh_task_t *task, unsigned n)
{
    void *ops = task->ops;
    zsh_status_t status;

    status    = zsh_array_reset(&ops, &task->ops_cap, n, sizeof(*task->ops), "operation slots");
    task->ops = ops;
    if (status != ZSH_OK) {
        zsh_error_prefix("zsh_%s: ", task->name);
    }
    return status;
}

zsh_status_t zsh_task_scratch(zsh_task_t *task, size_t bytes, void **buf_p)
{
    void *buf;

    if (bytes > task->scratch_cap) {
        /* 64-byte alignment lets the reduction kernels use aligned vectors. */
        if (posix_memalign(&buf, 64, bytes) != 0) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_%s: cannot allocate %zu bytes of scratch",
                             task->name, bytes);
        }
        free(task->scratch);
        task->scratch     = buf;
        task->scratch_cap = bytes;
    }
    *buf_p = task->scratch;
    return ZSH_OK;
}

size_t zsh_task_esize(const zsh_task_t *task)
{
    return zsh_dtype_size(task->args.dtype);
}

size_t zsh_task_acc_esize(const zsh_task_t *task)
{
    return zsh_dtype_size(zsh_dtype_acc(task->args.dtype));
}
