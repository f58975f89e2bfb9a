/*
 * The bootstrap store against peers that misbehave: garbage, frames cut
 * short, clients that connect and go silent or stall mid-frame, and a store
 * that answers nonsense. Each must cost only the offending connection (or
 * fail the client with ZSH_ERR_IO, saying why), never hang the others.
 */
#include "boot/store.h"
#include "boot/store_frame.h"
#include "core/clock.h"
#include "harness/zsh_test.h"
#include "store_helpers.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

ZSH_TEST(store_fault, garbage_from_a_raw_socket_drops_only_that_connection)
{
    static const struct {
        const char *bytes;
        size_t      len;
    } garbage[] = {{"GARBAGE GARBAGE!", 16}, {"\0\0\0\3\x42xy", 7}, {"\0\0\0\1\x81", 5}};
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_client_t *client;
    size_t i;
    int fd;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    for (i = 0; i < sizeof(garbage) / sizeof(garbage[0]); i++) {
        fd = raw_connect(zsh_store_server_port(server));
        ZSH_ASSERT_TRUE(fd >= 0);
        ZSH_EXPECT_EQ(garbage[i].len, send(fd, garbage[i].bytes, garbage[i].len, MSG_NOSIGNAL));
        ZSH_EXPECT_TRUE(closed_within(fd, T_OK));
        close(fd);
        expect_set_get(client, "alive", "yes");
    }
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store_fault, frame_cut_short_by_a_closing_client_is_dropped_and_others_go_on)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"cut",
                             .key_len = 3, .value = (const uint8_t *)"short", .value_len = 5};
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_buf_t frame = {0};
    zsh_store_client_t *client;
    size_t cut, len;
    void *got;
    int fd;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&set, &frame));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    /* Every proper prefix: inside the length, the opcode, the key and the value. */
    for (cut = 1; cut < frame.tail; cut++) {
        fd = raw_connect(zsh_store_server_port(server));
        ZSH_ASSERT_TRUE(fd >= 0);
        ZSH_EXPECT_EQ(cut, send(fd, frame.data, cut, MSG_NOSIGNAL));
        close(fd);
    }
    expect_set_get(client, "alive", "yes");
    /* None of the cut SETs was stored. */
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT,
                      zsh_store_client_get(client, "cut", zsh_clock_now() + T_SHORT, &got, &len));
    expect_set_get(client, "alive", "still");
    zsh_store_buf_cleanup(&frame);
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store_fault, silent_and_stalled_clients_do_not_block_others)
{
    /* Half a SET: the header and opcode, then nothing. */
    static const char half[] = {0, 0, 0, 20, ZSH_STORE_OP_SET, 0};
    /* The store's timeout is long enough that "served before the stalled one
     * was dropped" holds with a wide margin on any machine (a request takes
     * milliseconds), and short enough to wait out. */
    const double store_timeout = 2.0;
    zsh_store_server_t *server = start_loopback_server(store_timeout);
    zsh_store_client_t *client;
    int silent, stalled;
    double start;

    ZSH_ASSERT_TRUE(server != NULL);
    silent  = raw_connect_admitted(zsh_store_server_port(server));
    stalled = raw_connect_admitted(zsh_store_server_port(server));
    ZSH_ASSERT_TRUE((silent >= 0) && (stalled >= 0));
    ZSH_EXPECT_EQ(sizeof(half), send(stalled, half, sizeof(half), MSG_NOSIGNAL));
    start = zsh_clock_now();
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    expect_set_get(client, "busy", "served");
    ZSH_EXPECT_TRUE(zsh_clock_now() - start < store_timeout / 2);
    /* The stalled one is dropped after the store timeout; the idle one is not mid-frame. */
    ZSH_EXPECT_TRUE(closed_within(stalled, 2 * store_timeout + T_OK));
    ZSH_EXPECT_TRUE(zsh_clock_now() - start >= store_timeout - 0.05);
    ZSH_EXPECT_TRUE(!closed_within(silent, 0));
    expect_set_get(client, "busy", "still served");
    close(silent);
    close(stalled);
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

/* A fake store's first words: an unkeyed CHALLENGE and, without waiting for
 * the HELLO, a WELCOME (whose mac is zeros without a key). */
static void *fake_store_accept(void *arg)
{
    zsh_store_frame_t challenge = {.op = ZSH_STORE_OP_CHALLENGE};
    zsh_store_frame_t welcome   = {.op = ZSH_STORE_OP_WELCOME};
    int *fd_p = arg, fd = accept(fd_p[0], NULL, NULL);
    zsh_store_buf_t out = {0};

    zsh_store_frame_encode(&challenge, &out);
    zsh_store_frame_encode(&welcome, &out);
    if (send(fd, out.data, out.tail, MSG_NOSIGNAL) != (ssize_t)out.tail) {
        close(fd);
        fd = -1;
    }
    zsh_store_buf_cleanup(&out);
    fd_p[1] = fd;
    return NULL;
}

/* A fake store that answers with @reply whatever is asked: the client must
 * fail with ZSH_ERR_IO, say why, and refuse to go on out of step. */
static void expect_bad_reply_is_io_error(const char *reply, size_t len, const char *why)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t sa_len      = sizeof(sa);
    zsh_store_client_t *client;
    int lfd = socket(AF_INET, SOCK_STREAM, 0), fd, fds[2];
    pthread_t thread;
    size_t got_len;
    void *got;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ZSH_ASSERT_TRUE((bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) == 0) && (listen(lfd, 1) == 0));
    getsockname(lfd, (struct sockaddr *)&sa, &sa_len);
    fds[0] = lfd;
    ZSH_ASSERT_TRUE(pthread_create(&thread, NULL, fake_store_accept, fds) == 0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", ntohs(sa.sin_port), T_OK,
                                                       &client));
    pthread_join(thread, NULL);
    fd = fds[1];
    ZSH_EXPECT_EQ(len, send(fd, reply, len, MSG_NOSIGNAL));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO,
                      zsh_store_client_get(client, "k", zsh_clock_now() + T_OK, &got, &got_len));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), why);
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_store_client_set(client, "k", "v", 1));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "failed earlier");
    zsh_store_client_close(client);
    close(fd);
    close(lfd);
}

ZSH_TEST(store_fault, malformed_or_mismatched_reply_fails_with_io_error)
{
    expect_bad_reply_is_io_error("HTTP/1.1 400 Bad Request\r\n", 26, "malformed reply to GET 'k'");
    expect_bad_reply_is_io_error("\0\0\0\1\x81", 5, "answered GET with OK");
}
