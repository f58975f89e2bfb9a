/*
 * The public request API over collective tasks.
 */
#include "core/status.h"
#include "task/task.h"

zsh_status_t zsh_request_test(zsh_request_t *req)
{
    if ((req == NULL) || (req->comm == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_test: req is %s",
                         (req == NULL) ? "NULL" : "already freed");
    }
    if (req->run.status == ZSH_INPROGRESS) {
        zsh_ctx_progress(req->comm->ctx);
    }
    return req->run.status;
}

zsh_status_t zsh_request_wait(zsh_request_t *req)
{
    if ((req == NULL) || (req->comm == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_wait: req is %s",
                         (req == NULL) ? "NULL" : "already freed");
    }
    return zsh_task_wait(req);
}

void zsh_request_free(zsh_request_t *req)
{
    if ((req == NULL) || (req->comm == NULL)) {
        return;
    }
    zsh_task_cancel(req);
    zsh_task_put(req);
}

zsh_status_t zsh_request_set_timeout(zsh_request_t *req, double seconds)
{
    if ((req == NULL) || (req->comm == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_request_set_timeout: req is %s",
                         (req == NULL) ? "NULL" : "already freed");
    }
    if (!(seconds > 0) || (seconds > ZSH_TIMEOUT_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_request_set_timeout: %g s is not a timeout (0 < seconds <= %g)",
                         seconds, ZSH_TIMEOUT_MAX);
    }
    if (req->run.status != ZSH_INPROGRESS) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_request_set_timeout: %s seq %u has already completed", req->name,
                         req->seq);
    }
    req->run.timeout  = seconds;
    req->run.deadline = req->run.posted_at + seconds;
    return ZSH_OK;
}
