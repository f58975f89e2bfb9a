/*
 * What the store, store fault and boot_env tests share: bounds for their
 * waits, a free loopback port to point a store at, raw sockets to play a
 * misbehaving peer with, and a SET/GET round trip that proves a store still
 * serves.
 */
#ifndef ZSH_TESTS_UNIT_STORE_HELPERS_H_
#define ZSH_TESTS_UNIT_STORE_HELPERS_H_

#include "boot/store.h"
#include "boot/store_frame.h"
#include "core/clock.h"
#include "harness/zsh_test.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* Generous bounds for waits that should succeed; failures show up as errors
 * long before them. */
#define T_OK    5.0
#define T_SHORT 0.3

/* A port nothing holds now, from below the kernel's ephemeral range: a port
 * of that range that is free now (the kernel's pick for port 0, say) can
 * become the source port of any outgoing connection, another test's running
 * beside this one included, before the store binds it; one below the range
 * is only taken by an explicit bind. A bind without SO_REUSEADDR tells it
 * is free. */
static inline int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    int lo = 32768, hi = 60999, base = 20000, tries, fd, ok;
    unsigned short r;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");

    if (f != NULL) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2) {
            lo = 32768;
        }
        fclose(f);
    }
    if (lo - base < 1024) {
        base = 1024;
    }
    for (tries = 0; tries < 1000; tries++) {
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
            break;
        }
        sa.sin_port = htons((unsigned short)(base + (int)(r % (unsigned)(lo - base))));
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ok = (fd >= 0) && (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
        if (fd >= 0) {
            close(fd);
        }
        if (ok) {
            return ntohs(sa.sin_port);
        }
    }
    return -1;
}

/* A plain blocking socket connected to 127.0.0.1:@port, or -1. */
static inline int raw_connect(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Whether the server closed @fd within @timeout seconds. What it sent before
 * (its CHALLENGE, a REFUSED) is read and ignored. */
static inline int closed_within(int fd, double timeout)
{
    double deadline   = zsh_clock_now() + timeout;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char bytes[256];

    for (;;) {
        if (poll(&pfd, 1, zsh_clock_ms_left(deadline, 60000)) <= 0) {
            return 0;
        }
        if (recv(fd, bytes, sizeof(bytes), MSG_DONTWAIT) <= 0) {
            return 1;
        }
    }
}

/* The bytes of a CHALLENGE frame, which a server sends first. */
#define CHALLENGE_BYTES (ZSH_STORE_HEADER_SIZE + 1 + 4 + ZSH_STORE_NONCE_SIZE)

/* Play the client's side of an unkeyed handshake on the raw socket @fd:
 * read the CHALLENGE, send a HELLO claiming no rank, read the WELCOME.
 * Returns whether the server admitted it. */
static inline int raw_handshake(int fd)
{
    zsh_store_frame_t hello = {.op = ZSH_STORE_OP_HELLO, .key = (const uint8_t *)"rawhost",
                               .key_len = 7, .rank = ZSH_STORE_NO_RANK, .pid = 1};
    uint8_t in[CHALLENGE_BYTES + ZSH_STORE_HEADER_SIZE + 1 + ZSH_STORE_MAC_SIZE];
    zsh_store_buf_t out = {0};
    size_t got = 0;
    ssize_t n;
    int ok;

    while (got < CHALLENGE_BYTES) {
        n = recv(fd, in + got, CHALLENGE_BYTES - got, 0);
        if (n <= 0) {
            return 0;
        }
        got += (size_t)n;
    }
    ok = (zsh_store_frame_encode(&hello, &out) == ZSH_OK) &&
         (send(fd, out.data, out.tail, MSG_NOSIGNAL) == (ssize_t)out.tail);
    zsh_store_buf_cleanup(&out);
    while (ok && (got < sizeof(in))) {
        n = recv(fd, in + got, sizeof(in) - got, 0);
        ok = (n > 0);
        got += (ok ? (size_t)n : 0);
    }
    return ok && (in[CHALLENGE_BYTES + ZSH_STORE_HEADER_SIZE] == ZSH_STORE_OP_WELCOME);
}

/* A raw socket connected to 127.0.0.1:@port that passed the handshake, or -1. */
static inline int raw_connect_admitted(int port)
{
    int fd = raw_connect(port);

    if ((fd >= 0) && !raw_handshake(fd)) {
        close(fd);
        return -1;
    }
    return fd;
}

static inline zsh_store_server_t *start_loopback_server(double timeout)
{
    zsh_store_server_t *server = NULL;

    if (zsh_store_server_start("127.0.0.1", 0, timeout, &server) != ZSH_OK) {
        return NULL;
    }
    return server;
}

/* SET @key to @value and read it back on @client. */
static inline void expect_set_get(zsh_store_client_t *client, const char *key, const char *value)
{
    size_t len = 0;
    void *got  = NULL;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_set(client, key, value, strlen(value)));
    ZSH_ASSERT_STATUS(ZSH_OK,
                      zsh_store_client_get(client, key, zsh_clock_now() + T_OK, &got, &len));
    ZSH_EXPECT_EQ(strlen(value), len);
    ZSH_EXPECT_TRUE(memcmp(got, value, len) == 0);
    free(got);
}

#endif /* ZSH_TESTS_UNIT_STORE_HELPERS_H_ */
