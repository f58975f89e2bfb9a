/*
 * What the two halves of the nodes' agreement share: agree.c (what the
 * nodes say to each other and decide) and agree_io.c (the sockets and
 * lines that carry it).
 */
#ifndef ZSH_RUN_AGREE_H_
#define ZSH_RUN_AGREE_H_

#include "run/run.h"

#include <stdbool.h>
#include <stddef.h>

/* Seconds on the monotonic clock. */
double zsh_run_agree_now(void);
/* The agreement's port: the one above --master-port. */
int zsh_run_agree_port(const zsh_run_job_t *job);
/* Listen on the agreement's port on every address, into @job->agree_fd:
 * 0, or 1 with the message printed. */
int zsh_run_agree_bind(zsh_run_job_t *job);
/* The next connection to listener @lfd by @deadline, its peer's address in
 * @addr ("" where not IPv4): the socket, or -1 at the deadline. */
int zsh_run_agree_accept(int lfd, double deadline, char *addr, size_t size);
/* Connect to the agreement's port at @host by @deadline; with @retry, a
 * refusal (a node not listening yet) is tried again until then. The
 * socket, or -1 with the reason in @why. */
int zsh_run_agree_connect(const char *host, const zsh_run_job_t *job, double deadline,
                          bool retry, char *why, size_t size);
/* One line from @fd into @buf (@size bytes, the newline dropped) by
 * @deadline: its length, or -1 (the deadline, the end, or too long). */
int zsh_run_agree_read(int fd, char *buf, int size, double deadline);
/* Write @line whole; a node that is gone is ignored. */
void zsh_run_agree_write(int fd, const char *line);

#endif
