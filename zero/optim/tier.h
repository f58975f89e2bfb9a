/*
 * The offload tiers of one optimizer: which kinds of model state live in the
 * host tier or in files, the files and their layout, the host buffer pool,
 * and the sub-groups the step swaps.
 *
 * Every file holds the state regions of all buckets at the same element
 * offsets (a bucket's region starts at its foff, rounded up to
 * ZSH_TIER_ALIGN_ELEMS), so a sub-group is one contiguous range of every
 * file, and every offset and length is aligned for O_DIRECT whatever the
 * element size.
 */
#ifndef ZSH_OPTIM_TIER_H_
#define ZSH_OPTIM_TIER_H_

#include "aio/aio.h"
#include "core/sticky.h"
#include "mem/account.h"
#include "mem/pool.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

/* The most sub-groups in host buffers at once: one read ahead, one being
 * updated, one written behind, and one more read ahead; more only deepens
 * the disk's queue. */
#define ZSH_TIER_SLOTS_MAX 4

/* Elements whose bytes are a multiple of ZSH_AIO_ALIGN at 2 and 4 bytes each. */
#define ZSH_TIER_ALIGN_ELEMS (ZSH_AIO_ALIGN / 2)

typedef enum {
    ZSH_TK_PARAMS,     /* stage 3 parameter shards, in the precision */
    ZSH_TK_GRADS,      /* stages 2-3 gradient shards, in the precision */
    ZSH_TK_MASTER,     /* fp32 master weights (mixed precision) */
    ZSH_TK_EXP_AVG,    /* first state: Adam's m, SGD's momentum */
    ZSH_TK_EXP_AVG_SQ, /* Adam's v */
    ZSH_TK_UNDO,       /* the parameters in memory as they were before the step, in the
                        * precision: what a failed step puts back (offload/swap.c) */
    ZSH_TK_KINDS
} zsh_tkind_t;

struct zsh_tier_ops;

typedef struct zsh_tiers {
    zsh_aio_t      *aio;                 /* NULL without an NVMe tier */
    zsh_aio_file_t *file[ZSH_TK_KINDS];  /* NULL: that kind lives in memory */
    const struct zsh_tier_ops *ops[ZSH_TK_KINDS]; /* its table: memory or file (tier_ops.h) */
    size_t          felems;              /* elements of every file */
    size_t          sg_elems;            /* elements per sub-group */
    size_t          nsg;                 /* sub-groups */
    size_t          slots;               /* sub-groups held in host buffers at once */
    bool           *fresh;               /* per sub-group: states never written, read as 0 */
    size_t          updated;             /* sub-groups whose parameters in memory the step
                                          * has changed, from the first */
    zsh_pool_t      pool;                /* the NVMe tier's host buffers */
    zsh_account_t   host;                /* model state in the host tier */
    zsh_sticky_t    failed;              /* the first I/O failure */
    bool            agreed;              /* every rank knows a rank's tier failed */
} zsh_tiers_t;

#endif
