#include "boot/store_auth.h"
#include "core/status.h"

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <stdio.h>
#include <string.h>

/* Each mac names what it is for, so one side's mac is never valid as the other's. */
#define ZSH_STORE_AUTH_HELLO   "zeroshard store v1 hello"
#define ZSH_STORE_AUTH_WELCOME "zeroshard store v1 welcome"

zsh_status_t zsh_store_auth_random(uint8_t *buf, size_t len)
{
    if (RAND_bytes(buf, (int)len) != 1) {
        return zsh_error(ZSH_ERR_INTERNAL, "store: OpenSSL's RAND_bytes failed (error 0x%lx)",
                         ERR_get_error());
    }
    return ZSH_OK;
}

static uint8_t *zsh_store_auth_put_u32(uint8_t *p, uint32_t value)
{
    p[0] = (uint8_t)(value >> 24);
    p[1] = (uint8_t)(value >> 16);
    p[2] = (uint8_t)(value >> 8);
    p[3] = (uint8_t)value;
    return p + 4;
}

static uint8_t *zsh_store_auth_put(uint8_t *p, const void *bytes, size_t len)
{
    if (bytes == NULL) {
        memset(p, 0, len);
    } else if (len != 0) {
        memcpy(p, bytes, len);
    }
    return p + len;
}

/* HMAC-SHA256(@key, @msg); zeros without a key, or if libcrypto fails (a
 * zero mac then matches nothing a keyed peer computes). */
static void zsh_store_auth_hmac(const char *key, const uint8_t *msg, size_t len,
                                uint8_t mac[ZSH_STORE_MAC_SIZE])
{
    unsigned mac_len = 0;

    memset(mac, 0, ZSH_STORE_MAC_SIZE);
    if (!zsh_store_auth_keyed(key)) {
        return;
    }
    if ((HMAC(EVP_sha256(), key, (int)strlen(key), msg, len, mac, &mac_len) == NULL) ||
        (mac_len != ZSH_STORE_MAC_SIZE)) {
        memset(mac, 0, ZSH_STORE_MAC_SIZE);
    }
}

void zsh_store_auth_hello_mac(const char *key, const uint8_t *server_nonce,
                              const zsh_store_frame_t *hello, uint8_t mac[ZSH_STORE_MAC_SIZE])
{
    uint8_t msg[sizeof(ZSH_STORE_AUTH_HELLO) + 2 * ZSH_STORE_NONCE_SIZE + 4 + 4 + 2 +
                ZSH_STORE_KEY_MAX];
    size_t host_len = (hello->key_len < ZSH_STORE_KEY_MAX) ? hello->key_len : ZSH_STORE_KEY_MAX;
    uint8_t *p      = msg;

    p    = zsh_store_auth_put(p, ZSH_STORE_AUTH_HELLO, sizeof(ZSH_STORE_AUTH_HELLO));
    p    = zsh_store_auth_put(p, server_nonce, ZSH_STORE_NONCE_SIZE);
    p    = zsh_store_auth_put(p, hello->nonce, ZSH_STORE_NONCE_SIZE);
    p    = zsh_store_auth_put_u32(p, hello->rank);
    p    = zsh_store_auth_put_u32(p, hello->pid);
    *p++ = (uint8_t)(host_len >> 8);
    *p++ = (uint8_t)host_len;
    p    = zsh_store_auth_put(p, hello->key, host_len);
    zsh_store_auth_hmac(key, msg, (size_t)(p - msg), mac);
}

void zsh_store_auth_welcome_mac(const char *key, const uint8_t *server_nonce,
                                const uint8_t *client_nonce, uint8_t mac[ZSH_STORE_MAC_SIZE])
{
    uint8_t msg[sizeof(ZSH_STORE_AUTH_WELCOME) + 2 * ZSH_STORE_NONCE_SIZE];
    uint8_t *p = msg;

    p = zsh_store_auth_put(p, ZSH_STORE_AUTH_WELCOME, sizeof(ZSH_STORE_AUTH_WELCOME));
    p = zsh_store_auth_put(p, server_nonce, ZSH_STORE_NONCE_SIZE);
    p = zsh_store_auth_put(p, client_nonce, ZSH_STORE_NONCE_SIZE);
    zsh_store_auth_hmac(key, msg, (size_t)(p - msg), mac);
}

bool zsh_store_auth_mac_equal(const uint8_t *a, const uint8_t *b)
{
    return CRYPTO_memcmp(a, b, ZSH_STORE_MAC_SIZE) == 0;
}

/* A host name goes into messages: printable ASCII only, and not empty. */
static bool zsh_store_auth_host_ok(const uint8_t *host, size_t len)
{
    size_t i;

    for (i = 0; i < len; i++) {
        if ((host[i] < 0x21) || (host[i] > 0x7e)) {
            return false;
        }
    }
    return len != 0;
}

zsh_store_admit_t zsh_store_auth_admit(const char *key, const uint8_t *server_nonce,
                                       uint32_t world_size, const zsh_store_frame_t *frame,
                                       char *err, size_t err_len)
{
    uint8_t mac[ZSH_STORE_MAC_SIZE];

    if (frame->op != ZSH_STORE_OP_HELLO) {
        snprintf(err, err_len, "sent %s before completing the handshake",
                 zsh_store_op_name(frame->op));
        return ZSH_STORE_ADMIT_NOT_HELLO;
    }
    /* The mac first: an unauthenticated client learns nothing from the rest. */
    if (zsh_store_auth_keyed(key)) {
        zsh_store_auth_hello_mac(key, server_nonce, frame, mac);
        if (!zsh_store_auth_mac_equal(mac, frame->mac)) {
            snprintf(err, err_len, "failed authentication: its HELLO does not carry a mac of "
                     "this job's key (ZSH_JOB_KEY)");
            return ZSH_STORE_ADMIT_BAD_MAC;
        }
    }
    if (!zsh_store_auth_host_ok(frame->key, frame->key_len)) {
        snprintf(err, err_len, "its HELLO names no printable host");
        return ZSH_STORE_ADMIT_BAD_HELLO;
    }
    if ((frame->rank != ZSH_STORE_NO_RANK) && (world_size != 0) && (frame->rank >= world_size)) {
        snprintf(err, err_len, "rank %u is out of range for a job of %u ranks (WORLD_SIZE "
                 "differs from rank 0's?)", frame->rank, world_size);
        return ZSH_STORE_ADMIT_BAD_HELLO;
    }
    return ZSH_STORE_ADMIT_YES;
}
