#include "tl.h"

const zsh_tl_ops_t *zsh_tl_host(void)
{
    return &zsh_tl_ucx_ops;
}
