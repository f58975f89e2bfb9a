/*
 * zsh_broadcast: a binomial tree, pipelined by chunks, so a rank forwards
 * chunk c to its children while chunk c + 1 is still arriving. The root
 * serves its largest subtree first.
 */
#include "algo/algs.h"
#include "select/select.h"
#include "task/validate.h"

#include "core/status.h"

/* Send slots: one row of nchildren per chunk in flight, after the receives. */
static zsh_task_op_t *zsh_bcast_send_op(zsh_task_t *task, size_t chunk, int child)
{
    const zsh_bcast_t *b = &task->u.bcast;

    return &task->ops[b->depth + (chunk % b->depth) * (size_t)b->nchildren + (size_t)child];
}

static zsh_status_t zsh_bcast_reap_sends(zsh_task_t *task)
{
    zsh_bcast_t *b = &task->u.bcast;
    zsh_status_t status;

    while (b->stail < b->shead) {
        status = zsh_task_ops_test(task, (unsigned)(zsh_bcast_send_op(task, b->stail, 0) -
                                                    task->ops),
                                   (unsigned)b->nchildren);
        if (status != ZSH_OK) {
            return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
        }
        b->stail++;
    }
    return ZSH_OK;
}

static zsh_status_t zsh_bcast_post(zsh_task_t *task, size_t bytes)
{
    zsh_bcast_t *b = &task->u.bcast;
    char *buf      = task->args.recvbuf;
    zsh_status_t status;
    size_t off, len;
    int k;

    while ((b->parent >= 0) && (b->rhead < b->nchunks) && (b->rhead - b->rtail < b->depth)) {
        off    = b->rhead * b->chunk;
        len    = (bytes - off < b->chunk) ? bytes - off : b->chunk;
        status = zsh_task_recv(task, &task->ops[b->rhead % b->depth], b->parent,
                               (uint32_t)(b->rhead % ZSH_TAG_DATA_STEPS), buf + off, len);
        if (status != ZSH_OK) {
            return status;
        }
        b->rhead++;
    }
    while ((b->shead < b->nchunks) && (b->shead - b->stail < b->depth) &&
           ((b->parent < 0) || ((b->shead < b->rtail) && zsh_task_may_forward(task)))) {
        off = b->shead * b->chunk;
        len = (bytes - off < b->chunk) ? bytes - off : b->chunk;
        for (k = 0; k < b->nchildren; k++) {
            status = zsh_task_send(task, zsh_bcast_send_op(task, b->shead, k), b->children[k],
                                   (uint32_t)(b->shead % ZSH_TAG_DATA_STEPS), buf + off,
                                   len);
            if (status != ZSH_OK) {
                return status;
            }
        }
        b->shead++;
    }
    return ZSH_OK;
}

static zsh_status_t zsh_bcast_progress(zsh_task_t *task)
{
    zsh_bcast_t *b = &task->u.bcast;
    size_t bytes   = task->args.count * zsh_task_esize(task);
    zsh_status_t status;
    size_t before;

    do {
        before = b->rtail + b->rhead + b->stail + b->shead;
        status = zsh_ring_reap(task, task->ops, b->depth, &b->rtail, b->rhead);
        if (status == ZSH_OK) {
            status = zsh_bcast_reap_sends(task);
        }
        if (status == ZSH_OK) {
            status = zsh_bcast_post(task, bytes);
        }
        if (status != ZSH_OK) {
            return status;
        }
        if (((b->parent < 0) || (b->rtail == b->nchunks)) && (b->stail == b->nchunks)) {
            return ZSH_OK;
        }
    } while (before != b->rtail + b->rhead + b->stail + b->shead);
    return ZSH_INPROGRESS;
}

zsh_status_t zsh_bcast_binomial_init(zsh_task_t *task)
{
    zsh_bcast_t *b = &task->u.bcast;
    int n = task->comm->size, root = task->args.root;
    int vrank = (task->comm->rank - root + n) % n;
    size_t bytes = task->args.count * zsh_task_esize(task);
    int mask;

    b->chunk   = task->comm->ctx->cfg.chunk_size ? task->comm->ctx->cfg.chunk_size : 1;
    b->nchunks = (bytes + b->chunk - 1) / b->chunk;
    b->depth   = zsh_ring_depth(task);
    b->parent  = (vrank == 0) ? -1 : ((vrank & (vrank - 1)) + root) % n;
    b->nchildren = 0;
    /* Children vrank + mask for every mask below vrank's lowest set bit,
     * largest subtree first. */
    for (mask = 1; (mask < n) && !(vrank & mask); mask <<= 1) {
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
        if (vrank + mask < n) {
            b->children[b->nchildren++] = (vrank + mask + root) % n;
        }
    }
    b->rhead = b->rtail = b->shead = b->stail = 0;
    task->progress = zsh_bcast_progress;
    return zsh_task_ops(task, b->depth * (unsigned)(1 + b->nchildren));
}

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
