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

/* The handshake of a connection that has not been admitted is this many
 * seconds at most (or the store timeout if shorter): a peer that connects
 * and says nothing must not hold a slot. */
#define ZSH_STORE_HANDSHAKE_TIMEOUT 10.0


/* Once the job's size is known, a key ending in "/R" (R a rank of the job:
 * the bootstrap's "ag/<round>/R", "done/R") belongs to rank R, and only the
 * connection that claimed R may set it, so that no other client, with or
 * without the job key, can forge a rank's address. */

typedef struct {
    int             fd;            /* -1 once closed early (evicted) */
    bool            dead;          /* reaped at the end of the loop iteration */
    bool            admitted;      /* its HELLO passed the handshake */
    uint32_t        rank;          /* claimed in its HELLO, else ZSH_STORE_NO_RANK */
    double          accepted_at;   /* for the handshake deadline and eviction order */
    uint8_t         nonce[ZSH_STORE_NONCE_SIZE]; /* this connection's challenge */
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
    double             handshake_timeout;
    char              *key;        /* the job key, or NULL */
    uint32_t           world_size;
    size_t             max_keys, max_bytes, max_conns;
    double             accept_resume;
    zsh_store_table_t  table;
    zsh_store_conn_t **conns;
    size_t             nconns, conns_cap;
    struct pollfd     *pfds;
    size_t             pfds_cap;
};

/* Bytes a connection may have buffered unread: before its HELLO is admitted,
 * only a HELLO. */
static inline size_t zsh_store_conn_in_max(const zsh_store_conn_t *conn)
{
    return conn->admitted ? ZSH_STORE_FRAME_MAX : ZSH_STORE_HELLO_FRAME_MAX;
}

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
/* Claim rank @rank for "@pid @host"; fails, with the reason in @err, when
 * another process holds it. */
bool zsh_store_claim_rank(zsh_store_server_t *srv, uint32_t rank, uint32_t pid,
                          const uint8_t *host, size_t host_len, char *err, size_t err_len);
void zsh_store_server_expire_waits(zsh_store_server_t *srv, double now);

#endif
