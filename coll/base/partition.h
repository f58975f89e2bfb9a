/*
 * Block and chunk arithmetic shared by the ring algorithms.
 *
 * A vector of @total elements is split into @nblocks blocks whose sizes
 * differ by at most one: the first (total % nblocks) blocks get one extra
 * element. Uniform collectives (allgather, reduce-scatter) are the special
 * case total = nblocks * count. A block is moved in chunks of at most
 * @chunk elements, and every rank derives the same chunk boundaries, so a
 * message always meets a receive of the same size.
 */
#ifndef ZSH_COLL_PARTITION_H_
#define ZSH_COLL_PARTITION_H_

#include <stddef.h>

typedef struct zsh_part {
    size_t base;     /* elements in every block */
    size_t extra;    /* blocks [0, extra) hold base + 1 */
    size_t nblocks;
} zsh_part_t;

static inline zsh_part_t zsh_part_make(size_t total, size_t nblocks)
{
    zsh_part_t p = {total / nblocks, total % nblocks, nblocks};

    return p;
}

static inline size_t zsh_part_count(const zsh_part_t *p, size_t block)
{
    return p->base + ((block < p->extra) ? 1 : 0);
}

static inline size_t zsh_part_offset(const zsh_part_t *p, size_t block)
{
    return block * p->base + ((block < p->extra) ? block : p->extra);
}

/* The largest block's size. */
static inline size_t zsh_part_max(const zsh_part_t *p)
{
    return p->base + ((p->extra > 0) ? 1 : 0);
}

/* Chunks needed to move the largest block (at least 1, so empty blocks still
 * exchange one empty message and every step stays in lock-step). */
static inline size_t zsh_part_nchunks(const zsh_part_t *p, size_t chunk)
{
    size_t max = zsh_part_max(p);

    return (max == 0) ? 1 : (max + chunk - 1) / chunk;
}

/* Elements [*off, *off + return) of @block form chunk @c; may be empty. */
static inline size_t zsh_part_chunk(const zsh_part_t *p, size_t block, size_t c, size_t chunk,
                                    size_t *off)
{
    size_t count = zsh_part_count(p, block);
    size_t start = c * chunk;

    *off = zsh_part_offset(p, block) + start;
    if (start >= count) {
        return 0;
    }
    return (count - start < chunk) ? count - start : chunk;
}

#endif
