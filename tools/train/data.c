#include "train/data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint8_t zsh_train_token(int c)
{
    if (c == '\n') {
        return 0;
    }
    return ((c >= ' ') && (c <= '~')) ? (uint8_t)(c - ' ' + 1) : 1;
}

int zsh_train_text_load(const char *path, size_t context, zsh_train_text_t *text)
{
    FILE *f = fopen(path, "rb");
    size_t cap = 1 << 16, len = 0;
    uint8_t *ids, *grown;
    int c, read_errno;

    if (f == NULL) {
        fprintf(stderr, "zsh_train: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    ids = malloc(cap);
    while ((ids != NULL) && ((c = fgetc(f)) != EOF)) {
        if (len == cap) {
            grown = realloc(ids, cap *= 2);
            if (grown == NULL) {
                free(ids);
                ids = NULL;
                break;
            }
            ids = grown;
        }
        ids[len++] = zsh_train_token(c);
    }
    /* fopen() takes a directory; the read is what fails. */
    read_errno = ferror(f) ? errno : 0;
    fclose(f);
    if (ids == NULL) {
        fprintf(stderr, "zsh_train: out of memory reading %s\n", path);
        return -1;
    }
    if (read_errno != 0) {
        fprintf(stderr, "zsh_train: cannot read %s: %s\n", path, strerror(read_errno));
        free(ids);
        return -1;
    }
    if (len < zsh_train_text_min(context)) {
        fprintf(stderr,
                "zsh_train: %s holds %zu bytes; the training text needs at least %zu "
                "(a context of %zu tokens plus 2)\n",
                path, len, zsh_train_text_min(context), context);
        free(ids);
        return -1;
    }
    text->ids = ids;
    text->len = len;
    return 0;
}

void zsh_train_text_free(zsh_train_text_t *text)
{
    free(text->ids);
    text->ids = NULL;
}

static uint64_t zsh_train_next(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double zsh_train_uniform(uint64_t *state)
{
    return (double)(zsh_train_next(state) >> 11) * 0x1p-53;
}

void zsh_train_batch(const zsh_train_text_t *text, uint64_t seed, unsigned long step,
                     size_t context, size_t first, size_t n, size_t *starts)
{
    uint64_t state = seed * 0x100000001b3ull + step;
    size_t span = text->len - context - 1, i;

    /* Draw the whole global batch so a slice does not depend on rank count. */
    for (i = 0; i < first + n; i++) {
        size_t s = (size_t)(zsh_train_next(&state) % span);

        if (i >= first) {
            starts[i - first] = s;
        }
    }
}
