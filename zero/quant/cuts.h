/*
 * A run quantized in pieces: the quantization blocks restart at every cut,
 * an element offset where a new tensor of a flat buffer begins, so no block
 * spans two tensors.
 *
 * Why: a flat bucket lays a model's tensors end to end, and their scales
 * differ by orders of magnitude: a LayerNorm's gains sit at 1.0, beside
 * weights of about 0.02. A block holding both takes its step from the gains
 * (1/127, about 0.008), and the weights beside them lose a fifth of their
 * size to rounding (train_gpt.py's first gather: errors up to 0.0039 on
 * weights of 0.02 in every such block, against 0.0003 elsewhere). With the
 * blocks cut at the tensors' edges each tensor gets scales of its own, at
 * the cost of at most one more scale per cut.
 *
 * A piece is quantized as a run of its own (quant.h): its scales follow the
 * previous piece's, and its levels start on the byte after the previous
 * piece's, so the quant.h contract holds piece by piece.
 */
#ifndef ZSH_ZERO_QUANT_CUTS_H_
#define ZSH_ZERO_QUANT_CUTS_H_

#include "quant/quant.h"

/* Where a flat buffer's tensors begin: @at holds @n ascending element
 * offsets into the whole buffer (0 and repeats may be there; they cut
 * nothing). A NULL cuts pointer, or n = 0, cuts nothing. */
typedef struct zsh_quant_cuts {
    const size_t *at;
    size_t        n;
} zsh_quant_cuts_t;

/* Scales of the run of @n elements that starts at element @first of the
 * buffer @cuts describes. */
size_t zsh_quant_cut_blocks(const zsh_quant_cuts_t *cuts, size_t first, size_t n, size_t block);

/* Bytes of that run's levels. */
size_t zsh_quant_cut_bytes(const zsh_quant_cuts_t *cuts, size_t first, size_t n, size_t block,
                           int bits);

/* @k's quantize over the run's pieces: @x[0..n) into @q (cut_bytes) and
 * @scales (cut_blocks); returns the blocks holding NaN or inf. */
size_t zsh_quant_cut_quantize(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                              size_t first, const float *x, size_t n, size_t block, int bits,
                              void *q, float *scales);

/* zsh_quant_cut_quantize() of @n elements of @dtype (fp32, bf16, fp16) at
 * @x, a bf16 or fp16 piece widened through @scratch (quant/half.h's
 * zsh_quant_half_scratch() floats; NULL for fp32): the fp32 run's bits. */
size_t zsh_quant_cut_quantize_as(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                                 size_t first, zsh_dtype_t dtype, const void *x, size_t n,
                                 size_t block, int bits, void *q, float *scales, float *scratch);

/* @k's dequantize over the run's pieces into @n elements of @dtype at
 * @out, each rounded once from fp32, through @scratch as above. */
void zsh_quant_cut_dequantize_as(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                                 size_t first, const void *q, const float *scales, size_t n,
                                 size_t block, int bits, zsh_dtype_t dtype, void *out,
                                 float *scratch);

/* @k's dequantize (or dequantize_add where @add) over the run's pieces. */
void zsh_quant_cut_dequantize(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                              size_t first, const void *q, const float *scales, size_t n,
                              size_t block, int bits, int add, float *out);

#endif
