/*
 * Status codes and the thread-local last error.
 *
 * The place that first detects a failure calls zsh_error(): it records a
 * message for zsh_last_error(), logs it once, and returns the status so the
 * caller can write `return zsh_error(...)`. Callers further up only pass the
 * status on, so each failure is described exactly once, where it is known best.
 */
#ifndef ZSH_CORE_STATUS_H_
#define ZSH_CORE_STATUS_H_

#include <zeroshard.h>

#define ZSH_ERROR_MSG_MAX 1024

zsh_status_t zsh_error(zsh_status_t status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Put context in front of the thread's last error ("allgather seq 3: ...")
 * without logging it again: the code that detected it already did. */
void zsh_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Put back a message saved from zsh_last_error(), without logging: for code
 * that must run cleanup which may fail again after the error it reports. */
void zsh_error_set_quiet(const char *msg);

/* Forget the thread's last error (tests use it to check that a call set one). */
void zsh_error_clear(void);

#endif
