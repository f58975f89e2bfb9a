/*
 * Size arithmetic that reports overflow instead of wrapping. A wrapped
 * product makes an allocation small and the writes into it large, so every
 * size the ZeRO layer computes from a caller's numel goes through these
 * before it reaches an allocator.
 */
#ifndef ZSH_MEM_CHECKED_H_
#define ZSH_MEM_CHECKED_H_

#include <stdbool.h>
#include <stddef.h>

/* *@r_p = @a * @b; false (and *@r_p unspecified) if it does not fit a size_t. */
static inline bool zsh_size_mul(size_t a, size_t b, size_t *r_p)
{
    return !__builtin_mul_overflow(a, b, r_p);
}

/* *@r_p = @a + @b; false if it does not fit a size_t. */
static inline bool zsh_size_add(size_t a, size_t b, size_t *r_p)
{
    return !__builtin_add_overflow(a, b, r_p);
}

/* *@r_p = @count * @nranks * @esize, the bytes of a padded full copy. */
static inline bool zsh_size_mul3(size_t count, size_t nranks, size_t esize, size_t *r_p)
{
    size_t elems;

    return zsh_size_mul(count, nranks, &elems) && zsh_size_mul(elems, esize, r_p);
}

#endif
