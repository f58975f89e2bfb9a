/*
 * qwZ's parts (qgather.h): int8 levels and fp32 scales, through the widest
 * quantization kernels the CPU runs.
 */
#include "shard/qgather.h"

#include "quant/quant.h"

#include <stdint.h>

static size_t zsh_qgather_scale_bytes(size_t count, size_t block)
{
    return zsh_quant_blocks(count, block) * sizeof(float);
}

size_t zsh_qgather_part_bytes(size_t count, size_t block)
{
    size_t bytes = zsh_qgather_scale_bytes(count, block) + zsh_quant_bytes(count, block, 8);

    return (bytes + 3) & ~(size_t)3;
}

size_t zsh_qgather_pack(const float *src, size_t count, size_t block, void *part)
{
    float *scales = part;

    return zsh_quant_best()->quantize(src, count, block, 8,
                                      (char *)part + zsh_qgather_scale_bytes(count, block),
                                      scales);
}

void zsh_qgather_unpack(const void *parts, int nparts, size_t count, size_t block, float *full)
{
    const zsh_quant_kernels_t *k = zsh_quant_best();
    size_t pbytes = zsh_qgather_part_bytes(count, block);
    int r;

    for (r = 0; r < nparts; r++) {
        const char *part = (const char *)parts + (size_t)r * pbytes;
        k->dequantize(part + zsh_qgather_scale_bytes(count, block), (const float *)part, count,
                      block, 8, full + (size_t)r * count);
    }
}
