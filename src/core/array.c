#include "core/array.h"

#include "core/status.h"

#include <stdlib.h>
#include <string.h>

zsh_status_t zsh_array_reset(void **arr_p, unsigned *cap_p, unsigned n, size_t esize,
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
    memset(*arr_p, 0, (size_t)*cap_p * esize);
    return ZSH_OK;
}
