#include "boot/store.h"
#include "boot/store_client.h"
#include "boot/store_frame.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Retries of a refused connect back off from the first to the last delay. */
#define ZSH_STORE_RETRY_MIN_MS  10
#define ZSH_STORE_RETRY_MAX_MS  500



/* ---- connecting ---------------------------------------------------------------- */

/* Wait until @fd is ready for @events; 0 if it is, -1 with errno set (ETIMEDOUT
 * when @deadline passed first). */
int zsh_store_wait_fd(int fd, short events, double deadline)
{
    struct pollfd pfd = {.fd = fd, .events = events};
    int rc;

    do {
        rc = poll(&pfd, 1, zsh_clock_ms_left(deadline, INT_MAX));
    } while ((rc < 0) && (errno == EINTR));
    if (rc == 0) {
        errno = ETIMEDOUT;
        return -1;
    }
    return (rc < 0) ? -1 : 0;
}

/* A connected socket for @ai, or -1 with the reason in @why. */
static int zsh_store_connect_addr(const struct addrinfo *ai, double deadline, char *why,
                                  size_t why_len)
{
    int fd, err = 0, one = 1;
    socklen_t len = sizeof(err);

    fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        snprintf(why, why_len, "socket: %s", strerror(errno));
        return -1;
    }
    if ((connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) && (errno != EINPROGRESS)) {
        err = errno;
    } else if (zsh_store_wait_fd(fd, POLLOUT, deadline) != 0) {
        err = errno;
    } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) {
        err = errno;
    }
    if (err != 0) {
        snprintf(why, why_len, "connect: %s", strerror(err));
        close(fd);
        return -1;
    }
    /* Requests and replies are small and strictly alternate: Nagle would only delay them. */
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    return fd;
}

/* One attempt over every address of @host. Returns a socket, or -1 with the
 * reason in @why and *fatal_p telling whether trying again is pointless. */
static int zsh_store_connect_once(const char *host, int port, double deadline, char *why,
                                  size_t why_len, bool *fatal_p)
{
    struct addrinfo hints = {.ai_flags = AI_NUMERICSERV, .ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM};
    struct addrinfo *res, *ai;
    char serv[16];
    int rc, fd = -1;

    snprintf(serv, sizeof(serv), "%d", port);
    rc = getaddrinfo(host, serv, &hints, &res);
    if (rc != 0) {
        snprintf(why, why_len, "cannot resolve '%s': %s", host, gai_strerror(rc));
        /* A name not (yet) in DNS may appear as the job's nodes come up. */
        *fatal_p = (rc != EAI_AGAIN) && (rc != EAI_NONAME);
        return -1;
    }
    for (ai = res; (ai != NULL) && (fd < 0); ai = ai->ai_next) {
        fd = zsh_store_connect_addr(ai, deadline, why, why_len);
    }
    freeaddrinfo(res);
    *fatal_p = false;
    return fd;
}

/* A socket that the handshake failed on is closed and its buffers emptied. */
static void zsh_store_client_reset(zsh_store_client_t *client)
{
    close(client->fd);
    client->fd = -1;
    zsh_store_buf_cleanup(&client->in);
    zsh_store_buf_cleanup(&client->out);
}

/* torchrun starts ranks in any order: retry until rank 0 listens or the deadline. */
static zsh_status_t zsh_store_connect_retry(zsh_store_client_t *client, const char *host, int port)
{
    double start = zsh_clock_now(), deadline = start + client->timeout;
    int delay_ms = ZSH_STORE_RETRY_MIN_MS;
    bool fatal, closed_in_handshake = false;
    char why[256], hint[160] = "";
    zsh_status_t status;

    for (;;) {
        client->fd = zsh_store_connect_once(host, port, deadline, why, sizeof(why), &fatal);
        if (client->fd >= 0) {
            status = zsh_store_client_handshake(client, deadline);
            if (status != ZSH_ERR_PEER_FAILED) {
                if (status != ZSH_OK) {
                    zsh_store_client_reset(client);
                }
                return status;
            }
            /* Closed before the handshake ended: a store stopping, or one
             * that evicted us while full; the next try may meet a new one. */
            snprintf(why, sizeof(why), "%s", zsh_last_error());
            zsh_store_client_reset(client);
            closed_in_handshake = true;
        }
        if (fatal) {
            return zsh_error(ZSH_ERR_IO, "cannot connect to the store at %s: %s", client->addr,
                             why);
        }
        if (zsh_clock_now() >= deadline) {
            /* A store stops once every rank of its job has joined: a process
             * that met it stopping came after them, as a duplicate does. */
            if (closed_in_handshake && (client->rank >= 0)) {
                snprintf(hint, sizeof(hint), "; a store there closed during this process's "
                         "handshake, as it does once every rank of its job has joined: was "
                         "RANK=%d started twice?", client->rank);
            }
            return zsh_error(ZSH_ERR_TIMEOUT,
                             "cannot connect to the store at %s within %.3g s: %s (is rank 0 "
                             "running, and are MASTER_ADDR and MASTER_PORT right?)%s",
                             client->addr, client->timeout, why, hint);
        }
        poll(NULL, 0, zsh_clock_ms_left(deadline, delay_ms));
        delay_ms = (2 * delay_ms < ZSH_STORE_RETRY_MAX_MS) ? 2 * delay_ms : ZSH_STORE_RETRY_MAX_MS;
    }
}

zsh_status_t zsh_store_client_connect(const char *host, int port, double timeout,
                                      zsh_store_client_t **client_p)
{
    zsh_store_client_opts_t opts = {.host = host, .port = port, .timeout = timeout, .rank = -1};

    return zsh_store_client_connect_opts(&opts, client_p);
}

zsh_status_t zsh_store_client_connect_opts(const zsh_store_client_opts_t *opts,
                                           zsh_store_client_t **client_p)
{
    const char *host = opts->host;
    int port         = opts->port;
    double timeout   = opts->timeout;
    zsh_store_client_t *client;
    zsh_status_t status;

    if ((host == NULL) || (host[0] == '\0') || (port <= 0) || (port > 65535) || !(timeout >= 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "store: cannot connect to '%s' port %d (timeout %g s)",
                         host ? host : "(null)", port, timeout);
    }
    client = calloc(1, sizeof(*client));
    if (client == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "store: cannot allocate a client");
    }
    client->timeout = timeout;
    client->key     = opts->key;
    client->rank    = opts->rank;
    client->fd      = -1;
    snprintf(client->addr, sizeof(client->addr), (strchr(host, ':') != NULL) ? "[%s]:%d" : "%s:%d",
             host, port);
    status      = zsh_store_connect_retry(client, host, port);
    client->key = NULL; /* the caller's; not kept past this call */
    if (status != ZSH_OK) {
        free(client);
        return status;
    }
    zsh_log(ZSH_LOG_DEBUG, "store: connected to %s", client->addr);
    *client_p = client;
    return ZSH_OK;
}

void zsh_store_client_close(zsh_store_client_t *client)
{
    if (client == NULL) {
        return;
    }
    close(client->fd);
    zsh_store_buf_cleanup(&client->in);
    zsh_store_buf_cleanup(&client->out);
    free(client);
}

/* ---- requests ------------------------------------------------------------------ */

/* A socket failure while talking to the store: the server going away (rank 0
 * failed or stopped the store) is told apart from other errors. */
static zsh_status_t zsh_store_io_error(zsh_store_client_t *client, int err, const char *doing,
                                       const char *what)
{
    if (err == ETIMEDOUT) {
        return zsh_error(ZSH_ERR_TIMEOUT, "store %s: timed out %s %s (the store is alive but "
                         "does not answer)", client->addr, doing, what);
    }
    if ((err == EPIPE) || (err == ECONNRESET)) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "store %s closed the connection %s %s: %s",
                         client->addr, doing, what, strerror(err));
    }
    return zsh_error(ZSH_ERR_IO, "store %s: %s %s: %s", client->addr, doing, what, strerror(err));
}

zsh_status_t zsh_store_client_send(zsh_store_client_t *client, double deadline,
                                          const char *what)
{
    zsh_store_buf_t *out = &client->out;
    ssize_t n;

    while (zsh_store_buf_len(out) != 0) {
        n = send(client->fd, out->data + out->head, zsh_store_buf_len(out), MSG_NOSIGNAL);
        if (n > 0) {
            zsh_store_buf_consume(out, (size_t)n);
        } else if ((errno == EAGAIN) || (errno == EWOULDBLOCK)) {
            if (zsh_store_wait_fd(client->fd, POLLOUT, deadline) != 0) {
                return zsh_store_io_error(client, errno, "sending", what);
            }
        } else if (errno != EINTR) {
            return zsh_store_io_error(client, errno, "sending", what);
        }
    }
    return ZSH_OK;
}

/* Read until a whole reply is buffered; *reply_p points into client->in, and
 * the caller consumes *used_p bytes once it is done with it. */
zsh_status_t zsh_store_client_recv(zsh_store_client_t *client, double deadline,
                                          const char *what, zsh_store_frame_t *reply_p,
                                          size_t *used_p)
{
    zsh_store_buf_t *in = &client->in;
    zsh_store_decode_t result;
    zsh_status_t status;
    char err[256];
    ssize_t n;

    for (;;) {
        result = zsh_store_frame_decode(zsh_store_buf_head(in), zsh_store_buf_len(in), reply_p, used_p,
                                        err, sizeof(err));
        if (result == ZSH_STORE_DECODE_FRAME) {
            return ZSH_OK;
        }
        if (result == ZSH_STORE_DECODE_MALFORMED) {
            return zsh_error(ZSH_ERR_IO, "store %s sent a malformed reply to %s: %s (is %s a "
                             "ZeroShard store?)", client->addr, what, err, client->addr);
        }
        status = zsh_store_buf_reserve(in, ZSH_STORE_READ_CHUNK);
        if (status != ZSH_OK) {
            return status;
        }
        n = recv(client->fd, in->data + in->tail, in->cap - in->tail, 0);
        if (n > 0) {
            in->tail += (size_t)n;
        } else if (n == 0) {
            return zsh_error(ZSH_ERR_PEER_FAILED, "store %s closed the connection before "
                             "replying to %s (rank 0 failed or stopped the store)",
                             client->addr, what);
        } else if ((errno == EAGAIN) || (errno == EWOULDBLOCK)) {
            if (zsh_store_wait_fd(client->fd, POLLIN, deadline) != 0) {
                return zsh_store_io_error(client, errno, "waiting for the reply to", what);
            }
        } else if (errno != EINTR) {
            return zsh_store_io_error(client, errno, "waiting for the reply to", what);
        }
    }
}

/* Send @request and wait for its reply until @deadline. A failure after the
 * request was accepted for sending leaves the stream out of step, so the
 * client refuses further requests rather than pair them with stale replies. */
static zsh_status_t zsh_store_client_call(zsh_store_client_t *client,
                                          const zsh_store_frame_t *request, double deadline,
                                          zsh_store_frame_t *reply_p, size_t *used_p)
{
    zsh_status_t status;
    char what[96];

    snprintf(what, sizeof(what), "%s '%.*s'", zsh_store_op_name(request->op),
             (int)((request->key_len < 64) ? request->key_len : 64), (const char *)request->key);
    if (client->broken) {
        return zsh_error(ZSH_ERR_IO, "store %s: cannot send %s: the connection failed earlier",
                         client->addr, what);
    }
    status = zsh_store_frame_encode(request, &client->out);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_store_client_send(client, deadline, what);
    if (status == ZSH_OK) {
        status = zsh_store_client_recv(client, deadline, what, reply_p, used_p);
    }
    client->broken = (status != ZSH_OK);
    return status;
}

static zsh_status_t zsh_store_unexpected_reply(zsh_store_client_t *client,
                                               const zsh_store_frame_t *request,
                                               const zsh_store_frame_t *reply)
{
    client->broken = true;
    if (reply->op == ZSH_STORE_OP_REFUSED) {
        /* A bound of the store: it names the bound, and has dropped us. */
        return zsh_error(ZSH_ERR_INVALID_ARG, "the store at %s refused %s '%.*s' and closed the "
                         "connection: %.*s", client->addr, zsh_store_op_name(request->op),
                         (int)((request->key_len < 64) ? request->key_len : 64),
                         (const char *)request->key, (int)reply->key_len,
                         (const char *)reply->key);
    }
    return zsh_error(ZSH_ERR_IO, "store %s answered %s with %s", client->addr,
                     zsh_store_op_name(request->op), zsh_store_op_name(reply->op));
}

zsh_status_t zsh_store_client_set(zsh_store_client_t *client, const char *key, const void *value,
                                  size_t len)
{
    zsh_store_frame_t request = {.op = ZSH_STORE_OP_SET}, reply;
    zsh_status_t status;
    size_t used;

    request.key       = (const uint8_t *)key;
    request.key_len   = strlen(key);
    request.value     = value;
    request.value_len = len;
    status = zsh_store_client_call(client, &request, zsh_clock_now() + client->timeout, &reply,
                                   &used);
    if (status != ZSH_OK) {
        return status;
    }
    if (reply.op != ZSH_STORE_OP_OK) {
        return zsh_store_unexpected_reply(client, &request, &reply);
    }
    zsh_store_buf_consume(&client->in, used);
    return ZSH_OK;
}

/* The server's wait for a GET, in whole milliseconds, from now to @deadline. */
static uint32_t zsh_store_wait_ms(double deadline)
{
    double ms = (deadline - zsh_clock_now()) * 1e3;

    if (!(ms > 0)) {
        return 0;
    }
    return (ms >= (double)UINT32_MAX) ? UINT32_MAX : (uint32_t)ms + 1;
}

/* The VALUE reply in client->in, copied out for the caller. */
static zsh_status_t zsh_store_copy_value(const zsh_store_frame_t *reply, void **value_p,
                                         size_t *len_p)
{
    void *value = malloc(reply->value_len + 1);

    if (value == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "store: cannot allocate a value of %zu bytes",
                         reply->value_len);
    }
    memcpy(value, reply->value, reply->value_len);
    *value_p = value;
    *len_p   = reply->value_len;
    return ZSH_OK;
}

/* A GET of @key that waits until @deadline, into @request (whose key
 * @reply may point into) and @reply; the caller consumes @used bytes. */
static zsh_status_t zsh_store_client_lookup(zsh_store_client_t *client, const char *key,
                                            double deadline, zsh_store_frame_t *request,
                                            zsh_store_frame_t *reply, size_t *used)
{
    zsh_status_t status;

    *request         = (zsh_store_frame_t){.op = ZSH_STORE_OP_GET};
    request->key     = (const uint8_t *)key;
    request->key_len = strlen(key);
    request->wait_ms = zsh_store_wait_ms(deadline);
    /* The server answers by @deadline; the client timeout covers the reply's trip. */
    status = zsh_store_client_call(client, request, deadline + client->timeout, reply, used);
    if (status != ZSH_OK) {
        return status;
    }
    if ((reply->op != ZSH_STORE_OP_NOT_FOUND) && (reply->op != ZSH_STORE_OP_VALUE)) {
        return zsh_store_unexpected_reply(client, request, reply);
    }
    return ZSH_OK;
}

zsh_status_t zsh_store_client_has(zsh_store_client_t *client, const char *key, double deadline,
                                  bool *has_p)
{
    zsh_store_frame_t request, reply;
    zsh_status_t status;
    size_t used;

    status = zsh_store_client_lookup(client, key, deadline, &request, &reply, &used);
    if (status != ZSH_OK) {
        return status;
    }
    *has_p = (reply.op == ZSH_STORE_OP_VALUE);
    zsh_store_buf_consume(&client->in, used);
    return ZSH_OK;
}

zsh_status_t zsh_store_client_get(zsh_store_client_t *client, const char *key, double deadline,
                                  void **value_p, size_t *len_p)
{
    zsh_store_frame_t request, reply;
    double start = zsh_clock_now();
    zsh_status_t status;
    size_t used;

    status = zsh_store_client_lookup(client, key, deadline, &request, &reply, &used);
    if (status != ZSH_OK) {
        return status;
    }
    if (reply.op == ZSH_STORE_OP_NOT_FOUND) {
        status = zsh_error(ZSH_ERR_TIMEOUT, "store %s: key '%s' was not set within %.3g s",
                           client->addr, key, zsh_clock_now() - start);
    } else {
        status = zsh_store_copy_value(&reply, value_p, len_p);
    }
    zsh_store_buf_consume(&client->in, used);
    return status;
}
