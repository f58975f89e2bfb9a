/*
 * zsh_broadcast: validate, run the binomial tree.
 */
#include "bcast/bcast.h"

#include "task/validate.h"

zsh_status_t zsh_broadcast(void *buf, size_t count, zsh_dtype_t dtype, int root,
                           zsh_comm_t *comm)
{
    zsh_coll_args_t args = {ZSH_COLL_BROADCAST, NULL, buf, count, dtype, ZSH_SUM, root};
    zsh_status_t status;
    zsh_task_t *task;

    status = zsh_validate("zsh_broadcast", comm, &args);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_task_get(comm, &args, "broadcast", &task);
    if (status != ZSH_OK) {
        return status;
    }
    if ((count > 0) && (comm->size > 1)) {
        status = zsh_bcast_binomial_init(task);
        if (status != ZSH_OK) {
            zsh_task_put(task);
            return status;
        }
    }
    return zsh_coll_launch(task, NULL);
}
