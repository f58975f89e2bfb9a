/*
 * The bootstrap store client's internals, shared by its files: requests and
 * connecting (store_client.c) and the handshake (store_client_handshake.c).
 */
#ifndef ZSH_BOOT_STORE_CLIENT_H_
#define ZSH_BOOT_STORE_CLIENT_H_

#include "boot/store.h"
#include "boot/store_frame.h"

#include <stdbool.h>
#include <stddef.h>

#define ZSH_STORE_READ_CHUNK (64u << 10)

struct zsh_store_client {
    int             fd;
    const char     *key;        /* the caller's job key, during connect only */
    int             rank;       /* claimed in the HELLO, -1 for none */
    double          timeout;    /* seconds for connect, and for each reply beyond a GET's wait */
    bool            broken;     /* a reply went missing or was malformed: out of step for good */
    zsh_store_buf_t in, out;
    char            addr[300];  /* "host:port", for every message */
};

/* Wait until @fd is ready for @events; 0 if it is, -1 with errno set (ETIMEDOUT
 * when @deadline passed first). */
int zsh_store_wait_fd(int fd, short events, double deadline);

/* Send what client->out holds by @deadline; @what names the request. */
zsh_status_t zsh_store_client_send(zsh_store_client_t *client, double deadline,
                                   const char *what);

/* Read until a whole frame is buffered; *reply_p points into client->in, and
 * the caller consumes *used_p bytes once it is done with it. */
zsh_status_t zsh_store_client_recv(zsh_store_client_t *client, double deadline, const char *what,
                                   zsh_store_frame_t *reply_p, size_t *used_p);

/* CHALLENGE, HELLO, WELCOME (store_auth.h) on a freshly connected socket.
 * ZSH_ERR_PEER_FAILED when the server closed first (a store that was
 * stopping: the caller may retry); ZSH_ERR_INVALID_ARG when it refused. */
zsh_status_t zsh_store_client_handshake(zsh_store_client_t *client, double deadline);

#endif
