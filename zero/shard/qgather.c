/*
 * qwZ's parts (qgather.h): int8 levels and fp32 scales, through the widest
 * quantization kernels the CPU runs, the blocks cut at the tensors' edges.
 */
#include "shard/qgather.h"

#include "quant/half.h"

#include <stdint.h>

/* Rank @r's part before its padding: its scales, then its levels. */
static size_t zsh_qgather_scale_bytes(const zsh_quant_cuts_t *cuts, int r, size_t count,
                                      size_t block)
{
    return zsh_quant_cut_blocks(cuts, (size_t)r * count, count, block) * sizeof(float);
}

size_t zsh_qgather_part_bytes(const zsh_quant_cuts_t *cuts, int nparts, size_t count,
                              size_t block)
{
    size_t most = 0, bytes;
    int r;

    /* Equal parts for the all-gather: the largest, as every rank counts it. */
    for (r = 0; r < nparts; r++) {
        bytes = zsh_qgather_scale_bytes(cuts, r, count, block) +
                zsh_quant_cut_bytes(cuts, (size_t)r * count, count, block, 8);
        most = (bytes > most) ? bytes : most;
    }
    return (most + 3) & ~(size_t)3;
}

size_t zsh_qgather_scratch(zsh_dtype_t dtype, size_t block)
{
    return (dtype == ZSH_FLOAT32) ? 0 : zsh_quant_half_scratch(block);
}

size_t zsh_qgather_pack(const zsh_quant_cuts_t *cuts, int rank, zsh_dtype_t dtype,
                        const void *src, size_t count, size_t block, void *part, float *scratch)
{
    return zsh_quant_cut_quantize_as(zsh_quant_best(), cuts, (size_t)rank * count, dtype, src,
                                     count, block, 8,
                                     (char *)part +
                                         zsh_qgather_scale_bytes(cuts, rank, count, block),
                                     part, scratch);
}

void zsh_qgather_unpack(const zsh_quant_cuts_t *cuts, const void *parts, int nparts, size_t count,
                        size_t block, zsh_dtype_t dtype, void *full, float *scratch)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    size_t pbytes = zsh_qgather_part_bytes(cuts, nparts, count, block);
    size_t esize  = (dtype == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
    int r;

    for (r = 0; r < nparts; r++) {
        const char *part = (const char *)parts + (size_t)r * pbytes;
        zsh_quant_cut_dequantize_as(k, cuts, (size_t)r * count,
                                    part + zsh_qgather_scale_bytes(cuts, r, count, block),
                                    (const float *)part, count, block, 8, dtype,
                                    (char *)full + (size_t)r * count * esize, scratch);
    }
}
