/*
 * Memory-centric tiling: one tensor as K sharded tiles. A caller gathers,
 * uses and releases them one at a time, so at most one tile's full buffer is
 * live however large the tensor is.
 */
#include "shard/shard_impl.h"

#include "core/status.h"

#include <stdlib.h>

struct zsh_tiled {
    size_t        ntiles;
    size_t        numel;
    size_t        tile;    /* elements per tile but the last */
    zsh_shard_t **tiles;
};

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
    size_t k, first;

    if ((ntiles == 0) || (ntiles > numel && numel > 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_tiled_create: ntiles=%zu must be in [1, numel=%zu]", ntiles, numel);
    }
    tiled = calloc(1, sizeof(*tiled));
    if (tiled == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_tiled_create: out of memory");
    }
    tiled->numel = numel;
    tiled->tile  = (numel + ntiles - 1) / ntiles;
    tiled->tiles = calloc(ntiles, sizeof(*tiled->tiles));
    if (tiled->tiles == NULL) {
        free(tiled);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_tiled_create: out of memory");
    }
    /* With tile = ceil(numel / K), trailing tiles can come out empty
     * (numel 10, K 4: 3+3+3+1, but numel 9, K 4: 3+3+3+0); they stay legal. */
    for (k = 0; k < ntiles; k++, tiled->ntiles++) {
        first  = (k * tiled->tile < numel) ? k * tiled->tile : numel;
        status = zsh_shard_create(comm,
                                  ((numel - first) < tiled->tile) ? numel - first : tiled->tile,
                                  dtype, &tiled->tiles[k]);
        if (status != ZSH_OK) {
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
        *offset_p = (k * tiled->tile < tiled->numel) ? k * tiled->tile : tiled->numel;
    }
    return tiled->tiles[k];
}
