#include "train/data.h"

#include "core/escape.h"
#include "core/file.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>

static uint8_t zsh_train_token(int c)
{
    if (c == '\n') {
        return 0;
    }
    return ((c >= ' ') && (c <= '~')) ? (uint8_t)(c - ' ' + 1) : 1;
}

int zsh_train_text_load(const char *path, size_t context, zsh_train_text_t *text)
{
    char *bytes, name[ZSH_ESCAPED_MAX];
    size_t len, i;

    /* A regular file (a link to one is fine), read up to the bound: a FIFO
     * or /dev/zero would block or grow memory until allocation fails. */
    if (zsh_file_read_all(path, true, ZSH_TRAIN_TEXT_MAX, "the training text", &bytes, &len) !=
        ZSH_OK) {
        fprintf(stderr, "zsh_train: %s\n", zsh_last_error());
        return -1;
    }
    if (len < zsh_train_text_min(context)) {
        fprintf(stderr,
                "zsh_train: %s holds %zu bytes; the training text needs at least %zu "
                "(a context of %zu tokens plus 2)\n",
                zsh_escape_str(path, name, sizeof(name)), len, zsh_train_text_min(context),
                context);
        free(bytes);
        return -1;
    }
    for (i = 0; i < len; i++) {
        bytes[i] = (char)zsh_train_token((unsigned char)bytes[i]);
    }
    text->ids = (uint8_t *)bytes;
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
