/*
 * Jobs of real processes for fault tests: each rank is a forked child
 * bootstrapped through the torchrun-style store, so one can be killed with
 * SIGKILL while the others go on. Every job runs under a bound: a rank still
 * alive when it passes is killed and counted as hung.
 */
#ifndef ZSH_TESTS_FAULT_PROCS_H_
#define ZSH_TESTS_FAULT_PROCS_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZSH_PROCS_MAX        16
#define ZSH_PROCS_REPORT_MAX 4096

/* A rank's body: runs between zsh_comm_init() and zsh_comm_destroy(); what
 * it says with zsh_proc_say(@report, ...) reaches the parent. */
typedef void (*zsh_proc_fn_t)(zsh_comm_t *comm, void *arg, int report);

/* Send a line to the parent at once, with no buffer on the heap: a rank
 * whose job failed may have transfers still landing in freed memory. */
void zsh_proc_say(int report, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct zsh_proc {
    pid_t  pid;
    bool   reaped;      /* ended within the bound */
    int    status;      /* waitpid() status, once reaped */
    char   report[ZSH_PROCS_REPORT_MAX];
} zsh_proc_t;

/* Run @n ranks of @fn(comm, @arg, report) with the extra environment
 * variables @env ("NAME=value", NULL-terminated, may be NULL). A rank exits
 * 0 after destroying its communicator, 2 if init or destroy failed. Ranks
 * destroy their communicators only once every rank still alive has
 * returned from @fn, so that one rank's orderly exit is never what another
 * rank sees as a failure. */
void zsh_procs_run(int n, double bound, const char *const *env, zsh_proc_fn_t fn, void *arg,
                   zsh_proc_t *procs);

/* Whether rank @p ended by exiting with @code, or was killed by @sig. */
bool zsh_proc_exited(const zsh_proc_t *p, int code);
bool zsh_proc_killed_by(const zsh_proc_t *p, int sig);

/* The number after "@key " on the report's first line that starts with
 * @key, or @dflt. */
double zsh_proc_value(const zsh_proc_t *p, const char *key, double dflt);

/* The rest of the report's first line that starts with @key, or "". */
const char *zsh_proc_line(const zsh_proc_t *p, const char *key, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
