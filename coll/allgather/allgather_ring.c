/*
 * Pipelined ring all-gather, around the ranks in node order (algo/ring.h).
 * At step s a rank forwards to its right the block it got from its left at
 * step s - 1 (its own at step 0), chunk by chunk, so a chunk moves on as
 * soon as it lands. Receives go straight to
 * their final place: the only buffer is the result itself.
 */
#include "allgather/allgather.h"

#include "algo/ring.h"

zsh_status_t zsh_ring_ag_init(zsh_task_t *task, char *buf, const zsh_part_t *part,
                              uint32_t step_base)
{
    zsh_ring_t *ring = zsh_ring_setup(task, part, zsh_task_esize(task), step_base);

    ring->buf          = buf;
    task->run.progress = zsh_ring_ag_progress;
    return zsh_task_ops(task, 2 * ring->depth);
}

/* Where unit @u's chunk lives in the vector, for the block sent (@recv
 * false: the one @step places left, this rank's own at step 0) or
 * received (@recv true: one further left) at its step. */
static size_t zsh_ring_ag_chunk(zsh_task_t *task, size_t u, bool recv, size_t *off)
{
    return zsh_ring_unit_chunk(task, u, recv ? 1 : 0, off);
}

static zsh_status_t zsh_ring_ag_post(zsh_task_t *task)
{
    zsh_ring_t *ring = zsh_ring(task);
    size_t esize     = zsh_task_esize(task);
    zsh_status_t status;
    size_t off, cnt;

    while ((ring->rhead < ring->units) && (ring->rhead - ring->rtail < ring->depth)) {
        cnt    = zsh_ring_ag_chunk(task, ring->rhead, true, &off);
        status = zsh_task_recv(task, &task->ops[ring->rhead % ring->depth], ring->left,
                               zsh_ring_step(ring, ring->rhead), ring->buf + off * esize,
                               cnt * esize);
        if (status != ZSH_OK) {
            return status;
        }
        ring->rhead++;
    }
    while (zsh_ring_may_send(task)) {
        cnt    = zsh_ring_ag_chunk(task, ring->shead, false, &off);
        status = zsh_task_send(task, &task->ops[ring->depth + ring->shead % ring->depth],
                               ring->right, zsh_ring_step(ring, ring->shead),
                               ring->buf + off * esize, cnt * esize);
        if (status != ZSH_OK) {
            return status;
        }
        ring->shead++;
    }
    return ZSH_OK;
}

/* Reap finished receives and sends, then post what the window allows. */
static zsh_status_t zsh_ring_ag_advance(zsh_task_t *task)
{
    zsh_ring_t *ring = zsh_ring(task);
    zsh_status_t status;

    status = zsh_ring_reap(task, task->ops, ring->depth, &ring->rtail, ring->rhead);
    if (status == ZSH_OK) {
        status = zsh_ring_reap(task, task->ops + ring->depth, ring->depth, &ring->stail,
                               ring->shead);
    }
    return (status == ZSH_OK) ? zsh_ring_ag_post(task) : status;
}

zsh_status_t zsh_ring_ag_progress(zsh_task_t *task)
{
    return zsh_ring_run(task, zsh_ring_ag_advance);
}
