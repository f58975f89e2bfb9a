/*
 * The states of a stage 3 parameter bucket, and the moves between them.
 *
 * What each state holds, besides the shard every rank keeps (in memory, or
 * in the NVMe tier's file):
 *
 *   SHARDED     nothing more.
 *   READING     NVMe parameters: a host bounce buffer into which this
 *               rank's shard is being read, or was read, for a gather
 *               (prefetch reads twice as far ahead as it gathers).
 *   GATHERING   the gathered buffer, with an all-gather posted for a fetch
 *               that waits for it at once (and the bounce buffer, if read).
 *   PREFETCHED  the same, posted ahead of use: the fetch that comes for it
 *               waits for it (a prefetch hit); a step drops it.
 *   LIVE        the gathered buffer, complete, with refs > 0 parameters
 *               fetched from it.
 *   CACHED      the gathered buffer, complete, with no parameter fetched:
 *               fetched again at no cost, until it is evicted (least
 *               recently used first, when the live bytes pass
 *               max_live_bytes) or a step, a set or a load drops it.
 *
 * The way through, for a fetch (the table below has every move, and why):
 *
 *   SHARDED --> [READING] --> GATHERING ---> LIVE <--> CACHED --> SHARDED
 *                       \--> PREFETCHED --/
 *
 * READING only with NVMe parameters; a failed read or gather, and a drop,
 * go back to SHARDED.
 *
 * hpZ's secondary slice (zsh_obucket_t.hpz.sec_valid) is not a state: it
 * stays valid through every state above, across evictions, until an update
 * or a set makes it stale. It only decides where the next gather reads
 * from (the node group's slices instead of every rank's shard).
 *
 * Every change goes through zsh_obucket_move(), after the memory the new
 * state holds is in place; a move the table does not list is a bug, and is
 * refused.
 */
#ifndef ZSH_OPTIM_BSTATE_H_
#define ZSH_OPTIM_BSTATE_H_

#include <zeroshard.h>

#include <stdbool.h>

typedef enum {
    ZSH_BSTATE_SHARDED, /* zero: a bucket made by calloc starts here */
    ZSH_BSTATE_READING,
    ZSH_BSTATE_GATHERING,
    ZSH_BSTATE_PREFETCHED,
    ZSH_BSTATE_LIVE,
    ZSH_BSTATE_CACHED,
    ZSH_BSTATE_COUNT
} zsh_bstate_t;

/* The names errors and logs use. */
static const char *const zsh_bstate_names[ZSH_BSTATE_COUNT] = {
    [ZSH_BSTATE_SHARDED]    = "sharded",
    [ZSH_BSTATE_READING]    = "reading",
    [ZSH_BSTATE_GATHERING]  = "gathering",
    [ZSH_BSTATE_PREFETCHED] = "prefetched",
    [ZSH_BSTATE_LIVE]       = "live",
    [ZSH_BSTATE_CACHED]     = "cached",
};

/* The table: row @from holds bit (1 << to) for each state @to it may move
 * to, and why. No state moves to itself. */
static const unsigned zsh_bstate_moves[ZSH_BSTATE_COUNT] = {
    [ZSH_BSTATE_SHARDED] =
        (1u << ZSH_BSTATE_READING) |    /* NVMe: a read starts, ahead or for a fetch */
        (1u << ZSH_BSTATE_GATHERING) |  /* a fetch gathers a shard in memory */
        (1u << ZSH_BSTATE_PREFETCHED),  /* a gather ahead of use, from memory */
    [ZSH_BSTATE_READING] =
        (1u << ZSH_BSTATE_SHARDED) |    /* the read failed, or is dropped: stale or no room */
        (1u << ZSH_BSTATE_GATHERING) |  /* a fetch gathers from the bounce buffer */
        (1u << ZSH_BSTATE_PREFETCHED),  /* a gather ahead of use, from it */
    [ZSH_BSTATE_GATHERING] =
        (1u << ZSH_BSTATE_SHARDED) |    /* the gather failed: the shard freed its buffer */
        (1u << ZSH_BSTATE_LIVE),        /* waited for: the fetch has it */
    [ZSH_BSTATE_PREFETCHED] =
        (1u << ZSH_BSTATE_SHARDED) |    /* dropped (a step, set or load), or it failed */
        (1u << ZSH_BSTATE_LIVE),        /* a fetch waited for it: a prefetch hit */
    [ZSH_BSTATE_LIVE] =
        (1u << ZSH_BSTATE_CACHED),      /* its last parameter released */
    [ZSH_BSTATE_CACHED] =
        (1u << ZSH_BSTATE_SHARDED) |    /* evicted, or dropped (a step, set or load) */
        (1u << ZSH_BSTATE_LIVE),        /* fetched again */
};

/* @state's name; "invalid" for a value outside the enum. */
static inline const char *zsh_bstate_name(zsh_bstate_t state)
{
    return ((unsigned)state < ZSH_BSTATE_COUNT) ? zsh_bstate_names[state] : "invalid";
}

/* Whether the table lets @from move to @to. */
static inline bool zsh_bstate_allowed(zsh_bstate_t from, zsh_bstate_t to)
{
    return ((unsigned)from < ZSH_BSTATE_COUNT) && ((unsigned)to < ZSH_BSTATE_COUNT) &&
           ((zsh_bstate_moves[from] & (1u << to)) != 0);
}

/* Whether @state holds the gathered buffer (a gather in flight included):
 * what zsh_shard_is_gathered() says of the bucket's shard. */
static inline bool zsh_bstate_gathered(zsh_bstate_t state)
{
    return (state == ZSH_BSTATE_GATHERING) || (state == ZSH_BSTATE_PREFETCHED) ||
           (state == ZSH_BSTATE_LIVE) || (state == ZSH_BSTATE_CACHED);
}

struct zsh_obucket;

/* Move bucket @b to @to: ZSH_OK, or ZSH_ERR_INTERNAL naming the bucket, both
 * states and the ones the table allows, with @b left as it was. */
zsh_status_t zsh_obucket_move(struct zsh_obucket *b, zsh_bstate_t to);

#endif
