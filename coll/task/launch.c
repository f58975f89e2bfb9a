/*
 * What every collective does after its algorithm is set up: blocking calls
 * are post + wait, nonblocking ones hand the task to the caller.
 */
#include "algo/algs.h"

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
