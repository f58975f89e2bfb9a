/*
 * The offload tiers as tables: what differs between a kind of model state
 * kept in memory (compute or host, cpu offload) and one kept in the NVMe
 * tier's files is one table of typed functions each, chosen per kind when
 * the tiers are set up (opt->tiers.ops[kind]; memory until then), so the
 * rest of the layer asks the table instead of testing where a kind lives.
 *
 *          placed           read and written      gradients               stage 3 gathers
 *   memory  allocated,       memcpy at the region  reduced into the shard  from the shard
 *           filled in place
 *   file    a region of its  aligned blocks        through a transit       from a host buffer the
 *           file, through a  through the pool      buffer, written behind  shard is read into,
 *           host buffer                                                    read ahead
 *
 * Both tables live in offload/tier_ops.c; the files themselves, their
 * layout and I/O in offload/tier.c, the step over them in offload/swap.c.
 */
#ifndef ZSH_OPTIM_TIER_OPS_H_
#define ZSH_OPTIM_TIER_OPS_H_

#include "optim/norm.h"
#include "optim/tier.h"
#include "shard/shard_impl.h"

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stddef.h>

typedef struct zsh_obucket zsh_obucket_t;

typedef struct zsh_tier_ops {
    const char *name;

    /* Layout: @b's region of @kind, @region elements from flat @base,
     * placed in the tier and filled with the parameters' initial values
     * (MASTER: its memory into *@mem_p; PARAMS: the stage 3 shard sealed);
     * a region the step fills (GRADS, EXP_AVG, EXP_AVG_SQ) of @bytes into
     * *@mem_p, zeroed (false: no memory; the caller names it). */
    zsh_status_t (*place)(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind, size_t base,
                          size_t region, void **mem_p);
    bool         (*alloc)(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind, size_t bytes,
                          void **mem_p);

    /* Elements [s, e) of @b's region of @kind (flat positions), on the
     * host: read into @dst, written from @src; and written from @src in
     * the model's place, in the precision or, @widen, as fp32 from it. */
    zsh_status_t (*peek)(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                         size_t e, void *dst);
    zsh_status_t (*patch)(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                          size_t e, const void *src);
    zsh_status_t (*put)(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                        size_t e, const void *src, bool widen);

    /* Gradients (GRADS' table), stages 2-3: before a bucket's reduction,
     * where its reduced shard is kept on its way; the sum of squares of
     * the reduced gradients this rank owns. */
    zsh_status_t (*grad_prepare)(zsh_optim_t *opt, zsh_obucket_t *b);
    void         (*grad_sumsq)(const zsh_optim_t *opt, const zsh_obucket_t *b,
                               zsh_norm_sum_t *acc);

    /* Stage 3's parameters (PARAMS' table): where a gather of @b takes
     * this rank's shard from, described in @src (its buffer, and whether
     * it is staged into device memory), and what that held given back
     * once the gather is done; shards read ahead for the next 2 x @depth
     * buckets of the fetch order (ZSH_ERR_INTERNAL: a refused move); and
     * whether a fetch may hand out a gather (@fn names the call). */
    zsh_status_t (*gather_src)(zsh_optim_t *opt, zsh_obucket_t *b, zsh_shard_src_t *src);
    void         (*gather_done)(zsh_optim_t *opt, zsh_obucket_t *b);
    zsh_status_t (*read_ahead)(zsh_optim_t *opt, int depth);
    zsh_status_t (*fetch_check)(zsh_optim_t *opt, const char *fn);
} zsh_tier_ops_t;

extern const zsh_tier_ops_t zsh_tier_mem_ops;  /* offload/tier_ops.c */
extern const zsh_tier_ops_t zsh_tier_file_ops; /* offload/tier_ops.c */

/* Every kind in memory: at create, and after the tiers' teardown. */
void zsh_tier_ops_reset(zsh_optim_t *opt);

#endif
