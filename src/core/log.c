#include "core/log.h"

#include "core/config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

#include <stddef.h>

typedef struct zsh_log_config {
    int level; /* zsh_log_level_t */
} zsh_log_config_t;

static const char *const zsh_log_level_names[] = {"error", "warn", "info", "debug", "trace", NULL};

static const zsh_config_field_t zsh_log_config_fields[] = {
    {"LOG_LEVEL", NULL, "warn", "Messages printed to stderr: error, warn, info, debug or trace",
     offsetof(zsh_log_config_t, level), ZSH_CONFIG_ENUM, zsh_log_level_names, NULL, NULL},
};

static zsh_config_table_t zsh_log_config_table = {
    "logging", ZSH_CONFIG_ORDER_SERVICES, zsh_log_config_fields, 1, sizeof(zsh_log_config_t),
    NULL};

__attribute__((constructor)) static void zsh_log_config_register(void)
{
    zsh_config_register(&zsh_log_config_table);
}

static pthread_once_t  zsh_log_once = PTHREAD_ONCE_INIT;
static zsh_log_level_t zsh_log_threshold = ZSH_LOG_WARN;

static void zsh_log_init(void)
{
    zsh_log_config_t cfg;
    char err[256];

    /* Quietly: the logger cannot report its own malformed level through itself,
     * and the first zsh_comm_init() names it (zsh_log_check_config). */
    if (zsh_config_read_quiet(&zsh_log_config_table, &cfg, err, sizeof(err)) == ZSH_OK) {
        zsh_log_threshold = (zsh_log_level_t)cfg.level;
    }
}

zsh_status_t zsh_log_check_config(void)
{
    zsh_log_config_t cfg;

    return zsh_config_read(&zsh_log_config_table, &cfg);
}

zsh_log_level_t zsh_log_level(void)
{
    pthread_once(&zsh_log_once, zsh_log_init);
    return zsh_log_threshold;
}

void zsh_log(zsh_log_level_t level, const char *fmt, ...)
{
    static const char *names[] = {"ERROR", "WARN", "INFO", "DEBUG", "TRACE"};
    char line[1400];
    va_list ap;

    if (level > zsh_log_level()) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    fprintf(stderr, "[zsh %d] %s %s\n", (int)getpid(), names[level], line);
}
