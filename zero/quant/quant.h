/*
 * Block-wise symmetric quantization of fp32 runs, for ZeRO++'s quantized
 * weights (qwZ, int8) and gradients (qgZ, int8 or int4).
 *
 * A run of @n elements is cut into blocks of @block elements (the last one
 * may be shorter); each block gets one fp32 scale, its largest magnitude
 * divided by the largest level (127 for int8, 7 for int4), and each element
 * the nearest level of x / scale, ties to even. int8 levels are one byte
 * each; int4 levels are packed two to a byte, the even element of a pair in
 * the low nibble, and each block starts on a byte of its own (a block of b
 * elements takes (b + 1) / 2 bytes), so any range of whole blocks can be
 * cut out, sent and dequantized alone.
 *
 * The contract, element by element, for the value y = level * scale that
 * dequantization gives back for x:
 * - a finite block whose largest magnitude m is at least ZSH_QUANT_TINY:
 *   |x - y| <= scale / 2 * (1 + 2^-12), scale = m / levels (the 2^-12 is
 *   the fp32 rounding of the scale, its inverse and the two products, at
 *   most 4 * 127 * 2^-24 of a level). Zeros come back as zeros;
 * - a finite block with m below ZSH_QUANT_TINY (all zeros, or values so
 *   small that their scale would be subnormal): stored as zeros with scale
 *   0, so |x - y| = |x| < ZSH_QUANT_TINY;
 * - a block holding a NaN or an infinity is not quantized: its levels are 0
 *   and its scale NaN, so every element of that block dequantizes to NaN,
 *   and the quantizer returns how many such blocks it met. NaN never
 *   reaches another block, and never passes unreported: the caller refuses
 *   the run or treats it as an overflow, as the loss scaler does.
 *
 * The kernels are built at three widths: scalar (the reference, not
 * vectorized), AVX2 and AVX-512 (x86-64-v4); zsh_quant_best() is the widest
 * the CPU runs, found once. Every width gives the same bits: the same fp32
 * operations in the same order, none contracted into an FMA. bf16 and fp16
 * runs go through these kernels as their fp32 conversions (half.h).
 */
#ifndef ZSH_ZERO_QUANT_H_
#define ZSH_ZERO_QUANT_H_

#include <zeroshard.h>

#include <stddef.h>
#include <stdint.h>

/* The smallest largest-magnitude a block is quantized at: its scale stays a
 * normal float for either level count. */
#define ZSH_QUANT_TINY 0x1p-112f

/* The block sizes a run may be cut into. */
#define ZSH_QUANT_BLOCK_MIN 1
#define ZSH_QUANT_BLOCK_MAX (1u << 20)

typedef enum zsh_quant_width {
    ZSH_QUANT_SCALAR = 0,
    ZSH_QUANT_AVX2,
    ZSH_QUANT_AVX512,
    ZSH_QUANT_NWIDTHS
} zsh_quant_width_t;

/* The kernels of one width. @bits is 8 or 4 (checked by zsh_quant_check()). */
typedef struct zsh_quant_kernels {
    const char *name;
    /* @x's @n elements into @q (zsh_quant_bytes()) and @scales
     * (zsh_quant_blocks()); returns the number of blocks holding NaN or inf. */
    size_t (*quantize)(const float *x, size_t n, size_t block, int bits, void *q,
                       float *scales);
    /* out[i] = the value element i dequantizes to. */
    void (*dequantize)(const void *q, const float *scales, size_t n, size_t block, int bits,
                       float *out);
    /* acc[i] += the value element i dequantizes to, in fp32. */
    void (*dequantize_add)(const void *q, const float *scales, size_t n, size_t block, int bits,
                           float *acc);
} zsh_quant_kernels_t;

/* ZSH_OK if @block and @bits can quantize a run; else ZSH_ERR_INVALID_ARG
 * naming the one that cannot (bits other than 4 or 8, a block outside
 * ZSH_QUANT_BLOCK_MIN..ZSH_QUANT_BLOCK_MAX). */
zsh_status_t zsh_quant_check(size_t block, int bits);

/* Blocks (and scales) of a run of @n elements. */
size_t zsh_quant_blocks(size_t n, size_t block);

/* Bytes of levels of a run of @n elements. */
size_t zsh_quant_bytes(size_t n, size_t block, int bits);

/* The kernels of @width, or NULL where this CPU (or build) lacks it. */
const zsh_quant_kernels_t *zsh_quant_kernels(zsh_quant_width_t width);

/* The widest kernels this CPU runs. */
const zsh_quant_kernels_t *zsh_quant_best(void);

#endif
