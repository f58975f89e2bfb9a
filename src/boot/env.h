/*
 * Bootstrap from torchrun-style variables (RANK, WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT, or their ZSH_ forms) for zsh_comm_init(): rank 0 hosts the TCP
 * store of store.h, every rank connects to it, and the ranks exchange what
 * communicator creation needs through an out-of-band allgather over it.
 */
#ifndef ZSH_BOOT_ENV_H_
#define ZSH_BOOT_ENV_H_

#include "boot/config.h"

#include <zeroshard.h>

#include <stddef.h>

typedef struct zsh_boot_env zsh_boot_env_t;

/* The variable a message should name for the boot config's field @name
 * ("WORLD_SIZE"): the one that set it in this environment, else its torchrun
 * name, else its ZSH_ name; written to @buf. */
const char *zsh_boot_env_var(const char *name, char *buf, size_t len);

/*
 * Validate @cfg (rank, world_size, master_addr, master_port, store_timeout;
 * errors name the variable, e.g. "RANK is not set (nor ZSH_RANK)"), start the
 * store server on rank 0, connect to it, and fill @oob with an allgather over
 * the store. The allgather completes before it returns, so test() is ZSH_OK at
 * once; each call of it must be made by every rank, in the same order, and
 * waits at most cfg->store_timeout for the slowest rank.
 *
 * Collective over the WORLD_SIZE ranks. @oob stays valid until
 * zsh_boot_env_destroy(); *env_p and @oob are set only on success.
 */
zsh_status_t zsh_boot_env_create(const zsh_boot_config_t *cfg, zsh_oob_t *oob,
                                 zsh_boot_env_t **env_p);

/*
 * Collective: say this rank is done with the store; rank 0 keeps serving until
 * every rank has said so (or cfg->store_timeout passes), then stops the store.
 * Frees @env whatever the outcome. NULL is ignored.
 */
zsh_status_t zsh_boot_env_destroy(zsh_boot_env_t *env);

#endif
