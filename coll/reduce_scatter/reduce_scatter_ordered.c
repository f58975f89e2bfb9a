/*
 * The ordered reduce-scatter: the deterministic mode's algorithm over
 * messages, for any placement of the ranks (zeroshard.h's contract). Each
 * rank sends chunk c of block p of its input to rank p, and receives chunk
 * c of its own block from every peer; once all have come, it reduces them
 * in rank order, 0 .. n-1, in the accumulation type, and stores the chunk
 * once. Contributions travel in the element type, so nothing is rounded
 * on the way, and a chunk's bits depend on nothing but the inputs: the
 * order is fixed per element, whatever the chunk size, the depth, or the
 * order messages arrive in.
 *
 * Each rank sends and receives (n - 1) blocks, as the ring does; a block's
 * owner reduces all of it, where the ring spreads that over the ranks of
 * its chain. Sends go to peers rank + 1, rank + 2, ... so that no rank
 * hears from all at once.
 *
 * Units are chunks of the blocks, @depth in flight each way. A unit's
 * receive slots are reused only after it was reduced, and its sends wait
 * only for the peers' receives of units at most @depth ahead of what they
 * reduced; every wait points at a lower unit, so the window cannot
 * deadlock.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/ring.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

/* Receive slots of one call at most, so a deep pipeline on many ranks
 * stays bounded: the depth shrinks to fit, two at the least. */
#define ZSH_ORDERED_SLOTS_MAX (64u << 20)

typedef struct zsh_ordered {
    zsh_part_t  part;
    size_t      chunk;        /* elements per message */
    size_t      units;        /* chunks of the largest block */
    size_t      rhead, rtail; /* units whose receives are posted / reduced */
    size_t      shead, stail; /* units whose sends are posted / done */
    unsigned    depth;
    uint32_t    step_base;
    const char *src;          /* the whole input vector */
    char       *dst;          /* this rank's block of the result */
    char       *slots;        /* @depth x size chunks, indexed by rank (own unused) */
    char       *acc;          /* a chunk in the accumulation type */
} zsh_ordered_t;

_Static_assert(sizeof(zsh_ordered_t) <= ZSH_TASK_STATE_BYTES, "ordered state fits in its task");

static zsh_ordered_t *zsh_ordered(zsh_task_t *task)
{
    return zsh_task_state(task);
}

static uint32_t zsh_ordered_step(const zsh_ordered_t *o, size_t u)
{
    return o->step_base + (uint32_t)(u % (ZSH_TAG_DATA_STEPS / 2));
}

/* Receive ops are [0, depth * n), sends the same count after them. */
static unsigned zsh_ordered_op(const zsh_ordered_t *o, size_t u, int n, int peer, bool send)
{
    return (send ? o->depth * (unsigned)n : 0) + (unsigned)(u % o->depth) * (unsigned)n +
           (unsigned)peer;
}

static char *zsh_ordered_slot(const zsh_ordered_t *o, size_t u, int n, int peer, size_t esize)
{
    return o->slots + ((u % o->depth) * (size_t)n + (size_t)peer) * o->chunk * esize;
}

zsh_status_t zsh_ordered_rs_init(zsh_task_t *task, const char *src, char *dst,
                                 const zsh_part_t *part, uint32_t step_base)
{
    zsh_ordered_t *o = zsh_ordered(task);
    size_t n = (size_t)task->comm->size, esize = zsh_task_esize(task);
    size_t acc_esize   = zsh_task_acc_esize(task);
    size_t chunk_bytes = task->comm->ctx->cfg.chunk_size;
    size_t chunk       = (chunk_bytes / esize > 0) ? chunk_bytes / esize : 1;
    size_t per_unit    = n * chunk * esize, slots_bytes;
    unsigned depth     = zsh_ring_depth(task);
    zsh_status_t status;
    void *scratch;

    if (depth * per_unit > ZSH_ORDERED_SLOTS_MAX) {
        depth = (ZSH_ORDERED_SLOTS_MAX / per_unit > 2) ? (unsigned)(ZSH_ORDERED_SLOTS_MAX / per_unit)
                                                       : 2;
    }
    slots_bytes = ((depth * per_unit) + 63) & ~(size_t)63;
    *o = (zsh_ordered_t){.part      = *part,
                         .chunk     = chunk,
                         .units     = zsh_part_nchunks(part, chunk),
                         .depth     = depth,
                         .step_base = step_base,
                         .src       = src,
                         .dst       = dst};
    status = zsh_task_scratch(task, slots_bytes + chunk * acc_esize, &scratch);
    if (status == ZSH_OK) {
        status = zsh_task_ops(task, 2 * depth * (unsigned)n);
    }
    if (status != ZSH_OK) {
        return status;
    }
    o->slots           = scratch;
    o->acc             = o->slots + slots_bytes;
    task->run.progress = zsh_ordered_rs_progress;
    return ZSH_OK;
}

/* Unit @u's chunk of this rank's block, reduced over ranks 0 .. n-1 into
 * dst; only once the descriptors matched, so no rank stores data of a
 * call its peers did not make. */
static zsh_status_t zsh_ordered_reduce(zsh_task_t *task)
{
    zsh_ordered_t *o         = zsh_ordered(task);
    const zsh_coll_args_t *a = &task->args;
    int n = task->comm->size, rank = task->comm->rank, p;
    size_t esize = zsh_task_esize(task);
    size_t own   = zsh_part_offset(&o->part, (size_t)rank);
    zsh_status_t status;
    size_t off, cnt;
    const char *in;

    while ((o->rtail < o->rhead) && zsh_task_may_forward(task)) {
        status = zsh_task_ops_test(task, zsh_ordered_op(o, o->rtail, n, 0, false), (unsigned)n);
        if (status != ZSH_OK) {
            return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
        }
        cnt = zsh_part_chunk(&o->part, (size_t)rank, o->rtail, o->chunk, &off);
        for (p = 0; (p < n) && (cnt > 0); p++) {
            in = (p == rank) ? o->src + off * esize : zsh_ordered_slot(o, o->rtail, n, p, esize);
            if (p == 0) {
                zsh_reduce_load(o->acc, in, cnt, a->dtype);
            } else if (p < n - 1) {
                zsh_reduce_acc(o->acc, in, cnt, a->dtype, a->op);
            } else {
                zsh_reduce_acc_store(o->dst + (off - own) * esize, o->acc, in, cnt, a->dtype,
                                     a->op, n);
            }
        }
        o->rtail++;
    }
    return ZSH_OK;
}

static zsh_status_t zsh_ordered_reap(zsh_task_t *task)
{
    zsh_ordered_t *o = zsh_ordered(task);
    int n            = task->comm->size;
    zsh_status_t status;

    while (o->stail < o->shead) {
        status = zsh_task_ops_test(task, zsh_ordered_op(o, o->stail, n, 0, true), (unsigned)n);
        if (status != ZSH_OK) {
            return (status == ZSH_INPROGRESS) ? ZSH_OK : status;
        }
        o->stail++;
    }
    return ZSH_OK;
}

/* Sends carry this rank's own input only, so they need no match first. */
static zsh_status_t zsh_ordered_send(zsh_task_t *task)
{
    zsh_ordered_t *o = zsh_ordered(task);
    int n = task->comm->size, rank = task->comm->rank, k, p;
    size_t esize = zsh_task_esize(task), off, cnt;
    zsh_status_t status;

    while ((o->shead < o->units) && (o->shead - o->stail < o->depth)) {
        for (k = 1; k < n; k++) {
            p      = (rank + k) % n;
            cnt    = zsh_part_chunk(&o->part, (size_t)p, o->shead, o->chunk, &off);
            status = zsh_task_send(task, &task->ops[zsh_ordered_op(o, o->shead, n, p, true)], p,
                                   zsh_ordered_step(o, o->shead), o->src + off * esize,
                                   cnt * esize);
            if (status != ZSH_OK) {
                return status;
            }
        }
        o->shead++;
    }
    return ZSH_OK;
}

static zsh_status_t zsh_ordered_recv(zsh_task_t *task)
{
    zsh_ordered_t *o = zsh_ordered(task);
    int n = task->comm->size, rank = task->comm->rank, k, p;
    size_t esize = zsh_task_esize(task), off, cnt;
    zsh_status_t status;

    while ((o->rhead < o->units) && (o->rhead - o->rtail < o->depth)) {
        cnt = zsh_part_chunk(&o->part, (size_t)rank, o->rhead, o->chunk, &off);
        for (k = 1; k < n; k++) {
            p      = (rank + n - k) % n;
            status = zsh_task_recv(task, &task->ops[zsh_ordered_op(o, o->rhead, n, p, false)], p,
                                   zsh_ordered_step(o, o->rhead),
                                   zsh_ordered_slot(o, o->rhead, n, p, esize), cnt * esize);
            if (status != ZSH_OK) {
                return status;
            }
        }
        o->rhead++;
    }
    return ZSH_OK;
}

zsh_status_t zsh_ordered_rs_progress(zsh_task_t *task)
{
    zsh_ordered_t *o = zsh_ordered(task);
    zsh_status_t status;
    size_t before;

    /* Operations may finish as they are posted: go round while anything moves. */
    do {
        before = o->rhead + o->rtail + o->shead + o->stail;
        status = zsh_ordered_reduce(task);
        status = (status == ZSH_OK) ? zsh_ordered_reap(task) : status;
        status = (status == ZSH_OK) ? zsh_ordered_recv(task) : status;
        status = (status == ZSH_OK) ? zsh_ordered_send(task) : status;
        if (status != ZSH_OK) {
            return status;
        }
        if ((o->rtail == o->units) && (o->stail == o->units)) {
            return ZSH_OK;
        }
    } while (before != o->rhead + o->rtail + o->shead + o->stail);
    return ZSH_INPROGRESS;
}

zsh_status_t zsh_reduce_scatter_ordered_init(zsh_task_t *task)
{
    size_t n        = (size_t)task->comm->size;
    zsh_part_t part = zsh_part_make(task->args.count * n, n);

    return zsh_ordered_rs_init(task, task->args.sendbuf, task->args.recvbuf, &part, 0);
}
