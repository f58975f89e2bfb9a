/*
 * Logging to stderr, filtered by ZSH_LOG_LEVEL. Every line names the process
 * so interleaved output of many ranks stays readable.
 */
#ifndef ZSH_CORE_LOG_H_
#define ZSH_CORE_LOG_H_

#include <zeroshard.h>

typedef enum {
    ZSH_LOG_ERROR,
    ZSH_LOG_WARN,
    ZSH_LOG_INFO,
    ZSH_LOG_DEBUG,
    ZSH_LOG_TRACE
} zsh_log_level_t;

void zsh_log(zsh_log_level_t level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The level in force; read once from the environment on first use. */
zsh_log_level_t zsh_log_level(void);

/* ZSH_OK, or ZSH_ERR_INVALID_ARG naming a malformed ZSH_LOG_LEVEL. */
zsh_status_t zsh_log_check_config(void);

#endif
