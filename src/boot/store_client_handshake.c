/*
 * The client's side of the store's handshake (store_auth.h): answer the
 * server's CHALLENGE with a HELLO claiming this process's rank, and check
 * that the WELCOME proves the server holds the same job key.
 */
#include "boot/store_auth.h"
#include "boot/store_client.h"
#include "core/status.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* The server refused the HELLO: say why, for a rank in the words of its
 * variables. */
static zsh_status_t zsh_store_refused(zsh_store_client_t *client, const zsh_store_frame_t *reply)
{
    int len = (int)reply->key_len;

    if (reply->flags == ZSH_STORE_REFUSED_AUTH) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "the store at %s refused this %s's job key "
                         "(ZSH_JOB_KEY differs from rank 0's?)", client->addr,
                         (client->rank >= 0) ? "rank" : "client");
    }
    return zsh_error(ZSH_ERR_INVALID_ARG, "the store at %s refused %s: %.*s", client->addr,
                     (client->rank >= 0) ? "this rank" : "this client", len,
                     (const char *)reply->key);
}

/* Receive one frame of the handshake; it must be one of @op1, @op2. */
static zsh_status_t zsh_store_handshake_recv(zsh_store_client_t *client, double deadline,
                                             const char *what, zsh_store_op_t op1,
                                             zsh_store_op_t op2, zsh_store_frame_t *frame_p,
                                             size_t *used_p)
{
    zsh_status_t status = zsh_store_client_recv(client, deadline, what, frame_p, used_p);

    if ((status == ZSH_OK) && (frame_p->op != op1) && (frame_p->op != op2)) {
        return zsh_error(ZSH_ERR_IO, "store %s sent %s where %s was due (is %s a ZeroShard "
                         "store of this version?)", client->addr, zsh_store_op_name(frame_p->op),
                         zsh_store_op_name(op1), client->addr);
    }
    return status;
}

zsh_status_t zsh_store_client_handshake(zsh_store_client_t *client, double deadline)
{
    zsh_store_frame_t challenge, hello = {.op = ZSH_STORE_OP_HELLO}, reply;
    uint8_t server_nonce[ZSH_STORE_NONCE_SIZE], nonce[ZSH_STORE_NONCE_SIZE];
    uint8_t mac[ZSH_STORE_MAC_SIZE], hello_mac[ZSH_STORE_MAC_SIZE];
    bool keyed = zsh_store_auth_keyed(client->key);
    char host[256] = "";
    zsh_status_t status;
    size_t used;

    status = zsh_store_handshake_recv(client, deadline, "the handshake", ZSH_STORE_OP_CHALLENGE,
                                      ZSH_STORE_OP_CHALLENGE, &challenge, &used);
    if (status != ZSH_OK) {
        return status;
    }
    memcpy(server_nonce, challenge.nonce, sizeof(server_nonce));
    zsh_store_buf_consume(&client->in, used);
    if (keyed != ((challenge.flags & ZSH_STORE_FLAG_KEYED) != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, keyed
                         ? "the store at %s has no job key but this process has ZSH_JOB_KEY set "
                           "(set the same ZSH_JOB_KEY on rank 0, or none on any rank)"
                         : "the store at %s requires a job key and this process has none (set "
                           "ZSH_JOB_KEY as on rank 0)", client->addr);
    }
    status = zsh_store_auth_random(nonce, sizeof(nonce));
    if (status != ZSH_OK) {
        return status;
    }
    /* The store names this host to a duplicate of this rank; never empty. */
    if ((gethostname(host, sizeof(host) - 1) != 0) || (host[0] == '\0')) {
        snprintf(host, sizeof(host), "unknown-host");
    }
    hello.key     = (const uint8_t *)host;
    hello.key_len = strlen(host);
    hello.rank    = (client->rank >= 0) ? (uint32_t)client->rank : ZSH_STORE_NO_RANK;
    hello.pid     = (uint32_t)getpid();
    hello.nonce   = nonce;
    zsh_store_auth_hello_mac(client->key, server_nonce, &hello, hello_mac);
    hello.mac = hello_mac;
    status    = zsh_store_frame_encode(&hello, &client->out);
    if (status == ZSH_OK) {
        status = zsh_store_client_send(client, deadline, "HELLO");
    }
    if (status == ZSH_OK) {
        status = zsh_store_handshake_recv(client, deadline, "HELLO", ZSH_STORE_OP_WELCOME,
                                          ZSH_STORE_OP_REFUSED, &reply, &used);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (reply.op == ZSH_STORE_OP_REFUSED) {
        return zsh_store_refused(client, &reply);
    }
    zsh_store_auth_welcome_mac(client->key, server_nonce, nonce, mac);
    if (!zsh_store_auth_mac_equal(mac, reply.mac)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "the store at %s could not prove it holds this "
                         "job's key (ZSH_JOB_KEY): it is not this job's rank 0", client->addr);
    }
    zsh_store_buf_consume(&client->in, used);
    return ZSH_OK;
}

