/*
 * Memory-centric tiling: one tensor as K sharded tiles. A caller gathers,
 * uses and releases them one at a time, so at most one tile's full buffer is
 * live however large the tensor is.
 */
#include "shard/shard_impl.h"

#include "core/dtype.h"
#include "core/status.h"
#include "mem/checked.h"

#include <stdint.h>
#include <stdlib.h>

struct zsh_tiled {
    size_t        ntiles;
    size_t        numel;
    size_t        tile;    /* elements per tile but the last */
    zsh_shard_t **tiles;
};

/* The first element of tile @k, checked: k * tile may pass SIZE_MAX for a
 * numel near it, and such a tile starts past the end. */
static size_t zsh_tiled_first(const zsh_tiled_t *tiled, size_t k)
{
    size_t first;

    return (zsh_size_mul(k, tiled->tile, &first) && (first < tiled->numel)) ? first
                                                                            : tiled->numel;
}

void zsh_tiled_destroy(zsh_tiled_t *tiled)
{
    size_t k;

    if (tiled == NULL) {
        return;
    }
    for (k = 0; k < tiled->ntiles; k++) {
        zsh_shard_destroy(tiled->tiles[k]);
    }
    free(tiled->tiles);
    free(tiled);
}

zsh_status_t zsh_tiled_create(zsh_comm_t *comm, size_t numel, zsh_dtype_t dtype, size_t ntiles,
                              zsh_tiled_t **tiled_p)
{
    zsh_tiled_t *tiled;
    zsh_status_t status;
    size_t k, first, bytes;

    if ((ntiles == 0) || (ntiles > numel && numel > 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_tiled_create: ntiles=%zu must be in [1, numel=%zu]", ntiles, numel);
    }
    if (!zsh_size_mul(numel, zsh_dtype_size(dtype), &bytes)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_tiled_create: numel %zu of %s is more than %zu bytes", numel,
                         zsh_dtype_name(dtype), SIZE_MAX);
    }
    tiled = calloc(1, sizeof(*tiled));
    if (tiled == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_tiled_create: out of memory");
    }
    tiled->numel = numel;
    tiled->tile  = numel / ntiles + ((numel % ntiles) != 0); /* ceil, without wrapping */
    tiled->tiles = calloc(ntiles, sizeof(*tiled->tiles));
    if (tiled->tiles == NULL) {
        free(tiled);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_tiled_create: out of memory");
    }
    /* With tile = ceil(numel / K), trailing tiles can come out empty
     * (numel 10, K 4: 3+3+3+1, but numel 9, K 4: 3+3+3+0); they stay legal. */
    for (k = 0; k < ntiles; k++, tiled->ntiles++) {
        first  = zsh_tiled_first(tiled, k);
        status = zsh_shard_create(comm,
                                  ((numel - first) < tiled->tile) ? numel - first : tiled->tile,
                                  dtype, &tiled->tiles[k]);
        if (status != ZSH_OK) {
            zsh_error_prefix("zsh_tiled_create: tile %zu of %zu: ", k, ntiles);
            zsh_tiled_destroy(tiled);
            return status;
        }
    }
    *tiled_p = tiled;
    return ZSH_OK;
}

size_t zsh_tiled_ntiles(const zsh_tiled_t *tiled)
{
    return tiled->ntiles;
}

zsh_shard_t *zsh_tiled_tile(zsh_tiled_t *tiled, size_t k, size_t *offset_p)
{
    if (k >= tiled->ntiles) {
        return NULL;
    }
    if (offset_p != NULL) {
        *offset_p = zsh_tiled_first(tiled, k);
    }
    return tiled->tiles[k];
}
