/*
 * Streaming copies (coll/copy.h) against memcpy: every alignment of either
 * side, lengths below, at and around the line size, and a buffer larger than
 * a cache, with guard bytes on both sides that must stay as they were.
 */
#include "algo/copy.h"
#include "harness/zsh_test.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COPY_GUARD 64

/* Copy @len bytes from @src_off into a destination at @dst_off (both past a
 * 64-byte boundary) and check it, and the guards, byte for byte. */
static void copy_check(size_t dst_off, size_t src_off, size_t len)
{
    size_t cap = (len + 2 * COPY_GUARD + 64 + 63) & ~(size_t)63, i; /* aligned_alloc: a multiple */
    uint8_t *src = aligned_alloc(64, cap), *dst = aligned_alloc(64, cap);
    uint8_t *d = dst + COPY_GUARD + dst_off, *s = src + COPY_GUARD + src_off;
    char what[96];

    if ((src == NULL) || (dst == NULL)) {
        zsh_test_fail(__FILE__, __LINE__, "cannot allocate %zu bytes", cap);
        free(src);
        free(dst);
        return;
    }
    for (i = 0; i < cap; i++) {
        src[i] = (uint8_t)(i * 131 + 7);
        dst[i] = 0xa5;
    }
    zsh_copy_stream(d, s, len);
    for (i = 0; i < cap; i++) {
        uint8_t want = ((dst + i >= d) && (dst + i < d + len)) ? s[dst + i - d] : 0xa5;

        if (dst[i] != want) {
            snprintf(what, sizeof(what), "dst +%zu src +%zu len %zu: byte %zu", dst_off,
                     src_off, len, i);
            zsh_test_fail(__FILE__, __LINE__, "%s is %u, expected %u", what, dst[i], want);
            break;
        }
    }
    free(src);
    free(dst);
}

ZSH_TEST(copy, streaming_copy_matches_memcpy_at_every_alignment_and_length)
{
    static const size_t lens[] = {0, 1, 15, 63, 64, 127, 128, 129, 191, 1000, 4096, 65537};
    size_t dst_off, src_off, i;

    for (dst_off = 0; dst_off < 64; dst_off += 7) {
        for (src_off = 0; src_off < 64; src_off += 13) {
            for (i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
                copy_check(dst_off, src_off, lens[i]);
            }
        }
    }
}

ZSH_TEST(copy, streaming_copy_of_more_than_a_cache_matches_memcpy)
{
    copy_check(16, 4, (8u << 20) + 40);
}
