#include "tl.h"

#include <config.h>

#ifdef ZSH_HAVE_NCCL
extern const zsh_tl_dev_ops_t zsh_tl_nccl_ops;
#endif

const zsh_tl_ops_t *zsh_tl_host(void)
{
    return &zsh_tl_ucx_ops;
}

const zsh_tl_dev_ops_t *zsh_tl_device(void)
{
#ifdef ZSH_HAVE_NCCL
    return &zsh_tl_nccl_ops;
#else
    return NULL;
#endif
}
