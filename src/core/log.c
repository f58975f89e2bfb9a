#include "core/log.h"
#include "core/config.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <unistd.h>

static pthread_once_t  zsh_log_once = PTHREAD_ONCE_INIT;
static zsh_log_level_t zsh_log_threshold = ZSH_LOG_WARN;

static void zsh_log_init(void)
{
    zsh_config_t cfg;
    char err[256];

    /* A malformed ZSH_LOG_LEVEL is reported by the next zsh_config_read(). */
    if (zsh_config_read_quiet(&cfg, err, sizeof(err)) == ZSH_OK) {
        zsh_log_threshold = (zsh_log_level_t)cfg.log_level;
    }
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
