/*
 * Broadcast down a binomial tree, pipelined by chunks, so a rank forwards
 * chunk c to its children while chunk c + 1 is still arriving. The root
 * serves its largest subtree first.
 */
#include "bcast/bcast.h"

#include "algo/ring.h"
#include "base/tag.h"

typedef struct zsh_bcast {
    size_t nchunks, chunk;   /* in bytes */
    size_t rhead, rtail, shead, stail;
    int    parent;           /* comm rank, or -1 at the root */
    int    nchildren;
    int    children[32];     /* a binomial tree has at most log2(2^31) children */
    unsigned depth;
} zsh_bcast_t;

_Static_assert(sizeof(zsh_bcast_t) <= ZSH_TASK_STATE_BYTES, "broadcast state fits in its task");

static zsh_bcast_t *zsh_bcast(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* Send slots: one row of nchildren per chunk in flight, after the receives. */
static zsh_xfer_t *zsh_bcast_send_op(zsh_task_t *task, size_t chunk, int child)
{
    const zsh_bcast_t *b = zsh_bcast(task);

    return &task->ops[b->depth + (chunk % b->depth) * (size_t)b->nchildren + (size_t)child];
}

static zsh_status_t zsh_bcast_reap_sends(zsh_task_t *task)
{
    zsh_bcast_t *b = zsh_bcast(task);
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
    zsh_bcast_t *b = zsh_bcast(task);
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
    zsh_bcast_t *b = zsh_bcast(task);
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
    zsh_bcast_t *b = zsh_bcast(task);
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
    task->run.progress = zsh_bcast_progress;
    return zsh_task_ops(task, b->depth * (unsigned)(1 + b->nchildren));
}
