/*
 * qgZ (ZeRO++'s quantized gradients): a reduce-scatter whose sum crosses
 * nodes quantized. Inside each node the gradients are reduce-scattered in
 * full precision; each rank then holds its node's partial sums for the
 * shards of every rank of its rail (the ranks of its local index on every
 * node), quantizes each shard's partial sum block-wise (quant/quant.h) and
 * sends it to that shard's owner by one all-to-all over the rail; the owner
 * dequantizes the nodes' partial sums and adds them in fp32, in node order.
 * Gradients are fp32, bf16 or fp16: a half-precision node sum is reduced
 * as the plain reduce-scatter reduces it, quantized as its fp32 conversion
 * (quant/half.h), and the owner's fp32 sum is rounded once into @out.
 * A quantized value is dequantized once and never summed again before
 * that, so each element's error is at most the sum over nodes of half its
 * block's scale (quant.h's bound), and the result is the same on every run.
 */
#ifndef ZSH_SHARD_QREDUCE_H_
#define ZSH_SHARD_QREDUCE_H_

#include "mem/account.h"
#include "quant/cuts.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

/* Where the ranks are: @node, this rank's node group (its local ranks in
 * local order, L of them); @rail, the ranks of this rank's local index on
 * every node (in node order, M of them); @owner[m * L + l], the rank (in
 * the tensor's communicator of N = M * L ranks) of node m's local rank l;
 * @cuts, where the tensors of the N * count buffer begin (a bucket's
 * parameters), at which the blocks restart so that none spans two of them
 * (quant/cuts.h; NULL: none). */
typedef struct zsh_qreduce_map {
    zsh_comm_t             *node, *rail;
    const int              *owner;
    const zsh_quant_cuts_t *cuts;
} zsh_qreduce_map_t;

/* What one call moved: @node_bytes within the node (the reduce-scatter's
 * buffer), @cross_bytes across nodes (every rail rank's quantized parts,
 * as sent). */
typedef struct zsh_qreduce_bytes {
    size_t node_bytes, cross_bytes;
} zsh_qreduce_bytes_t;

/*
 * @grad (N * @count elements of @dtype: fp32, bf16 or fp16; rank r's shard
 * at r * @count) summed over every rank into @out (@count of @dtype, this
 * rank's shard), through @map's node and
 * rail groups, the cross-node part as @bits-bit levels (8 or 4) in blocks
 * of @block elements. Scratch buffers are counted in @acct (NULL: none).
 * Returns the status of the first failure (every rank of the groups fails
 * alike); @bytes_p, if not NULL, gets what moved; *@nonfinite_p (if not
 * NULL) is added the blocks with NaN or inf this rank sent. Blocking: the
 * calls below, one after the other.
 */
zsh_status_t zsh_qreduce_scatter(const void *grad, void *out, size_t count, zsh_dtype_t dtype,
                                 const zsh_qreduce_map_t *map, size_t block, int bits,
                                 zsh_account_t *acct, zsh_qreduce_bytes_t *bytes_p,
                                 size_t *nonfinite_p);

/* One qgZ reduce-scatter in flight, in two collectives: the node's fp32
 * reduce-scatter, then the rail's quantized all-to-all. */
typedef struct zsh_qreduce zsh_qreduce_t;

/*
 * Start the reduction of zsh_qreduce_scatter() without waiting: @grad is
 * copied (it may be reused as soon as this returns), the node's
 * reduce-scatter is posted. @out must stay untouched until the reduction
 * ends. *@q_p is set on success only.
 */
zsh_status_t zsh_qreduce_start(const void *grad, void *out, size_t count, zsh_dtype_t dtype,
                               const zsh_qreduce_map_t *map, size_t block, int bits,
                               zsh_account_t *acct, zsh_qreduce_t **q_p);

/*
 * Once the node's reduce-scatter is done (@wait: wait for it), quantize
 * this rank's partial sums and post the rail's all-to-all. ZSH_INPROGRESS
 * while the node's part is under way. The rail's calls must be posted in
 * the same order on every rank of the rail: with several reductions in
 * flight, the caller posts them in the order it started them.
 */
zsh_status_t zsh_qreduce_cross(zsh_qreduce_t *q, bool wait);

/* Whether the rail's all-to-all has been posted. */
bool zsh_qreduce_crossed(const zsh_qreduce_t *q);

/*
 * Once the rail's all-to-all is done (@wait: wait for it), sum the nodes'
 * parts into @out. ZSH_INPROGRESS while under way (or not yet crossed).
 */
zsh_status_t zsh_qreduce_finish(zsh_qreduce_t *q, bool wait);

/*
 * End @q (finished or not, a failed one's buffers go through the group
 * that failed): fill @bytes_p and *@nonfinite_p as zsh_qreduce_scatter()
 * does (after a finished reduction only) and free it. NULL: nothing.
 */
void zsh_qreduce_end(zsh_qreduce_t *q, zsh_qreduce_bytes_t *bytes_p, size_t *nonfinite_p);

#endif
