#include "core/status.h"

#include "core/log.h"

#include <stdarg.h>
#include <stdio.h>

static _Thread_local char zsh_last_error_msg[ZSH_ERROR_MSG_MAX];

const char *zsh_status_string(zsh_status_t status)
{
    switch (status) {
    case ZSH_OK:              return "success";
    case ZSH_INPROGRESS:      return "operation in progress";
    case ZSH_ERR_INVALID_ARG: return "invalid argument";
    case ZSH_ERR_NO_MEMORY:   return "out of memory";
    case ZSH_ERR_UNSUPPORTED: return "unsupported operation";
    case ZSH_ERR_TRANSPORT:   return "transport error";
    case ZSH_ERR_TIMEOUT:     return "timed out";
    case ZSH_ERR_PEER_FAILED: return "peer failed";
    case ZSH_ERR_MISMATCH:    return "ranks disagree about a call";
    case ZSH_ERR_IO:          return "input/output error";
    case ZSH_ERR_ABORTED:     return "communicator aborted";
    case ZSH_ERR_INTERNAL:    return "internal error";
    }
    return "unknown status";
}

const char *zsh_last_error(void)
{
    return zsh_last_error_msg;
}

zsh_status_t zsh_error(zsh_status_t status, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(zsh_last_error_msg, sizeof(zsh_last_error_msg), fmt, ap);
    va_end(ap);
    /* Rejected arguments and aborts the caller asked for are the caller's to
     * report; real failures are ours. */
    zsh_log(((status == ZSH_ERR_INVALID_ARG) || (status == ZSH_ERR_ABORTED)) ? ZSH_LOG_DEBUG
                                                                             : ZSH_LOG_ERROR,
            "%s (%s)", zsh_last_error_msg, zsh_status_string(status));
    return status;
}

void zsh_error_prefix(const char *fmt, ...)
{
    char cause[ZSH_ERROR_MSG_MAX];
    size_t used;
    va_list ap;

    snprintf(cause, sizeof(cause), "%s", zsh_last_error_msg);
    va_start(ap, fmt);
    used = (size_t)vsnprintf(zsh_last_error_msg, sizeof(zsh_last_error_msg), fmt, ap);
    va_end(ap);
    if (used < sizeof(zsh_last_error_msg)) {
        snprintf(zsh_last_error_msg + used, sizeof(zsh_last_error_msg) - used, "%s", cause);
    }
}

void zsh_error_clear(void)
{
    zsh_last_error_msg[0] = '\0';
}

void zsh_error_set_quiet(const char *msg)
{
    snprintf(zsh_last_error_msg, sizeof(zsh_last_error_msg), "%s", msg);
}
