/*
 * The sizes of a quantized run and the check of its settings (quant.h).
 */
#include "quant/quant.h"

#include "core/status.h"

zsh_status_t zsh_quant_check(size_t block, int bits)
{
    if ((bits != 8) && (bits != 4)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "quantization bits %d: must be 8 or 4", bits);
    }
    if ((block < ZSH_QUANT_BLOCK_MIN) || (block > ZSH_QUANT_BLOCK_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "quantization block of %zu elements: must be "
                         "%u to %u", block, (unsigned)ZSH_QUANT_BLOCK_MIN,
                         (unsigned)ZSH_QUANT_BLOCK_MAX);
    }
    return ZSH_OK;
}

size_t zsh_quant_blocks(size_t n, size_t block)
{
    return (n / block) + ((n % block) != 0);
}

size_t zsh_quant_bytes(size_t n, size_t block, int bits)
{
    size_t tail = n % block;

    if (bits == 8) {
        return n;
    }
    return (n / block) * ((block + 1) / 2) + (tail + 1) / 2;
}
