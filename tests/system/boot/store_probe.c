/*
 * A hostile or stray peer of rank 0's TCP store, for tests/system/boot/run_guard.sh:
 *
 *   store_probe forge HOST PORT KEY        SET KEY without the handshake, then
 *                                          as a client without the job key
 *   store_probe flood HOST PORT COUNT MIB  COUNT SETs of MIB MiB each
 *   store_probe idle HOST PORT N SECONDS   hold N connections that say nothing
 *
 * forge and flood print one line per attempt and exit 0 when the store
 * refused them all; idle prints "ready" once its connections are open.
 */
#include "boot/store.h"
#include "boot/store_frame.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int probe_connect(const char *host, int port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *res;
    char serv[16];
    int fd = -1;

    snprintf(serv, sizeof(serv), "%d", port);
    if (getaddrinfo(host, serv, &hints, &res) != 0) {
        return -1;
    }
    fd = socket(res->ai_family, SOCK_STREAM, 0);
    if ((fd >= 0) && (connect(fd, res->ai_addr, res->ai_addrlen) != 0)) {
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    return fd;
}

/* A SET of @key sent raw, no handshake: did the store answer OK? */
static int probe_raw_set(const char *host, int port, const char *key)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)key,
                             .key_len = strlen(key), .value = (const uint8_t *)"forged",
                             .value_len = 6};
    zsh_store_buf_t out = {0};
    zsh_store_frame_t reply;
    uint8_t in[256];
    size_t got = 0, i, used;
    char err[128];
    ssize_t n;
    int fd = probe_connect(host, port);
    struct pollfd pfd = {.fd = fd, .events = POLLIN};

    if ((fd < 0) || (zsh_store_frame_encode(&set, &out) != ZSH_OK) ||
        (send(fd, out.data, out.tail, MSG_NOSIGNAL) != (ssize_t)out.tail)) {
        printf("raw SET %s: could not send\n", key);
        return 0;
    }
    while ((got < sizeof(in)) && (poll(&pfd, 1, 2000) == 1) &&
           ((n = recv(fd, in + got, sizeof(in) - got, 0)) > 0)) {
        got += (size_t)n;
    }
    close(fd);
    zsh_store_buf_cleanup(&out);
    /* A store without a handshake answers OK; a guarded one sends its
     * CHALLENGE and drops us. */
    for (i = 0; zsh_store_frame_decode(in + i, got - i, &reply, &used, err, sizeof(err)) ==
                ZSH_STORE_DECODE_FRAME;
         i += used) {
        if (reply.op == ZSH_STORE_OP_OK) {
            printf("raw SET %s: stored\n", key);
            return 1;
        }
    }
    printf("raw SET %s: dropped\n", key);
    return 0;
}

static int probe_forge(const char *host, int port, const char *key)
{
    zsh_store_client_opts_t opts = {.host = host, .port = port, .timeout = 5, .rank = -1};
    zsh_store_client_t *client;
    int forged = probe_raw_set(host, port, key);

    if (zsh_store_client_connect_opts(&opts, &client) != ZSH_OK) {
        printf("client without the key: refused: %s\n", zsh_last_error());
    } else if (zsh_store_client_set(client, key, "forged", 6) == ZSH_OK) {
        printf("client without the key: SET %s stored\n", key);
        forged = 1;
        zsh_store_client_close(client);
    } else {
        printf("client without the key: SET %s refused: %s\n", key, zsh_last_error());
        zsh_store_client_close(client);
    }
    /* A wrong key: the store logs the failed authentication with our address. */
    opts.key = "not-the-job-key-not-the-job-key";
    if (zsh_store_client_connect_opts(&opts, &client) != ZSH_OK) {
        printf("client with a wrong key: refused: %s\n", zsh_last_error());
    } else {
        printf("client with a wrong key: admitted\n");
        forged = 1;
        zsh_store_client_close(client);
    }
    return forged;
}

static int probe_flood(const char *host, int port, int count, int mib)
{
    zsh_store_client_opts_t opts = {.host = host, .port = port, .timeout = 10, .rank = -1};
    size_t len = (size_t)mib << 20;
    zsh_store_client_t *client;
    char *value = calloc(1, len), key[32];
    int i;

    if ((value == NULL) || (zsh_store_client_connect_opts(&opts, &client) != ZSH_OK)) {
        printf("flood: cannot start: %s\n", zsh_last_error());
        free(value);
        return 1;
    }
    for (i = 0; i < count; i++) {
        snprintf(key, sizeof(key), "flood-%d", i);
        if (zsh_store_client_set(client, key, value, len) != ZSH_OK) {
            printf("flood: SET %d of %d refused: %s\n", i + 1, count, zsh_last_error());
            break;
        }
    }
    zsh_store_client_close(client);
    free(value);
    if (i == count) {
        printf("flood: all %d SETs of %d MiB stored\n", count, mib);
        return 1;
    }
    return 0;
}

static int probe_idle(const char *host, int port, int n, int seconds)
{
    int i, open = 0;

    for (i = 0; i < n; i++) {
        open += (probe_connect(host, port) >= 0);
    }
    printf("ready: %d of %d idle connections open\n", open, n);
    fflush(stdout);
    sleep((unsigned)seconds);
    return 0;
}

int main(int argc, char **argv)
{
    if ((argc == 5) && (strcmp(argv[1], "forge") == 0)) {
        return probe_forge(argv[2], atoi(argv[3]), argv[4]);
    }
    if ((argc == 6) && (strcmp(argv[1], "flood") == 0)) {
        return probe_flood(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    }
    if ((argc == 6) && (strcmp(argv[1], "idle") == 0)) {
        return probe_idle(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
    }
    fprintf(stderr, "usage: store_probe forge|flood|idle HOST PORT ... (see the source)\n");
    return 2;
}
