/*
 * What every collective does after its algorithm is set up: blocking calls
 * are post + wait, nonblocking ones hand the task to the caller.
 */
#include "coll/algs.h"

#include "core/status.h"

unsigned zsh_ring_depth(const zsh_task_t *task)
{
    unsigned depth = task->comm->ctx->cfg.pipeline_depth;

    if (depth < 2) {
        return 2;
    }
    return (depth > ZSH_TAG_STEPS / 4) ? ZSH_TAG_STEPS / 4 : depth;
}

zsh_status_t zsh_coll_launch(zsh_task_t *task, zsh_request_t **req_p)
{
    zsh_status_t status;

    zsh_task_post(task);
    if (req_p != NULL) {
        *req_p = task;
        return ZSH_OK;
    }
    status = zsh_task_wait(task);
    zsh_task_put(task);
    return status;
}
