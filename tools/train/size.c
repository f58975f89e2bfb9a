#include "train/size.h"

#include <math.h>

/* Parameters of a model: the embedding table, then every linear layer. */
static double zsh_train_count(const zsh_train_dims_t *d)
{
    double n = 0.0;
    size_t i;

    for (i = 0; i < zsh_train_nparams(d); i++) {
        n += (double)zsh_train_param_numel(d, i);
    }
    return n;
}

void zsh_train_size_for(double params, zsh_train_dims_t *d)
{
    double a, b, c, h, best;
    size_t layers = 2, lo;

    if (params > 1e5) {
        layers += (size_t)floor(log(params / 1e5) / log(4.0));
    }
    d->layers = (layers > 64) ? 64 : layers;
    /* The count is a (hidden)^2 + b hidden + c: (layers - 1) hidden-by-hidden
     * weights, the first layer's context * embed inputs, the biases and the
     * output layer's vocab rows; c is the embedding table and output bias. */
    a = (double)(d->layers - 1);
    b = (double)(d->context * d->embed + d->layers + d->vocab);
    c = (double)(d->vocab * d->embed + d->vocab) - params;
    h = (-b + sqrt(b * b - 4.0 * a * c)) / (2.0 * a);
    lo        = (h < 1.0) ? 1 : (size_t)h;
    d->hidden = lo + 1;
    best      = fabs(zsh_train_count(d) - params);
    d->hidden = lo;
    if (fabs(zsh_train_count(d) - params) > best) {
        d->hidden = lo + 1;
    }
}

size_t zsh_train_tile_rows_for(const zsh_train_dims_t *d, size_t l, size_t esize,
                               size_t live_bytes)
{
    size_t row = zsh_train_layer_in(d, l) * esize, out = zsh_train_layer_out(d, l);
    size_t rows = (live_bytes / 4) / row;

    if (rows < 1) {
        rows = 1;
    }
    return (rows > out) ? out : rows;
}
