/*
 * Wire format of the bootstrap TCP store, and nothing else: no sockets here,
 * so the decoder is a pure function of its input bytes and can be fuzzed.
 *
 * A frame is a u32 payload length, then the payload: a u8 opcode and the
 * opcode's fields, in this order (all integers big-endian):
 *
 *   SET       0x01  u16 key length, key, u32 value length, value
 *   GET       0x02  u16 key length, key, u32 wait in milliseconds
 *   HELLO     0x03  u16 host length, host, u32 rank, u32 pid, client nonce, mac
 *   OK        0x81  (nothing)                  reply to SET
 *   VALUE     0x82  u32 value length, value    reply to GET
 *   NOT_FOUND 0x83  (nothing)                  reply to a GET whose wait ran out
 *   CHALLENGE 0x84  u32 flags, server nonce    sent by the server on accept
 *   WELCOME   0x85  mac                        reply to a HELLO it admits
 *   REFUSED   0x86  u16 reason length, reason, u32 why (ZSH_STORE_REFUSED_*)
 *                                              reply to a HELLO or SET it refuses;
 *                                              the server then closes the connection
 *
 * Nonces and macs are ZSH_STORE_NONCE_SIZE and ZSH_STORE_MAC_SIZE bytes, no
 * length prefix. The handshake (store_auth.h) comes first on every
 * connection: CHALLENGE, HELLO, then WELCOME or REFUSED; the server takes no
 * other request before it has admitted the HELLO.
 *
 * GET carries its wait so that the server, not the client, gives up on a
 * missing key: every request then gets exactly one reply, and a client whose
 * GET timed out can go on using its connection.
 *
 * Every length is bounded (ZSH_STORE_KEY_MAX, ZSH_STORE_VALUE_MAX), and the
 * 5-byte header alone tells whether a frame is over its opcode's bound, so a
 * peer can never make the other side buffer more than ZSH_STORE_FRAME_MAX
 * bytes, nor wait for the tail of a frame that would be rejected anyway.
 */
#ifndef ZSH_BOOT_STORE_FRAME_H_
#define ZSH_BOOT_STORE_FRAME_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSH_STORE_KEY_MAX     1024u
#define ZSH_STORE_VALUE_MAX   (4u << 20)
#define ZSH_STORE_HEADER_SIZE 4u
#define ZSH_STORE_NONCE_SIZE  32u
#define ZSH_STORE_MAC_SIZE    32u
/* HELLO's rank when the client is no rank of the job (a tool, a test). */
#define ZSH_STORE_NO_RANK     UINT32_MAX
/* CHALLENGE's flags: the server holds a job key and wants a mac. */
#define ZSH_STORE_FLAG_KEYED  0x1u
/* A REFUSED frame's flags: why. */
enum {
    ZSH_STORE_REFUSED_AUTH  = 1,  /* the HELLO's mac does not match the key */
    ZSH_STORE_REFUSED_TAKEN = 2,  /* its rank is held by another process */
    ZSH_STORE_REFUSED_HELLO = 3,  /* a malformed or out-of-range HELLO */
    ZSH_STORE_REFUSED_BOUND = 4   /* a SET past a bound of the store, or of a reserved key */
};
/* The largest HELLO: all a connection may send before the server admits it. */
#define ZSH_STORE_HELLO_FRAME_MAX                                                                  \
    (ZSH_STORE_HEADER_SIZE + 1u + 2u + ZSH_STORE_KEY_MAX + 4u + 4u + ZSH_STORE_NONCE_SIZE +       \
     ZSH_STORE_MAC_SIZE)
/* The largest payload is a SET with the longest key and value. */
#define ZSH_STORE_PAYLOAD_MAX (1u + 2u + ZSH_STORE_KEY_MAX + 4u + ZSH_STORE_VALUE_MAX)
#define ZSH_STORE_FRAME_MAX   (ZSH_STORE_HEADER_SIZE + ZSH_STORE_PAYLOAD_MAX)

typedef enum {
    ZSH_STORE_OP_SET       = 0x01,
    ZSH_STORE_OP_GET       = 0x02,
    ZSH_STORE_OP_HELLO     = 0x03,
    ZSH_STORE_OP_OK        = 0x81,
    ZSH_STORE_OP_VALUE     = 0x82,
    ZSH_STORE_OP_NOT_FOUND = 0x83,
    ZSH_STORE_OP_CHALLENGE = 0x84,
    ZSH_STORE_OP_WELCOME   = 0x85,
    ZSH_STORE_OP_REFUSED   = 0x86
} zsh_store_op_t;

/* One frame. Fields the opcode does not carry are ignored by the encoder and
 * zeroed by the decoder. Decoded key, value, nonce and mac point into the
 * decoded bytes; the encoder writes zeros for a NULL nonce or mac. HELLO's
 * host and REFUSED's reason travel in the key field. */
typedef struct zsh_store_frame {
    zsh_store_op_t  op;
    const uint8_t  *key;
    size_t          key_len;
    const uint8_t  *value;
    size_t          value_len;
    uint32_t        wait_ms;
    uint32_t        flags;
    uint32_t        rank;
    uint32_t        pid;
    const uint8_t  *nonce;   /* ZSH_STORE_NONCE_SIZE bytes */
    const uint8_t  *mac;     /* ZSH_STORE_MAC_SIZE bytes */
} zsh_store_frame_t;

typedef enum {
    ZSH_STORE_DECODE_FRAME,     /* a whole frame: *frame_p and *used_p are set */
    ZSH_STORE_DECODE_PARTIAL,   /* valid so far; more bytes are needed */
    ZSH_STORE_DECODE_MALFORMED  /* the peer broke the format; err says how */
} zsh_store_decode_t;

/*
 * Decode the frame at the start of @buf (@len bytes; @buf may be NULL when
 * @len is 0). Reads only @buf[0, len). Bytes after the first frame are left
 * for the next call: the caller drops *used_p bytes and decodes again.
 * Outputs are set only when a whole frame is returned; @err (at least 1 byte)
 * only when the frame is malformed. Touches no global state.
 */
zsh_store_decode_t zsh_store_frame_decode(const uint8_t *buf, size_t len,
                                          zsh_store_frame_t *frame_p, size_t *used_p, char *err,
                                          size_t err_len);

/* The opcode of the frame at the start of @buf, once its header and opcode
 * have arrived (false before); says nothing about the rest of the frame. */
bool zsh_store_frame_peek_op(const uint8_t *buf, size_t len, unsigned *op_p);

/* "SET", "GET", ... or "unknown". */
const char *zsh_store_op_name(zsh_store_op_t op);

/*
 * A byte queue: the encoder appends frames at the tail, sockets drain them
 * from the head; a receiver appends what it reads and consumes decoded frames.
 */
typedef struct zsh_store_buf {
    uint8_t *data;
    size_t   head;  /* first byte not yet consumed */
    size_t   tail;  /* end of the bytes held */
    size_t   cap;
} zsh_store_buf_t;

static inline size_t zsh_store_buf_len(const zsh_store_buf_t *buf)
{
    return buf->tail - buf->head;
}

/* The unread bytes; NULL while nothing was ever buffered (no arithmetic on NULL). */
static inline const uint8_t *zsh_store_buf_head(const zsh_store_buf_t *buf)
{
    return (buf->data == NULL) ? NULL : buf->data + buf->head;
}

/* Make room for @n more bytes at the tail (compacting or growing). */
zsh_status_t zsh_store_buf_reserve(zsh_store_buf_t *buf, size_t n);

/* Drop @n bytes (at most zsh_store_buf_len) from the head. */
void zsh_store_buf_consume(zsh_store_buf_t *buf, size_t n);

void zsh_store_buf_cleanup(zsh_store_buf_t *buf);

/* Append @frame to @out. Fails with ZSH_ERR_INVALID_ARG (naming the limit) for
 * an unknown opcode or a key or value over its bound; @out is then unchanged. */
zsh_status_t zsh_store_frame_encode(const zsh_store_frame_t *frame, zsh_store_buf_t *out);

#endif
