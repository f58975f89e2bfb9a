#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif

#include "boot/store.h"
#include "boot/store_frame.h"
#include "boot/store_table.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Bytes asked of recv() at a time. */
#define ZSH_STORE_READ_CHUNK (64u << 10)
/* How long accepting pauses when the process is out of descriptors, so the
 * still-readable listening socket does not spin the loop. */
#define ZSH_STORE_ACCEPT_PAUSE 0.1

typedef struct {
    int             fd;
    bool            dead;          /* reaped at the end of the loop iteration */
    bool            waiting;       /* a GET for a missing key is deferred */
    zsh_store_buf_t in, out;
    double          last_io;       /* last byte moved either way, for stall detection */
    double          wait_deadline; /* when the deferred GET is answered NOT_FOUND */
    size_t          wait_key_len;
    uint8_t         wait_key[ZSH_STORE_KEY_MAX];
    char            peer[INET6_ADDRSTRLEN + 16];
} zsh_store_conn_t;

struct zsh_store_server {
    pthread_t          thread;
    int                listen_fd;
    int                wake_fd[2];  /* stop() writes a byte to break poll() */
    int                port;
    double             timeout;
    double             accept_resume;
    zsh_store_table_t  table;
    zsh_store_conn_t **conns;
    size_t             nconns, conns_cap;
    struct pollfd     *pfds;
    size_t             pfds_cap;
};

/* ---- connections --------------------------------------------------------------- */

/* Mark @conn for reaping. Clean goodbyes are debug; a misbehaving peer is a
 * warning, because it may be a stray client on the wrong port. */
static void zsh_store_conn_drop(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                zsh_log_level_t level, const char *why)
{
    if (!conn->dead) {
        zsh_log(level, "store :%d: dropping the connection from %s: %s", srv->port, conn->peer,
                why);
        conn->dead = true;
    }
}

static void zsh_store_conn_free(zsh_store_conn_t *conn)
{
    close(conn->fd);
    zsh_store_buf_cleanup(&conn->in);
    zsh_store_buf_cleanup(&conn->out);
    free(conn);
}

/* A connection is stuck when it holds half a frame in or unsent bytes out. */
static bool zsh_store_conn_stuck(const zsh_store_conn_t *conn)
{
    return (zsh_store_buf_len(&conn->out) != 0) ||
           (!conn->waiting && (zsh_store_buf_len(&conn->in) != 0));
}

/* Send what the socket takes now; the loop polls for the rest. */
static void zsh_store_conn_flush(zsh_store_server_t *srv, zsh_store_conn_t *conn)
{
    zsh_store_buf_t *out = &conn->out;
    char why[128];
    ssize_t n;

    while (!conn->dead && (zsh_store_buf_len(out) != 0)) {
        n = send(conn->fd, out->data + out->head, zsh_store_buf_len(out), MSG_NOSIGNAL);
        if (n > 0) {
            zsh_store_buf_consume(out, (size_t)n);
            conn->last_io = zsh_clock_now();
        } else if ((errno == EAGAIN) || (errno == EWOULDBLOCK)) {
            return;
        } else if (errno != EINTR) {
            snprintf(why, sizeof(why), "send: %s", strerror(errno));
            zsh_store_conn_drop(srv, conn, ZSH_LOG_DEBUG, why);
        }
    }
}

static void zsh_store_conn_reply(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                 const zsh_store_frame_t *reply)
{
    /* The stall clock of an outgoing frame starts when it is queued, not at
     * the last byte moved before a long deferred GET. */
    if (zsh_store_buf_len(&conn->out) == 0) {
        conn->last_io = zsh_clock_now();
    }
    if (zsh_store_frame_encode(reply, &conn->out) != ZSH_OK) {
        zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, zsh_last_error());
        return;
    }
    zsh_store_conn_flush(srv, conn);
}

static void zsh_store_conn_reply_value(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                       const zsh_store_entry_t *entry)
{
    zsh_store_frame_t reply = {.op = ZSH_STORE_OP_VALUE};

    reply.value     = entry->value;
    reply.value_len = entry->value_len;
    zsh_store_conn_reply(srv, conn, &reply);
}

/* ---- requests ------------------------------------------------------------------ */

static void zsh_store_handle_set(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                 const zsh_store_frame_t *frame)
{
    zsh_store_frame_t ok = {.op = ZSH_STORE_OP_OK};
    zsh_store_entry_t *entry;
    zsh_store_conn_t *waiter;
    size_t i;

    if (zsh_store_table_put(&srv->table, frame, &entry) != ZSH_OK) {
        zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, "out of memory storing a value");
        return;
    }
    /* Acknowledge before waking waiters: a waiter may be rank 0 about to stop
     * the server once it sees this key, and the ack must be sent by then. */
    zsh_store_conn_reply(srv, conn, &ok);
    for (i = 0; i < srv->nconns; i++) {
        waiter = srv->conns[i];
        if (waiter->waiting && !waiter->dead && (waiter->wait_key_len == entry->key_len) &&
            (memcmp(waiter->wait_key, entry->key, entry->key_len) == 0)) {
            waiter->waiting = false;
            zsh_store_conn_reply_value(srv, waiter, entry);
        }
    }
}

static void zsh_store_handle_get(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                 const zsh_store_frame_t *frame)
{
    zsh_store_frame_t not_found = {.op = ZSH_STORE_OP_NOT_FOUND};
    zsh_store_entry_t *entry = zsh_store_table_find(&srv->table, frame->key, frame->key_len);

    if (entry != NULL) {
        zsh_store_conn_reply_value(srv, conn, entry);
    } else if (frame->wait_ms == 0) {
        zsh_store_conn_reply(srv, conn, &not_found);
    } else {
        conn->waiting       = true;
        conn->wait_deadline = zsh_clock_now() + frame->wait_ms * 1e-3;
        conn->wait_key_len  = frame->key_len;
        memcpy(conn->wait_key, frame->key, frame->key_len);
    }
}

/* Handle the whole frames buffered on @conn, in order, until it must wait for a
 * deferred GET or for the client to take its replies (which bounds what one
 * client can make the server buffer). Returns whether it handled any. */
static bool zsh_store_conn_process(zsh_store_server_t *srv, zsh_store_conn_t *conn)
{
    zsh_store_frame_t frame;
    zsh_store_decode_t result;
    bool handled = false;
    char err[256], why[320];
    size_t used;

    while (!conn->dead && !conn->waiting && (zsh_store_buf_len(&conn->out) == 0)) {
        result = zsh_store_frame_decode(zsh_store_buf_head(&conn->in), zsh_store_buf_len(&conn->in),
                                        &frame, &used, err, sizeof(err));
        if (result == ZSH_STORE_DECODE_PARTIAL) {
            break;
        }
        if (result == ZSH_STORE_DECODE_MALFORMED) {
            snprintf(why, sizeof(why), "malformed request: %s", err);
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, why);
            break;
        }
        if (frame.op == ZSH_STORE_OP_SET) {
            zsh_store_handle_set(srv, conn, &frame);
        } else if (frame.op == ZSH_STORE_OP_GET) {
            zsh_store_handle_get(srv, conn, &frame);
        } else {
            snprintf(why, sizeof(why), "a client sent the reply opcode %s",
                     zsh_store_op_name(frame.op));
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, why);
        }
        zsh_store_buf_consume(&conn->in, used);
        handled = true;
    }
    return handled;
}

/* Read what the socket has, holding at most about one largest frame. */
static void zsh_store_conn_read(zsh_store_server_t *srv, zsh_store_conn_t *conn)
{
    zsh_store_buf_t *in = &conn->in;
    char why[128];
    ssize_t n;

    while (!conn->dead && (zsh_store_buf_len(in) < ZSH_STORE_FRAME_MAX)) {
        if (zsh_store_buf_reserve(in, ZSH_STORE_READ_CHUNK) != ZSH_OK) {
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, zsh_last_error());
            return;
        }
        n = recv(conn->fd, in->data + in->tail, in->cap - in->tail, 0);
        if (n > 0) {
            in->tail += (size_t)n;
            conn->last_io = zsh_clock_now();
        } else if (n == 0) {
            /* Requests that arrived whole before the goodbye still count. */
            zsh_store_conn_process(srv, conn);
            if (zsh_store_conn_stuck(conn)) {
                zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, "closed in the middle of a frame");
            } else {
                zsh_store_conn_drop(srv, conn, ZSH_LOG_DEBUG, "closed by the client");
            }
        } else if ((errno == EAGAIN) || (errno == EWOULDBLOCK)) {
            return;
        } else if (errno != EINTR) {
            snprintf(why, sizeof(why), "recv: %s", strerror(errno));
            zsh_store_conn_drop(srv, conn, ZSH_LOG_DEBUG, why);
        }
    }
}

/* ---- the event loop --------------------------------------------------------------- */

static void zsh_store_peer_name(const struct sockaddr_storage *ss, socklen_t len, char *buf,
                                size_t buf_len)
{
    char host[INET6_ADDRSTRLEN], serv[16];

    if (getnameinfo((const struct sockaddr *)ss, len, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
        snprintf(buf, buf_len, "an unknown peer");
        return;
    }
    snprintf(buf, buf_len, (strchr(host, ':') != NULL) ? "[%s]:%s" : "%s:%s", host, serv);
}

static zsh_status_t zsh_store_conn_add(zsh_store_server_t *srv, int fd,
                                       const struct sockaddr_storage *ss, socklen_t len)
{
    size_t cap = (srv->conns_cap != 0) ? srv->conns_cap * 2 : 16;
    zsh_store_conn_t *conn, **conns;
    int one = 1;

    if (srv->nconns == srv->conns_cap) {
        conns = realloc(srv->conns, cap * sizeof(*conns));
        if (conns == NULL) {
            return ZSH_ERR_NO_MEMORY;
        }
        srv->conns     = conns;
        srv->conns_cap = cap;
    }
    conn = calloc(1, sizeof(*conn));
    if (conn == NULL) {
        return ZSH_ERR_NO_MEMORY;
    }
    /* Requests and replies are small and strictly alternate: Nagle would only delay them. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    conn->fd      = fd;
    conn->last_io = zsh_clock_now();
    zsh_store_peer_name(ss, len, conn->peer, sizeof(conn->peer));
    srv->conns[srv->nconns++] = conn;
    zsh_log(ZSH_LOG_DEBUG, "store :%d: connection from %s", srv->port, conn->peer);
    return ZSH_OK;
}

static void zsh_store_accept_all(zsh_store_server_t *srv)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int fd;

    for (;;) {
        len = sizeof(ss);
        fd  = accept4(srv->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            if (zsh_store_conn_add(srv, fd, &ss, len) != ZSH_OK) {
                zsh_log(ZSH_LOG_WARN, "store :%d: out of memory: refusing a connection", srv->port);
                close(fd);
            }
            continue;
        }
        if ((errno == EINTR) || (errno == ECONNABORTED)) {
            continue;
        }
        if ((errno != EAGAIN) && (errno != EWOULDBLOCK)) {
            zsh_log(ZSH_LOG_WARN, "store :%d: accept: %s; pausing new connections", srv->port,
                    strerror(errno));
            srv->accept_resume = zsh_clock_now() + ZSH_STORE_ACCEPT_PAUSE;
        }
        return;
    }
}

/* Answer the deferred GETs whose wait has run out. */
static void zsh_store_expire_waits(zsh_store_server_t *srv, double now)
{
    zsh_store_frame_t not_found = {.op = ZSH_STORE_OP_NOT_FOUND};
    zsh_store_conn_t *conn;
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        conn = srv->conns[i];
        if (!conn->dead && conn->waiting && (now >= conn->wait_deadline)) {
            conn->waiting = false;
            zsh_store_conn_reply(srv, conn, &not_found);
        }
    }
}

/* Drop connections that made no progress in the middle of a frame for the
 * store timeout: a stalled client must not hold memory and a slot forever. */
static void zsh_store_drop_stalled(zsh_store_server_t *srv, double now)
{
    zsh_store_conn_t *conn;
    char why[128];
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        conn = srv->conns[i];
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
        if (zsh_store_buf_len(&conn->in) < ZSH_STORE_FRAME_MAX) {
            srv->pfds[2 + i].events |= POLLIN;
        }
        if (zsh_store_buf_len(&conn->out) != 0) {
            srv->pfds[2 + i].events |= POLLOUT;
        }
    }
    return ZSH_OK;
}

static void zsh_store_conn_events(zsh_store_server_t *srv, zsh_store_conn_t *conn, short revents)
{
    /* POLLHUP without POLLIN: the peer is gone and nothing is left to read. */
    if ((revents & (POLLERR | POLLNVAL)) || ((revents & POLLHUP) && !(revents & POLLIN))) {
        zsh_store_conn_drop(srv, conn, ZSH_LOG_DEBUG, "the socket hung up or failed");
        return;
    }
    if (revents & POLLIN) {
        zsh_store_conn_read(srv, conn);
    }
    if (revents & POLLOUT) {
        zsh_store_conn_flush(srv, conn);
    }
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
        zsh_store_accept_all(srv);
    }
    for (i = 0; i < nconns; i++) {
        zsh_store_conn_events(srv, srv->conns[i], srv->pfds[2 + i].revents);
    }
    zsh_store_expire_waits(srv, zsh_clock_now());
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
        return zsh_error(ZSH_ERR_IO, "store: cannot listen on %s:%d: %s", host ? host : "*", port,
                         strerror(err));
    }
    getsockname(srv->listen_fd, (struct sockaddr *)&ss, &len);
    srv->port = ntohs((ss.ss_family == AF_INET6) ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                 : ((struct sockaddr_in *)&ss)->sin_port);
    return ZSH_OK;
}

zsh_status_t zsh_store_server_start(const char *host, int port, double timeout,
                                    zsh_store_server_t **server_p)
{
    zsh_store_server_t *srv;
    zsh_status_t status;
    int rc;

    if ((port < 0) || (port > 65535) || !(timeout > 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "store: port %d or timeout %g s out of range", port,
                         timeout);
    }
    srv = calloc(1, sizeof(*srv));
    if (srv == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "store: cannot allocate the server");
    }
    srv->listen_fd = -1;
    srv->timeout   = timeout;
    status         = zsh_store_listen(srv, host, port);
    if (status != ZSH_OK) {
        goto err_free_server;
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
    zsh_log(ZSH_LOG_DEBUG, "store: listening on %s:%d", host ? host : "*", srv->port);
    *server_p = srv;
    return ZSH_OK;

err_close_pipe:
    close(srv->wake_fd[0]);
    close(srv->wake_fd[1]);
err_close_listen:
    close(srv->listen_fd);
err_free_server:
    free(srv);
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
    close(server->wake_fd[0]);
    close(server->wake_fd[1]);
    close(server->listen_fd);
    free(server);
}
