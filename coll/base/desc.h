/*
 * Collective descriptors: what a rank believes the call at a sequence number
 * is (type, count, dtype, op, root, the algorithm it chose, and for a
 * reduction whether its communicator is in the deterministic mode). Ranks
 * exchange them before any data is used (the handshake, handshake/) and
 * compare them here; a mismatch names both calls.
 */
#ifndef ZSH_COLL_BASE_DESC_H_
#define ZSH_COLL_BASE_DESC_H_

#include "base/call.h"
#include "base/config.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zsh_desc {
    uint32_t magic;
    uint32_t seq;      /* the whole sequence number; tags carry only its low bits */
    uint64_t uid;      /* the communicator's */
    uint64_t count;
    int32_t  root;
    uint8_t  type;     /* zsh_coll_type_t */
    uint8_t  dtype;
    uint8_t  op;
    uint8_t  algo;     /* zsh_algo_t the rank chose: ranks configured differently disagree */
    uint8_t  deterministic; /* a reduction in zeroshard.h's rank order: a rank that thinks
                               otherwise would sum in another order, or run another algorithm */
} zsh_desc_t;

/*
 * Bytes of data a descriptor message may carry after the descriptor. A
 * small collective on a few ranks needs one message to each peer and no more
 * (the eager algorithm): the data travels with the descriptor, so checking
 * the call costs no extra message. Every descriptor receive takes this much,
 * so a message with data meets any receive.
 */
#define ZSH_DESC_INLINE_MAX 4096

/*
 * Bytes of data a descriptor message may carry on a board: the message is
 * written once for every peer and read where it lies, so a longer one costs
 * its writer one copy and each reader only what it uses of it.
 */
#define ZSH_DESC_BOARD_INLINE_MAX 16384

typedef struct zsh_desc_msg {
    zsh_desc_t desc;
    uint8_t    data[ZSH_DESC_INLINE_MAX];
} zsh_desc_msg_t;

/* Describe call @args, collective @seq of the communicator with @uid, run
 * as @algo, a reduction in the deterministic mode where @deterministic;
 * fields its type ignores are zero. */
void zsh_desc_make(const zsh_coll_args_t *args, uint32_t seq, uint64_t uid, zsh_algo_t algo,
                   bool deterministic, zsh_desc_t *desc);

/* "allgather(count=10, fp32)", "broadcast(count=4, int32, root=2)",
 * "allreduce(count=8, fp32, sum, deterministic)". */
void zsh_desc_format(const zsh_desc_t *desc, char *buf, size_t len);

/* The name of a collective type: "allgather", "reduce_scatter", ... */
const char *zsh_desc_type_name(unsigned type);

/* ZSH_OK if @theirs, from rank @peer of communicator @comm_id, describes the
 * same call as @mine, on rank @rank; else ZSH_ERR_MISMATCH with a message
 * naming both calls (or a malformed descriptor, or another communicator's). */
zsh_status_t zsh_desc_compare(const zsh_desc_t *mine, const zsh_desc_t *theirs,
                              uint32_t comm_id, int rank, int peer);

#endif
