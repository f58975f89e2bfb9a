/*
 * Runs quantized in pieces cut at tensor boundaries (cuts.h).
 */
#include "quant/cuts.h"

#include "quant/half.h"

#include <stdint.h>

/* The end of the piece that starts at @pos, in a run ending at @end: the
 * first cut after @pos, or @end. */
static size_t zsh_quant_cut_next(const zsh_quant_cuts_t *cuts, size_t pos, size_t end)
{
    size_t lo = 0, hi, mid;

    if ((cuts == NULL) || (cuts->n == 0)) {
        return end;
    }
    hi = cuts->n;
    while (lo < hi) { /* the first cut above pos */
        mid = lo + (hi - lo) / 2;
        if (cuts->at[mid] <= pos) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    return ((lo < cuts->n) && (cuts->at[lo] < end)) ? cuts->at[lo] : end;
}

size_t zsh_quant_cut_blocks(const zsh_quant_cuts_t *cuts, size_t first, size_t n, size_t block)
{
    size_t pos = first, end = first + n, next, blocks = 0;

    for (; pos < end; pos = next) {
        next = zsh_quant_cut_next(cuts, pos, end);
        blocks += zsh_quant_blocks(next - pos, block);
    }
    return blocks;
}

size_t zsh_quant_cut_bytes(const zsh_quant_cuts_t *cuts, size_t first, size_t n, size_t block,
                           int bits)
{
    size_t pos = first, end = first + n, next, bytes = 0;

    for (; pos < end; pos = next) {
        next = zsh_quant_cut_next(cuts, pos, end);
        bytes += zsh_quant_bytes(next - pos, block, bits);
    }
    return bytes;
}

size_t zsh_quant_cut_quantize_as(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                                 size_t first, zsh_dtype_t dtype, const void *x, size_t n,
                                 size_t block, int bits, void *q, float *scales, float *scratch)
{
    size_t pos = first, end = first + n, next, len, nonfinite = 0;
    size_t esize = (dtype == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
    char *levels = q;

    for (; pos < end; pos = next) {
        next = zsh_quant_cut_next(cuts, pos, end);
        len  = next - pos;
        nonfinite += zsh_quant_half_quantize(k, dtype, (const char *)x + (pos - first) * esize,
                                             len, block, bits, levels, scales, scratch);
        levels += zsh_quant_bytes(len, block, bits);
        scales += zsh_quant_blocks(len, block);
    }
    return nonfinite;
}

size_t zsh_quant_cut_quantize(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                              size_t first, const float *x, size_t n, size_t block, int bits,
                              void *q, float *scales)
{
    return zsh_quant_cut_quantize_as(k, cuts, first, ZSH_FLOAT32, x, n, block, bits, q, scales,
                                     NULL);
}

void zsh_quant_cut_dequantize_as(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                                 size_t first, const void *q, const float *scales, size_t n,
                                 size_t block, int bits, zsh_dtype_t dtype, void *out,
                                 float *scratch)
{
    size_t pos = first, end = first + n, next, len;
    size_t esize = (dtype == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
    const char *levels = q;

    for (; pos < end; pos = next) {
        next = zsh_quant_cut_next(cuts, pos, end);
        len  = next - pos;
        zsh_quant_half_dequantize(k, levels, scales, len, block, bits, dtype,
                                  (char *)out + (pos - first) * esize, scratch);
        levels += zsh_quant_bytes(len, block, bits);
        scales += zsh_quant_blocks(len, block);
    }
}

void zsh_quant_cut_dequantize(const zsh_quant_kernels_t *k, const zsh_quant_cuts_t *cuts,
                              size_t first, const void *q, const float *scales, size_t n,
                              size_t block, int bits, int add, float *out)
{
    size_t pos = first, end = first + n, next, len;
    const char *levels = q;

    if (!add) {
        zsh_quant_cut_dequantize_as(k, cuts, first, q, scales, n, block, bits, ZSH_FLOAT32, out,
                                    NULL);
        return;
    }
    for (; pos < end; pos = next) {
        next = zsh_quant_cut_next(cuts, pos, end);
        len  = next - pos;
        k->dequantize_add(levels, scales, len, block, bits, out + (pos - first));
        levels += zsh_quant_bytes(len, block, bits);
        scales += zsh_quant_blocks(len, block);
    }
}
