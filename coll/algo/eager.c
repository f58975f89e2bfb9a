#include "algo/eager.h"

#include "core/dtype.h"
#include "core/status.h"
#include "reduce/kernels.h"

#include <stddef.h>
#include <string.h>

#define ZSH_EAGER_ALIGN 64

static size_t zsh_eager_round_up(size_t bytes)
{
    return (bytes + ZSH_EAGER_ALIGN - 1) / ZSH_EAGER_ALIGN * ZSH_EAGER_ALIGN;
}

size_t zsh_eager_max(const zsh_comm_t *comm)
{
    return comm->local.board ? ZSH_DESC_BOARD_INLINE_MAX : ZSH_DESC_INLINE_MAX;
}

bool zsh_eager_fits(const zsh_comm_t *comm, size_t total_bytes)
{
    return (comm->size >= 2) && (comm->size <= ZSH_EAGER_MAX_RANKS) &&
           (total_bytes <= zsh_eager_max(comm));
}

bool zsh_eager_chosen(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes)
{
    size_t sends = (size_t)comm->size - 1;
    /* An all-reduce sends its whole vector to every peer, as a broadcast's root its buffer. */
    size_t each  = zsh_coll_count_per_rank(type) ? total_bytes / (size_t)comm->size : total_bytes;

    return zsh_eager_fits(comm, total_bytes) &&
           (comm->local.board || (sends * each <= ZSH_EAGER_AUTO_SEND_MAX));
}

void zsh_eager_reduce(zsh_task_t *task, void *dst, const void *const *src, int n)
{
    const zsh_coll_args_t *a = &task->args;
    void *acc                = zsh_eager(task)->acc;
    int i;

    /* Two inputs of a type that is its own accumulation type combine
     * straight into dst; otherwise through the accumulation buffer. */
    if ((n == 2) && (zsh_dtype_acc(a->dtype) == a->dtype) && (a->op != ZSH_AVG)) {
        zsh_reduce_acc_store(dst, src[0], src[1], a->count, a->dtype, a->op, n);
        return;
    }
    zsh_reduce_load(acc, src[0], a->count, a->dtype);
    for (i = 1; i < n - 1; i++) {
        zsh_reduce_acc(acc, src[i], a->count, a->dtype, a->op);
    }
    zsh_reduce_acc_store(dst, acc, src[n - 1], a->count, a->dtype, a->op, n);
}

bool zsh_eager_ready(const zsh_task_t *task)
{
    /* An all-reduce or reduce-scatter in place is about to overwrite what
     * its board message still reads. */
    return zsh_hs_matched(&task->hs) && ((task->hs.body == NULL) || task->hs.sent);
}

/*
 * Scratch: the accumulation buffer, then for per-peer messages one for
 * each peer (its descriptor is filled in at post).
 */
zsh_status_t zsh_eager_setup(zsh_task_t *task, const void *data, size_t len, size_t peer_stride,
                             zsh_task_progress_t progress)
{
    zsh_comm_t *comm = task->comm;
    size_t n         = (size_t)comm->size;
    /* The accumulation buffer of a reduction; a broadcast reduces nothing. */
    size_t acc_len   = (task->args.type == ZSH_COLL_BROADCAST)
                           ? 0 : zsh_eager_round_up(task->args.count * zsh_task_acc_esize(task));
    size_t out_stride = 0;
    zsh_status_t status;
    char *scratch, *msg;
    size_t peer;

    if (len > zsh_eager_max(comm)) {
        return zsh_error(ZSH_ERR_INTERNAL, "eager %s of %zu bytes exceeds the %zu-byte "
                         "descriptor message", task->name, len, zsh_eager_max(comm));
    }
    if ((peer_stride > 0) && !comm->local.board && (n > 2)) {
        out_stride = zsh_eager_round_up(offsetof(zsh_desc_msg_t, data) + len);
    }
    status = (n > 2) ? zsh_hs_want_all(&task->hs) : ZSH_OK;
    if (status == ZSH_OK) {
        status = zsh_task_scratch(task, acc_len + n * out_stride, (void **)&scratch);
    }
    if (status != ZSH_OK) {
        return status;
    }
    zsh_eager(task)->acc = scratch;
    if (comm->local.board) {
        task->hs.body = data; /* read from there when it goes on the board */
    } else if (out_stride > 0) {
        task->hs.all_out    = scratch + acc_len;
        task->hs.all_stride = out_stride;
        for (peer = 0; peer < n; peer++) {
            msg = task->hs.all_out + peer * out_stride + offsetof(zsh_desc_msg_t, data);
            if (peer != (size_t)comm->rank) {
                memcpy(msg, (const char *)data + peer * peer_stride, len);
            }
        }
    } else {
        memcpy(task->hs_bufs.out.data, data, len);
    }
    task->hs.inline_len = (uint32_t)len;
    task->run.progress  = progress;
    return ZSH_OK;
}
