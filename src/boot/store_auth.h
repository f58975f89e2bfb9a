/*
 * The bootstrap store's handshake, without sockets: what a HELLO must carry
 * for the server to admit it, and the macs of both sides. Pure functions of
 * their inputs (but the random nonces), so the fuzzer drives them directly.
 *
 * On accept the server sends CHALLENGE with a fresh random nonce and whether
 * it holds a job key. The client answers HELLO: its host, rank and pid, a
 * nonce of its own, and, when keyed, HMAC-SHA256(key, "hello" context ||
 * both nonces || rank || pid || host). The server checks the mac in constant
 * time and answers WELCOME with HMAC-SHA256(key, "welcome" context || both
 * nonces), which the client checks in turn: each side proves it holds the key
 * without sending it, and the fresh nonces make a recorded handshake useless
 * to replay. Without a key both macs are zeros and nothing is proven.
 *
 * The macs come from OpenSSL's libcrypto; the nonces from its RAND_bytes.
 */
#ifndef ZSH_BOOT_STORE_AUTH_H_
#define ZSH_BOOT_STORE_AUTH_H_

#include "boot/store_frame.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The shortest job key accepted: shorter ones are too easy to guess. */
#define ZSH_STORE_JOB_KEY_MIN 16u

/* Fill @buf with @len bytes from a cryptographic generator. */
zsh_status_t zsh_store_auth_random(uint8_t *buf, size_t len);

/* Whether @key (NULL or "" for none) is a job key. */
static inline bool zsh_store_auth_keyed(const char *key)
{
    return (key != NULL) && (key[0] != '\0');
}

/* The mac a HELLO carries: over @server_nonce and @hello's host, rank, pid
 * and nonce (not its mac). Zeros without a key. */
void zsh_store_auth_hello_mac(const char *key, const uint8_t *server_nonce,
                              const zsh_store_frame_t *hello, uint8_t mac[ZSH_STORE_MAC_SIZE]);

/* The mac a WELCOME carries, proving the server holds the key too. */
void zsh_store_auth_welcome_mac(const char *key, const uint8_t *server_nonce,
                                const uint8_t *client_nonce, uint8_t mac[ZSH_STORE_MAC_SIZE]);

/* Constant-time comparison of two macs. */
bool zsh_store_auth_mac_equal(const uint8_t *a, const uint8_t *b);

typedef enum {
    ZSH_STORE_ADMIT_YES,       /* a well-formed HELLO with the right mac */
    ZSH_STORE_ADMIT_NOT_HELLO, /* the first frame of a connection must be HELLO */
    ZSH_STORE_ADMIT_BAD_MAC,   /* the mac does not match this server's key */
    ZSH_STORE_ADMIT_BAD_HELLO  /* a rank past the world size, or a host that is no name */
} zsh_store_admit_t;

/*
 * Decide on the first frame @frame of a connection to a server holding @key,
 * which sent @server_nonce, for a job of @world_size ranks (0: any rank).
 * Rank claims are the server's business (one rank, one process); this is only
 * whether the client may talk at all. @err gets why a refusal refused.
 */
zsh_store_admit_t zsh_store_auth_admit(const char *key, const uint8_t *server_nonce,
                                       uint32_t world_size, const zsh_store_frame_t *frame,
                                       char *err, size_t err_len);

#endif
