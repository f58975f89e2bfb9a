#include "topo/config.h"

#include "core/status.h"
#include "topo/topo.h"

#include <stddef.h>
#include <string.h>

static const zsh_config_field_t zsh_topo_config_fields[] = {
    {"NODE_NAME", NULL, "",
     "Name of this rank's node in the rank map instead of the host name (at most 63 "
     "characters): ranks of one machine under different names count as different nodes, as on "
     "a cluster; ranks of different machines (boot ids) stay apart whatever their names",
     offsetof(zsh_topo_config_t, node_name), ZSH_CONFIG_STRING, NULL, NULL, NULL},
};

zsh_config_table_t zsh_topo_config_table = {
    "topology", ZSH_CONFIG_ORDER_SERVICES + 20, zsh_topo_config_fields,
    sizeof(zsh_topo_config_fields) / sizeof(zsh_topo_config_fields[0]),
    sizeof(zsh_topo_config_t), NULL};

__attribute__((constructor)) static void zsh_topo_config_register(void)
{
    zsh_config_register(&zsh_topo_config_table);
}

zsh_status_t zsh_topo_config_read(zsh_topo_config_t *cfg)
{
    zsh_status_t status = zsh_config_read(&zsh_topo_config_table, cfg);

    if (status != ZSH_OK) {
        return status;
    }
    if (strlen(cfg->node_name) >= ZSH_TOPO_HOST_MAX) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "ZSH_NODE_NAME='%.*s...' is longer than %d "
                         "characters", 16, cfg->node_name, ZSH_TOPO_HOST_MAX - 1);
    }
    return ZSH_OK;
}
