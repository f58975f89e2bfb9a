#include "algo/copy.h"

#include <stdint.h>
#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>

/* Lines written per iteration: four 16-byte stores fill one 64-byte line,
 * so the write-combining buffer goes out whole. */
#define ZSH_COPY_LINE 64

void zsh_copy_stream(void *dst, const void *src, size_t len)
{
    char *d       = dst;
    const char *s = src;
    size_t head   = (ZSH_COPY_LINE - ((uintptr_t)d % ZSH_COPY_LINE)) % ZSH_COPY_LINE;
    __m128i a, b, c, e;

    if (len < 2 * ZSH_COPY_LINE) {
        memcpy(d, s, len);
        return;
    }
    /* Up to the first whole line of dst the plain way; the loads need no
     * alignment, the stores do. */
    memcpy(d, s, head);
    d += head;
    s += head;
    len -= head;
    for (; len >= ZSH_COPY_LINE; len -= ZSH_COPY_LINE) {
        a = _mm_loadu_si128((const __m128i *)(const void *)s);
        b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
        c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
        e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));
        _mm_stream_si128((__m128i *)(void *)d, a);
        _mm_stream_si128((__m128i *)(void *)(d + 16), b);
        _mm_stream_si128((__m128i *)(void *)(d + 32), c);
        _mm_stream_si128((__m128i *)(void *)(d + 48), e);
        d += ZSH_COPY_LINE;
        s += ZSH_COPY_LINE;
    }
    _mm_sfence();
    memcpy(d, s, len);
}

#else

void zsh_copy_stream(void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
}

#endif
