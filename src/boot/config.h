/*
 * The bootstrap's ZSH_* variables: how zsh_comm_init() finds its peers.
 */
#ifndef ZSH_BOOT_CONFIG_H_
#define ZSH_BOOT_CONFIG_H_

#include "core/config.h"

#include <zeroshard.h>

#include <stdbool.h>

/* Values of ZSH_BOOTSTRAP. */
typedef enum {
    ZSH_BOOTSTRAP_AUTO,  /* torchrun variables if RANK is set, else PMIx if launched by it */
    ZSH_BOOTSTRAP_ENV,   /* torchrun variables and the TCP store */
    ZSH_BOOTSTRAP_PMIX   /* a PMIx launcher: mpirun, srun */
} zsh_bootstrap_t;

typedef struct zsh_boot_config {
    int    rank;           /* -1 when unset */
    int    world_size;     /* -1 when unset */
    char   master_addr[ZSH_CONFIG_STR_MAX]; /* "" when unset */
    int    master_port;    /* -1 when unset */
    double store_timeout;  /* seconds for store connect, accept and replies */
    int    bootstrap;      /* zsh_bootstrap_t */
    char   job_key[ZSH_CONFIG_STR_MAX];    /* "" for none: the store is unauthenticated */
    char   store_bind[ZSH_CONFIG_STR_MAX]; /* "" for MASTER_ADDR, "*" for every interface */
    unsigned store_max_keys;   /* 0: scaled from WORLD_SIZE */
    size_t   store_max_bytes;  /* 0: scaled from WORLD_SIZE */
    unsigned store_max_conns;  /* 0: scaled from WORLD_SIZE */
    bool   pmix_launched;  /* derived: a PMIx launcher started this process */
} zsh_boot_config_t;

/* The table, for whoever lists or parses its rows. */
extern zsh_config_table_t zsh_boot_config_table;

/* Defaults, then the environment; fails naming a malformed variable. */
zsh_status_t zsh_boot_config_read(zsh_boot_config_t *cfg);

#endif
