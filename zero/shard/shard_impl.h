/*
 * What the optimizer layer needs from sharded tensors beyond the public API:
 * partition arithmetic it shares with them, and creation under its byte
 * accounting, so gathered buffers are counted where they are allocated.
 */
#ifndef ZSH_SHARD_SHARD_IMPL_H_
#define ZSH_SHARD_SHARD_IMPL_H_

#include "mem/account.h"

#include <zeroshard/shard.h>

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
 * owner keeps it elsewhere (in a file) and gathers with
 * zsh_shard_gather_start_from(). */
zsh_status_t zsh_shard_create_counted(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype,
                                      zsh_account_t *acct, zsh_account_t *local_acct,
                                      zsh_mem_kind_t local_kind, zsh_shard_t **shard_p);

/* zsh_shard_gather_start() from @local (count elements, untouched until the
 * gather is waited for) instead of the tensor's local shard. */
zsh_status_t zsh_shard_gather_start_from(zsh_shard_t *shard, const void *local);

/* zsh_shard_gather_start() of the same full buffer from parts of
 * @part_count elements, one from each rank of @comm in its rank order,
 * where @part_count times @comm's size is the full buffer's elements: the
 * ZeRO layer's hpZ gathers the buffer again from a node's secondary
 * partition. @part stays untouched until the gather is waited for. */
zsh_status_t zsh_shard_gather_start_over(zsh_shard_t *shard, const void *part, size_t part_count,
                                         zsh_comm_t *comm);

/* zsh_shard_gather_start_from() into a gathered buffer of device memory
 * (the account's place) from host memory @local: the block is copied to
 * this rank's place in the buffer on the account's stream, and gathered in
 * place there, so no collective mixes host and device buffers. */
zsh_status_t zsh_shard_gather_start_staged(zsh_shard_t *shard, const void *local);

/* Whether the tensor has a gathered buffer or a gather in flight. */
int zsh_shard_is_gathered(const zsh_shard_t *shard);

/* zsh_bucket_seal() with the flat shard counted as zsh_shard_create_counted()
 * counts it. */
zsh_status_t zsh_bucket_seal_counted(zsh_bucket_t *bucket, zsh_account_t *acct,
                                     zsh_account_t *local_acct, zsh_mem_kind_t local_kind,
                                     zsh_shard_t **shard_p);

#endif
