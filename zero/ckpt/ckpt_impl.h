/*
 * What the optimizer's save and load share: the checkpoint's layout as the
 * optimizer's partition makes it, the checks before either, and the
 * bounded spans state moves in. The optimizer is reached through its
 * exported walk of the state (optim/state.h) and the public API only.
 */
#ifndef ZSH_CKPT_CKPT_IMPL_H_
#define ZSH_CKPT_CKPT_IMPL_H_

#include "ckpt/format.h"
#include "optim/state.h"

/* Elements moved at once between the optimizer and a file: bounds the
 * host buffers a save or load takes (and the NVMe tier's pool). */
#define ZSH_CKPT_SPAN ((size_t)1 << 18)

/* The elements one get or set of @info's optimizer moves at most. */
static inline size_t zsh_ckpt_span(const zsh_ostate_info_t *info)
{
    return (info->span < ZSH_CKPT_SPAN) ? info->span : ZSH_CKPT_SPAN;
}

/* This rank, as the optimizer numbers it. */
static inline int zsh_ckpt_rank(const zsh_optim_t *opt)
{
    zsh_ostate_info_t info;

    zsh_optim_state_info(opt, &info);
    return info.rank;
}

/* The manifest of what @opt holds now, without checksums: its settings and
 * counters, and every parameter's pieces as the ranks own them (rank r's
 * part of each bucket, [lo, hi) as the layout partitions it, in bucket
 * order, is shard r). */
zsh_status_t zsh_ckpt_plan(const zsh_optim_t *opt, zsh_ckpt_t *ck);

/* What save and load refuse alike: a NULL argument, device parameters,
 * gradients pending, a failed tier or collective, and for a load a fetched
 * parameter. Builds the layout; collective (the ranks agree on the checks). */
zsh_status_t zsh_ckpt_check(zsh_optim_t *opt, const char *dir, const char *fn, bool load);

#endif
