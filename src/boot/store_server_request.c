/*
 * What the store's requests mean: a SET stores its value and releases the
 * GETs waiting for its key; a GET is answered at once, or deferred until some
 * client SETs the key or its wait runs out. The bytes are moved by
 * store_server_conn.c.
 */
#include "boot/store_auth.h"
#include "boot/store_server.h"
#include "core/clock.h"
#include "core/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ---- the handshake ---------------------------------------------------------------- */

bool zsh_store_claim_rank(zsh_store_server_t *srv, uint32_t rank, uint32_t pid,
                          const uint8_t *host, size_t host_len, char *err, size_t err_len)
{
    zsh_store_frame_t claim = {.op = ZSH_STORE_OP_SET};
    char key[32], value[ZSH_STORE_KEY_MAX + 16];
    const zsh_store_entry_t *held;
    const uint8_t *space;
    zsh_store_entry_t *entry;
    size_t pid_len;
    int len;

    snprintf(key, sizeof(key), ZSH_STORE_RANK_PREFIX "%u", rank);
    len  = snprintf(value, sizeof(value), "%u %.*s", pid, (int)host_len, (const char *)host);
    held = zsh_store_table_find(&srv->table, (const uint8_t *)key, strlen(key));
    if (held != NULL) {
        /* The same process may connect again (a later communicator). */
        if ((held->value_len == (size_t)len) && (memcmp(held->value, value, (size_t)len) == 0)) {
            return true;
        }
        /* The value is "pid host", as this function wrote it. */
        space   = memchr(held->value, ' ', held->value_len);
        pid_len = (space != NULL) ? (size_t)(space - held->value) : held->value_len;
        snprintf(err, err_len, "rank %u is already taken by pid %.*s on host %.*s", rank,
                 (int)pid_len, (const char *)held->value,
                 (int)((space != NULL) ? held->value_len - pid_len - 1 : 0),
                 (space != NULL) ? (const char *)space + 1 : "");
        return false;
    }
    claim.key       = (const uint8_t *)key;
    claim.key_len   = strlen(key);
    claim.value     = (const uint8_t *)value;
    claim.value_len = (size_t)len;
    if (zsh_store_table_put(&srv->table, &claim, &entry) != ZSH_OK) {
        snprintf(err, err_len, "out of memory claiming rank %u", rank);
        return false;
    }
    return true;
}

static void zsh_store_refuse(zsh_store_server_t *srv, zsh_store_conn_t *conn, uint32_t why,
                             const char *reason)
{
    zsh_store_frame_t refused = {.op = ZSH_STORE_OP_REFUSED, .flags = why};

    refused.key     = (const uint8_t *)reason;
    refused.key_len = strlen(reason);
    /* A reason naming a long host may pass the field's bound: cut it there. */
    if (refused.key_len > ZSH_STORE_KEY_MAX) {
        refused.key_len = ZSH_STORE_KEY_MAX;
    }
    zsh_store_conn_reply(srv, conn, &refused);
    zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, reason);
}

/* The first frame of @conn: admit it, or refuse it and drop the connection. */
static void zsh_store_handle_hello(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                   const zsh_store_frame_t *frame)
{
    zsh_store_frame_t welcome = {.op = ZSH_STORE_OP_WELCOME};
    uint8_t mac[ZSH_STORE_MAC_SIZE];
    char err[ZSH_STORE_KEY_MAX + 128];

    switch (zsh_store_auth_admit(srv->key, conn->nonce, srv->world_size, frame, err,
                                 sizeof(err))) {
    case ZSH_STORE_ADMIT_YES:
        break;
    case ZSH_STORE_ADMIT_BAD_MAC:
        zsh_store_refuse(srv, conn, ZSH_STORE_REFUSED_AUTH, err);
        return;
    case ZSH_STORE_ADMIT_BAD_HELLO:
        zsh_store_refuse(srv, conn, ZSH_STORE_REFUSED_HELLO, err);
        return;
    default:
        zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, err);
        return;
    }
    if ((frame->rank != ZSH_STORE_NO_RANK) &&
        !zsh_store_claim_rank(srv, frame->rank, frame->pid, frame->key, frame->key_len, err,
                              sizeof(err))) {
        zsh_store_refuse(srv, conn, ZSH_STORE_REFUSED_TAKEN, err);
        return;
    }
    zsh_store_auth_welcome_mac(srv->key, conn->nonce, frame->nonce, mac);
    welcome.mac    = mac;
    conn->admitted = true;
    conn->rank     = frame->rank;
    zsh_store_conn_reply(srv, conn, &welcome);
    if (frame->rank != ZSH_STORE_NO_RANK) {
        zsh_log(ZSH_LOG_DEBUG, "store :%d: %s is rank %u, pid %u on host %.*s", srv->port,
                conn->peer, frame->rank, frame->pid, (int)frame->key_len,
                (const char *)frame->key);
    }
}

/* ---- requests ------------------------------------------------------------------- */

static void zsh_store_conn_reply_value(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                       const zsh_store_entry_t *entry)
{
    zsh_store_frame_t reply = {.op = ZSH_STORE_OP_VALUE};

    reply.value     = entry->value;
    reply.value_len = entry->value_len;
    zsh_store_conn_reply(srv, conn, &reply);
}

/* Whether @key ends in "/R" with R a rank of the job; R in *@owner. */
static bool zsh_store_key_owner(const zsh_store_server_t *srv, const uint8_t *key, size_t len,
                                uint32_t *owner)
{
    uint64_t r = 0;
    size_t i = len;

    while ((i > 0) && (key[i - 1] >= '0') && (key[i - 1] <= '9') && (len - i < 10)) {
        i--;
    }
    if ((srv->world_size == 0) || (i == len) || (i == 0) || (key[i - 1] != '/') ||
        ((key[i] == '0') && (len - i > 1)) || (len - i >= 10)) {
        return false;
    }
    for (; i < len; i++) {
        r = r * 10 + (uint64_t)(key[i] - '0');
    }
    *owner = (uint32_t)r;
    return r < srv->world_size;
}

/* Whether @frame, a SET, keeps the store within its bounds, out of the
 * server's own keys and off other ranks' keys; if not, @conn is dropped
 * naming what it would break. */
static bool zsh_store_set_allowed(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                  const zsh_store_frame_t *frame)
{
    const size_t prefix = sizeof(ZSH_STORE_RANK_PREFIX) - 1;
    const zsh_store_entry_t *old = zsh_store_table_find(&srv->table, frame->key, frame->key_len);
    size_t bytes = srv->table.bytes + frame->value_len;
    char why[256], claimed[32];
    uint32_t owner;

    if ((frame->key_len >= prefix) && (memcmp(frame->key, ZSH_STORE_RANK_PREFIX, prefix) == 0)) {
        snprintf(why, sizeof(why), "SET of '%.*s': keys beginning with '%s' are the store's own",
                 (int)((frame->key_len < 64) ? frame->key_len : 64), (const char *)frame->key,
                 ZSH_STORE_RANK_PREFIX);
    } else if (zsh_store_key_owner(srv, frame->key, frame->key_len, &owner) &&
               (owner != conn->rank)) {
        if (conn->rank == ZSH_STORE_NO_RANK) {
            snprintf(claimed, sizeof(claimed), "claimed no rank");
        } else {
            snprintf(claimed, sizeof(claimed), "is rank %u", conn->rank);
        }
        snprintf(why, sizeof(why), "SET of '%.*s' by a client that %s: a key ending in /%u "
                 "belongs to rank %u", (int)((frame->key_len < 64) ? frame->key_len : 64),
                 (const char *)frame->key, claimed, owner, owner);
    } else if ((old == NULL) && (srv->table.count >= srv->max_keys)) {
        snprintf(why, sizeof(why), "a new key would pass the store's bound of %zu keys "
                 "(ZSH_STORE_MAX_KEYS)", srv->max_keys);
    } else if ((bytes = (old != NULL) ? bytes - old->value_len
                                      : bytes + zsh_store_entry_cost(frame->key_len, 0)) >
               srv->max_bytes) {
        snprintf(why, sizeof(why), "a SET of %zu bytes would hold %zu bytes, past the store's "
                 "bound of %zu bytes (ZSH_STORE_MAX_BYTES)", frame->value_len, bytes,
                 srv->max_bytes);
    } else {
        return true;
    }
    zsh_store_refuse(srv, conn, ZSH_STORE_REFUSED_BOUND, why);
    return false;
}

static void zsh_store_handle_set(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                 const zsh_store_frame_t *frame)
{
    zsh_store_frame_t ok = {.op = ZSH_STORE_OP_OK};
    zsh_store_entry_t *entry;
    zsh_store_conn_t *waiter;
    size_t i;

    if (!zsh_store_set_allowed(srv, conn, frame)) {
        return;
    }
    if (zsh_store_table_put(&srv->table, frame, &entry) != ZSH_OK) {
        zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, "out of memory storing a value");
        return;
    }
    /* Acknowledge before waking waiters: a waiter may be rank 0 about to stop
     * the server once it sees this key, and the ack must be sent by then. */
    zsh_store_conn_reply(srv, conn, &ok);
    for (i = 0; i < srv->nconns; i++) {
        waiter = srv->conns[i];
        if (waiter->waiting && !waiter->dead && (waiter->wait_key_len == entry->key_len) &&
            (memcmp(waiter->wait_key, entry->key, entry->key_len) == 0)) {
            waiter->waiting = false;
            zsh_store_conn_reply_value(srv, waiter, entry);
        }
    }
}

static void zsh_store_handle_get(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                 const zsh_store_frame_t *frame)
{
    zsh_store_frame_t not_found = {.op = ZSH_STORE_OP_NOT_FOUND};
    zsh_store_entry_t *entry = zsh_store_table_find(&srv->table, frame->key, frame->key_len);

    if (entry != NULL) {
        zsh_store_conn_reply_value(srv, conn, entry);
    } else if (frame->wait_ms == 0) {
        zsh_store_conn_reply(srv, conn, &not_found);
    } else {
        conn->waiting       = true;
        conn->wait_deadline = zsh_clock_now() + frame->wait_ms * 1e-3;
        conn->wait_key_len  = frame->key_len;
        memcpy(conn->wait_key, frame->key, frame->key_len);
    }
}

/* Handle the whole frames buffered on @conn, in order, until it must wait for a
 * deferred GET or for the client to take its replies (which bounds what one
 * client can make the server buffer). Returns whether it handled any. */
bool zsh_store_conn_process(zsh_store_server_t *srv, zsh_store_conn_t *conn)
{
    zsh_store_frame_t frame;
    zsh_store_decode_t result;
    bool handled = false;
    char err[256], why[320];
    unsigned op;
    size_t used;

    while (!conn->dead && !conn->waiting && (zsh_store_buf_len(&conn->out) == 0)) {
        /* Before its HELLO is admitted a client may send nothing else: the
         * opcode alone tells, so no other frame is ever buffered whole. */
        if (!conn->admitted &&
            zsh_store_frame_peek_op(zsh_store_buf_head(&conn->in), zsh_store_buf_len(&conn->in),
                                    &op) &&
            (op != ZSH_STORE_OP_HELLO)) {
            snprintf(why, sizeof(why), "sent %s (0x%02x) before completing the handshake",
                     zsh_store_op_name((zsh_store_op_t)op), op);
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, why);
            break;
        }
        result = zsh_store_frame_decode(zsh_store_buf_head(&conn->in), zsh_store_buf_len(&conn->in),
                                        &frame, &used, err, sizeof(err));
        if (result == ZSH_STORE_DECODE_PARTIAL) {
            break;
        }
        if (result == ZSH_STORE_DECODE_MALFORMED) {
            snprintf(why, sizeof(why), "malformed request: %s", err);
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, why);
            break;
        }
        if (!conn->admitted) {
            zsh_store_handle_hello(srv, conn, &frame);
        } else if (frame.op == ZSH_STORE_OP_SET) {
            zsh_store_handle_set(srv, conn, &frame);
        } else if (frame.op == ZSH_STORE_OP_GET) {
            zsh_store_handle_get(srv, conn, &frame);
        } else {
            snprintf(why, sizeof(why), "a client sent %s, which is not a request",
                     zsh_store_op_name(frame.op));
            zsh_store_conn_drop(srv, conn, ZSH_LOG_WARN, why);
        }
        zsh_store_buf_consume(&conn->in, used);
        handled = true;
    }
    return handled;
}

/* Answer the deferred GETs whose wait has run out. */
void zsh_store_server_expire_waits(zsh_store_server_t *srv, double now)
{
    zsh_store_frame_t not_found = {.op = ZSH_STORE_OP_NOT_FOUND};
    zsh_store_conn_t *conn;
    size_t i;

    for (i = 0; i < srv->nconns; i++) {
        conn = srv->conns[i];
        if (!conn->dead && conn->waiting && (now >= conn->wait_deadline)) {
            conn->waiting = false;
            zsh_store_conn_reply(srv, conn, &not_found);
        }
    }
}
