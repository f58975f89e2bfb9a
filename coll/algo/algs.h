/*
 * The algorithms behind the collectives. Each init sizes the algorithm's
 * state inside the task and sets task->progress, which the task engine calls
 * until it returns something other than ZSH_INPROGRESS.
 *
 * The rings number their work in units, chunk-major: unit u moves chunk
 * u / (size - 1) at step u % (size - 1), and the forward of unit u is unit
 * u + 1. A receive slot is reused only after the unit it held was forwarded,
 * so every wait points at a lower unit, on this rank or its neighbour, and
 * the pipeline cannot deadlock with two or more slots.
 */
#ifndef ZSH_COLL_ALGS_H_
#define ZSH_COLL_ALGS_H_

#include "task/task.h"

/*
 * Whether @task may send data that depends on what it received: only once
 * its left neighbour's descriptor matched (coll/desc.h). A rank's own input
 * may go at once; what it forwards waits, so data from a mismatched call
 * never reaches ranks that cannot see the mismatch, and no rank completes
 * with it.
 */
static inline bool zsh_task_may_forward(const zsh_task_t *task)
{
    return task->desc_state >= ZSH_DESC_MATCHED;
}

/* ceil(log2(@n)) for @n >= 1: the rounds of Bruck and of recursive doubling
 * over @n ranks. */
static inline int zsh_ceil_log2(int n)
{
    int rounds = 0;

    while ((1 << rounds) < n) {
        rounds++;
    }
    return rounds;
}

/* Whether the ring may post its next send (unit ring->shead) now. */
bool         zsh_ring_may_send(const zsh_task_t *task);

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

/* Advance *@tail over the finished operations of slots @ops (ring order). */
zsh_status_t zsh_ring_reap(zsh_task_t *task, zsh_task_op_t *ops, unsigned depth, size_t *tail,
                           size_t head);

/* Call @advance until the ring is done (ZSH_OK), fails, or stops moving
 * (ZSH_INPROGRESS). */
zsh_status_t zsh_ring_run(zsh_task_t *task, zsh_status_t (*advance)(zsh_task_t *task));

/* Ring all-gather in place over @buf, whose block `rank` already holds this
 * rank's data. */
zsh_status_t zsh_ring_ag_init(zsh_task_t *task, char *buf, const zsh_part_t *part,
                              uint32_t step_base);
zsh_status_t zsh_ring_ag_progress(zsh_task_t *task);

/* Ring reduce-scatter of the vector @src into @dst, this rank's block. */
zsh_status_t zsh_ring_rs_init(zsh_task_t *task, const char *src, char *dst,
                              const zsh_part_t *part, uint32_t step_base);
zsh_status_t zsh_ring_rs_progress(zsh_task_t *task);

/* One-sided all-gather: each rank reads every peer's block from the peer's
 * registered receive buffer (large messages). */
zsh_status_t zsh_rma_ag_init(zsh_task_t *task);

/* Direct all-gather, reduce-scatter and all-reduce for communicators on one
 * node (comm->direct): every rank reads what it needs straight from its
 * peers' buffers, one copy per byte (coll/direct.c). */
zsh_status_t zsh_direct_init(zsh_task_t *task);

/* Eager all-gather, reduce-scatter and all-reduce: the data in the
 * descriptor messages, one to each peer or one on the rank's board
 * (coll/eager.c); for calls where zsh_eager_fits(): at most
 * ZSH_EAGER_MAX_RANKS ranks, since a rank sends and receives size - 1
 * messages, and zsh_eager_max() bytes in all. */
#define ZSH_EAGER_MAX_RANKS 8
size_t       zsh_eager_max(const zsh_comm_t *comm);
bool         zsh_eager_fits(const zsh_comm_t *comm, size_t total_bytes);
/* Whether the automatic choice takes it for a call of @type: where it fits,
 * on boards whatever its size, else where a rank sends at most 4 KiB in all. */
bool         zsh_eager_chosen(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes);
zsh_status_t zsh_eager_init(zsh_task_t *task);

/* Bruck all-gather (log-latency, for small messages). */
zsh_status_t zsh_bruck_init(zsh_task_t *task);

/* Recursive-doubling all-reduce of @count elements of args.sendbuf; used by
 * allreduce, and by reduce-scatter (which keeps only its block). */
zsh_status_t zsh_rd_init(zsh_task_t *task, size_t count);

/* Post a receive (slot 0) and a send (slot 1) of tag step @step. */
zsh_status_t zsh_task_sendrecv(zsh_task_t *task, uint32_t step, int recv_peer, void *rbuf,
                               size_t rlen, int send_peer, const void *sbuf, size_t slen);

/* Run rounds u.rounds.round .. @end - 1: @post posts a round's operations
 * (slots 0 and 1), @finish (may be NULL) runs when both are done. */
zsh_status_t zsh_rounds_run(zsh_task_t *task, int end, zsh_status_t (*post)(zsh_task_t *task),
                            void (*finish)(zsh_task_t *task));

/* Allreduce as a schedule: the ring reduce-scatter, then the ring all-gather. */
zsh_status_t zsh_allreduce_ring_init(zsh_task_t *task);

/* Pipelined binomial-tree broadcast. */
zsh_status_t zsh_bcast_binomial_init(zsh_task_t *task);

/* Dissemination barrier. */
zsh_status_t zsh_dissemination_init(zsh_task_t *task);

/* Run a prepared task: nonblocking when @req_p is not NULL (the caller owns
 * the request), else post, wait and give the task back. */
zsh_status_t zsh_coll_launch(zsh_task_t *task, zsh_request_t **req_p);

/* Barrier (or the teardown fence) over @comm, blocking. */
zsh_status_t zsh_barrier_run(zsh_comm_t *comm, zsh_coll_type_t type);

#endif
