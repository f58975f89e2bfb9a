/*
 * bf16 and fp16 runs through the fp32 kernels (half.h), a chunk of whole
 * blocks at a time, so every block is quantized as the fp32 run's would be.
 */
#include "quant/half.h"

#include "core/half.h"

#include <string.h>

/* Elements a chunk aims at: its fp32 copy stays in L1 beside the levels. */
#define ZSH_QUANT_HALF_CHUNK 4096u

size_t zsh_quant_half_scratch(size_t block)
{
    return (block >= ZSH_QUANT_HALF_CHUNK) ? block
                                           : ZSH_QUANT_HALF_CHUNK - ZSH_QUANT_HALF_CHUNK % block;
}

size_t zsh_quant_half_quantize(const zsh_quant_kernels_t *k, zsh_dtype_t dtype, const void *x,
                               size_t n, size_t block, int bits, void *q, float *scales,
                               float *scratch)
{
    size_t chunk = zsh_quant_half_scratch(block), done, len, nonfinite = 0;

    if (dtype == ZSH_FLOAT32) {
        return k->quantize(x, n, block, bits, q, scales);
    }
    /* done is a multiple of block: the chunk's levels and scales start
     * where the whole run's would. */
    for (done = 0; done < n; done += len) {
        len = (n - done < chunk) ? n - done : chunk;
        zsh_half_widen(dtype, (const uint16_t *)x + done, len, scratch);
        nonfinite += k->quantize(scratch, len, block, bits,
                                 (char *)q + zsh_quant_bytes(done, block, bits),
                                 scales + done / block);
    }
    return nonfinite;
}

void zsh_quant_half_dequantize(const zsh_quant_kernels_t *k, const void *q, const float *scales,
                               size_t n, size_t block, int bits, zsh_dtype_t dtype, void *out,
                               float *scratch)
{
    size_t chunk = zsh_quant_half_scratch(block), done, len;

    if (dtype == ZSH_FLOAT32) {
        k->dequantize(q, scales, n, block, bits, out);
        return;
    }
    for (done = 0; done < n; done += len) {
        len = (n - done < chunk) ? n - done : chunk;
        k->dequantize((const char *)q + zsh_quant_bytes(done, block, bits), scales + done / block,
                      len, block, bits, scratch);
        zsh_half_narrow(dtype, scratch, len, (uint16_t *)out + done);
    }
}
