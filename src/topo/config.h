/*
 * The topology's ZSH_* variables.
 */
#ifndef ZSH_TOPO_CONFIG_H_
#define ZSH_TOPO_CONFIG_H_

#include "core/config.h"

#include <zeroshard.h>

typedef struct zsh_topo_config {
    char node_name[ZSH_CONFIG_STR_MAX]; /* "" for the host name */
} zsh_topo_config_t;

/* The table, for whoever lists or parses its rows. */
extern zsh_config_table_t zsh_topo_config_table;

/* Defaults, then the environment; fails naming a malformed variable (a
 * node name longer than the rank map keeps). */
zsh_status_t zsh_topo_config_read(zsh_topo_config_t *cfg);

#endif
