/*
 * A character-level MLP language model, forward and backward in C (its matrix
 * products through train/gemm.h):
 * the embeddings of `context` characters, concatenated, go through `layers`
 * tanh layers of `hidden` units and a linear layer to logits over the
 * vocabulary; the loss is the cross-entropy of the next character.
 *
 * The model never owns its weights: every function takes the fp32 arrays it
 * needs, which the training loop fetches from the optimizer layer (and
 * widens from bf16/fp16) just before use.
 */
#ifndef ZSH_TRAIN_MODEL_H_
#define ZSH_TRAIN_MODEL_H_

#include <stddef.h>
#include <stdint.h>

typedef struct zsh_train_dims {
    size_t vocab, context, embed, hidden, layers;
} zsh_train_dims_t;

/* Parameters in order: the embedding table, then (weight, bias) of each tanh
 * layer and of the output layer. */
size_t zsh_train_nparams(const zsh_train_dims_t *d);
size_t zsh_train_param_numel(const zsh_train_dims_t *d, size_t i);
void   zsh_train_param_name(const zsh_train_dims_t *d, size_t i, char *buf, size_t len);

/* Linear layer @l (0..layers, the last is the output): fan-in and fan-out. */
size_t zsh_train_layer_in(const zsh_train_dims_t *d, size_t l);
size_t zsh_train_layer_out(const zsh_train_dims_t *d, size_t l);

/* Deterministic initial values of elements [first, first + n) of parameter
 * @i from @seed: the same values whatever range they are generated in, so a
 * tile is initialised alone, alike on every rank and at every tiling. */
void zsh_train_param_init(const zsh_train_dims_t *d, size_t i, uint64_t seed, size_t first,
                          size_t n, float *w);

/* x[b][c * embed + e] = emb[tokens[b][c]][e]; tokens has context ids per row. */
void zsh_train_embed(const zsh_train_dims_t *d, const float *emb, const uint8_t *tokens,
                     size_t rows, float *x);

/* y = x W^T + bias (then tanh if @act) for @rows rows and @out outputs;
 * rows of y are @ldy apart, so a block of outputs (a tile of W's rows) can
 * be computed on its own. */
void zsh_train_linear(const float *w, const float *bias, const float *x, size_t rows, size_t in,
                      size_t out, size_t ldy, int act, float *y);

/* Softmax cross-entropy: the summed loss of @rows rows, and dlogits =
 * (softmax - onehot) * @gscale, in place of the logits. */
double zsh_train_xent(float *logits, const uint8_t *targets, size_t rows, size_t vocab,
                      float gscale);

/* Backward of a linear layer (or of a block of its outputs, as above):
 * dw = dy^T x, db = sum of dy, and dx += dy W. When @act, dy is first
 * multiplied by 1 - y^2, the tanh derivative, using the layer's output @y. */
void zsh_train_linear_back(const float *w, const float *x, const float *y, float *dy,
                           size_t rows, size_t in, size_t out, size_t ldy, int act, float *dw,
                           float *db, float *dx);

/* Backward of the embedding: demb gets dx summed into the rows of the tokens. */
void zsh_train_embed_back(const zsh_train_dims_t *d, const float *dx, const uint8_t *tokens,
                          size_t rows, float *demb);

#endif
