/*
 * How big zsh_train's model is: the widths and depth --params N chooses, and
 * the row tiles each layer's weight is registered as so that a gathered tile
 * stays within the live budget.
 */
#ifndef ZSH_TRAIN_SIZE_H_
#define ZSH_TRAIN_SIZE_H_

#include "train/model.h"

#include <stddef.h>

/* The fewest and most parameters --params accepts. */
#define ZSH_TRAIN_PARAMS_MIN 1e4
#define ZSH_TRAIN_PARAMS_MAX 1e13

/* Fill d->layers and d->hidden (vocab, context and embed set) for about
 * @params parameters: layers = 2 + floor(log4(params / 1e5)), at least 2 and
 * at most 64, so depth grows slowly; hidden is then the width whose count is
 * nearest @params, about sqrt(params / (layers - 1)). */
void zsh_train_size_for(double params, zsh_train_dims_t *d);

/* Output rows per tile of linear layer @l's weight (in its elements of
 * @esize bytes) so that a tile holds at most @live_bytes / 4: the gathered
 * tile, the next ones prefetched and the one being released fit the budget
 * together. At least one row; all of them when the weight fits whole. */
size_t zsh_train_tile_rows_for(const zsh_train_dims_t *d, size_t l, size_t esize,
                               size_t live_bytes);

#endif
