/*
 * The collective layer's ZSH_* variables: timeouts, chunking, the
 * algorithm overrides, the node-local thresholds, waiting and the flight
 * recorder. Each job context holds its own copy, read at zsh_comm_init();
 * tests change it there to force algorithms and chunk sizes.
 */
#ifndef ZSH_COLL_BASE_CONFIG_H_
#define ZSH_COLL_BASE_CONFIG_H_

#include "core/config.h"

#include <zeroshard.h>

#include <stddef.h>

/* Values of the *_ALGO variables. AUTO follows the selection rule
 * (select/select.c, printed by zsh_info -s). */
typedef enum {
    ZSH_ALGO_AUTO,
    ZSH_ALGO_RING,       /* allgather, reduce_scatter, allreduce (as RS + AG) */
    ZSH_ALGO_BRUCK,      /* allgather */
    ZSH_ALGO_RD,         /* recursive doubling: allreduce, reduce_scatter */
    ZSH_ALGO_BINOMIAL,   /* broadcast */
    ZSH_ALGO_RMA,        /* allgather: one-sided reads from registered buffers */
    ZSH_ALGO_DIRECT,     /* allgather, reduce_scatter, allreduce, broadcast, alltoall: copies
                            between ranks' buffers on one node */
    ZSH_ALGO_EAGER,      /* allgather, reduce_scatter, allreduce, broadcast, alltoall: the
                            data in the descriptor messages */
    ZSH_ALGO_HIER,       /* allgather, reduce_scatter, allreduce, broadcast, barrier: within
                            each node, then across nodes between ranks of one local rank
                            (algo/hier.h) */
    ZSH_ALGO_DISSEMINATION, /* barrier: ceil(log2 ranks) rounds of empty messages */
    ZSH_ALGO_PAIRWISE,   /* alltoall: a block to rank + k and from rank - k at step k */
    ZSH_ALGO_ORDERED,    /* reduce_scatter, allreduce: each block's owner receives every
                            rank's contribution and reduces them in rank order (the
                            deterministic mode's algorithm where no other honours it) */
    ZSH_ALGO_CHAIN,      /* reduce_scatter, allreduce: nodes of consecutive ranks in turn, each
                            adding its ranks in order to the running sum it passes on (the
                            deterministic mode's across nodes in blocks, algo/chain.h) */
    ZSH_ALGO_LAST
} zsh_algo_t;

/* Calls on device buffers run over the device transport (device/), never
 * chosen by a variable: a value past the variables' ones, named "nccl" in
 * descriptors, so a rank whose buffers are on the host and a rank whose
 * are on the device disagree by name. */
#define ZSH_ALGO_NCCL ZSH_ALGO_LAST

typedef struct zsh_coll_config {
    double   timeout;           /* seconds before a collective fails */
    size_t   chunk_size;        /* bytes per pipelined message and per direct copy */
    unsigned pipeline_depth;    /* chunks in flight per direction */
    size_t   small_msg_size;    /* bytes up to which log-latency algorithms run */
    int      allgather_algo;    /* zsh_algo_t */
    int      reduce_scatter_algo;
    int      allreduce_algo;
    int      broadcast_algo;
    int      alltoall_algo;
    int      barrier_algo;
    size_t   direct_min_size;   /* bytes per round above which the direct algorithms run */
    size_t   stream_min_size;   /* bytes of buffers above which own blocks are stored
                                   non-temporally; ZSH_CONFIG_AUTO_SIZE: this core's
                                   private cache */
    unsigned spin_count;        /* progress polls before a waiter yields */
    double   yield_time;        /* seconds a waiter yields its core before it sleeps */
    int      deterministic;     /* 1: reductions follow zeroshard.h's fixed order */
    int      trace;             /* flight recorder on (1) or off (0) */
    unsigned trace_depth;       /* collectives the flight recorder keeps per communicator */
    char     trace_file[ZSH_CONFIG_STR_MAX]; /* where it dumps: "" for stderr; %r rank, %p pid */
} zsh_coll_config_t;

/* The name of an algorithm value, e.g. "ring". */
const char *zsh_algo_name(zsh_algo_t algo);

/* Every algorithm's name, indexed by zsh_algo_t, NULL-terminated: the
 * values the *_ALGO variables take. */
extern const char *const zsh_algo_names[ZSH_ALGO_LAST + 1];

#endif
