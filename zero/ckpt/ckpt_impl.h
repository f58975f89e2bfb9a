/*
 * What the optimizer's save and load share: the checkpoint's layout as the
 * optimizer's partition makes it, the agreement between ranks, and the
 * bounded spans state moves in.
 */
#ifndef ZSH_CKPT_CKPT_IMPL_H_
#define ZSH_CKPT_CKPT_IMPL_H_

#include "ckpt/format.h"
#include "optim/optim_impl.h"

/* Elements moved at once between the optimizer and a file: bounds the
 * host buffers a save or load takes (and the NVMe tier's pool). */
#define ZSH_CKPT_SPAN ((size_t)1 << 18)

/* The manifest of what @opt holds now, without checksums: its settings and
 * counters, and every parameter's pieces as the ranks own them (rank r's
 * part of each bucket, [lo, hi) as the layout partitions it, in bucket
 * order, is shard r). */
zsh_status_t zsh_ckpt_plan(const zsh_optim_t *opt, zsh_ckpt_t *ck);

/* Collective: ZSH_OK when every rank's @mine is; else the failure, with the
 * rank's own message where it failed and, elsewhere, the message of the
 * highest rank that did, naming it. */
zsh_status_t zsh_ckpt_agree(zsh_optim_t *opt, zsh_status_t mine);

/* What save and load refuse alike: a NULL argument, device parameters,
 * gradients pending, a failed tier or collective, and for a load a fetched
 * parameter. Builds the layout; collective (the ranks agree on the checks). */
zsh_status_t zsh_ckpt_check(zsh_optim_t *opt, const char *dir, const char *fn, bool load);

#endif
