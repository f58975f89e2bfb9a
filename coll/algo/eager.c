/*
 * Eager all-gather, reduce-scatter and all-reduce for small messages on a
 * few ranks: the data rides in the descriptor message (coll/desc.h), so a
 * call costs one message to each peer, all sent at once, while every call
 * is still checked against the peers' before its data is used. On two ranks
 * that is one message each way, as an MPI library's; on more, one round
 * where the log-latency algorithms take several, which matters most where
 * ranks share cores and each round waits for a peer to be scheduled. On
 * more ranks of one node the message goes once onto the rank's board,
 * straight from the caller's buffer, for every peer to read where it lies:
 * a reduce-scatter's then carries its whole input, from which each peer
 * reduces its own block, and an all-reduce's whole vector is reduced from
 * every peer's board with no copy on the way. That makes eager worth
 * 16 KiB there.
 *
 *   all-gather      send this rank's input; each peer's lands in its block;
 *   reduce-scatter  send each peer its block of this rank's input; reduce
 *                   the peers' copies of this rank's block with our own;
 *   all-reduce      send the whole input; every rank reduces all inputs in
 *                   rank order, so that all hold identical bits.
 */
#include "algo/algs.h"

#include "reduce/kernels.h"
#include "core/dtype.h"
#include "core/status.h"

#include <stddef.h>
#include <string.h>

#define ZSH_EAGER_ALIGN 64

static size_t zsh_eager_round_up(size_t bytes)
{
    return (bytes + ZSH_EAGER_ALIGN - 1) / ZSH_EAGER_ALIGN * ZSH_EAGER_ALIGN;
}

/* dst = src[0] op src[1] op ... src[n - 1], in that order, through the
 * accumulation buffer unless two inputs of an element type that is its own
 * accumulation type can be combined straight into @dst. */
static void zsh_eager_reduce(zsh_task_t *task, void *dst, const void *const *src, int n)
{
    const zsh_coll_args_t *a = &task->args;
    void *acc                = task->u.eager.acc;
    int i;

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

static zsh_status_t zsh_eager_progress(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    int rank = task->comm->rank, n = task->comm->size, peer;
    size_t blk = a->count * zsh_task_esize(task);
    const void *src[ZSH_EAGER_MAX_RANKS];

    if (task->desc_state < ZSH_DESC_MATCHED) {
        return ZSH_INPROGRESS; /* the data is used only once the call is known to match */
    }
    if ((task->desc_body != NULL) && !task->box_sent) {
        return ZSH_INPROGRESS; /* our message still goes from the caller's buffer, which an
                                  all-reduce in place is about to overwrite */
    }
    for (peer = 0; peer < n; peer++) {
        if (peer == rank) {
            src[peer] = (a->type == ZSH_COLL_REDUCE_SCATTER)
                            ? (const char *)a->sendbuf + (size_t)rank * blk : a->sendbuf;
        } else if (a->type == ZSH_COLL_ALLGATHER) {
            memcpy((char *)a->recvbuf + (size_t)peer * blk, zsh_desc_data(task, peer), blk);
        } else {
            src[peer] = zsh_desc_data(task, peer);
            if ((a->type == ZSH_COLL_REDUCE_SCATTER) && task->comm->board) {
                src[peer] = (const char *)src[peer] + (size_t)rank * blk; /* its whole input */
            }
        }
    }
    if (a->type != ZSH_COLL_ALLGATHER) {
        zsh_eager_reduce(task, a->recvbuf, src, n);
    }
    return ZSH_OK;
}

size_t zsh_eager_max(const zsh_comm_t *comm)
{
    return comm->board ? ZSH_DESC_BOARD_INLINE_MAX : ZSH_DESC_INLINE_MAX;
}

bool zsh_eager_fits(const zsh_comm_t *comm, size_t total_bytes)
{
    return (comm->size >= 2) && (comm->size <= ZSH_EAGER_MAX_RANKS) &&
           (total_bytes <= zsh_eager_max(comm));
}

/*
 * Bytes a rank may send in all through UCX in an eager call that was chosen
 * automatically. All-reduce sends the whole vector to every peer, where
 * recursive doubling sends it log2(size) times: at 8 ranks on 2 cores a
 * 1 KiB all-reduce took 52-65 us eager against 34-39 us by recursive
 * doubling, while at 4 and 5 ranks, sending at most 4 KiB, eager was as
 * fast or faster at every size. On boards the vector is written once
 * whatever the rank count, and eager won at every size it fits: at 8 ranks,
 * 1-4 KiB took 10-16 us against 26-37 us by recursive doubling.
 */
#define ZSH_EAGER_AUTO_SEND_MAX 4096

bool zsh_eager_chosen(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes)
{
    size_t sends = (size_t)comm->size - 1;
    size_t each  = (type == ZSH_COLL_ALLREDUCE) ? total_bytes : total_bytes / (size_t)comm->size;

    return zsh_eager_fits(comm, total_bytes) &&
           (comm->board || (sends * each <= ZSH_EAGER_AUTO_SEND_MAX));
}

/*
 * Scratch: the accumulation buffer, then on more than two ranks a receive
 * slot per rank, each taking any descriptor message so that a mismatched
 * peer's is compared rather than truncated, then for reduce-scatter through
 * UCX the message to each peer (its descriptor is filled in at post).
 */
static zsh_status_t zsh_eager_scratch(zsh_task_t *task, size_t msg_len)
{
    zsh_eager_t *e = &task->u.eager;
    size_t n       = (size_t)task->comm->size;
    size_t acc_len = zsh_eager_round_up(task->args.count * zsh_task_acc_esize(task));
    size_t in_len  = 0, out_stride = 0;
    zsh_status_t status;
    char *scratch;

    if (task->desc_all) {
        in_len = zsh_eager_round_up(n * sizeof(zsh_desc_msg_t));
        if ((task->args.type == ZSH_COLL_REDUCE_SCATTER) && !task->comm->board) {
            out_stride = zsh_eager_round_up(offsetof(zsh_desc_msg_t, data) + msg_len);
        }
        status = zsh_task_ops(task, 2 * (unsigned)n);
        if (status != ZSH_OK) {
            return status;
        }
    }
    status = zsh_task_scratch(task, acc_len + in_len + n * out_stride, (void **)&scratch);
    if (status != ZSH_OK) {
        return status;
    }
    e->acc           = scratch;
    task->all_in     = task->desc_all ? (zsh_desc_msg_t *)(scratch + acc_len) : NULL;
    task->all_out    = (out_stride > 0) ? scratch + acc_len + in_len : NULL;
    task->all_stride = out_stride;
    return ZSH_OK;
}

zsh_status_t zsh_eager_init(zsh_task_t *task)
{
    const zsh_coll_args_t *a = &task->args;
    int rank = task->comm->rank, n = task->comm->size, peer;
    size_t blk = a->count * zsh_task_esize(task);
    const char *data = a->sendbuf;
    size_t len       = blk;
    zsh_status_t status;

    switch (a->type) {
    case ZSH_COLL_ALLGATHER:
        if ((char *)a->recvbuf + (size_t)rank * blk != a->sendbuf) {
            memcpy((char *)a->recvbuf + (size_t)rank * blk, a->sendbuf, blk);
        }
        break;
    case ZSH_COLL_REDUCE_SCATTER:
        if (task->comm->board) {
            len = (size_t)n * blk; /* once, for every peer to take its block from */
        } else {
            data += (size_t)(rank + 1) % (size_t)n * blk; /* two ranks: the peer's block */
        }
        break;
    default:
        break;
    }
    if (len > zsh_eager_max(task->comm)) {
        return zsh_error(ZSH_ERR_INTERNAL, "eager %s of %zu bytes exceeds the %zu-byte "
                         "descriptor message", task->name, len, zsh_eager_max(task->comm));
    }
    task->desc_all = (n > 2);
    status         = zsh_eager_scratch(task, len);
    if (status != ZSH_OK) {
        return status;
    }
    if (task->comm->board) {
        task->desc_body = data; /* read from there when it goes on the board */
    } else if (task->all_out != NULL) {
        for (peer = 0; peer < n; peer++) {
            if (peer != rank) {
                memcpy(((zsh_desc_msg_t *)(task->all_out + (size_t)peer * task->all_stride))->data,
                       (const char *)a->sendbuf + (size_t)peer * blk, blk);
            }
        }
    } else {
        memcpy(task->desc_out.data, data, len);
    }
    task->desc_inline = (uint32_t)len;
    task->progress    = zsh_eager_progress;
    return ZSH_OK;
}
