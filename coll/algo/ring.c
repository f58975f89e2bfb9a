/*
 * What the pipelined rings (all-gather, reduce-scatter, and both phases of
 * all-reduce) share: the node order they go around, the window depth,
 * in-order reaping of their operation slots, and the loop that advances
 * them until nothing moves.
 */
#include "algo/ring.h"

unsigned zsh_ring_depth(const zsh_task_t *task)
{
    unsigned depth = task->comm->ctx->cfg.pipeline_depth;

    if (depth < 2) {
        return 2;
    }
    return (depth > ZSH_TAG_STEPS / 4) ? ZSH_TAG_STEPS / 4 : depth;
}

zsh_ring_t *zsh_ring_setup(zsh_task_t *task, const zsh_part_t *part, size_t esize,
                           uint32_t step_base)
{
    size_t chunk_bytes = task->comm->ctx->cfg.chunk_size;
    size_t chunk       = (chunk_bytes / esize > 0) ? chunk_bytes / esize : 1;
    size_t nchunks     = zsh_part_nchunks(part, chunk);
    zsh_ring_t *ring   = zsh_ring(task);
    int pos            = zsh_ring_pos(task->comm, task->comm->rank);

    *ring = (zsh_ring_t){.part      = *part,
                         .chunk     = chunk,
                         .nchunks   = nchunks,
                         .units     = (size_t)(task->comm->size - 1) * nchunks,
                         .depth     = zsh_ring_depth(task),
                         .step_base = step_base,
                         .pos       = pos,
                         .left      = zsh_ring_rank_at(task->comm, (long)pos - 1),
                         .right     = zsh_ring_rank_at(task->comm, (long)pos + 1),
                         .own_first = true};
    return ring;
}

size_t zsh_ring_unit_chunk(zsh_task_t *task, size_t u, long shift, size_t *off)
{
    const zsh_ring_t *ring = zsh_ring(task);
    size_t steps           = (size_t)(task->comm->size - 1);
    size_t block = (size_t)zsh_ring_rank_at(task->comm,
                                            (long)ring->pos - (long)(u % steps) - shift);

    return zsh_part_chunk(&ring->part, block, u / steps, ring->chunk, off);
}

bool zsh_ring_may_send(zsh_task_t *task)
{
    const zsh_ring_t *ring = zsh_ring(task);
    size_t steps           = (size_t)(task->comm->size - 1);

    if ((ring->shead >= ring->units) || (ring->shead - ring->stail >= ring->depth)) {
        return false;
    }
    if (ring->shead % steps == 0) {
        return ring->own_first || zsh_task_may_forward(task);
    }
    /* A unit past step 0 forwards what the previous unit received. */
    return (ring->shead - 1 < ring->rtail) && zsh_task_may_forward(task);
}

zsh_status_t zsh_ring_reap(zsh_task_t *task, zsh_xfer_t *ops, unsigned depth, size_t *tail,
                           size_t head)
{
    zsh_status_t status;

    while (*tail < head) {
        status = zsh_task_op_test(task, &ops[*tail % depth]);
        if (status == ZSH_INPROGRESS) {
            break;
        }
        if (status != ZSH_OK) {
            return status;
        }
        (*tail)++;
    }
    return ZSH_OK;
}

zsh_status_t zsh_ring_run(zsh_task_t *task, zsh_status_t (*advance)(zsh_task_t *task))
{
    zsh_ring_t *ring = zsh_ring(task);
    zsh_status_t status;
    size_t before;

    /* Operations may finish at once when posted, so go round again while
     * anything moved rather than waiting for the next progress call. */
    do {
        before = ring->rtail + ring->stail + ring->rhead + ring->shead;
        status = advance(task);
        if (status != ZSH_OK) {
            return status;
        }
        if ((ring->rtail == ring->units) && (ring->stail == ring->units)) {
            return ZSH_OK;
        }
    } while (before != ring->rtail + ring->stail + ring->rhead + ring->shead);
    return ZSH_INPROGRESS;
}
