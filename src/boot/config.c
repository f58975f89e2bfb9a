#include "boot/config.h"

#include <stddef.h>

static const char *const zsh_bootstrap_names[] = {"auto", "env", "pmix", NULL};

#define ZSH_BOOT_OFF(_field) offsetof(zsh_boot_config_t, _field)

/* Ranks go up to the collective layer's limit, 2^20 (its tags' source bits). */

static const zsh_config_field_t zsh_boot_config_fields[] = {
    {"RANK", "RANK", "", "Rank of this process for zsh_comm_init() (torchrun: RANK)",
     ZSH_BOOT_OFF(rank), ZSH_CONFIG_INT_OPT, NULL, "0", "1048575"},
    {"WORLD_SIZE", "WORLD_SIZE", "",
     "Number of processes for zsh_comm_init() (torchrun: WORLD_SIZE)",
     ZSH_BOOT_OFF(world_size), ZSH_CONFIG_INT_OPT, NULL, "1", "1048576"},
    {"MASTER_ADDR", "MASTER_ADDR", "",
     "Host of the TCP store that rank 0 runs for zsh_comm_init() (torchrun: MASTER_ADDR)",
     ZSH_BOOT_OFF(master_addr), ZSH_CONFIG_STRING, NULL, NULL, NULL},
    {"MASTER_PORT", "MASTER_PORT", "",
     "Port of the TCP store that rank 0 runs for zsh_comm_init() (torchrun: MASTER_PORT)",
     ZSH_BOOT_OFF(master_port), ZSH_CONFIG_INT_OPT, NULL, "1", "65535"},
    {"STORE_TIMEOUT", NULL, "60",
     "Seconds to connect to, accept from or wait for a reply of the TCP store (or a PMIx fence)",
     ZSH_BOOT_OFF(store_timeout), ZSH_CONFIG_TIME, NULL, "0.1", "86400"},
    {"BOOTSTRAP", NULL, "auto",
     "How zsh_comm_init() finds its peers: env (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), "
     "pmix (mpirun, srun), or auto: env if RANK is set, else pmix if a PMIx launcher started us",
     ZSH_BOOT_OFF(bootstrap), ZSH_CONFIG_ENUM, zsh_bootstrap_names, NULL, NULL},
    {"JOB_KEY", NULL, "",
     "Secret shared by every rank (at least 16 characters; e.g. `openssl rand -hex 32`): the TCP "
     "store admits only clients that prove they hold it (HMAC-SHA256 challenge and response; the "
     "key never crosses the network). Unset: the store admits any client that reaches it",
     ZSH_BOOT_OFF(job_key), ZSH_CONFIG_SECRET, NULL, NULL, NULL},
    {"STORE_BIND", NULL, "",
     "Address rank 0's TCP store listens on: unset for the address MASTER_ADDR resolves to, \"*\" "
     "for every interface, or an address or name of this host",
     ZSH_BOOT_OFF(store_bind), ZSH_CONFIG_STRING, NULL, NULL, NULL},
    {"STORE_MAX_KEYS", NULL, "0",
     "Most keys the TCP store holds; a client whose SET would pass it is dropped. 0: 1024 + 64 "
     "per rank", ZSH_BOOT_OFF(store_max_keys), ZSH_CONFIG_UINT, NULL, "0", "16777216"},
    {"STORE_MAX_BYTES", NULL, "0",
     "Most bytes of keys and values the TCP store holds; a client whose SET would pass it is "
     "dropped. 0: 64m + 1m per rank", ZSH_BOOT_OFF(store_max_bytes), ZSH_CONFIG_SIZE, NULL, "0", "1024g"},
    {"STORE_MAX_CONNS", NULL, "0",
     "Most connections the TCP store keeps open; past it a new one evicts the oldest that has "
     "not completed its handshake. 0: 64 + the number of ranks, at most half the open-file limit "
     "(but room for every rank)",
     ZSH_BOOT_OFF(store_max_conns), ZSH_CONFIG_UINT, NULL, "0", "1048576"},
};

zsh_config_table_t zsh_boot_config_table = {
    "bootstrap", ZSH_CONFIG_ORDER_SERVICES + 10, zsh_boot_config_fields,
    sizeof(zsh_boot_config_fields) / sizeof(zsh_boot_config_fields[0]), sizeof(zsh_boot_config_t),
    NULL};

__attribute__((constructor)) static void zsh_boot_config_register(void)
{
    zsh_config_register(&zsh_boot_config_table);
}

zsh_status_t zsh_boot_config_read(zsh_boot_config_t *cfg)
{
    zsh_status_t status = zsh_config_read(&zsh_boot_config_table, cfg);

    /* PMIx launchers (mpirun, srun) name the job's namespace for every process. */
    cfg->pmix_launched = zsh_config_env("PMIX_NAMESPACE") != NULL;
    return status;
}
