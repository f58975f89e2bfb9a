/*
 * qwZ's parts: a rank's block of a gather quantized to int8 (quant/quant.h)
 * as one contiguous part, its scales first and its levels after, the
 * quantization blocks restarting at each tensor of the bucket
 * (quant/cuts.h); parts are padded to the largest rank's, a multiple of 4
 * bytes, so every part's scales stay aligned and the all-gather's parts are
 * equal. The gathered parts are dequantized into the full buffer. The
 * tensor's elements are fp32, bf16 or fp16: a half-precision block is
 * quantized as its fp32 conversion, and dequantized values are rounded
 * once into it (quant/half.h, through a scratch buffer of
 * zsh_qgather_scratch() floats).
 */
#ifndef ZSH_SHARD_QGATHER_H_
#define ZSH_SHARD_QGATHER_H_

#include "quant/cuts.h"

#include <zeroshard.h>

#include <stddef.h>

/* Bytes of each of @nparts parts of @count elements in blocks of @block,
 * rank r's part holding elements [r * count, (r + 1) * count) of the buffer
 * @cuts describes. */
size_t zsh_qgather_part_bytes(const zsh_quant_cuts_t *cuts, int nparts, size_t count,
                              size_t block);

/* The fp32 scratch elements packing or unpacking @dtype needs (0 for fp32). */
size_t zsh_qgather_scratch(zsh_dtype_t dtype, size_t block);

/* Rank @rank's @count elements of @dtype at @src into @part; returns the
 * blocks holding NaN or inf (each dequantizes to NaN). */
size_t zsh_qgather_pack(const zsh_quant_cuts_t *cuts, int rank, zsh_dtype_t dtype,
                        const void *src, size_t count, size_t block, void *part, float *scratch);

/* @nparts parts of @count elements each, one after the other in @parts
 * (each zsh_qgather_part_bytes()), into @full (nparts * count elements of
 * @dtype). */
void zsh_qgather_unpack(const zsh_quant_cuts_t *cuts, const void *parts, int nparts, size_t count,
                        size_t block, zsh_dtype_t dtype, void *full, float *scratch);

#endif
