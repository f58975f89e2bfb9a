/*
 * What the bootstrap store guards: a job key proven by every client, one
 * process per rank, bounded keys, bytes and connections, idle connections
 * that cannot lock the ranks out, and a listening socket on one address
 * only. Each attack costs only the attacker's connection.
 */
#include "boot/store.h"
#include "boot/store_auth.h"
#include "boot/store_frame.h"
#include "boot/store_server.h"
#include "core/clock.h"
#include "harness/zsh_test.h"
#include "store_helpers.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define KEY   "0123456789abcdef-the-job-key"
#define OTHER "fedcba9876543210-another-key"

static zsh_store_server_t *start_guarded(const char *key, uint32_t world, int owner,
                                         size_t max_keys, size_t max_bytes, size_t max_conns,
                                         double timeout)
{
    zsh_store_server_opts_t opts = {.host = "127.0.0.1", .timeout = timeout, .key = key,
                                    .world_size = world, .owner_rank = owner,
                                    .max_keys = max_keys, .max_bytes = max_bytes,
                                    .max_conns = max_conns};
    zsh_store_server_t *server = NULL;

    return (zsh_store_server_start_opts(&opts, &server) == ZSH_OK) ? server : NULL;
}

static zsh_status_t connect_as(zsh_store_server_t *server, const char *key, int rank,
                               zsh_store_client_t **client_p)
{
    zsh_store_client_opts_t opts = {.host = "127.0.0.1", .port = zsh_store_server_port(server),
                                    .timeout = T_OK, .key = key, .rank = rank};

    return zsh_store_client_connect_opts(&opts, client_p);
}

/* Send a HELLO for @rank from "pid @pid on host @host" with a zero mac on a raw
 * socket, and return the server's answer's opcode; a REFUSED's reason goes
 * to @reason. */
static int raw_hello(int port, uint32_t rank, uint32_t pid, const char *host, char *reason,
                     size_t reason_len)
{
    zsh_store_frame_t hello = {.op = ZSH_STORE_OP_HELLO, .key = (const uint8_t *)host,
                               .key_len = strlen(host), .rank = rank, .pid = pid}, reply;
    uint8_t in[2048];
    zsh_store_buf_t out = {0};
    size_t got = 0, used;
    int fd = raw_connect(port), op = -1;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    char err[128];
    ssize_t n;

    zsh_store_frame_encode(&hello, &out);
    if ((fd < 0) || (send(fd, out.data, out.tail, MSG_NOSIGNAL) != (ssize_t)out.tail)) {
        got = sizeof(in); /* nothing to read */
    }
    /* The CHALLENGE, then the answer, which a WELCOME does not follow with a close. */
    while (got < sizeof(in)) {
        if ((got > CHALLENGE_BYTES) &&
            (zsh_store_frame_decode(in + CHALLENGE_BYTES, got - CHALLENGE_BYTES, &reply, &used,
                                    err, sizeof(err)) == ZSH_STORE_DECODE_FRAME)) {
            op = reply.op;
            snprintf(reason, reason_len, "%.*s", (int)reply.key_len, (const char *)reply.key);
            break;
        }
        n = (poll(&pfd, 1, (int)(T_OK * 1e3)) == 1) ? recv(fd, in + got, sizeof(in) - got, 0) : 0;
        if (n <= 0) {
            break;
        }
        got += (size_t)n;
    }
    zsh_store_buf_cleanup(&out);
    if (fd >= 0) {
        close(fd);
    }
    return op;
}

ZSH_TEST(store_guard, only_clients_that_prove_the_job_key_are_admitted)
{
    zsh_store_server_t *server = start_guarded(KEY, 0, -1, 0, 0, 0, T_OK), *open_server;
    zsh_store_client_t *client, *stranger;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, KEY, 0, &client));
    expect_set_get(client, "admitted", "yes");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, connect_as(server, OTHER, 1, &stranger));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "refused this rank's job key (ZSH_JOB_KEY differs "
                                              "from rank 0's?)");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, connect_as(server, NULL, 1, &stranger));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "requires a job key");
    expect_set_get(client, "admitted", "still");
    zsh_store_client_close(client);
    zsh_store_server_stop(server);

    /* A keyed client does not trust a store that cannot prove the key. */
    open_server = start_guarded(NULL, 0, -1, 0, 0, 0, T_OK);
    ZSH_ASSERT_TRUE(open_server != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, connect_as(open_server, KEY, 1, &stranger));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "has no job key");
    zsh_store_server_stop(open_server);
}

ZSH_TEST(store_guard, forged_set_without_the_key_is_dropped_and_stores_nothing)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"ag/2/1",
                             .key_len = 6, .value = (const uint8_t *)"forged", .value_len = 6};
    zsh_store_server_t *server = start_guarded(KEY, 2, 0, 0, 0, 0, T_OK);
    zsh_store_buf_t frame = {0};
    zsh_store_client_t *client;
    char reason[256] = "";
    bool has = true;
    int fd;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&set, &frame));
    /* A SET with no handshake at all. */
    fd = raw_connect(zsh_store_server_port(server));
    ZSH_ASSERT_TRUE(fd >= 0);
    ZSH_EXPECT_EQ(frame.tail, send(fd, frame.data, frame.tail, MSG_NOSIGNAL));
    ZSH_EXPECT_TRUE(closed_within(fd, T_OK));
    close(fd);
    /* A HELLO without the key's mac. */
    ZSH_EXPECT_EQ(ZSH_STORE_OP_REFUSED,
                  raw_hello(zsh_store_server_port(server), 1, 4242, "attacker", reason,
                            sizeof(reason)));
    ZSH_EXPECT_STR_CONTAINS(reason, "failed authentication");
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, KEY, 1, &client));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_has(client, "ag/2/1", zsh_clock_now(), &has));
    ZSH_EXPECT_TRUE(!has);
    zsh_store_buf_cleanup(&frame);
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store_guard, a_rank_held_by_another_process_is_refused_naming_the_holder)
{
    zsh_store_server_t *server = start_guarded(NULL, 4, 0, 0, 0, 0, T_OK);
    zsh_store_client_t *client, *again;
    char reason[256] = "", expected[128], host[256] = "";
    int port;

    ZSH_ASSERT_TRUE(server != NULL);
    port = zsh_store_server_port(server);
    gethostname(host, sizeof(host) - 1);
    /* Rank 0 belongs to the process that started the store, before any client. */
    ZSH_EXPECT_EQ(ZSH_STORE_OP_REFUSED, raw_hello(port, 0, 99999, "elsewhere", reason,
                                                  sizeof(reason)));
    snprintf(expected, sizeof(expected), "rank 0 is already taken by pid %d on host %s",
             (int)getpid(), host);
    ZSH_EXPECT_STR_CONTAINS(reason, expected);
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, NULL, 1, &client));
    ZSH_EXPECT_EQ(ZSH_STORE_OP_REFUSED, raw_hello(port, 1, 99999, "elsewhere", reason,
                                                  sizeof(reason)));
    snprintf(expected, sizeof(expected), "rank 1 is already taken by pid %d on host %s",
             (int)getpid(), host);
    ZSH_EXPECT_STR_CONTAINS(reason, expected);
    /* The holder itself may connect again (a later communicator of the process). */
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, NULL, 1, &again));
    zsh_store_client_close(again);
    /* A rank past the world size is no rank of this job. */
    ZSH_EXPECT_EQ(ZSH_STORE_OP_REFUSED, raw_hello(port, 4, 1, "h", reason, sizeof(reason)));
    ZSH_EXPECT_STR_CONTAINS(reason, "rank 4 is out of range for a job of 4 ranks");
    ZSH_EXPECT_EQ(ZSH_STORE_OP_WELCOME, raw_hello(port, 2, 1, "h", reason, sizeof(reason)));
    /* Claims are the store's own keys: a client may read them, not forge them. */
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_client_set(client, "rank/3", "1 h", 3));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "are the store's own");
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store_guard, a_refusal_naming_hosts_of_the_longest_names_still_reaches_the_client)
{
    zsh_store_server_t *server = start_guarded(NULL, 4, -1, 0, 0, 0, T_OK);
    char host[ZSH_STORE_KEY_MAX + 1], reason[2 * ZSH_STORE_KEY_MAX] = "";
    int port;

    ZSH_ASSERT_TRUE(server != NULL);
    port = zsh_store_server_port(server);
    memset(host, 'h', ZSH_STORE_KEY_MAX);
    host[ZSH_STORE_KEY_MAX] = '\0';
    ZSH_EXPECT_EQ(ZSH_STORE_OP_WELCOME, raw_hello(port, 1, 1, host, reason, sizeof(reason)));
    host[0] = 'x';
    ZSH_EXPECT_EQ(ZSH_STORE_OP_REFUSED, raw_hello(port, 1, 2, host, reason, sizeof(reason)));
    ZSH_EXPECT_STR_CONTAINS(reason, "rank 1 is already taken by pid 1 on host hhh");
    zsh_store_server_stop(server);
}

ZSH_TEST(store_guard, a_set_flood_is_dropped_at_the_byte_bound_naming_it)
{
    const size_t bound = 1u << 20, value_len = 256u << 10;
    zsh_store_server_t *server = start_guarded(NULL, 0, -1, 0, bound, 0, T_OK);
    zsh_store_client_t *flood, *client;
    char *value = calloc(1, value_len), key[32];
    zsh_status_t status = ZSH_OK;
    int i;

    ZSH_ASSERT_TRUE((server != NULL) && (value != NULL));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &flood));
    for (i = 0; (i < 64) && (status == ZSH_OK); i++) {
        snprintf(key, sizeof(key), "flood/%d", i);
        status = zsh_store_client_set(flood, key, value, value_len);
    }
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, status);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "bound of 1048576 bytes (ZSH_STORE_MAX_BYTES)");
    ZSH_EXPECT_EQ(4, i); /* three fit under 1 MiB with their headers, the fourth does not */
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_store_client_set(flood, "more", "x", 1));
    /* Others go on, with small values. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    expect_set_get(client, "small", "ok");
    zsh_store_client_close(client);
    zsh_store_client_close(flood);
    zsh_store_server_stop(server);
    free(value);
}

ZSH_TEST(store_guard, new_keys_past_the_key_bound_are_refused_naming_it)
{
    zsh_store_server_t *server = start_guarded(NULL, 0, -1, 8, 0, 0, T_OK);
    zsh_store_client_t *client;
    zsh_status_t status = ZSH_OK;
    char key[32];
    int i;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    for (i = 0; (i < 8) && (status == ZSH_OK); i++) {
        snprintf(key, sizeof(key), "k/%d", i);
        status = zsh_store_client_set(client, key, "v", 1);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, status);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(client, "k/0", "replaced", 8));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_client_set(client, "k/8", "v", 1));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "bound of 8 keys (ZSH_STORE_MAX_KEYS)");
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store_guard, idle_connections_past_the_bound_cannot_keep_a_rank_out)
{
    enum { IDLE = 40, BOUND = 8 };
    /* The idle connections' handshake deadline is far past the rank's own
     * connect timeout (T_OK): its connect can only succeed because the
     * oldest idle ones were evicted, however slow the machine. */
    zsh_store_server_t *server = start_guarded(KEY, 2, 0, 0, 0, BOUND, 8 * T_OK);
    zsh_store_client_t *client;
    int idle[IDLE], i, evicted = 0;

    ZSH_ASSERT_TRUE(server != NULL);
    for (i = 0; i < IDLE; i++) {
        idle[i] = raw_connect(zsh_store_server_port(server));
        ZSH_ASSERT_TRUE(idle[i] >= 0);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, KEY, 1, &client));
    expect_set_get(client, "joined", "yes");
    /* The oldest idle ones made room; the store keeps at most BOUND open. */
    for (i = 0; i < IDLE; i++) {
        evicted += closed_within(idle[i], 0.01);
        close(idle[i]);
    }
    ZSH_EXPECT_TRUE(evicted >= IDLE + 1 - BOUND);
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store_guard, a_connection_that_never_completes_the_handshake_is_dropped)
{
    zsh_store_server_t *server = start_guarded(KEY, 0, -1, 0, 0, 0, T_SHORT);
    double start;
    int fd;

    ZSH_ASSERT_TRUE(server != NULL);
    fd    = raw_connect(zsh_store_server_port(server));
    start = zsh_clock_now();
    ZSH_ASSERT_TRUE(fd >= 0);
    ZSH_EXPECT_TRUE(closed_within(fd, T_OK));
    ZSH_EXPECT_TRUE(zsh_clock_now() - start >= T_SHORT - 0.05);
    close(fd);
    zsh_store_server_stop(server);
}

/* The store of a child process whose descriptors run out at 48: it tells its
 * port on @report and stops once @stop is readable. */
static void descriptor_starved_store(int report, int stop)
{
    zsh_store_server_opts_t opts = {.host = "127.0.0.1", .timeout = 4 * T_OK, .world_size = 2,
                                    .owner_rank = -1, .max_conns = 100000};
    struct rlimit lim;
    zsh_store_server_t *server;
    int port = -1;
    char byte;

    getrlimit(RLIMIT_NOFILE, &lim);
    lim.rlim_cur = 48;
    if ((setrlimit(RLIMIT_NOFILE, &lim) == 0) &&
        (zsh_store_server_start_opts(&opts, &server) == ZSH_OK)) {
        port = zsh_store_server_port(server);
    }
    if ((write(report, &port, sizeof(port)) != sizeof(port)) || (port < 0)) {
        _exit(1);
    }
    if (read(stop, &byte, 1) < 0) {
        _exit(1);
    }
    zsh_store_server_stop(server);
    _exit(0);
}

/* ThreadSanitizer does not support starting threads in the child of a
 * multi-threaded fork, which the starved store does. */
#if defined(__SANITIZE_THREAD__)
#define ZSH_TEST_UNDER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ZSH_TEST_UNDER_TSAN 1
#endif
#endif

ZSH_TEST(store_guard, out_of_descriptors_the_store_evicts_idle_connections_for_a_rank)
{
    enum { IDLE = 100 };
    int to_parent[2], to_child[2], idle[IDLE], port = -1, i, status = -1;
    struct pollfd ready;
    zsh_store_client_t *client;
    zsh_status_t connected;
    pid_t pid;

#ifdef ZSH_TEST_UNDER_TSAN
    ZSH_SKIP("ThreadSanitizer does not support threads started after a multi-threaded fork");
#endif
    ZSH_ASSERT_TRUE((pipe(to_parent) == 0) && (pipe(to_child) == 0));
    pid = fork();
    if (pid == 0) {
        descriptor_starved_store(to_parent[1], to_child[0]);
    }
    ZSH_ASSERT_TRUE(pid > 0);
    /* A child that never reports fails the test instead of hanging it. */
    ready = (struct pollfd){.fd = to_parent[0], .events = POLLIN};
    if (poll(&ready, 1, (int)(4 * T_OK * 1e3)) != 1) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        ZSH_ASSERT_TRUE(!"the starved store's process never told its port");
    }
    ZSH_ASSERT_TRUE(read(to_parent[0], &port, sizeof(port)) == sizeof(port));
    ZSH_ASSERT_TRUE(port > 0);
    for (i = 0; i < IDLE; i++) {
        idle[i] = raw_connect(port);
    }
    /* The idle connections' handshake deadline (4 T_OK) is far past the
     * rank's connect timeout (T_OK): a connect that succeeds at all was let
     * in by eviction. */
    connected = zsh_store_client_connect_opts(
        &(zsh_store_client_opts_t){.host = "127.0.0.1", .port = port, .timeout = T_OK, .rank = 1},
        &client);
    ZSH_EXPECT_STATUS(ZSH_OK, connected);
    if (connected == ZSH_OK) {
        expect_set_get(client, "joined", "despite them");
        zsh_store_client_close(client);
    }
    for (i = 0; i < IDLE; i++) {
        close(idle[i]);
    }
    ZSH_EXPECT_EQ(1, write(to_child[1], "x", 1));
    waitpid(pid, &status, 0);
    ZSH_EXPECT_EQ(0, status);
    close(to_parent[0]);
    close(to_parent[1]);
    close(to_child[0]);
    close(to_child[1]);
}

/* Whether a TCP connection to @addr:@port is accepted. */
static int reachable(const char *addr, int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0), ok;

    inet_pton(AF_INET, addr, &sa.sin_addr);
    ok = (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    close(fd);
    return ok;
}

ZSH_TEST(store_guard, a_store_on_127_0_0_1_is_not_reachable_on_other_addresses)
{
    zsh_store_server_t *server = start_loopback_server(T_OK), *any;

    ZSH_ASSERT_TRUE(server != NULL);
    /* All of 127/8 reaches this host on Linux: only the bound address answers. */
    ZSH_EXPECT_TRUE(reachable("127.0.0.1", zsh_store_server_port(server)));
    ZSH_EXPECT_TRUE(!reachable("127.0.0.2", zsh_store_server_port(server)));
    zsh_store_server_stop(server);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_server_start(NULL, 0, T_OK, &any));
    ZSH_EXPECT_TRUE(reachable("127.0.0.2", zsh_store_server_port(any)));
    zsh_store_server_stop(any);
}

ZSH_TEST(store_guard, the_macs_depend_on_key_nonces_and_every_hello_field)
{
    uint8_t server_nonce[ZSH_STORE_NONCE_SIZE] = {1}, client_nonce[ZSH_STORE_NONCE_SIZE] = {2};
    zsh_store_frame_t hello = {.op = ZSH_STORE_OP_HELLO, .key = (const uint8_t *)"host",
                               .key_len = 4, .rank = 3, .pid = 77, .nonce = client_nonce};
    uint8_t mac[ZSH_STORE_MAC_SIZE], other[ZSH_STORE_MAC_SIZE], zero[ZSH_STORE_MAC_SIZE] = {0};
    char err[256];

    zsh_store_auth_hello_mac(KEY, server_nonce, &hello, mac);
    ZSH_EXPECT_TRUE(!zsh_store_auth_mac_equal(mac, zero));
    hello.mac = mac;
    ZSH_EXPECT_EQ(ZSH_STORE_ADMIT_YES, zsh_store_auth_admit(KEY, server_nonce, 4, &hello, err,
                                                            sizeof(err)));
    ZSH_EXPECT_EQ(ZSH_STORE_ADMIT_BAD_MAC, zsh_store_auth_admit(OTHER, server_nonce, 4, &hello,
                                                                err, sizeof(err)));
    hello.rank = 2; /* a recorded HELLO replayed for another rank */
    ZSH_EXPECT_EQ(ZSH_STORE_ADMIT_BAD_MAC, zsh_store_auth_admit(KEY, server_nonce, 4, &hello, err,
                                                                sizeof(err)));
    hello.rank        = 3;
    server_nonce[31] ^= 1; /* ... or to another connection */
    ZSH_EXPECT_EQ(ZSH_STORE_ADMIT_BAD_MAC, zsh_store_auth_admit(KEY, server_nonce, 4, &hello, err,
                                                                sizeof(err)));
    zsh_store_auth_welcome_mac(KEY, server_nonce, client_nonce, other);
    ZSH_EXPECT_TRUE(!zsh_store_auth_mac_equal(mac, other));
}

ZSH_TEST(store_guard, a_ranks_keys_are_set_only_by_the_client_that_claimed_it_even_without_a_key)
{
    zsh_store_server_t *server = start_guarded(NULL, 3, -1, 0, 0, 0, T_OK);
    zsh_store_client_t *stranger, *rank1, *rank2;
    void *value = NULL;
    size_t len = 0;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, NULL, -1, &stranger));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_client_set(stranger, "ag/2/1", "forged", 6));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "SET of 'ag/2/1' by a client that claimed no rank: "
                                              "a key ending in /1 belongs to rank 1");
    zsh_store_client_close(stranger);
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, NULL, 2, &rank2));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_client_set(rank2, "done/1", "", 0));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "by a client that is rank 2");
    zsh_store_client_close(rank2);
    /* The owner sets its keys; keys that name no rank of the job are anyone's. */
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, NULL, 1, &rank1));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(rank1, "ag/2/1", "real", 4));
    ZSH_ASSERT_STATUS(ZSH_OK, connect_as(server, NULL, -1, &stranger));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(stranger, "ag/2/3", "x", 1));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(stranger, "ag/2/01", "x", 1));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(stranger, "plain", "x", 1));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_get(stranger, "ag/2/1", zsh_clock_now() + T_OK,
                                                   &value, &len));
    ZSH_EXPECT_EQ(4, len);
    ZSH_EXPECT_TRUE(memcmp(value, "real", 4) == 0);
    free(value);
    zsh_store_client_close(stranger);
    zsh_store_client_close(rank1);
    zsh_store_server_stop(server);
}
