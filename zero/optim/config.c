#include "optim/config.h"

#define ZSH_ZERO_OFF(_field) offsetof(zsh_zero_config_t, _field)

static const zsh_config_field_t zsh_zero_config_fields[] = {
    {"BUCKET_SIZE", NULL, "16m",
     "Bytes per flat bucket: parameters coalesced so one collective moves them all",
     ZSH_ZERO_OFF(bucket_size), ZSH_CONFIG_SIZE, NULL, "1k", "4g"},
    {"MAX_LIVE_BYTES", NULL, "256m",
     "Bytes of gathered parameter buckets kept live at stage 3 (fetched, cached, prefetched), "
     "and separately of gradient staging buffers at stages 2-3",
     ZSH_ZERO_OFF(max_live_bytes), ZSH_CONFIG_SIZE, NULL, "1k", "1024g"},
    {"PREFETCH", NULL, "2",
     "ZeRO stage 3: buckets gathered ahead of use in the recorded fetch order "
     "(0: none, at most 16)",
     ZSH_ZERO_OFF(prefetch), ZSH_CONFIG_UINT, NULL, "0", "16"}, /* fetch.c's window */
};

static zsh_config_table_t zsh_zero_config_table = {
    "zero", ZSH_CONFIG_ORDER_ZERO, zsh_zero_config_fields,
    sizeof(zsh_zero_config_fields) / sizeof(zsh_zero_config_fields[0]),
    sizeof(zsh_zero_config_t), NULL};

__attribute__((constructor)) static void zsh_zero_config_register(void)
{
    zsh_config_register(&zsh_zero_config_table);
}

zsh_status_t zsh_zero_config_read(zsh_zero_config_t *cfg)
{
    return zsh_config_read(&zsh_zero_config_table, cfg);
}
