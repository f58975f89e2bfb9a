/*
 * qwZ's parts: a rank's block of a gather quantized to int8 (quant/quant.h)
 * as one contiguous part, its scales first and its levels after, padded to
 * 4 bytes so every part's scales stay aligned; the gathered parts are
 * dequantized into the full buffer.
 */
#ifndef ZSH_SHARD_QGATHER_H_
#define ZSH_SHARD_QGATHER_H_

#include <stddef.h>

/* Bytes of one rank's part of @count elements in blocks of @block. */
size_t zsh_qgather_part_bytes(size_t count, size_t block);

/* @count fp32 elements of @src into @part; returns the blocks holding NaN
 * or inf (each dequantizes to NaN). */
size_t zsh_qgather_pack(const float *src, size_t count, size_t block, void *part);

/* @nparts parts of @count elements each, one after the other in @parts,
 * into @full (nparts * count elements). */
void zsh_qgather_unpack(const void *parts, int nparts, size_t count, size_t block, float *full);

#endif
