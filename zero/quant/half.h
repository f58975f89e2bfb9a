/*
 * bf16 and fp16 runs quantized through the fp32 kernels (quant.h): a chunk
 * of whole blocks is widened into an fp32 scratch buffer and quantized
 * there, and dequantized levels are narrowed from it, so there is one set
 * of kernels and the result is, bit for bit, the fp32 run's.
 *
 * Widening is exact, so a bf16 or fp16 run quantizes to the levels and
 * scales of its fp32 conversion, and quant.h's contract (the scale's
 * bound, zeros, NaN and inf) holds as it is stated there. Dequantizing
 * narrows each fp32 value level * scale once, to nearest even
 * (core/half.h): the narrowed value adds at most half a step of the
 * precision to the bound; a NaN block stays NaN.
 */
#ifndef ZSH_ZERO_QUANT_HALF_H_
#define ZSH_ZERO_QUANT_HALF_H_

#include "quant/quant.h"

/* The fp32 elements of the scratch buffer a run in blocks of @block needs
 * (whole blocks, about 4096 elements, at least one block). */
size_t zsh_quant_half_scratch(size_t block);

/* @k's quantize of @n elements of @dtype (fp32, bf16 or fp16) at @x; a
 * non-fp32 run goes through @scratch (zsh_quant_half_scratch() floats). */
size_t zsh_quant_half_quantize(const zsh_quant_kernels_t *k, zsh_dtype_t dtype, const void *x,
                               size_t n, size_t block, int bits, void *q, float *scales,
                               float *scratch);

/* @k's dequantize into @n elements of @dtype at @out, each rounded once. */
void zsh_quant_half_dequantize(const zsh_quant_kernels_t *k, const void *q, const float *scales,
                               size_t n, size_t block, int bits, zsh_dtype_t dtype, void *out,
                               float *scratch);

#endif
