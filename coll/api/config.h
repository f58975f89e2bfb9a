/*
 * Reading the collective layer's ZSH_* variables (api/config.c).
 */
#ifndef ZSH_COLL_API_CONFIG_H_
#define ZSH_COLL_API_CONFIG_H_

#include "base/config.h"

/* Defaults, then the environment; fails naming a malformed variable. */
zsh_status_t zsh_coll_config_read(zsh_coll_config_t *cfg);

#endif
