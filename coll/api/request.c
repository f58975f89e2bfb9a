/*
 * The public request API over collective tasks. Every entry checks the
 * handle's magic first (task.h): a request already freed reads
 * ZSH_REQUEST_FREED in the pool, or ZSH_MAGIC_RETIRED once its job is torn
 * down, and is refused instead of being waited on or freed twice.
 */
#include "comm/retire.h"
#include "core/status.h"
#include "task/task.h"

/* ZSH_ERR_INVALID_ARG naming @fn and why @req is not a live request. */
static zsh_status_t zsh_request_refuse(const char *fn, const zsh_request_t *req)
{
    if (req == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: req is NULL", fn);
    }
    if ((req->magic == ZSH_REQUEST_FREED) || (req->magic == ZSH_MAGIC_RETIRED)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: req %p was already freed", fn,
                         (const void *)req);
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %p is not a request", fn, (const void *)req);
}

static inline zsh_status_t zsh_request_check(const char *fn, const zsh_request_t *req)
{
    return ((req != NULL) && (req->magic == ZSH_REQUEST_MAGIC)) ? ZSH_OK
                                                                : zsh_request_refuse(fn, req);
}

/* @req's status; a failure's message becomes this thread's last error,
 * wherever the progress that found it ran. */
static zsh_status_t zsh_request_status(const zsh_request_t *req)
{
    if ((req->run.status < 0) && (req->run.error != NULL)) {
        zsh_error_set_quiet(req->run.error);
    }
    return req->run.status;
}

zsh_status_t zsh_request_test(zsh_request_t *req)
{
    zsh_status_t status = zsh_request_check("zsh_request_test", req);

    if (status != ZSH_OK) {
        return status;
    }
    if (req->run.status == ZSH_INPROGRESS) {
        zsh_ctx_progress(req->comm->ctx);
    }
    return zsh_request_status(req);
}

zsh_status_t zsh_request_wait(zsh_request_t *req)
{
    zsh_status_t status = zsh_request_check("zsh_request_wait", req);

    if (status != ZSH_OK) {
        return status;
    }
    zsh_task_wait(req);
    return zsh_request_status(req);
}

void zsh_request_free(zsh_request_t *req)
{
    /* NULL is ignored, as free() does; a freed request is refused in
     * zsh_last_error() and left alone. */
    if ((req == NULL) || (zsh_request_check("zsh_request_free", req) != ZSH_OK)) {
        return;
    }
    if (req->run.status == ZSH_INPROGRESS) {
        zsh_error(ZSH_ERR_ABORTED, "request freed before it completed");
    }
    zsh_task_cancel(req, ZSH_ERR_ABORTED);
    zsh_task_put(req);
}

zsh_status_t zsh_request_set_timeout(zsh_request_t *req, double seconds)
{
    zsh_status_t status = zsh_request_check("zsh_request_set_timeout", req);

    if (status != ZSH_OK) {
        return status;
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
