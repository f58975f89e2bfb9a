/**
 * @file zeroshard/shard.h
 * @brief Sharded tensors, flat buckets and tiles: ZeRO's partitioning, built
 *        only on the public collectives of <zeroshard.h>.
 *
 * Partitioning is bandwidth-centric: a tensor of `numel` elements is split
 * across every rank of its communicator. Each rank keeps a shard of
 * `count = ceil(numel / N)` elements; rank r owns the global elements
 * `[r * count, min((r + 1) * count, numel))`, and its buffer is padded with
 * zeros to `count` elements so every collective is uniform.
 *
 * - A **sharded tensor** (::zsh_shard_t) gathers into a full buffer on demand
 *   and reduce-scatters a full gradient into a shard.
 * - A **flat bucket** (::zsh_bucket_t) coalesces many small tensors into one
 *   contiguous, padded buffer, so that one collective moves them all; each
 *   tensor is a view (offset, numel) into it.
 * - A **tiled tensor** (::zsh_tiled_t) splits one tensor into K sharded tiles
 *   that can be gathered one at a time, so a layer larger than the memory
 *   budget still runs.
 *
 * All calls follow <zeroshard.h>: a status return, a message in
 * zsh_last_error() on failure, outputs set only on success. A sharded tensor
 * is used by one thread at a time, like its communicator. Collective calls
 * (marked so) must be made by every rank of the communicator in the same order.
 */
#ifndef ZEROSHARD_SHARD_H_
#define ZEROSHARD_SHARD_H_

#include <zeroshard.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A tensor split evenly across the ranks of a communicator. Opaque. */
typedef struct zsh_shard zsh_shard_t;

/**
 * @brief Create a sharded tensor whose local shard is zero.
 * @param comm    The ranks that share it; must outlive the tensor.
 * @param numel   Elements of the whole tensor (0 is allowed).
 * @param dtype   Element type.
 * @param[out] shard_p The tensor, set only on success.
 * @return ZSH_ERR_INVALID_ARG when the gathered copy (numel padded to a
 *         multiple of the ranks, times the element size) does not fit a
 *         size_t, ZSH_ERR_NO_MEMORY when the shard cannot be allocated.
 */
zsh_status_t zsh_shard_create(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype,
                              zsh_shard_t **shard_p);

/** @brief Destroy a tensor, its shard and any gathered buffer. NULL is ignored. */
void zsh_shard_destroy(zsh_shard_t *shard);

/** @brief Elements of the whole tensor. */
size_t zsh_shard_numel(const zsh_shard_t *shard);

/** @brief Elements per rank, ceil(numel / N): the padded length of every shard. */
size_t zsh_shard_count(const zsh_shard_t *shard);

/** @brief The first global element this rank owns (rank * count, clamped to numel). */
size_t zsh_shard_begin(const zsh_shard_t *shard);

/** @brief Elements this rank owns, without padding (0 on trailing ranks of a short tensor). */
size_t zsh_shard_owned(const zsh_shard_t *shard);

/**
 * @brief This rank's shard: zsh_shard_count() elements, of which the first
 *        zsh_shard_owned() are real and the rest are zero padding.
 *
 * The caller may write the owned elements; the padding must stay zero.
 */
void *zsh_shard_local(zsh_shard_t *shard);

/**
 * @brief All-gather the tensor into a full buffer (collective).
 * @param shard The tensor; it must not be gathered already.
 * @param[out] full_p N * count elements, whose first numel are the tensor;
 *                    valid until zsh_shard_release(). Set only on success.
 * @return ZSH_ERR_INVALID_ARG if the tensor is already gathered and not released.
 */
zsh_status_t zsh_shard_gather(zsh_shard_t *shard, void **full_p);

/**
 * @brief Start the all-gather of zsh_shard_gather() without waiting (collective).
 *
 * Complete it with zsh_shard_gather_wait(), which returns the full buffer.
 */
zsh_status_t zsh_shard_gather_start(zsh_shard_t *shard);

/** @brief Wait for zsh_shard_gather_start() and return the full buffer as zsh_shard_gather(). */
zsh_status_t zsh_shard_gather_wait(zsh_shard_t *shard, void **full_p);

/** @brief Free the gathered buffer; pointers into it become invalid. A no-op if none. */
void zsh_shard_release(zsh_shard_t *shard);

/** @brief Bytes of the gathered buffer this tensor holds now (0 once released). */
size_t zsh_shard_gathered_bytes(const zsh_shard_t *shard);

/**
 * @brief Reduce a full gradient across ranks and keep this rank's shard of
 *        the result (collective).
 * @param shard The tensor that gives the layout and the communicator; its own
 *              shard is left unchanged.
 * @param grad  numel elements: this rank's contribution to the whole tensor.
 * @param op    Reduction operation (ZSH_SUM, ZSH_AVG, ...).
 * @param[out] out  zsh_shard_count() elements: the reduced shard, zero in the padding.
 */
zsh_status_t zsh_shard_reduce_scatter(zsh_shard_t *shard, const void *grad, zsh_op_t op,
                                      void *out);

/** A flat bucket: many tensors coalesced into one sharded buffer. Opaque. */
typedef struct zsh_bucket zsh_bucket_t;

/**
 * @brief Create an empty bucket that holds up to @p capacity elements.
 *
 * Views are added with zsh_bucket_add() until it is full, then
 * zsh_bucket_seal() lays out the flat sharded buffer.
 * @param comm     The ranks that share the flat buffer; must outlive the bucket.
 * @param dtype    Element type of every view.
 * @param capacity Elements the bucket takes; a single tensor larger than
 *                 that is still accepted into an empty bucket.
 * @param[out] bucket_p The bucket, set only on success.
 */
zsh_status_t zsh_bucket_create(zsh_comm_t *comm, zsh_dtype_t dtype, size_t capacity,
                               zsh_bucket_t **bucket_p);

/** @brief Destroy a bucket and its sharded buffer. NULL is ignored. */
void zsh_bucket_destroy(zsh_bucket_t *bucket);

/**
 * @brief Append a view of @p numel elements.
 * @param bucket The bucket, not sealed yet.
 * @param numel  Elements of the view (0 is allowed).
 * @param[out] offset_p Where the view starts in the flat buffer; set only on success.
 * @return ZSH_ERR_NO_MEMORY if it would exceed the capacity of a non-empty
 *         bucket (start a new bucket), ZSH_ERR_INVALID_ARG once sealed.
 */
zsh_status_t zsh_bucket_add(zsh_bucket_t *bucket, size_t numel, size_t *offset_p);

/** @brief Views added so far. */
size_t zsh_bucket_nviews(const zsh_bucket_t *bucket);

/** @brief Offset and length of view @p i, in elements of the flat buffer. */
zsh_status_t zsh_bucket_view(const zsh_bucket_t *bucket, size_t i, size_t *offset_p,
                             size_t *numel_p);

/**
 * @brief Lay out the flat buffer: a sharded tensor of the summed view lengths.
 * @param bucket The bucket; once sealed it takes no more views, and sealing it
 *               again returns the same tensor.
 * @param[out] shard_p The bucket's sharded tensor, owned by the bucket.
 */
zsh_status_t zsh_bucket_seal(zsh_bucket_t *bucket, zsh_shard_t **shard_p);

/** A tensor split into K sharded tiles, gathered one at a time. Opaque. */
typedef struct zsh_tiled zsh_tiled_t;

/**
 * @brief Split @p numel elements into @p ntiles tiles of ceil(numel / ntiles)
 *        elements (the last may be shorter), each a sharded tensor.
 * @return ZSH_ERR_INVALID_ARG when ntiles is not in [1, numel] or numel times
 *         the element size does not fit a size_t; a tile's own error is
 *         prefixed with its index.
 */
zsh_status_t zsh_tiled_create(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype, size_t ntiles,
                              zsh_tiled_t **tiled_p);

/** @brief Destroy the tiles. NULL is ignored. */
void zsh_tiled_destroy(zsh_tiled_t *tiled);

/** @brief Number of tiles. */
size_t zsh_tiled_ntiles(const zsh_tiled_t *tiled);

/**
 * @brief Tile @p k as a sharded tensor, owned by @p tiled.
 * @param tiled The tiled tensor.
 * @param k     Tile index, from 0 to zsh_tiled_ntiles() - 1.
 * @param[out] offset_p Its first element within the whole tensor (may be NULL).
 * @return NULL if @p k is out of range.
 */
zsh_shard_t *zsh_tiled_tile(zsh_tiled_t *tiled, size_t k, size_t *offset_p);

#ifdef __cplusplus
}
#endif

#endif /* ZEROSHARD_SHARD_H_ */
