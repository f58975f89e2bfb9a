/*
 * A collective call as the caller made it: which collective, its buffers,
 * count, type, op and root. Every rank of a communicator makes the same
 * calls in the same order; the descriptor (desc.h) is what they compare.
 */
#ifndef ZSH_COLL_BASE_CALL_H_
#define ZSH_COLL_BASE_CALL_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

typedef enum {
    ZSH_COLL_ALLGATHER,
    ZSH_COLL_REDUCE_SCATTER,
    ZSH_COLL_ALLREDUCE,
    ZSH_COLL_BROADCAST,
    ZSH_COLL_ALLTOALL,
    ZSH_COLL_BARRIER,
    ZSH_COLL_FENCE,         /* the job-wide barrier before teardown */
    ZSH_COLL_SEND,          /* point to point (p2p/): two ranks, outside the sequence */
    ZSH_COLL_RECV
} zsh_coll_type_t;

typedef struct zsh_coll_args {
    zsh_coll_type_t type;
    const void     *sendbuf;
    void           *recvbuf;   /* broadcast: the buffer */
    size_t          count;     /* per rank (allgather, reduce-scatter), per block sent to
                                  each rank (alltoall), else total */
    zsh_dtype_t     dtype;
    zsh_op_t        op;
    int             root;
    /* Set by the entry point, not described: */
    void           *stream;    /* a `_stream` call's cudaStream_t */
    bool            stream_set;
    bool            blocking;  /* a blocking call (zsh_coll_call sets it) */
    int             peer;      /* point to point: the other rank, or ZSH_ANY_SOURCE */
    int             tag;       /* point to point: the caller's tag */
} zsh_coll_args_t;

/* Whether a call's count is per rank (all-gather, reduce-scatter; an
 * all-to-all's block for each rank), its vector that count times the
 * ranks; else the count is the vector's. */
static inline bool zsh_coll_count_per_rank(zsh_coll_type_t type)
{
    return (type == ZSH_COLL_ALLGATHER) || (type == ZSH_COLL_REDUCE_SCATTER) ||
           (type == ZSH_COLL_ALLTOALL);
}

/* Whether a call is point to point: it takes no sequence number and
 * exchanges no descriptor, since only two ranks make it. */
static inline bool zsh_coll_is_p2p(zsh_coll_type_t type)
{
    return (type == ZSH_COLL_SEND) || (type == ZSH_COLL_RECV);
}

/* Whether a call reduces (reduce-scatter, all-reduce): what the
 * deterministic mode orders. */
static inline bool zsh_coll_reduces(zsh_coll_type_t type)
{
    return (type == ZSH_COLL_REDUCE_SCATTER) || (type == ZSH_COLL_ALLREDUCE);
}

/* A call as an entry point makes it: no stream, blocking set later. */
#define ZSH_COLL_ARGS(_type, _send, _recv, _count, _dtype, _op, _root) \
    {(_type), (_send), (_recv), (_count), (_dtype), (_op), (_root), NULL, false, false, 0, 0}

#endif
