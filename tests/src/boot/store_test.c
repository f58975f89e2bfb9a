/*
 * The bootstrap TCP store over loopback: clients on threads, deferred and
 * timed-out GETs, misbehaving raw sockets, and stopping with clients connected.
 * Every wait is short, so a broken store fails these tests instead of hanging.
 */
#include "boot/store.h"
#include "boot/store_frame.h"
#include "core/clock.h"
#include "harness/zsh_test.h"
#include "store_helpers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------------ */

/* ---- the store ------------------------------------------------------------------ */

typedef struct {
    int          port, id, nclients;
    zsh_status_t status;
    int          bad_peer;  /* first peer whose value was wrong, or -1 */
    double       elapsed;
} client_job_t;

/* Publish "value-<id>" under "k/<id>", then read every client's value. */
static void *client_exchange(void *arg)
{
    client_job_t *job = arg;
    zsh_store_client_t *client;
    char key[32], want[32];
    size_t len;
    void *got;
    int peer;

    job->bad_peer = -1;
    job->status   = zsh_store_client_connect("127.0.0.1", job->port, T_OK, &client);
    if (job->status != ZSH_OK) {
        return NULL;
    }
    snprintf(key, sizeof(key), "k/%d", job->id);
    snprintf(want, sizeof(want), "value-%d", job->id);
    job->status = zsh_store_client_set(client, key, want, strlen(want));
    for (peer = 0; (peer < job->nclients) && (job->status == ZSH_OK); peer++) {
        snprintf(key, sizeof(key), "k/%d", peer);
        snprintf(want, sizeof(want), "value-%d", peer);
        job->status = zsh_store_client_get(client, key, zsh_clock_now() + T_OK, &got, &len);
        if ((job->status == ZSH_OK) && ((len != strlen(want)) || memcmp(got, want, len)) &&
            (job->bad_peer < 0)) {
            job->bad_peer = peer;
        }
        free((job->status == ZSH_OK) ? got : NULL);
    }
    zsh_store_client_close(client);
    return NULL;
}

ZSH_TEST(store, clients_on_threads_set_and_get_each_others_values)
{
    zsh_store_server_t *server = start_loopback_server(T_OK);
    client_job_t jobs[6];
    pthread_t threads[6];
    int i;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_EXPECT_TRUE(zsh_store_server_port(server) > 0); /* port 0 picked an ephemeral one */
    for (i = 0; i < 6; i++) {
        jobs[i] = (client_job_t){.port = zsh_store_server_port(server), .id = i, .nclients = 6};
        pthread_create(&threads[i], NULL, client_exchange, &jobs[i]);
    }
    for (i = 0; i < 6; i++) {
        pthread_join(threads[i], NULL);
        ZSH_EXPECT_STATUS(ZSH_OK, jobs[i].status);
        ZSH_EXPECT_EQ(-1, jobs[i].bad_peer);
    }
    zsh_store_server_stop(server);
}

typedef struct {
    zsh_store_client_t *client;
    const char         *key;
    double              deadline;
    zsh_status_t        status;
    char                value[64];
    char                error[512];
    double              elapsed;
    double              answered_at;  /* clock when the GET returned */
} get_job_t;

static void *client_get(void *arg)
{
    get_job_t *job = arg;
    double start   = zsh_clock_now();
    size_t len     = 0;
    void *got      = NULL;

    job->status  = zsh_store_client_get(job->client, job->key, job->deadline, &got, &len);
    job->answered_at = zsh_clock_now();
    job->elapsed     = job->answered_at - start;
    snprintf(job->error, sizeof(job->error), "%s", zsh_last_error());
    if (job->status == ZSH_OK) {
        snprintf(job->value, sizeof(job->value), "%.*s", (int)len, (const char *)got);
        free(got);
    }
    return NULL;
}

ZSH_TEST(store, get_before_set_is_answered_when_the_key_is_set)
{
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_client_t *getter, *setter;
    get_job_t job = {.key = "late"};
    pthread_t thread;
    double set_at;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &getter));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &setter));
    job.client   = getter;
    job.deadline = zsh_clock_now() + T_OK;
    pthread_create(&thread, NULL, client_get, &job);
    usleep(100 * 1000);
    set_at = zsh_clock_now();
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(setter, "late", "here", 4));
    pthread_join(thread, NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, job.status);
    ZSH_EXPECT_STR_CONTAINS(job.value, "here");
    /* Answered only once the key was set (however late the thread started). */
    ZSH_EXPECT_TRUE(job.answered_at >= set_at);
    zsh_store_client_close(getter);
    zsh_store_client_close(setter);
    zsh_store_server_stop(server);
}

ZSH_TEST(store, get_of_a_missing_key_times_out_and_the_client_stays_usable)
{
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_client_t *client;
    double start;
    char addr[64];
    size_t len;
    void *got;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    start = zsh_clock_now();
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT,
                      zsh_store_client_get(client, "never/set", start + T_SHORT, &got, &len));
    ZSH_EXPECT_TRUE(zsh_clock_now() - start >= T_SHORT - 0.05);
    /* Far above T_SHORT, so no machine is too slow for it: what it catches
     * is a wait that ignores the deadline for the connection's T_OK. */
    ZSH_EXPECT_TRUE(zsh_clock_now() - start < T_OK);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", zsh_store_server_port(server));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), addr);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "never/set");
    expect_set_get(client, "after/timeout", "still works");
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store, set_replaces_values_and_large_values_round_trip)
{
    zsh_store_server_t *server = start_loopback_server(T_OK);
    size_t big_len = 3u << 20, len, i;
    zsh_store_client_t *client;
    uint8_t *big = malloc(big_len);
    void *got;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    expect_set_get(client, "key", "first");
    expect_set_get(client, "key", "second, longer");
    expect_set_get(client, "", "empty key");
    for (i = 0; i < big_len; i++) {
        big[i] = (uint8_t)(i * 31 + 7);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_client_set(client, "big", big, big_len));
    ZSH_ASSERT_STATUS(ZSH_OK,
                      zsh_store_client_get(client, "big", zsh_clock_now() + T_OK, &got, &len));
    ZSH_EXPECT_EQ(big_len, len);
    ZSH_EXPECT_TRUE(memcmp(got, big, big_len) == 0);
    free(got);
    free(big);
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store, oversized_value_is_rejected_before_sending_and_the_client_stays_usable)
{
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_client_t *client;
    static uint8_t huge[ZSH_STORE_VALUE_MAX + 1];

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_store_client_set(client, "huge", huge, sizeof(huge)));
    expect_set_get(client, "small", "fine");
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

/* Bytes no client may send: an absurd length, an unknown opcode, a reply. */

ZSH_TEST(store, set_from_a_client_that_closes_at_once_is_still_stored)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"parting",
                             .key_len = 7, .value = (const uint8_t *)"gift", .value_len = 4};
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_buf_t frame = {0};
    zsh_store_client_t *client;
    size_t len;
    void *got;
    int fd;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&set, &frame));
    fd = raw_connect_admitted(zsh_store_server_port(server));
    ZSH_ASSERT_TRUE(fd >= 0);
    ZSH_EXPECT_EQ(frame.tail, send(fd, frame.data, frame.tail, MSG_NOSIGNAL));
    close(fd);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &client));
    ZSH_ASSERT_STATUS(ZSH_OK,
                      zsh_store_client_get(client, "parting", zsh_clock_now() + T_OK, &got, &len));
    ZSH_EXPECT_EQ(4, len);
    free(got);
    zsh_store_buf_cleanup(&frame);
    zsh_store_client_close(client);
    zsh_store_server_stop(server);
}

ZSH_TEST(store, stop_with_clients_connected_fails_their_requests_at_once)
{
    zsh_store_server_t *server = start_loopback_server(T_OK);
    zsh_store_client_t *waiter, *idle;
    get_job_t job = {.key = "never/set"};
    pthread_t thread;

    ZSH_ASSERT_TRUE(server != NULL);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &waiter));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_client_connect("127.0.0.1", zsh_store_server_port(server),
                                                       T_OK, &idle));
    job.client   = waiter;
    job.deadline = zsh_clock_now() + T_OK;
    pthread_create(&thread, NULL, client_get, &job);
    usleep(100 * 1000);
    zsh_store_server_stop(server);
    pthread_join(thread, NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_PEER_FAILED, job.status);
    ZSH_EXPECT_STR_CONTAINS(job.error, "closed the connection");
    /* The waiter's deadline is T_OK away: half of it is far above the
     * moment the server closes (0.1 s) on any machine, and far below a
     * waiter that only gave up at its deadline. */
    ZSH_EXPECT_TRUE(job.elapsed < T_OK / 2);
    ZSH_EXPECT_STATUS(ZSH_ERR_PEER_FAILED, zsh_store_client_set(idle, "k", "v", 1));
    zsh_store_client_close(waiter);
    zsh_store_client_close(idle);
}

ZSH_TEST(store, connect_without_a_server_times_out_naming_the_address)
{
    int port = free_port();
    zsh_store_client_t *client = NULL;
    double start = zsh_clock_now();
    char addr[64];

    ZSH_ASSERT_TRUE(port > 0);
    ZSH_EXPECT_STATUS(ZSH_ERR_TIMEOUT,
                      zsh_store_client_connect("127.0.0.1", port, T_SHORT, &client));
    ZSH_EXPECT_TRUE(zsh_clock_now() - start >= T_SHORT - 0.05);
    /* Far above T_SHORT, so no machine is too slow for it: what it catches
     * is a wait that ignores the deadline for the connection's T_OK. */
    ZSH_EXPECT_TRUE(zsh_clock_now() - start < T_OK);
    ZSH_EXPECT_TRUE(client == NULL);
    snprintf(addr, sizeof(addr), "127.0.0.1:%d", port);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), addr);
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "refused");
}

typedef struct {
    int          port;
    zsh_status_t status;
} early_job_t;

static void *client_connect_early(void *arg)
{
    early_job_t *job = arg;
    zsh_store_client_t *client;

    job->status = zsh_store_client_connect("127.0.0.1", job->port, T_OK, &client);
    if (job->status == ZSH_OK) {
        job->status = zsh_store_client_set(client, "early", "bird", 4);
        zsh_store_client_close(client);
    }
    return NULL;
}

ZSH_TEST(store, client_connecting_before_the_server_starts_is_served)
{
    early_job_t job = {.port = free_port()};
    zsh_store_server_t *server;
    pthread_t thread;

    ZSH_ASSERT_TRUE(job.port > 0);
    pthread_create(&thread, NULL, client_connect_early, &job);
    usleep(150 * 1000);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_store_server_start("127.0.0.1", job.port, T_OK, &server));
    pthread_join(thread, NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, job.status);
    zsh_store_server_stop(server);
}

/* Whether this host has an IPv6 loopback to test with. */
static int have_ipv6_loopback(void)
{
    struct sockaddr_in6 sa = {.sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT};
    int fd = socket(AF_INET6, SOCK_STREAM, 0), ok;

    ok = (fd >= 0) && (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    if (fd >= 0) {
        close(fd);
    }
    return ok;
}

ZSH_TEST(store, server_on_every_interface_is_reached_by_ipv4_ipv6_and_host_name)
{
    const char *hosts[] = {"127.0.0.1", "localhost", "::1"};
    size_t nhosts = have_ipv6_loopback() ? 3 : 2, i;
    zsh_store_server_t *server;
    zsh_store_client_t *client;
    zsh_status_t status;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_server_start(NULL, 0, T_OK, &server));
    for (i = 0; i < nhosts; i++) {
        status = zsh_store_client_connect(hosts[i], zsh_store_server_port(server), T_OK, &client);
        ZSH_EXPECT_STATUS(ZSH_OK, status);
        if (status == ZSH_OK) {
            expect_set_get(client, hosts[i], "reached");
            zsh_store_client_close(client);
        }
    }
    zsh_store_server_stop(server);
}
