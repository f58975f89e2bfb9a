/*
 * Direct algorithms for a communicator whose ranks share one node and may
 * access each other's memory (the transport's local copy: cross-memory
 * attach), the part all four share: the handshake that carries each
 * rank's buffer addresses, the "done" messages, and a step at a time of
 * this rank's own share of the copying.
 *
 * Through a transport's shared memory every byte is copied twice, into a
 * shared segment and out of it. Here ranks read and write each other's
 * buffers themselves, so every byte is copied once, and no rank waits for
 * another to forward anything. Work goes a chunk at a time, so that what a
 * rank has just produced is still in its cache when it passes it on:
 *
 *   all-gather      copy a chunk of the input into this rank's block of
 *                   recvbuf, then write it into every peer's recvbuf
 *                   (allgather/allgather_direct.c);
 *   reduce-scatter  read this rank's block of each peer's input, a chunk at
 *                   a time into a buffer that stays in cache, and reduce it
 *                   into recvbuf (reduce_scatter/reduce_scatter_direct.c);
 *                   in the deterministic mode every rank reads ranks
 *                   0 .. n-1 in that order instead, so each element is
 *                   zeroshard.h's rank-order fold;
 *   all-reduce      reduce this rank's block the same way into recvbuf,
 *                   and write each reduced chunk into every peer's recvbuf
 *                   (allreduce/allreduce_direct.c). Each block is reduced
 *                   once, by its owner, so every rank ends with identical
 *                   bits;
 *   broadcast       the buffer split into a block per rank: each rank but
 *                   the root reads its block from the root's buffer, and
 *                   every rank writes its block into the buffers of every
 *                   rank but the root, so all ranks copy alike
 *                   (bcast/bcast_direct.c);
 *   all-to-all      each rank writes its block for rank p into block `rank`
 *                   of p's recvbuf, peers in the order rank + 1, rank + 2,
 *                   ... so that no two write to one rank at once
 *                   (alltoall/alltoall_direct.c).
 *
 * Block b of any rank's buffers is touched only by rank b, so in-place
 * calls are safe (a broadcast's root buffer is only read); an all-to-all
 * in place sends from a copy of its input (zsh_direct_init_extra()). Messages are
 * small and few: each rank's addresses ride in its descriptor message,
 * which goes to every peer (handshake/), then each rank says when it has
 * finished with its peers' buffers ("done"); a rank returns only once
 * every peer has said so. Where the ranks share
 * mailboxes or boards, both go there, the descriptor as one ticket and
 * "done" as the next. No rank touches a peer's memory before it has
 * compared every peer's descriptor with its own, so a mismatched count
 * fails before any byte past a peer's buffer is read or written.
 *
 * The copying advances a step per progress call, a step being chunks of at
 * least ZSH_DIRECT_STEP_MIN bytes of this rank's share, so other tasks and
 * deadlines move while a large call runs.
 */
#ifndef ZSH_COLL_ALGO_DIRECT_H_
#define ZSH_COLL_ALGO_DIRECT_H_

#include "base/partition.h"
#include "task/task.h"

/* The least of this rank's share one step moves (or all that is left). */
#define ZSH_DIRECT_STEP_MIN (64 * 1024)

/* Where a rank's buffers are, which it tells its peers with its descriptor. */
typedef struct zsh_direct_addr {
    uint64_t src;      /* its input (sendbuf) */
    uint64_t dst;      /* its output (recvbuf) */
} zsh_direct_addr_t;

/* One step of this rank's share of a collective: ZSH_INPROGRESS while
 * there is more, ZSH_OK once all is done. */
typedef zsh_status_t (*zsh_direct_step_t)(zsh_task_t *task);

typedef struct zsh_direct {
    zsh_direct_addr_t *peers;   /* by comm rank; peers[rank] unused */
    zsh_part_t         part;    /* the blocks of the vector */
    size_t             chunk;   /* elements per read of a reduction */
    char              *acc;     /* a chunk in the accumulation type */
    char              *tmp;     /* a chunk read from a peer */
    char              *extra;   /* the caller's scratch (zsh_direct_init_extra()) */
    bool               stream;  /* all-gather: the own block is copied with non-temporal
                                   stores (ZSH_STREAM_MIN_SIZE) */
    size_t             done;    /* of this rank's share so far: bytes (all-gather,
                                   broadcast) or elements (reductions) */
    zsh_direct_step_t  step;
} zsh_direct_t;

_Static_assert(sizeof(zsh_direct_t) <= ZSH_TASK_STATE_BYTES, "direct state fits in its task");

static inline zsh_direct_t *zsh_direct(zsh_task_t *task)
{
    return zsh_task_state(task);
}

/* Set up a direct call whose share of the work @step does; the vector is
 * the gathered or reduced one, split into a block per rank. */
zsh_status_t zsh_direct_init(zsh_task_t *task, zsh_direct_step_t step);

/* The same, with @extra bytes of scratch (64-byte aligned) for the
 * collective's own use at d->extra, held as long as the task. */
zsh_status_t zsh_direct_init_extra(zsh_task_t *task, zsh_direct_step_t step, size_t extra);

/* Read @len bytes at byte @off of comm rank @peer's recvbuf into @local. */
zsh_status_t zsh_direct_fetch(zsh_task_t *task, int peer, void *local, size_t off, size_t len);

/* Write @len bytes at @local into comm rank @peer's recvbuf at byte @off. */
zsh_status_t zsh_direct_put(zsh_task_t *task, int peer, const void *local, size_t off,
                            size_t len);

/* Write @len bytes of @chunk, at byte @off of recvbuf, into every peer's recvbuf. */
zsh_status_t zsh_direct_spread(zsh_task_t *task, const char *chunk, size_t off, size_t len);

/* The same into every peer's but comm rank @skip's (-1: none skipped). */
zsh_status_t zsh_direct_spread_but(zsh_task_t *task, const char *chunk, size_t off, size_t len,
                                   int skip);

/* The next step of reducing this rank's block of every rank's input into
 * @dst, and with @spread writing each reduced chunk into the peers'
 * recvbufs at its place in the vector. */
zsh_status_t zsh_direct_reduce_step(zsh_task_t *task, char *dst, bool spread);

#endif
