/*
 * Eager calls: small all-gathers, reduce-scatters and all-reduces on a few
 * ranks whose data rides in the descriptor message (handshake/), so a call
 * costs one message to each peer, all sent at once, while every call is
 * still checked against the peers' before its data is used. On two ranks
 * that is one message each way, as an MPI library's; on more, one round
 * where the log-latency algorithms take several, which matters most where
 * ranks share cores and each round waits for a peer to be scheduled. On
 * more ranks of one node the message goes once onto the rank's board,
 * straight from the caller's buffer, for every peer to read where it lies:
 * a reduce-scatter's then carries its whole input, from which each peer
 * reduces its own block, and an all-reduce's whole vector is reduced from
 * every peer's board with no copy on the way.
 *
 * A broadcast's root sends its buffer the same way, and the other ranks
 * send only their descriptors.
 *
 * What they share is here; each collective's own part is in its folder
 * (allgather_eager.c, reduce_scatter_eager.c, allreduce_eager.c,
 * bcast_eager.c).
 */
#ifndef ZSH_COLL_ALGO_EAGER_H_
#define ZSH_COLL_ALGO_EAGER_H_

#include "task/task.h"

/* A rank sends and receives size - 1 messages, so eager calls stop here. */
#define ZSH_EAGER_MAX_RANKS 8

/*
 * Bytes a rank may send in all through the transport in an eager call that
 * was chosen automatically: all-reduce sends the whole vector to every peer,
 * where recursive doubling sends it log2(size) times, and past this eager
 * lost on 8 ranks sharing 2 cores; on boards the vector is written once
 * whatever the rank count (docs/DECISIONS.md, "Eager calls").
 */
#define ZSH_EAGER_AUTO_SEND_MAX 4096

typedef struct zsh_eager {
    void *acc;   /* a reduction's accumulation buffer */
} zsh_eager_t;

_Static_assert(sizeof(zsh_eager_t) <= ZSH_TASK_STATE_BYTES, "eager state fits in its task");

static inline zsh_eager_t *zsh_eager(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* The most bytes in all an eager call on @comm may move: what a descriptor
 * message carries, more on a board. */
size_t       zsh_eager_max(const zsh_comm_t *comm);

/* Whether an eager call of @total_bytes can run on @comm. */
bool         zsh_eager_fits(const zsh_comm_t *comm, size_t total_bytes);

/* Whether the automatic choice takes it for a call of @type: where it fits,
 * on boards whatever its size, else where a rank sends at most
 * ZSH_EAGER_AUTO_SEND_MAX bytes in all through the transport. */
bool         zsh_eager_chosen(const zsh_comm_t *comm, zsh_coll_type_t type,
                              size_t total_bytes);

/*
 * Put @len bytes at @data in this rank's descriptor message, and set up
 * the rest: on a board the message reads them where they lie; with
 * @peer_stride (reduce-scatter through the transport on more than two
 * ranks) each peer p gets its own message instead, of @len bytes at
 * @data + p * @peer_stride. @progress takes over once it is posted.
 */
zsh_status_t zsh_eager_setup(zsh_task_t *task, const void *data, size_t len, size_t peer_stride,
                             zsh_task_progress_t progress);

/* Whether the peers' data may be used and recvbuf written: the calls
 * matched, and our message no longer reads from the caller's buffer. */
bool         zsh_eager_ready(const zsh_task_t *task);

/* dst = src[0] op src[1] op ... src[n - 1], in that order, so that every
 * rank that reduces the same inputs holds identical bits. */
void         zsh_eager_reduce(zsh_task_t *task, void *dst, const void *const *src, int n);

#endif
