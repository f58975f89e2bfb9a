/*
 * The bootstrap TCP store, torchrun-style: rank 0 runs a server thread that
 * holds key -> value pairs, and every rank (rank 0 too) talks to it through a
 * client. It lives only while a communicator is created; UCX carries all data
 * after that. This is the one place in ZeroShard that uses raw sockets.
 *
 * The wire format is in store_frame.h. A GET for a key nobody has SET yet is
 * answered once some client SETs it, or with NOT_FOUND when its wait runs out,
 * so ranks can publish and read in any order.
 *
 * Every connection starts with a handshake (store_auth.h): with a job key
 * both sides prove they hold it, and a rank's process claims its rank, so a
 * second process claiming it is refused by name. The server bounds its keys,
 * bytes and connections, and drops a connection that has not completed its
 * handshake in time, or the oldest such one when it runs out of room.
 */
#ifndef ZSH_BOOT_STORE_H_
#define ZSH_BOOT_STORE_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Keys beginning with this are the server's: "rank/R" holds "pid host" of the
 * process that claimed rank R. Clients may read them, never set them; a claim
 * wakes no waiting GET, so they are read without waiting. */
#define ZSH_STORE_RANK_PREFIX "rank/"

typedef struct zsh_store_server zsh_store_server_t;
typedef struct zsh_store_client zsh_store_client_t;

/*
 * What a server is started with. Every connection first goes through the
 * handshake of store_auth.h; a client that fails it is dropped, logged with
 * its address. The bounds drop the client that would pass them, naming the
 * bound; 0 picks a default scaled from @world_size.
 */
typedef struct zsh_store_server_opts {
    const char *host;        /* NULL for every interface, else a local address or name */
    int         port;        /* 0 picks a free port; zsh_store_server_port() tells which */
    double      timeout;     /* seconds a connection may stall in the middle of a frame */
    const char *key;         /* the job key every client must prove; NULL or "" for none */
    uint32_t    world_size;  /* ranks of the job, 0 if unknown: HELLOs past it are refused */
    int         owner_rank;  /* rank of this process, claimed at start so no other process
                              * can take it while this one connects; -1 for none */
    size_t      max_keys;    /* keys held (ZSH_STORE_MAX_KEYS) */
    size_t      max_bytes;   /* bytes held in keys and values (ZSH_STORE_MAX_BYTES) */
    size_t      max_conns;   /* open connections (ZSH_STORE_MAX_CONNS) */
} zsh_store_server_opts_t;

/* Start a server as @opts says; see zsh_store_server_start() for the rest.
 * Fails with ZSH_ERR_IO naming the address when it cannot listen
 * (EADDRINUSE: errno is left set to it, so a caller can tell). */
zsh_status_t zsh_store_server_start_opts(const zsh_store_server_opts_t *opts,
                                         zsh_store_server_t **server_p);

/* What a client connects with. */
typedef struct zsh_store_client_opts {
    const char *host;     /* a name, or an IPv4 or IPv6 literal */
    int         port;
    double      timeout;  /* see zsh_store_client_connect() */
    const char *key;      /* the job key, NULL or "" for none: must match the server's */
    int         rank;     /* the rank this process claims, -1 for none */
} zsh_store_client_opts_t;

/* Connect as @opts says, and complete the handshake. A server that refuses
 * this rank (taken by another process, or a job key that differs) fails the
 * call at once with ZSH_ERR_INVALID_ARG and the server's reason. */
zsh_status_t zsh_store_client_connect_opts(const zsh_store_client_opts_t *opts,
                                           zsh_store_client_t **client_p);

/*
 * Listen on @host:@port and serve from a new thread until
 * zsh_store_server_stop(), without a job key, rank checks or world size.
 * @host    NULL for every interface (IPv6 and IPv4, as torchrun does), or a
 *          local address or name to listen on one interface only.
 * @port    0 picks a free port; zsh_store_server_port() tells which.
 * @timeout seconds a connection may make no progress while it is in the middle
 *          of a frame (either direction) before it is dropped.
 */
zsh_status_t zsh_store_server_start(const char *host, int port, double timeout,
                                    zsh_store_server_t **server_p);

/* The port the server listens on. */
int zsh_store_server_port(const zsh_store_server_t *server);

/* Stop the thread, close every connection (clients then see the store close,
 * and pending GETs fail at once) and free the server. NULL is ignored. */
void zsh_store_server_stop(zsh_store_server_t *server);

/*
 * Connect to the store at @host:@port (a name, or an IPv4 or IPv6 literal).
 * Refused connections are retried until @timeout seconds have passed, because
 * rank 0 may start its server after the other ranks try to connect; then the
 * call fails with ZSH_ERR_TIMEOUT naming the address and the last failure.
 * @timeout is also how long each reply may take (beyond a GET's own wait).
 * Without a job key and claiming no rank.
 */
zsh_status_t zsh_store_client_connect(const char *host, int port, double timeout,
                                      zsh_store_client_t **client_p);

/* Store @len bytes of @value under @key (a C string), replacing any value,
 * and wait for the store to acknowledge. */
zsh_status_t zsh_store_client_set(zsh_store_client_t *client, const char *key, const void *value,
                                  size_t len);

/*
 * Get the value of @key, waiting until some client sets it or @deadline (on
 * the zsh_clock_now() clock) passes: then ZSH_ERR_TIMEOUT, and the connection
 * stays usable. On success *value_p is a malloc'd copy of *len_p bytes, which
 * the caller frees.
 */
zsh_status_t zsh_store_client_get(zsh_store_client_t *client, const char *key, double deadline,
                                  void **value_p, size_t *len_p);

/* Whether @key is set by @deadline (zsh_clock_now() for: now, without
 * waiting); unlike a GET, a key that is not is no error, and nothing is logged. */
zsh_status_t zsh_store_client_has(zsh_store_client_t *client, const char *key, double deadline,
                                  bool *has_p);

/* Close the connection and free the client. NULL is ignored. */
void zsh_store_client_close(zsh_store_client_t *client);

#endif
