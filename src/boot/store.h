/*
 * The bootstrap TCP store, torchrun-style: rank 0 runs a server thread that
 * holds key -> value pairs, and every rank (rank 0 too) talks to it through a
 * client. It lives only while a communicator is created; UCX carries all data
 * after that. This is the one place in ZeroShard that uses raw sockets.
 *
 * The wire format is in store_frame.h. A GET for a key nobody has SET yet is
 * answered once some client SETs it, or with NOT_FOUND when its wait runs out,
 * so ranks can publish and read in any order.
 */
#ifndef ZSH_BOOT_STORE_H_
#define ZSH_BOOT_STORE_H_

#include <zeroshard.h>

#include <stddef.h>

typedef struct zsh_store_server zsh_store_server_t;
typedef struct zsh_store_client zsh_store_client_t;

/*
 * Listen on @host:@port and serve from a new thread until
 * zsh_store_server_stop().
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

/* Close the connection and free the client. NULL is ignored. */
void zsh_store_client_close(zsh_store_client_t *client);

#endif
