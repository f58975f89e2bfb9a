/*
 * Eager all-gather, reduce-scatter and all-reduce for two ranks and small
 * messages: the data rides in the descriptor message (coll/desc.h), so a
 * call costs one message each way, as an MPI library's does, while every
 * call is still checked against the peer's before its data is used.
 *
 *   all-gather      send this rank's input; the peer's lands in its block;
 *   reduce-scatter  send the peer's block of this rank's input; reduce the
 *                   peer's copy of this rank's block with our own;
 *   all-reduce      send the whole input; both ranks reduce rank 0's data
 *                   with rank 1's, in that order, so they hold identical bits.
 */
#include "coll/algs.h"

#include "coll/reduce/kernels.h"
#include "core/dtype.h"
#include "core/status.h"

#include <string.h>

/* dst = first op second, through an accumulation-type buffer when the
 * element type is not its own accumulation type or the op divides (AVG). */
static void zsh_eager_reduce(zsh_task_t *task, void *dst, const void *first, const void *second,
                             size_t count)
{
    const zsh_coll_args_t *a = &task->args;
    void *acc;

    if ((zsh_dtype_acc(a->dtype) == a->dtype) && (a->op != ZSH_AVG)) {
        zsh_reduce_acc_store(dst, first, second, count, a->dtype, a->op, 2);
        return;
    }
    /* Fits: at most ZSH_DESC_INLINE_MAX bytes of elements, widened at most 4x. */
    acc = task->scratch;
    zsh_reduce_load(acc, first, count, a->dtype);
    zsh_reduce_acc_store(dst, acc, second, count, a->dtype, a->op, 2);
}

static zsh_status_t zsh_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    int rank = task->comm->rank, peer = 1 - rank;
    size_t esize = zsh_task_esize(task), blk = a->count * esize;
    const void *theirs = task->desc_in.data;
    const char *own;

    if (task->desc_state < ZSH_DESC_MATCHED) {
        return ZSH_INPROGRESS; /* the data is used only once the call is known to match */
    }
    switch (a->type) {
    case ZSH_COLL_ALLGATHER:
        memcpy((char *)a->recvbuf + (size_t)peer * blk, theirs, blk);
        break;
    case ZSH_COLL_REDUCE_SCATTER:
        own = (const char *)a->sendbuf + (size_t)rank * blk;
        if (rank == 0) {
            zsh_eager_reduce(task, a->recvbuf, own, theirs, a->count);
        } else {
            zsh_eager_reduce(task, a->recvbuf, theirs, own, a->count);
        }
        break;
    default:
        if (rank == 0) {
            zsh_eager_reduce(task, a->recvbuf, a->sendbuf, theirs, a->count);
        } else {
            zsh_eager_reduce(task, a->recvbuf, theirs, a->sendbuf, a->count);
        }
        break;
    }
    return ZSH_OK;
}

bool zsh_eager_fits(const zsh_comm_t *comm, size_t total_bytes)
{
    return (comm->size == 2) && (total_bytes <= ZSH_DESC_INLINE_MAX);
}

zsh_status_t zsh_eager_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    int rank = task->comm->rank, peer = 1 - rank;
    size_t esize = zsh_task_esize(task), blk = a->count * esize;
    const char *data = a->sendbuf;
    size_t len       = blk;
    zsh_status_t status;
    void *scratch;

    switch (a->type) {
    case ZSH_COLL_ALLGATHER:
        if ((char *)a->recvbuf + (size_t)rank * blk != a->sendbuf) {
            memcpy((char *)a->recvbuf + (size_t)rank * blk, a->sendbuf, blk);
        }
        break;
    case ZSH_COLL_REDUCE_SCATTER:
        data += (size_t)peer * blk;
        break;
    default:
        break;
    }
    if (len > ZSH_DESC_INLINE_MAX) {
        return zsh_error(ZSH_ERR_INTERNAL, "eager %s of %zu bytes exceeds the %d-byte "
                         "descriptor message", task->name, len, ZSH_DESC_INLINE_MAX);
    }
    status = zsh_task_scratch(task, a->count * zsh_task_acc_esize(task), &scratch);
    if (status != ZSH_OK) {
        return status;
    }
    memcpy(task->desc_out.data, data, len);
    task->desc_inline = (uint32_t)len;
    task->progress    = zsh_eager_progress;
    return ZSH_OK;
}
