/*
 * The ZeRO layer's ZSH_* variables: defaults for the zsh_optim_config_t
 * fields a caller leaves at zero.
 */
#ifndef ZSH_ZERO_OPTIM_CONFIG_H_
#define ZSH_ZERO_OPTIM_CONFIG_H_

#include "core/config.h"

#include <zeroshard.h>

#include <stddef.h>

typedef struct zsh_zero_config {
    size_t   bucket_size;     /* bytes per flat bucket */
    size_t   max_live_bytes;  /* stage 3: gathered bucket bytes kept live */
    unsigned prefetch;        /* stage 3: buckets gathered ahead of use */
} zsh_zero_config_t;

/* Defaults, then the environment: only these variables, so a malformed one
 * of another layer never fails an optimizer. */
zsh_status_t zsh_zero_config_read(zsh_zero_config_t *cfg);

#endif
