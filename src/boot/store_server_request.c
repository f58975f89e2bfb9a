/*
 * What the store's requests mean: a SET stores its value and releases the
 * GETs waiting for its key; a GET is answered at once, or deferred until some
 * client SETs the key or its wait runs out. The bytes are moved by
 * store_server_conn.c.
 */
#include "boot/store_server.h"
#include "core/clock.h"
#include "core/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

static void zsh_store_conn_reply_value(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                       const zsh_store_entry_t *entry)
{
    zsh_store_frame_t reply = {.op = ZSH_STORE_OP_VALUE};

    reply.value     = entry->value;
    reply.value_len = entry->value_len;
    zsh_store_conn_reply(srv, conn, &reply);
}

static void zsh_store_handle_set(zsh_store_server_t *srv, zsh_store_conn_t *conn,
                                 const zsh_store_frame_t *frame)
{
    zsh_store_frame_t ok = {.op = ZSH_STORE_OP_OK};
    zsh_store_entry_t *entry;
    zsh_store_conn_t *waiter;
    size_t i;

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
    size_t used;

    while (!conn->dead && !conn->waiting && (zsh_store_buf_len(&conn->out) == 0)) {
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
        if (frame.op == ZSH_STORE_OP_SET) {
            zsh_store_handle_set(srv, conn, &frame);
        } else if (frame.op == ZSH_STORE_OP_GET) {
            zsh_store_handle_get(srv, conn, &frame);
        } else {
            snprintf(why, sizeof(why), "a client sent the reply opcode %s",
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
