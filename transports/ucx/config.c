#include "ucx/config.h"

#include <stddef.h>

/* Switches: index 0 is off. */
static const char *const zsh_ucx_switch_names[] = {"0", "1", NULL};

#define ZSH_UCX_OFF(_field) offsetof(zsh_ucx_config_t, _field)

static const zsh_config_field_t zsh_ucx_config_fields[] = {
    {"KEEPALIVE", NULL, "1",
     "Seconds between the transport's liveness checks of peers: a rank that dies is reported "
     "as ZSH_ERR_PEER_FAILED on every communicator it belongs to within about twice this",
     ZSH_UCX_OFF(keepalive), ZSH_CONFIG_TIME, NULL, "0.01", "3600"},
    {"CMA", NULL, "1",
     "Cross-memory attach: 1 lets the direct algorithms, chosen above ZSH_DIRECT_MIN_SIZE when "
     "every rank of a communicator is on one node, copy straight between ranks' buffers with "
     "process_vm_readv and process_vm_writev (one copy instead of two). Where Yama's "
     "ptrace_scope is 1 this lets processes of the same user access ours, as Open MPI and UCX "
     "do; 0 keeps the rings",
     ZSH_UCX_OFF(cma), ZSH_CONFIG_ENUM, zsh_ucx_switch_names, NULL, NULL},
    {"SHM", NULL, "1",
     "Shared-memory mailboxes and boards: on ranks of one node, 1 sends the descriptor message "
     "of an eager call (with its data) or a direct one (with its addresses, then its \"done\" "
     "message) through shared slots instead of UCX, for lower latency: on two ranks into the "
     "peer's mailbox (up to 4 KiB of data), on more onto the rank's own board (up to 16 KiB), "
     "where every peer reads it in place. "
     "Needs what ZSH_CMA needs, and must be set alike on every rank; 0 sends through UCX",
     ZSH_UCX_OFF(shm), ZSH_CONFIG_ENUM, zsh_ucx_switch_names, NULL, NULL},
    {"SHM_MAX", NULL, "256m",
     "Address space, in bytes, that the shared-memory mailboxes and boards of ZSH_SHM may map "
     "in one process: each communicator that uses them maps about 84 KiB for each of its "
     "members on the node (its own and theirs), for as long as it lives. Creating a "
     "communicator that would go past this fails with a message naming it; lower it to keep "
     "a job within ulimit -v, or set ZSH_SHM=0",
     ZSH_UCX_OFF(shm_max), ZSH_CONFIG_SIZE, NULL, "4k", "1024g"},
};

static zsh_config_table_t zsh_ucx_config_table = {
    "transport: ucx", ZSH_CONFIG_ORDER_TRANSPORTS, zsh_ucx_config_fields,
    sizeof(zsh_ucx_config_fields) / sizeof(zsh_ucx_config_fields[0]), sizeof(zsh_ucx_config_t),
    NULL};

__attribute__((constructor)) static void zsh_ucx_config_register(void)
{
    zsh_config_register(&zsh_ucx_config_table);
}

zsh_status_t zsh_ucx_config_read(zsh_ucx_config_t *cfg)
{
    return zsh_config_read(&zsh_ucx_config_table, cfg);
}
