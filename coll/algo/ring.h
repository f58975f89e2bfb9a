/*
 * What the pipelined rings share: all-gather (allgather/allgather_ring.c),
 * reduce-scatter (reduce_scatter/reduce_scatter_ring.c), and both phases of
 * the ring all-reduce.
 *
 * The rings go around the ranks in node order: all ranks of node 0 in
 * local-rank order, then node 1's, and so on (the communicator's rank map,
 * topo->by_node). Only the edge from one node's last rank to the next
 * node's first crosses the network, so each node's link carries one block
 * per step each way whatever the placement; a flat ring over round-robin
 * ranks crosses it on every edge. With every rank on one node, or nodes
 * holding consecutive ranks, the order is rank order. Steps follow ring
 * positions while the data stays laid out by rank: block r of an
 * all-gather is rank r's, and reduce-scatter's block r ends on rank r.
 * Each block is reduced along one chain of positions, the same on every
 * rank of a communicator, so an all-reduce's result is bitwise the same on
 * every rank (its order of operands is the ring's, not rank order).
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
#include "comm/comm.h"
#include "task/task.h"
#include "topo/topo.h"

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
    int         pos;         /* this rank's position in the ring's order */
    int         left, right; /* the ranks it receives from and sends to */
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

/* The position of @rank in @comm's ring order. */
static inline int zsh_ring_pos(const zsh_comm_t *comm, int rank)
{
    const zsh_topo_t *topo = comm->topo;

    return topo->node_start[topo->node_of[rank]] + topo->ranks[rank].local_rank;
}

/* The rank at position @pos of @comm's ring order, taken modulo its size. */
static inline int zsh_ring_rank_at(const zsh_comm_t *comm, long pos)
{
    long n = comm->size;

    return comm->topo->by_node[((pos % n) + n) % n];
}

/* Elements [*@off, *@off + return) of the chunk unit @u moves: its chunk of
 * the block of the rank step + @shift positions left of this rank's in the
 * ring order (may be empty). */
size_t       zsh_ring_unit_chunk(zsh_task_t *task, size_t u, long shift, size_t *off);

/* Advance *@tail over the finished operations of slots @ops (ring order). */
zsh_status_t zsh_ring_reap(zsh_task_t *task, zsh_xfer_t *ops, unsigned depth, size_t *tail,
                           size_t head);

/* Call @advance until the ring is done (ZSH_OK), fails, or stops moving
 * (ZSH_INPROGRESS). */
zsh_status_t zsh_ring_run(zsh_task_t *task, zsh_status_t (*advance)(zsh_task_t *task));

#endif
