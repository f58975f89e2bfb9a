#include "train/model.h"

#include "train/data.h"
#include "train/gemm.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

size_t zsh_train_nparams(const zsh_train_dims_t *d)
{
    return 1 + 2 * (d->layers + 1);
}

size_t zsh_train_layer_in(const zsh_train_dims_t *d, size_t l)
{
    return (l == 0) ? d->context * d->embed : d->hidden;
}

size_t zsh_train_layer_out(const zsh_train_dims_t *d, size_t l)
{
    return (l == d->layers) ? d->vocab : d->hidden;
}

size_t zsh_train_param_numel(const zsh_train_dims_t *d, size_t i)
{
    size_t l = (i - 1) / 2;

    if (i == 0) {
        return d->vocab * d->embed;
    }
    return zsh_train_layer_out(d, l) * (((i - 1) % 2 == 0) ? zsh_train_layer_in(d, l) : 1);
}

void zsh_train_param_name(const zsh_train_dims_t *d, size_t i, char *buf, size_t len)
{
    size_t l = (i - 1) / 2;

    if (i == 0) {
        snprintf(buf, len, "embed.weight");
    } else if (l == d->layers) {
        snprintf(buf, len, "out.%s", ((i - 1) % 2 == 0) ? "weight" : "bias");
    } else {
        snprintf(buf, len, "fc%zu.%s", l + 1, ((i - 1) % 2 == 0) ? "weight" : "bias");
    }
}

void zsh_train_param_init(const zsh_train_dims_t *d, size_t i, uint64_t seed, size_t first,
                          size_t n, float *w)
{
    /* splitmix64 steps its state by a constant before each draw, so element
     * k's draw starts from state0 + k steps: any range is generated alone,
     * with the values the whole parameter would have there. */
    uint64_t state0 = seed * 0x9e3779b97f4a7c15ull + i + 1, state;
    double bound;
    size_t k;

    if ((i > 0) && ((i - 1) % 2 == 1)) {
        memset(w, 0, n * sizeof(*w)); /* biases start at zero */
        return;
    }
    bound = (i == 0) ? 1.0 : 1.0 / sqrt((double)zsh_train_layer_in(d, (i - 1) / 2));
    for (k = 0; k < n; k++) {
        state = state0 + (uint64_t)(first + k) * 0x9e3779b97f4a7c15ull;
        w[k]  = (float)((2.0 * zsh_train_uniform(&state) - 1.0) * bound);
    }
}

void zsh_train_embed(const zsh_train_dims_t *d, const float *emb, const uint8_t *tokens,
                     size_t rows, float *x)
{
    size_t r, c;

    for (r = 0; r < rows; r++) {
        for (c = 0; c < d->context; c++) {
            memcpy(x + (r * d->context + c) * d->embed, emb + tokens[r * d->context + c] * d->embed,
                   d->embed * sizeof(*x));
        }
    }
}

void zsh_train_linear(const float *w, const float *bias, const float *x, size_t rows, size_t in,
                      size_t out, size_t ldy, int act, float *y)
{
    size_t r, o;

    for (r = 0; r < rows; r++) {
        memcpy(y + r * ldy, bias, out * sizeof(*y));
    }
    zsh_train_gemm(0, 1, rows, out, in, 1.0f, x, in, w, in, 1.0f, y, ldy);
    for (r = 0; act && (r < rows); r++) {
        for (o = 0; o < out; o++) {
            y[r * ldy + o] = tanhf(y[r * ldy + o]);
        }
    }
}

double zsh_train_xent(float *logits, const uint8_t *targets, size_t rows, size_t vocab,
                      float gscale)
{
    double loss = 0.0, sum;
    size_t r, v;
    float *z, max;

    for (r = 0; r < rows; r++) {
        z   = logits + r * vocab;
        max = z[0];
        for (v = 1; v < vocab; v++) {
            max = (z[v] > max) ? z[v] : max;
        }
        sum = 0.0;
        for (v = 0; v < vocab; v++) {
            z[v] = expf(z[v] - max);
            sum += z[v];
        }
        loss -= log(z[targets[r]] / sum);
        for (v = 0; v < vocab; v++) {
            z[v] = (float)(z[v] / sum) * gscale;
        }
        z[targets[r]] -= gscale;
    }
    return loss;
}

void zsh_train_linear_back(const float *w, const float *x, const float *y, float *dy,
                           size_t rows, size_t in, size_t out, size_t ldy, int act, float *dw,
                           float *db, float *dx)
{
    size_t r, o;

    memset(db, 0, out * sizeof(*db));
    for (r = 0; r < rows; r++) {
        for (o = 0; o < out; o++) {
            float g = dy[r * ldy + o];

            if (act) {
                g *= 1.0f - y[r * ldy + o] * y[r * ldy + o];
                dy[r * ldy + o] = g;
            }
            db[o] += g;
        }
    }
    zsh_train_gemm(1, 0, out, in, rows, 1.0f, dy, ldy, x, in, 0.0f, dw, in); /* dy^T x */
    zsh_train_gemm(0, 0, rows, in, out, 1.0f, dy, ldy, w, in, 1.0f, dx, in); /* dx += dy W */
}

void zsh_train_embed_back(const zsh_train_dims_t *d, const float *dx, const uint8_t *tokens,
                          size_t rows, float *demb)
{
    size_t r, c, e;

    memset(demb, 0, d->vocab * d->embed * sizeof(*demb));
    for (r = 0; r < rows; r++) {
        for (c = 0; c < d->context; c++) {
            float *row      = demb + tokens[r * d->context + c] * d->embed;
            const float *g  = dx + (r * d->context + c) * d->embed;

            for (e = 0; e < d->embed; e++) {
                row[e] += g[e];
            }
        }
    }
}
