/*
 * A sticky error: the first failure of something that cannot go on after
 * it (an optimizer whose collective failed, a tier whose I/O failed), kept
 * with its message so that every later call re-raises it naming the cause,
 * long after the thread's last error has moved on. Later failures never
 * replace it.
 */
#ifndef ZSH_CORE_STICKY_H_
#define ZSH_CORE_STICKY_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stdio.h>

#define ZSH_STICKY_MSG_MAX 768

typedef struct zsh_sticky {
    zsh_status_t status; /* ZSH_OK until the first failure */
    char         msg[ZSH_STICKY_MSG_MAX];
} zsh_sticky_t;

/* Keep @status, with the thread's last error as its message, unless @status
 * is ZSH_OK or a failure is kept already; returns @status. */
static inline zsh_status_t zsh_sticky_set(zsh_sticky_t *s, zsh_status_t status)
{
    if ((status != ZSH_OK) && (s->status == ZSH_OK)) {
        s->status = status;
        snprintf(s->msg, sizeof(s->msg), "%s", zsh_last_error());
    }
    return status;
}

static inline bool zsh_sticky_failed(const zsh_sticky_t *s)
{
    return s->status != ZSH_OK;
}

#endif
