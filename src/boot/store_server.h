/*
 * The bootstrap store server's internals, shared by its files: the event loop
 * with start and stop (store_server.c), a connection's sockets (accepting,
 * reading, replying: store_server_conn.c), and what SET and GET mean
 * (store_server_request.c). One thread runs all of it, and stop() touches the
 * server only after joining that thread, so nothing here takes a lock.
 */
#ifndef ZSH_BOOT_STORE_SERVER_H_
#define ZSH_BOOT_STORE_SERVER_H_

#include "boot/store.h"
#include "boot/store_frame.h"
#include "boot/store_table.h"
#include "core/log.h"

#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/* A connection is stuck when it holds half a frame in or unsent bytes out. */
static inline bool zsh_store_conn_stuck(const zsh_store_conn_t *conn)
{
    return (zsh_store_buf_len(&conn->out) != 0) ||
           (!conn->waiting && (zsh_store_buf_len(&conn->in) != 0));
}

/* ---- store_server_conn.c: a connection's sockets ---------------------------------- */

void zsh_store_conn_drop(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                         zsh_log_level_t level, const char *why);
void zsh_store_conn_free(zsh_store_conn_t *conn);
void zsh_store_conn_reply(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                          const zsh_store_frame_t *reply);
void zsh_store_conn_events(zsh_store_server_t *srv, zsh_store_conn_t *conn, short revents);
void zsh_store_server_accept(zsh_store_server_t *srv);

/* ---- store_server_request.c: what the requests mean -------------------------------- */

bool zsh_store_conn_process(zsh_store_server_t *srv, zsh_store_conn_t *conn);
void zsh_store_server_expire_waits(zsh_store_server_t *srv, double now);

#endif
