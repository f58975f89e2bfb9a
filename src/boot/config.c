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
