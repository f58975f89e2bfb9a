/*
 * The checkpoint targets' input as a manifest a hostile writer signed: XXH3
 * has no key, so anyone who edits a manifest can recompute its own checksum,
 * and the mutations should reach the parser, not stop at the checksum.
 */
#ifndef ZSH_FUZZ_MANIFEST_H_
#define ZSH_FUZZ_MANIFEST_H_

#include "ckpt/format.h"
#include "ckpt/hash.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* @data as NUL-terminated text with its manifest_xxh3 (if any) recomputed;
 * the caller frees it. NULL without memory. */
static inline char *fuzz_signed_manifest(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1), *digits, hex[17];

    if (text == NULL) {
        return NULL;
    }
    memcpy(text, data, size);
    text[size] = '\0';
    digits = zsh_ckpt_self_digits(text, size);
    if (digits != NULL) {
        memset(digits, '0', 16);
        snprintf(hex, sizeof(hex), "%016" PRIx64, (uint64_t)XXH3_64bits(text, size));
        memcpy(digits, hex, 16);
    }
    return text;
}

#endif
