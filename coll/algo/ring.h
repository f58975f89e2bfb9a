/*
 * What the pipelined rings share: all-gather (allgather/allgather_ring.c),
 * reduce-scatter (reduce_scatter/reduce_scatter_ring.c), and both phases of
 * the ring all-reduce.
 *
 * The rings number their work in units, chunk-major: unit u moves chunk
 * u / (size - 1) at step u % (size - 1), and the forward of unit u is unit
 * u + 1. A receive slot is reused only after the unit it held was forwarded,
 * so every wait points at a lower unit, on this rank or its neighbour, and
 * the pipeline cannot deadlock with two or more slots.
 */
#ifndef ZSH_COLL_ALGO_RING_H_
#define ZSH_COLL_ALGO_RING_H_

#include "base/partition.h"
#include "base/tag.h"
#include "task/task.h"

/* Pipelined ring over a partitioned vector. Units are (step, chunk) pairs in order. */
typedef struct zsh_ring {
    zsh_part_t  part;
    size_t      chunk;       /* elements per message */
    size_t      nchunks;     /* chunks per block */
    size_t      units;       /* (size - 1) * nchunks */
    size_t      rhead, rtail, shead, stail;  /* posted / completed receives and sends */
    unsigned    depth;       /* units in flight per direction */
    uint32_t    step_base;   /* tag steps of this phase */
    char       *buf;         /* allgather: the whole vector, in place */
    const char *src;         /* reduce-scatter: the whole input vector */
    char       *dst;         /* reduce-scatter: this rank's block of the result */
    char       *slots;       /* reduce-scatter: @depth receive slots (accumulation type) */
    char       *stage;       /* reduce-scatter: @depth converted first-step sends */
    bool        own_first;   /* step-0 sends carry this rank's own input */
} zsh_ring_t;

_Static_assert(sizeof(zsh_ring_t) <= ZSH_TASK_STATE_BYTES, "a ring's state fits in its task");

static inline zsh_ring_t *zsh_ring(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* A fresh ring over @part for this task, messages of ZSH_CHUNK_SIZE bytes
 * of elements of @esize bytes, tag steps from @step_base; what it moves
 * (buf, or src and dst) the caller fills in. */
zsh_ring_t  *zsh_ring_setup(zsh_task_t *task, const zsh_part_t *part, size_t esize,
                            uint32_t step_base);

/* Whether the ring may post its next send (unit ring->shead) now. */
bool         zsh_ring_may_send(zsh_task_t *task);

/* Pipeline depth the rings use: the configured one, at least 2 (see above). */
unsigned     zsh_ring_depth(const zsh_task_t *task);

/* Step field of unit @u's tag: phases of one task use disjoint halves of
 * the data steps. */
static inline uint32_t zsh_ring_step(const zsh_ring_t *ring, size_t u)
{
    return ring->step_base + (uint32_t)(u % (ZSH_TAG_DATA_STEPS / 2));
}

/* The block @back places to the left of @rank on a ring of @n. */
static inline size_t zsh_ring_block(int rank, long back, int n)
{
    return (size_t)((((long)rank - back) % n + n) % n);
}

/* Elements [*@off, *@off + return) of the chunk unit @u moves: its chunk of
 * the block step + @shift places left of this rank (may be empty). */
size_t       zsh_ring_unit_chunk(zsh_task_t *task, size_t u, long shift, size_t *off);

/* Advance *@tail over the finished operations of slots @ops (ring order). */
zsh_status_t zsh_ring_reap(zsh_task_t *task, zsh_xfer_t *ops, unsigned depth, size_t *tail,
                           size_t head);

/* Call @advance until the ring is done (ZSH_OK), fails, or stops moving
 * (ZSH_INPROGRESS). */
zsh_status_t zsh_ring_run(zsh_task_t *task, zsh_status_t (*advance)(zsh_task_t *task));

#endif
