/*
 * A store connection's sockets: accepting it, moving its bytes both ways,
 * queuing replies, and dropping it. What its requests mean is in
 * store_server_request.c; when it is polled, in store_server.c.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif

#include "boot/store_auth.h"
#include "boot/store_server.h"
#include "core/clock.h"
#include "core/log.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
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

/* Mark @conn for reaping. Clean goodbyes are debug; a misbehaving peer is a
 * warning, because it may be a stray client on the wrong port. */
void zsh_store_conn_drop(zsh_store_server_t *srv, zsh_store_conn_t *conn, zsh_log_level_t level,
                         const char *why)
{
    if (!conn->dead) {
        zsh_log(level, "store :%d: dropping the connection from %s: %s", srv->port, conn->peer,
                why);
        conn->dead = true;
    }
}

void zsh_store_conn_free(zsh_store_conn_t *conn)
{
    if (conn->fd >= 0) {
        close(conn->fd);
    }
    zsh_store_buf_cleanup(&conn->in);
    zsh_store_buf_cleanup(&conn->out);
    free(conn);
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

void zsh_store_conn_reply(zsh_store_server_t *srv, zsh_store_conn_t *conn,
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

/* Read what the socket has, holding at most about one largest frame. */
static void zsh_store_conn_read(zsh_store_server_t *srv, zsh_store_conn_t *conn)
{
    zsh_store_buf_t *in = &conn->in;
    char why[128];
    size_t want;
    ssize_t n;

    while (!conn->dead && (zsh_store_buf_len(in) < zsh_store_conn_in_max(conn))) {
        if (zsh_store_buf_reserve(in, ZSH_STORE_READ_CHUNK) != ZSH_OK) {
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, zsh_last_error());
            return;
        }
        /* Before admission, no byte past a HELLO: the rest is the next read's. */
        want = in->cap - in->tail;
        if (want > zsh_store_conn_in_max(conn) - zsh_store_buf_len(in)) {
            want = zsh_store_conn_in_max(conn) - zsh_store_buf_len(in);
        }
        n = recv(conn->fd, in->data + in->tail, want, 0);
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

static size_t zsh_store_live_conns(const zsh_store_server_t *srv)
{
    size_t i, live = 0;

    for (i = 0; i < srv->nconns; i++) {
        live += !srv->conns[i]->dead;
    }
    return live;
}

/* Drop the oldest connection still in its handshake, closing its socket at
 * once so its descriptor is free for the next accept. Real ranks complete the
 * handshake in a round trip, so at a bound this costs only idle peers.
 * Returns false when every connection is admitted. */
static bool zsh_store_evict_one(zsh_store_server_t *srv, const char *why)
{
    zsh_store_conn_t *oldest = NULL, *conn;
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        conn = srv->conns[i];
        if (!conn->dead && !conn->admitted &&
            ((oldest == NULL) || (conn->accepted_at < oldest->accepted_at))) {
            oldest = conn;
        }
    }
    if (oldest == NULL) {
        return false;
    }
    zsh_store_conn_drop(srv, oldest, ZSH_LOG_INFO, why);
    close(oldest->fd);
    oldest->fd = -1;
    return true;
}

/* Queue the CHALLENGE that opens the handshake. */
static zsh_status_t zsh_store_conn_challenge(zsh_store_server_t *srv, zsh_store_conn_t *conn)
{
    zsh_store_frame_t challenge = {.op = ZSH_STORE_OP_CHALLENGE};
    zsh_status_t status = zsh_store_auth_random(conn->nonce, sizeof(conn->nonce));

    if (status != ZSH_OK) {
        return status;
    }
    challenge.flags = zsh_store_auth_keyed(srv->key) ? ZSH_STORE_FLAG_KEYED : 0;
    challenge.nonce = conn->nonce;
    return zsh_store_frame_encode(&challenge, &conn->out);
}

static zsh_status_t zsh_store_conn_add(zsh_store_server_t *srv, int fd,
                                       const struct sockaddr_storage *ss, socklen_t len)
{
    size_t cap = (srv->conns_cap != 0) ? srv->conns_cap * 2 : 16;
    zsh_store_conn_t *conn, **conns;
    char peer[sizeof(conn->peer)], why[192];
    int one = 1;

    zsh_store_peer_name(ss, len, peer, sizeof(peer));
    if (zsh_store_live_conns(srv) >= srv->max_conns) {
        snprintf(why, sizeof(why), "evicted to admit %s: the store holds its bound of %zu "
                 "connections (ZSH_STORE_MAX_CONNS) and this one had not completed its handshake",
                 peer, srv->max_conns);
        if (!zsh_store_evict_one(srv, why)) {
            zsh_log(ZSH_LOG_WARN, "store :%d: refusing the connection from %s: the store holds "
                    "its bound of %zu connections (ZSH_STORE_MAX_CONNS), all of them admitted",
                    srv->port, peer, srv->max_conns);
            return ZSH_ERR_INVALID_ARG;
        }
    }

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
    conn->fd          = fd;
    conn->last_io     = zsh_clock_now();
    conn->accepted_at = conn->last_io;
    conn->rank        = ZSH_STORE_NO_RANK;
    memcpy(conn->peer, peer, sizeof(peer));
    if (zsh_store_conn_challenge(srv, conn) != ZSH_OK) {
        zsh_store_buf_cleanup(&conn->out);
        free(conn);
        return ZSH_ERR_NO_MEMORY;
    }
    srv->conns[srv->nconns++] = conn;
    zsh_store_conn_flush(srv, conn);
    zsh_log(ZSH_LOG_DEBUG, "store :%d: connection from %s", srv->port, conn->peer);
    return ZSH_OK;
}

void zsh_store_server_accept(zsh_store_server_t *srv)
{
    struct sockaddr_storage ss;
    zsh_status_t status;
    socklen_t len;
    int fd;

    for (;;) {
        len = sizeof(ss);
        fd  = accept4(srv->listen_fd, (struct sockaddr *)&ss, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            status = zsh_store_conn_add(srv, fd, &ss, len);
            if (status == ZSH_ERR_NO_MEMORY) {
                zsh_log(ZSH_LOG_WARN, "store :%d: out of memory: refusing a connection", srv->port);
            }
            if (status != ZSH_OK) {
                close(fd);
            }
            continue;
        }
        if ((errno == EINTR) || (errno == ECONNABORTED)) {
            continue;
        }
        /* Out of descriptors: idle peers must not lock the ranks out. */
        if (((errno == EMFILE) || (errno == ENFILE)) &&
            zsh_store_evict_one(srv, "evicted: the process ran out of file descriptors and "
                                     "this connection had not completed its handshake")) {
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

void zsh_store_conn_events(zsh_store_server_t *srv, zsh_store_conn_t *conn, short revents)
{
    /* Evicted during this pass: its descriptor may already name a new socket. */
    if (conn->dead) {
        return;
    }
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
