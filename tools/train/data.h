/*
 * The training text as token ids, and the deterministic global batch of
 * each step: a function of (seed, step) only, so every rank count sees the
 * same batch and each rank takes a contiguous slice of it.
 */
#ifndef ZSH_TRAIN_DATA_H_
#define ZSH_TRAIN_DATA_H_

#include <stddef.h>
#include <stdint.h>

#define ZSH_TRAIN_VOCAB 96 /* '\n' and the 95 printable ASCII characters */
/* The most --data may hold: it is held in memory, one byte per token. */
#define ZSH_TRAIN_TEXT_MAX ((size_t)1 << 30)

typedef struct zsh_train_text {
    uint8_t *ids;
    size_t   len;
} zsh_train_text_t;

/* The fewest bytes a text needs for batches of @context-token windows:
 * zsh_train_batch() draws starts modulo len - context - 1, which must be at
 * least 1, and each start reads context + 1 tokens. */
static inline size_t zsh_train_text_min(size_t context)
{
    return context + 2;
}

/* Read @path as token ids; other bytes become spaces. 0 on success, else -1
 * with a message on stderr naming the file: one that is not a regular file
 * (a directory, a FIFO, a device), larger than ZSH_TRAIN_TEXT_MAX, or that
 * holds fewer than zsh_train_text_min(@context) bytes. */
int  zsh_train_text_load(const char *path, size_t context, zsh_train_text_t *text);
void zsh_train_text_free(zsh_train_text_t *text);

/* Start positions of sequences [first, first + n) of the global batch of
 * @step: each needs context + 1 tokens from its start. */
void zsh_train_batch(const zsh_train_text_t *text, uint64_t seed, unsigned long step,
                     size_t context, size_t first, size_t n, size_t *starts);

/* A uniform double in [0, 1) from a splitmix64 state. */
double zsh_train_uniform(uint64_t *state);

#endif
