/*
 * Arrays kept across uses of a pooled object: grown when a use needs more
 * elements than the last, never shrunk, and zeroed for each use.
 */
#ifndef ZSH_CORE_ARRAY_H_
#define ZSH_CORE_ARRAY_H_

#include <zeroshard.h>

#include <stddef.h>

/* Grow the array *@arr_p of *@cap_p elements of @esize bytes to at least @n
 * (@what names them in the error: "operation slots"), and zero all of it:
 * for arrays whose readers go up to the capacity. */
zsh_status_t zsh_array_reset(void **arr_p, unsigned *cap_p, unsigned n, size_t esize,
                             const char *what);

/* The same, zeroing only the first @n elements: for arrays whose readers
 * stop at the count in use, where a small use need not pay for the whole. */
zsh_status_t zsh_array_use(void **arr_p, unsigned *cap_p, unsigned n, size_t esize,
                           const char *what);

#endif
