/*
 * The bootstrap store server's event loop, and its start and stop.
 * store_server.h says how the server's files divide the rest.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif

#include "boot/store_auth.h"
#include "boot/store_server.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the event loop --------------------------------------------------------------- */

/* Drop connections that made no progress in the middle of a frame for the
 * store timeout: a stalled client must not hold memory and a slot forever. */
static void zsh_store_drop_stalled(zsh_store_server_t *srv, double now)
{
    zsh_store_conn_t *conn;
    char why[128];
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        conn = srv->conns[i];
        if (!conn->dead && !conn->admitted &&
            (now >= conn->accepted_at + srv->handshake_timeout)) {
            snprintf(why, sizeof(why), "did not complete the handshake within %.3g s",
                     srv->handshake_timeout);
            zsh_store_conn_drop(srv, conn, ZSH_LOG_INFO, why);
        }
        if (!conn->dead && zsh_store_conn_stuck(conn) && (now >= conn->last_io + srv->timeout)) {
            snprintf(why, sizeof(why), "no progress for %.3g s in the middle of a frame",
                     srv->timeout);
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, why);
        }
    }
}

/* Milliseconds poll() may sleep: until the next deferred GET or stall expires. */
static int zsh_store_poll_timeout(const zsh_store_server_t *srv)
{
    const zsh_store_conn_t *conn;
    double next = -1;
    size_t i;

    if (srv->accept_resume != 0) {
        next = srv->accept_resume;
    }
    for (i = 0; i < srv->nconns; i++) {
        conn = srv->conns[i];
        if (conn->waiting && ((next < 0) || (conn->wait_deadline < next))) {
            next = conn->wait_deadline;
        }
        if (zsh_store_conn_stuck(conn) && ((next < 0) || (conn->last_io + srv->timeout < next))) {
            next = conn->last_io + srv->timeout;
        }
        if (!conn->admitted &&
            ((next < 0) || (conn->accepted_at + srv->handshake_timeout < next))) {
            next = conn->accepted_at + srv->handshake_timeout;
        }
    }
    return (next < 0) ? -1 : zsh_clock_ms_left(next, INT_MAX);
}

/* pfds[0] is the wake pipe, pfds[1] the listening socket, pfds[2 + i] conns[i]. */
static zsh_status_t zsh_store_build_pollfds(zsh_store_server_t *srv)
{
    size_t n = srv->nconns + 2, i;
    struct pollfd *pfds;
    zsh_store_conn_t *conn;

    if (n > srv->pfds_cap) {
        pfds = realloc(srv->pfds, 2 * n * sizeof(*pfds));
        if (pfds == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "store :%d: cannot poll %zu sockets", srv->port, n);
        }
        srv->pfds     = pfds;
        srv->pfds_cap = 2 * n;
    }
    if ((srv->accept_resume != 0) && (zsh_clock_now() >= srv->accept_resume)) {
        srv->accept_resume = 0;
    }
    srv->pfds[0] = (struct pollfd){.fd = srv->wake_fd[0], .events = POLLIN};
    srv->pfds[1] = (struct pollfd){.fd = srv->listen_fd,
                                   .events = (srv->accept_resume == 0) ? POLLIN : 0};
    for (i = 0; i < srv->nconns; i++) {
        conn         = srv->conns[i];
        srv->pfds[2 + i] = (struct pollfd){.fd = conn->fd, .events = 0};
        if (zsh_store_buf_len(&conn->in) < zsh_store_conn_in_max(conn)) {
            srv->pfds[2 + i].events |= POLLIN;
        }
        if (zsh_store_buf_len(&conn->out) != 0) {
            srv->pfds[2 + i].events |= POLLOUT;
        }
    }
    return ZSH_OK;
}

static void zsh_store_reap(zsh_store_server_t *srv)
{
    size_t i, kept = 0;

    for (i = 0; i < srv->nconns; i++) {
        if (srv->conns[i]->dead) {
            zsh_store_conn_free(srv->conns[i]);
        } else {
            srv->conns[kept++] = srv->conns[i];
        }
    }
    srv->nconns = kept;
}

/* One pass: wait for sockets or timers, move bytes, handle requests. Returns
 * false once stop() asked the loop to end. */
static bool zsh_store_loop_once(zsh_store_server_t *srv)
{
    size_t i, nconns = srv->nconns;
    bool progress;

    if (zsh_store_build_pollfds(srv) != ZSH_OK) {
        return false;
    }
    if ((poll(srv->pfds, nconns + 2, zsh_store_poll_timeout(srv)) < 0) && (errno != EINTR)) {
        zsh_log(ZSH_LOG_ERROR, "store :%d: poll: %s; the store stops serving", srv->port,
                strerror(errno));
        return false;
    }
    if (srv->pfds[0].revents != 0) {
        return false;
    }
    if (srv->pfds[1].revents & POLLIN) {
        zsh_store_server_accept(srv);
    }
    for (i = 0; i < nconns; i++) {
        zsh_store_conn_events(srv, srv->conns[i], srv->pfds[2 + i].revents);
    }
    zsh_store_server_expire_waits(srv, zsh_clock_now());
    /* A reply can release a waiter whose next request is already buffered. */
    do {
        progress = false;
        for (i = 0; i < srv->nconns; i++) {
            progress |= zsh_store_conn_process(srv, srv->conns[i]);
        }
    } while (progress);
    zsh_store_drop_stalled(srv, zsh_clock_now());
    zsh_store_reap(srv);
    return true;
}

static void *zsh_store_server_main(void *arg)
{
    zsh_store_server_t *srv = arg;
    bool running = true;

    while (running) {
        running = zsh_store_loop_once(srv);
    }
    return NULL;
}

/* ---- start and stop ---------------------------------------------------------------- */

/* A listening socket for @ai, or -1 with errno set. */
static int zsh_store_listen_on(const struct addrinfo *ai)
{
    int fd, one = 1, zero = 0, saved;

    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        return -1;
    }
    /* A restarted job reuses MASTER_PORT while old connections linger in TIME_WAIT. */
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (ai->ai_family == AF_INET6) {
        /* Take IPv4 clients too, so MASTER_ADDR may name either family. */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero));
    }
    if ((bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) || (listen(fd, SOMAXCONN) != 0)) {
        saved = errno;
        close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* Listen on the first address of @host that works, IPv6 first (see above). */
static zsh_status_t zsh_store_listen(zsh_store_server_t *srv, const char *host, int port)
{
    struct addrinfo hints = {.ai_flags    = AI_PASSIVE | AI_NUMERICSERV,
                             .ai_family   = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res, *ai;
    struct sockaddr_storage ss;
    socklen_t len = sizeof(ss);
    zsh_status_t status;
    int rc, pass, err = EADDRNOTAVAIL;
    char serv[16];

    snprintf(serv, sizeof(serv), "%d", port);
    rc = getaddrinfo(host, serv, &hints, &res);
    if (rc != 0) {
        return zsh_error(ZSH_ERR_IO, "store: cannot resolve the listen address %s: %s",
                         host ? host : "*", gai_strerror(rc));
    }
    for (pass = 0; (pass < 2) && (srv->listen_fd < 0); pass++) {
        for (ai = res; (ai != NULL) && (srv->listen_fd < 0); ai = ai->ai_next) {
            if ((ai->ai_family == AF_INET6) == (pass == 0)) {
                srv->listen_fd = zsh_store_listen_on(ai);
                err            = errno;
            }
        }
    }
    freeaddrinfo(res);
    if (srv->listen_fd < 0) {
        status = zsh_error(ZSH_ERR_IO, "store: cannot listen on %s:%d: %s", host ? host : "*",
                           port, strerror(err));
        errno  = err;
        return status;
    }
    getsockname(srv->listen_fd, (struct sockaddr *)&ss, &len);
    srv->port = ntohs((ss.ss_family == AF_INET6) ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return ZSH_OK;
}

/* The bounds @opts leaves at 0: a job of N ranks holds a few keys per rank per
 * allgather and a few kilobytes per key, and opens one connection per rank;
 * the defaults leave ample room over that. Without a world size, room for a
 * large job. */
static void zsh_store_server_bounds(zsh_store_server_t *srv, const zsh_store_server_opts_t *opts)
{
    size_t n = opts->world_size;
    struct rlimit lim;

    srv->max_keys  = (opts->max_keys != 0) ? opts->max_keys
                     : (n != 0)            ? 1024 + 64 * n
                                           : (1u << 20);
    srv->max_bytes = (opts->max_bytes != 0) ? opts->max_bytes
                     : (n != 0)             ? (64u << 20) + n * (1u << 20)
                                            : ((size_t)1 << 30);
    srv->max_conns = (opts->max_conns != 0) ? opts->max_conns
                     : (n != 0)             ? 64 + n
                                            : 4096;
    /* By default the store keeps at most half of the process's descriptors,
     * so idle peers cannot starve what the rank opens after the bootstrap
     * (UCX), but always room for every rank. */
    if ((opts->max_conns == 0) && (getrlimit(RLIMIT_NOFILE, &lim) == 0) &&
        (lim.rlim_cur != RLIM_INFINITY) && (srv->max_conns > lim.rlim_cur / 2)) {
        srv->max_conns = (lim.rlim_cur / 2 > n + 8) ? (size_t)lim.rlim_cur / 2 : n + 8;
    }
}

/* Once per process: a store without a job key admits whoever reaches it. */
static void zsh_store_warn_unauthenticated(const zsh_store_server_t *srv, const char *host)
{
    static atomic_flag logged = ATOMIC_FLAG_INIT;

    if (!atomic_flag_test_and_set(&logged)) {
        zsh_log(ZSH_LOG_INFO, "store %s:%d: no job key (ZSH_JOB_KEY) is set, so the store is "
                "unauthenticated: any process that reaches it may join or feed it data",
                host ? host : "*", srv->port);
    }
}

zsh_status_t zsh_store_server_start(const char *host, int port, double timeout,
                                    zsh_store_server_t **server_p)
{
    zsh_store_server_opts_t opts = {.host = host, .port = port, .timeout = timeout,
                                    .owner_rank = -1};

    return zsh_store_server_start_opts(&opts, server_p);
}

/* The rank of the process starting the server is taken before any client can
 * connect: a duplicate of it must find it taken, not take it first. */
static zsh_status_t zsh_store_claim_owner(zsh_store_server_t *srv, int rank)
{
    char host[256] = "", err[ZSH_STORE_KEY_MAX + 128];

    if (rank < 0) {
        return ZSH_OK;
    }
    gethostname(host, sizeof(host) - 1);
    if (!zsh_store_claim_rank(srv, (uint32_t)rank, (uint32_t)getpid(), (const uint8_t *)host,
                              strlen(host), err, sizeof(err))) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "store :%d: %s", srv->port, err);
    }
    return ZSH_OK;
}

zsh_status_t zsh_store_server_start_opts(const zsh_store_server_opts_t *opts,
                                         zsh_store_server_t **server_p)
{
    zsh_store_server_t *srv;
    zsh_status_t status;
    int rc, saved;

    if ((opts->port < 0) || (opts->port > 65535) || !(opts->timeout > 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "store: port %d or timeout %g s out of range",
                         opts->port, opts->timeout);
    }
    srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "store: cannot allocate the server");
    }
    srv->listen_fd         = -1;
    srv->timeout           = opts->timeout;
    srv->handshake_timeout = (opts->timeout < ZSH_STORE_HANDSHAKE_TIMEOUT)
                                 ? opts->timeout : ZSH_STORE_HANDSHAKE_TIMEOUT;
    srv->world_size        = opts->world_size;
    zsh_store_server_bounds(srv, opts);
    if (zsh_store_auth_keyed(opts->key) && ((srv->key = strdup(opts->key)) == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "store: cannot copy the job key");
        goto err_free_server;
    }
    status = zsh_store_listen(srv, opts->host, opts->port);
    if (status != ZSH_OK) {
        goto err_free_server;
    }
    status = zsh_store_claim_owner(srv, opts->owner_rank);
    if (status != ZSH_OK) {
        goto err_close_listen;
    }
    if (pipe2(srv->wake_fd, O_CLOEXEC | O_NONBLOCK) != 0) {
        status = zsh_error(ZSH_ERR_IO, "store :%d: pipe: %s", srv->port, strerror(errno));
        goto err_close_listen;
    }
    rc = pthread_create(&srv->thread, NULL, zsh_store_server_main, srv);
    if (rc != 0) {
        status = zsh_error(ZSH_ERR_INTERNAL, "store :%d: cannot start its thread: %s", srv->port,
                           strerror(rc));
        goto err_close_pipe;
    }
    zsh_log(ZSH_LOG_DEBUG, "store: listening on %s:%d", opts->host ? opts->host : "*",
            srv->port);
    if (!zsh_store_auth_keyed(srv->key)) {
        zsh_store_warn_unauthenticated(srv, opts->host);
    }
    *server_p = srv;
    return ZSH_OK;

err_close_pipe:
    close(srv->wake_fd[0]);
    close(srv->wake_fd[1]);
err_close_listen:
    close(srv->listen_fd);
err_free_server:
    /* Keep listen()'s errno for the caller (EADDRINUSE: is the port another store's?). */
    saved = errno;
    zsh_store_table_cleanup(&srv->table);
    free(srv->key);
    free(srv);
    errno = saved;
    return status;
}

int zsh_store_server_port(const zsh_store_server_t *server)
{
    return server->port;
}

void zsh_store_server_stop(zsh_store_server_t *server)
{
    const char byte = 1;
    ssize_t n;
    size_t i;

    if (server == NULL) {
        return;
    }
    do {
        n = write(server->wake_fd[1], &byte, 1);
    } while ((n < 0) && (errno == EINTR));
    pthread_join(server->thread, NULL);
    for (i = 0; i < server->nconns; i++) {
        zsh_store_conn_free(server->conns[i]);
    }
    free(server->conns);
    free(server->pfds);
    zsh_store_table_cleanup(&server->table);
    free(server->key);
    close(server->wake_fd[0]);
    close(server->wake_fd[1]);
    close(server->listen_fd);
    free(server);
}
