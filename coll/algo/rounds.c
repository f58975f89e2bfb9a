#include "algo/rounds.h"

zsh_status_t zsh_task_sendrecv(zsh_task_t *task, uint32_t step, int recv_peer, void *rbuf,
                               size_t rlen, int send_peer, const void *sbuf, size_t slen)
{
    zsh_status_t status = zsh_task_recv(task, &task->ops[0], recv_peer, step, rbuf, rlen);

    return (status == ZSH_OK) ? zsh_task_send(task, &task->ops[1], send_peer, step, sbuf, slen)
                              : status;
}

zsh_status_t zsh_rounds_run(zsh_task_t *task, int end, zsh_status_t (*post)(zsh_task_t *task),
                            void (*finish)(zsh_task_t *task))
{
    zsh_rounds_t *st = zsh_rounds(task);
    zsh_status_t status;

    while (st->round < end) {
        if (!st->posted) {
            /* Rounds after the first send what earlier rounds received. */
            if (st->started && !zsh_task_may_forward(task)) {
                return ZSH_INPROGRESS;
            }
            st->started = true;
            status = post(task);
            if (status != ZSH_OK) {
                return status;
            }
            st->posted = true;
        }
        status = zsh_task_ops_test(task, 0, 2);
        if (status != ZSH_OK) {
            return status;
        }
        if (finish != NULL) {
            finish(task);
        }
        st->round++;
        st->posted = false;
    }
    return ZSH_OK;
}
