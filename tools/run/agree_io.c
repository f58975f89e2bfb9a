/*
 * The sockets of the nodes' agreement (agree.c): one listener on the port
 * above --master-port on the node that coordinates, one short connection per
 * node and exchange, lines of text each way, every wait bounded by a
 * deadline on the monotonic clock.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "run/agree.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* How often a node that is refused tries again, in seconds. */
#define ZSH_RUN_AGREE_RETRY 0.05

double zsh_run_agree_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int zsh_run_agree_port(const zsh_run_job_t *job)
{
    return atoi(job->master_port) + 1;
}

/* Milliseconds until @deadline, at least 0. */
static int zsh_run_agree_ms(double deadline)
{
    double left = deadline - zsh_run_agree_now();

    return (left <= 0) ? 0 : (int)(left * 1e3) + 1;
}

int zsh_run_agree_bind(zsh_run_job_t *job)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    int one = 1, fd, port = zsh_run_agree_port(job);

    sa.sin_port = htons((uint16_t)port);
    fd          = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "zshrun: socket: %s\n", strerror(errno));
        return 1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) || (listen(fd, 1024) != 0)) {
        fprintf(stderr, "zshrun: cannot listen on port %d for the nodes' restarts (--master-port "
                "%s + 1): %s\n", port, job->master_port, strerror(errno));
        close(fd);
        return 1;
    }
    job->agree_fd = fd;
    return 0;
}

int zsh_run_agree_accept(int lfd, double deadline, char *addr, size_t size)
{
    struct pollfd p = {.fd = lfd, .events = POLLIN};
    struct sockaddr_in sa;
    socklen_t len;
    int n, fd;

    for (;;) {
        n = zsh_run_agree_ms(deadline);
        if ((n <= 0) || (poll(&p, 1, n) <= 0)) {
            if ((n > 0) && (errno == EINTR)) {
                continue;
            }
            return -1;
        }
        len = sizeof(sa);
        fd  = accept4(lfd, (struct sockaddr *)&sa, &len, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        if ((sa.sin_family != AF_INET) ||
            (inet_ntop(AF_INET, &sa.sin_addr, addr, (socklen_t)size) == NULL)) {
            addr[0] = '\0';
        }
        return fd;
    }
}

/* One connection attempt to @ai by @deadline: the socket, or -1 with errno. */
static int zsh_run_agree_try(const struct addrinfo *ai, double deadline)
{
    struct pollfd p = {.events = POLLOUT};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), err = 0, n;
    socklen_t len = sizeof(err);

    if (fd < 0) {
        return -1;
    }
    p.fd = fd;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            goto err_close;
        }
        /* A host that is gone answers nothing: the deadline decides. */
        do {
            n = poll(&p, 1, zsh_run_agree_ms(deadline));
        } while ((n < 0) && (errno == EINTR));
        if (n <= 0) {
            errno = ETIMEDOUT;
            goto err_close;
        }
        if ((getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) || (err != 0)) {
            errno = err;
            goto err_close;
        }
    }
    /* Blocking again: the reads and writes poll on their own. */
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
err_close:
    err = errno;
    close(fd);
    errno = err;
    return -1;
}

int zsh_run_agree_connect(const char *host, const zsh_run_job_t *job, double deadline,
                          bool retry, char *why, size_t size)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char port[16];
    int fd, rc;

    snprintf(port, sizeof(port), "%d", zsh_run_agree_port(job));
    rc = getaddrinfo(host, port, &hints, &ai);
    if (rc != 0) {
        snprintf(why, size, "cannot resolve %s: %s", host, gai_strerror(rc));
        return -1;
    }
    for (;;) {
        fd = zsh_run_agree_try(ai, deadline);
        if ((fd >= 0) || !retry || (errno != ECONNREFUSED) ||
            (zsh_run_agree_now() + ZSH_RUN_AGREE_RETRY >= deadline)) {
            break;
        }
        usleep((useconds_t)(ZSH_RUN_AGREE_RETRY * 1e6));
    }
    if (fd < 0) {
        snprintf(why, size, "%s port %s cannot be reached: %s", host, port, strerror(errno));
    }
    freeaddrinfo(ai);
    return fd;
}

int zsh_run_agree_read(int fd, char *buf, int size, double deadline)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int len = 0, ms;
    ssize_t n;

    while (len < size - 1) {
        ms = zsh_run_agree_ms(deadline);
        if ((ms <= 0) || (poll(&p, 1, ms) <= 0)) {
            if ((ms > 0) && (errno == EINTR)) {
                continue;
            }
            return -1;
        }
        n = read(fd, buf + len, 1);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return len;
        }
        len++;
    }
    return -1;
}

void zsh_run_agree_write(int fd, const char *line)
{
    size_t off = 0, len = strlen(line);
    ssize_t n;

    while (off < len) {
        n = send(fd, line + off, len - off, MSG_NOSIGNAL);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return; /* the node is gone: it restarts nothing */
        }
        off += (size_t)n;
    }
}
