/*
 * What the optimizer layer needs from sharded tensors beyond the public API:
 * partition arithmetic it shares with them, and creation under its byte
 * accounting, so gathered buffers are counted where they are allocated.
 */
#ifndef ZSH_SHARD_SHARD_IMPL_H_
#define ZSH_SHARD_SHARD_IMPL_H_

#include "mem/account.h"
#include "mem/pool.h"
#include "quant/cuts.h"

#include <zeroshard/shard.h>

#include <stdbool.h>

/* ceil(numel / nranks): elements per rank, padded. Written without
 * numel + nranks - 1, which wraps for a numel near SIZE_MAX. */
static inline size_t zsh_shard_part_count(size_t numel, int nranks)
{
    return numel / (size_t)nranks + ((numel % (size_t)nranks) != 0);
}

/* The global range [*lo_p, *hi_p) rank @rank owns of @numel elements. */
static inline void zsh_shard_part_range(size_t numel, int nranks, int rank, size_t *lo_p,
                                        size_t *hi_p)
{
    size_t count = zsh_shard_part_count(numel, nranks);
    size_t lo    = count * (size_t)rank;

    *lo_p = (lo < numel) ? lo : numel;
    *hi_p = (lo + count < numel) ? lo + count : numel;
}

/* zsh_shard_create() with the local shard counted as @local_kind in
 * @local_acct and the gathered buffer as ZSH_MEM_BUFFERS in @acct (either
 * may be NULL). A @local_kind of ZSH_MEM_KINDS makes no local shard: the
 * owner keeps it elsewhere (in a file) and gathers it from a buffer of its
 * own (zsh_shard_src_t.buf). */
zsh_status_t zsh_shard_create_counted(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype,
                                      zsh_account_t *acct, zsh_account_t *local_acct,
                                      zsh_mem_kind_t local_kind, zsh_shard_t **shard_p);

/* Take the gathered buffer from @pool (host memory, counted in the pool's
 * account, which should be the shard's), where it fits, and give it back
 * there: a tensor gathered again and again reuses it instead of faulting a
 * fresh one in each time. NULL: from the account, as created. Not while
 * gathered. */
void zsh_shard_use_pool(zsh_shard_t *shard, zsh_pool_t *pool);

/* Where a gather's blocks come from. The zero description is the public
 * zsh_shard_gather_start()'s: each rank's local shard, over the tensor's
 * communicator. */
typedef struct zsh_shard_src {
    /* This rank's block: NULL for the tensor's local shard, else a buffer in
     * its place (the ZeRO layer's shard read from a file, or hpZ's slice).
     * Untouched until the gather is waited for. */
    const void *buf;
    /* The ranks that give the blocks: NULL for the tensor's communicator,
     * else a group into whose size the full buffer divides, each rank giving
     * one equal part in its rank order (hpZ gathers the buffer again from a
     * node's secondary partition). */
    zsh_comm_t *comm;
    /* Host memory into a gathered buffer of device memory (the account's
     * place): the block is copied to this rank's place in the buffer on the
     * account's stream and gathered in place there, so no collective mixes
     * host and device buffers. Host to host, a plain gather. Over the
     * tensor's communicator only. */
    bool        staged;
    /* qwZ: 0 for the elements as they are; else each rank's block travels
     * quantized to int8 in blocks of this many elements with an fp32 scale
     * each (quant/quant.h), and each part is dequantized into the gathered
     * buffer when the gather is waited for. fp32 host memory, over the
     * tensor's communicator, not staged. */
    size_t      quant_block;
    /* qwZ: where the tensor's own tensors begin (a bucket's parameters), so
     * that no block spans two of them (quant/cuts.h); NULL: blocks run on.
     * The array is the caller's, read until the gather is waited for. */
    const zsh_quant_cuts_t *quant_cuts;
} zsh_shard_src_t;

/* zsh_shard_gather_start() from @src (NULL: the zero description); the
 * gather is waited for with zsh_shard_gather_wait(). ZSH_ERR_INVALID_ARG for
 * a tensor already gathered, a description that does not fit it, or no
 * block (a tensor without a local shard needs @src->buf). */
zsh_status_t zsh_shard_gather_start_src(zsh_shard_t *shard, const zsh_shard_src_t *src);

/* Whether the tensor has a gathered buffer or a gather in flight. */
int zsh_shard_is_gathered(const zsh_shard_t *shard);

/* Bytes of the buffer the last gather moved, as it travelled: the full
 * buffer, or every rank's quantized part (0 before any gather). */
size_t zsh_shard_sent_bytes(const zsh_shard_t *shard);

/* Blocks holding NaN or inf this rank's quantized gathers sent so far. */
size_t zsh_shard_nonfinite_blocks(const zsh_shard_t *shard);

/* zsh_bucket_seal() with the flat shard counted as zsh_shard_create_counted()
 * counts it. */
zsh_status_t zsh_bucket_seal_counted(zsh_bucket_t *bucket, zsh_account_t *acct,
                                     zsh_account_t *local_acct, zsh_mem_kind_t local_kind,
                                     zsh_shard_t **shard_p);

#endif
