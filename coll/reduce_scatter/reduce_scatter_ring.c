/*
 * Pipelined ring reduce-scatter, around the ranks in node order
 * (algo/ring.h). At step s the rank at ring position p sends its right
 * neighbour the partial result of the block of the rank at position
 * p - s - 1, which it got from its left and added its own contribution to;
 * after size - 1 steps its own block is complete. Partials travel in the accumulation type (fp32 for fp16 and
 * bf16), so half precision is rounded once, by the rank that stores it.
 */
#include "reduce_scatter/reduce_scatter.h"

#include "algo/ring.h"
#include "core/dtype.h"
#include "reduce/kernels.h"

zsh_status_t zsh_ring_rs_init(zsh_task_t *task, const char *src, char *dst,
                              const zsh_part_t *part, uint32_t step_base)
{
    size_t acc_esize = zsh_task_acc_esize(task);
    zsh_ring_t *ring = zsh_ring_setup(task, part, acc_esize, step_base);
    bool converts    = zsh_dtype_acc(task->args.dtype) != task->args.dtype;
    size_t slot_bytes;
    zsh_status_t status;
    void *scratch;

    ring->src = src;
    ring->dst = dst;

    slot_bytes = ring->chunk * acc_esize * ring->depth;
    status     = zsh_task_scratch(task, slot_bytes * (converts ? 2 : 1), &scratch);
    if (status != ZSH_OK) {
        return status;
    }
    ring->slots = scratch;
    ring->stage = converts ? ring->slots + slot_bytes : NULL;
    task->run.progress = zsh_ring_rs_progress;
    return zsh_task_ops(task, 2 * ring->depth);
}

static char *zsh_ring_rs_slot(const zsh_ring_t *ring, char *base, size_t u, size_t acc_esize)
{
    return base + (u % ring->depth) * ring->chunk * acc_esize;
}

/* Unit @u's chunk of the block received (@recv) or sent at its step: the
 * partial of the block of position pos - step - 1 goes right, of
 * pos - step - 2 arrives. */
static size_t zsh_ring_rs_chunk(zsh_task_t *task, size_t u, bool recv, size_t *off)
{
    return zsh_ring_unit_chunk(task, u, recv ? 2 : 1, off);
}

/* Add this rank's contribution to each received partial, in order; the last
 * step's partial is this rank's block, stored to dst. */
static zsh_status_t zsh_ring_rs_reduce(zsh_task_t *task)
{
    zsh_ring_t *ring   = zsh_ring(task);
    const zsh_coll_args_t *a = &task->args;
    size_t esize = zsh_task_esize(task), acc_esize = zsh_task_acc_esize(task);
    size_t last  = (size_t)(task->comm->size - 2);
    size_t own   = zsh_part_offset(&ring->part, (size_t)task->comm->rank);
    zsh_status_t status;
    size_t off, cnt;
    char *slot;

    while (ring->rtail < ring->rhead) {
        status = zsh_task_op_test(task, &task->ops[ring->rtail % ring->depth]);
        if (status == ZSH_INPROGRESS) {
            break;
        }
        if (status != ZSH_OK) {
            return status;
        }
        cnt  = zsh_ring_rs_chunk(task, ring->rtail, true, &off);
        slot = zsh_ring_rs_slot(ring, ring->slots, ring->rtail, acc_esize);
        if (ring->rtail % (last + 1) == last) {
            zsh_reduce_acc_store(ring->dst + (off - own) * esize, slot, ring->src + off * esize,
                                 cnt, a->dtype, a->op, task->comm->size);
        } else {
            zsh_reduce_acc(slot, ring->src + off * esize, cnt, a->dtype, a->op);
        }
        ring->rtail++;
    }
    return ZSH_OK;
}

static zsh_status_t zsh_ring_rs_send(zsh_task_t *task)
{
    zsh_ring_t *ring = zsh_ring(task);
    int n            = task->comm->size;
    size_t steps     = (size_t)(n - 1);
    size_t esize = zsh_task_esize(task), acc_esize = zsh_task_acc_esize(task);
    zsh_status_t status;
    const char *buf;
    size_t off, cnt;
    size_t u;

    while (zsh_ring_may_send(task)) {
        u   = ring->shead;
        cnt = zsh_ring_rs_chunk(task, u, false, &off);
        if (u % steps != 0) {
            buf = zsh_ring_rs_slot(ring, ring->slots, u - 1, acc_esize);
        } else if (ring->stage != NULL) {
            buf = zsh_ring_rs_slot(ring, ring->stage, u, acc_esize);
            zsh_reduce_load((char *)buf, ring->src + off * esize, cnt, task->args.dtype);
        } else {
            buf = ring->src + off * esize;
        }
        status = zsh_task_send(task, &task->ops[ring->depth + u % ring->depth],
                               ring->right, zsh_ring_step(ring, u), buf,
                               cnt * acc_esize);
        if (status != ZSH_OK) {
            return status;
        }
        ring->shead++;
    }
    return ZSH_OK;
}

/* A slot is free once the unit that last held it was reduced and, unless
 * it was the last step, forwarded. */
static bool zsh_ring_rs_slot_free(const zsh_ring_t *ring, size_t u, size_t steps)
{
    size_t prev = u - ring->depth;

    return (u < ring->depth) || ((prev % steps == steps - 1) || (prev + 1 < ring->stail));
}

static zsh_status_t zsh_ring_rs_recv(zsh_task_t *task)
{
    zsh_ring_t *ring = zsh_ring(task);
    int n            = task->comm->size;
    size_t acc_esize = zsh_task_acc_esize(task);
    zsh_status_t status;
    size_t off, cnt;

    while ((ring->rhead < ring->units) && (ring->rhead - ring->rtail < ring->depth) &&
           zsh_ring_rs_slot_free(ring, ring->rhead, (size_t)(n - 1))) {
        cnt    = zsh_ring_rs_chunk(task, ring->rhead, true, &off);
        status = zsh_task_recv(task, &task->ops[ring->rhead % ring->depth],
                               ring->left, zsh_ring_step(ring, ring->rhead),
                               zsh_ring_rs_slot(ring, ring->slots, ring->rhead, acc_esize),
                               cnt * acc_esize);
        if (status != ZSH_OK) {
            return status;
        }
        ring->rhead++;
    }
    return ZSH_OK;
}

/* Reduce what arrived, reap sends, then post what the window allows. */
static zsh_status_t zsh_ring_rs_advance(zsh_task_t *task)
{
    zsh_ring_t *ring = zsh_ring(task);
    zsh_status_t status;

    status = zsh_ring_rs_reduce(task);
    if (status == ZSH_OK) {
        status = zsh_ring_reap(task, task->ops + ring->depth, ring->depth, &ring->stail,
                               ring->shead);
    }
    if (status == ZSH_OK) {
        status = zsh_ring_rs_send(task);
    }
    return (status == ZSH_OK) ? zsh_ring_rs_recv(task) : status;
}

zsh_status_t zsh_ring_rs_progress(zsh_task_t *task)
{
    return zsh_ring_run(task, zsh_ring_rs_advance);
}
