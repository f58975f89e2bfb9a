/*
 * Forked rank processes with a bound on their lifetime.
 */
#include "procs.h"
#include "src/boot/store_helpers.h"

#include "core/clock.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void zsh_proc_say(int report, const char *fmt, ...)
{
    char line[ZSH_PROCS_REPORT_MAX];
    va_list ap;
    int len;

    va_start(ap, fmt);
    len = vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (len > 0) {
        (void)write(report, line, ((size_t)len < sizeof(line)) ? (size_t)len : sizeof(line) - 1);
    }
}

/* Block until the parent says every live rank is done (or it is gone). */
static void zsh_procs_hold(int release_fd)
{
    struct pollfd pfd = {release_fd, POLLIN, 0};

    (void)poll(&pfd, 1, 60 * 1000);
}

static void zsh_procs_child(int rank, int n, int port, const char *const *env, zsh_proc_fn_t fn,
                            void *arg, int fd, int release_fd)
{
    char value[32];
    zsh_comm_t *comm;
    int i, code = 0;

    snprintf(value, sizeof(value), "%d", rank);
    setenv("ZSH_RANK", value, 1);
    snprintf(value, sizeof(value), "%d", n);
    setenv("ZSH_WORLD_SIZE", value, 1);
    snprintf(value, sizeof(value), "%d", port);
    setenv("ZSH_MASTER_PORT", value, 1);
    setenv("ZSH_MASTER_ADDR", "127.0.0.1", 1);
    setenv("ZSH_BOOTSTRAP", "env", 1);
    for (i = 0; (env != NULL) && (env[i] != NULL); i++) {
        putenv((char *)env[i]);
    }
    if (zsh_comm_init(&comm) != ZSH_OK) {
        zsh_proc_say(fd, "init-failed %s\n", zsh_last_error());
        _exit(2);
    }
    fn(comm, arg, fd);
    zsh_proc_say(fd, "done\n");
    zsh_procs_hold(release_fd);
    if (zsh_comm_destroy(comm) != ZSH_OK) {
        zsh_proc_say(fd, "destroy-failed %s\n", zsh_last_error());
        code = 2;
    }
    close(fd);
    _exit(code);
}

/* Append what rank @p has written so far. */
static void zsh_procs_drain(zsh_proc_t *p, int fd)
{
    size_t used = strlen(p->report);
    ssize_t got;

    while (used + 1 < sizeof(p->report)) {
        got = read(fd, p->report + used, sizeof(p->report) - 1 - used);
        if (got <= 0) {
            break;
        }
        used += (size_t)got;
        p->report[used] = '\0';
    }
}

void zsh_procs_run(int n, double bound, const char *const *env, zsh_proc_fn_t fn, void *arg,
                   zsh_proc_t *procs)
{
    const struct timespec pause = {0, 5 * 1000 * 1000};
    int fds[ZSH_PROCS_MAX][2], release[2], port = free_port();
    bool released = false;
    double deadline;
    int r, k, left = n, done;

    fflush(NULL); /* children must not repeat the parent's buffered output */
    if (pipe(release) != 0) {
        release[0] = release[1] = -1;
    }
    for (r = 0; r < n; r++) {
        memset(&procs[r], 0, sizeof(procs[r]));
        if (pipe(fds[r]) != 0) {
            fds[r][0] = fds[r][1] = -1;
        }
        procs[r].pid = fork();
        if (procs[r].pid == 0) {
            for (k = 0; k <= r; k++) {
                close(fds[k][0]);
            }
            close(release[1]);
            zsh_procs_child(r, n, port, env, fn, arg, fds[r][1], release[0]);
        }
        close(fds[r][1]);
        fcntl(fds[r][0], F_SETFL, O_NONBLOCK);
    }
    close(release[0]);
    deadline = zsh_clock_now() + bound;
    while ((left > 0) && (zsh_clock_now() < deadline)) {
        for (r = 0, done = 0; r < n; r++) {
            done += procs[r].reaped || (strstr(procs[r].report, "\ndone\n") != NULL) ||
                    (strncmp(procs[r].report, "done\n", 5) == 0);
        }
        if ((done == n) && !released) {
            close(release[1]); /* every live rank is done: let them all go */
            released = true;
        }
        for (r = 0; r < n; r++) {
            zsh_procs_drain(&procs[r], fds[r][0]);
            if (!procs[r].reaped && (procs[r].pid > 0) &&
                (waitpid(procs[r].pid, &procs[r].status, WNOHANG) == procs[r].pid)) {
                procs[r].reaped = true;
                left--;
            }
        }
        nanosleep(&pause, NULL);
    }
    if (!released) {
        close(release[1]);
    }
    for (r = 0; r < n; r++) {
        if (!procs[r].reaped && (procs[r].pid > 0)) {
            kill(procs[r].pid, SIGKILL); /* hung: the test fails on it */
            waitpid(procs[r].pid, NULL, 0);
        }
        zsh_procs_drain(&procs[r], fds[r][0]);
        close(fds[r][0]);
    }
}

bool zsh_proc_exited(const zsh_proc_t *p, int code)
{
    return p->reaped && WIFEXITED(p->status) && (WEXITSTATUS(p->status) == code);
}

bool zsh_proc_killed_by(const zsh_proc_t *p, int sig)
{
    return p->reaped && WIFSIGNALED(p->status) && (WTERMSIG(p->status) == sig);
}

const char *zsh_proc_line(const zsh_proc_t *p, const char *key, char *buf, size_t len)
{
    const char *line = p->report;
    size_t klen      = strlen(key), n;
    const char *end;

    buf[0] = '\0';
    while (*line != '\0') {
        end = strchr(line, '\n');
        n   = (end != NULL) ? (size_t)(end - line) : strlen(line);
        if ((n > klen) && (strncmp(line, key, klen) == 0) && (line[klen] == ' ')) {
            n -= klen + 1;
            n  = (n < len - 1) ? n : len - 1;
            memcpy(buf, line + klen + 1, n);
            buf[n] = '\0';
            return buf;
        }
        line = (end != NULL) ? end + 1 : line + n;
    }
    return buf;
}

double zsh_proc_value(const zsh_proc_t *p, const char *key, double dflt)
{
    char buf[ZSH_PROCS_REPORT_MAX];
    char *end;
    double v;

    zsh_proc_line(p, key, buf, sizeof(buf));
    v = strtod(buf, &end);
    return (end == buf) ? dflt : v;
}
