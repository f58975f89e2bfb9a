#include "core/array.h"

#include "core/status.h"

#include <stdlib.h>
#include <string.h>

/* Grow *@arr_p to at least @n elements; the new ones are not zeroed. */
static zsh_status_t zsh_array_grow(void **arr_p, unsigned *cap_p, unsigned n, size_t esize,
                                   const char *what)
{
    void *arr;

    if (n > *cap_p) {
        arr = realloc(*arr_p, n * esize);
        if (arr == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate %u %s", n, what);
        }
        *arr_p = arr;
        *cap_p = n;
    }
    return ZSH_OK;
}

zsh_status_t zsh_array_reset(void **arr_p, unsigned *cap_p, unsigned n, size_t esize,
                             const char *what)
{
    zsh_status_t status = zsh_array_grow(arr_p, cap_p, n, esize, what);

    if ((status == ZSH_OK) && (*cap_p > 0)) {
        memset(*arr_p, 0, (size_t)*cap_p * esize);
    }
    return status;
}

zsh_status_t zsh_array_use(void **arr_p, unsigned *cap_p, unsigned n, size_t esize,
                           const char *what)
{
    zsh_status_t status = zsh_array_grow(arr_p, cap_p, n, esize, what);

    if ((status == ZSH_OK) && (n > 0)) {
        memset(*arr_p, 0, (size_t)n * esize);
    }
    return status;
}
