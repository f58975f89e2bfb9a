/*
 * The UCX transport's ZSH_* variables.
 */
#ifndef ZSH_TRANSPORTS_UCX_CONFIG_H_
#define ZSH_TRANSPORTS_UCX_CONFIG_H_

#include "core/config.h"

#include <zeroshard.h>

#include <stddef.h>

typedef struct zsh_ucx_config {
    double keepalive;  /* seconds between liveness checks of peers */
    int    cma;        /* peers of this node may read and write our memory (1) or not (0) */
    int    shm;        /* mailboxes and boards in shared memory (1) or none (0) */
    size_t shm_max;    /* bytes of address space their segments may map */
} zsh_ucx_config_t;

/* Defaults, then the environment; fails naming a malformed variable. What
 * zsh_tl_ucx_ops.create() reads when given no options. */
zsh_status_t zsh_ucx_config_read(zsh_ucx_config_t *cfg);

#endif
