#include "boot/store_frame.h"
#include "core/status.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Fields an opcode carries; on the wire they always come in this order. */
#define ZSH_STORE_FIELD_KEY   0x1u
#define ZSH_STORE_FIELD_VALUE 0x2u
#define ZSH_STORE_FIELD_WAIT  0x4u
#define ZSH_STORE_FIELD_FLAGS 0x8u
#define ZSH_STORE_FIELD_RANK  0x10u
#define ZSH_STORE_FIELD_PID   0x20u
#define ZSH_STORE_FIELD_NONCE 0x40u
#define ZSH_STORE_FIELD_MAC   0x80u

typedef struct {
    zsh_store_op_t op;
    const char    *name;
    unsigned       fields;
} zsh_store_op_info_t;

static const zsh_store_op_info_t zsh_store_ops[] = {
    {ZSH_STORE_OP_SET, "SET", ZSH_STORE_FIELD_KEY | ZSH_STORE_FIELD_VALUE},
    {ZSH_STORE_OP_GET, "GET", ZSH_STORE_FIELD_KEY | ZSH_STORE_FIELD_WAIT},
    {ZSH_STORE_OP_HELLO, "HELLO",
     ZSH_STORE_FIELD_KEY | ZSH_STORE_FIELD_RANK | ZSH_STORE_FIELD_PID | ZSH_STORE_FIELD_NONCE |
         ZSH_STORE_FIELD_MAC},
    {ZSH_STORE_OP_OK, "OK", 0},
    {ZSH_STORE_OP_VALUE, "VALUE", ZSH_STORE_FIELD_VALUE},
    {ZSH_STORE_OP_NOT_FOUND, "NOT_FOUND", 0},
    {ZSH_STORE_OP_CHALLENGE, "CHALLENGE", ZSH_STORE_FIELD_FLAGS | ZSH_STORE_FIELD_NONCE},
    {ZSH_STORE_OP_WELCOME, "WELCOME", ZSH_STORE_FIELD_MAC},
    {ZSH_STORE_OP_REFUSED, "REFUSED", ZSH_STORE_FIELD_KEY | ZSH_STORE_FIELD_FLAGS},
};

static const zsh_store_op_info_t *zsh_store_op_info(unsigned op)
{
    size_t i;

    for (i = 0; i < sizeof(zsh_store_ops) / sizeof(zsh_store_ops[0]); i++) {
        if ((unsigned)zsh_store_ops[i].op == op) {
            return &zsh_store_ops[i];
        }
    }
    return NULL;
}

const char *zsh_store_op_name(zsh_store_op_t op)
{
    const zsh_store_op_info_t *info = zsh_store_op_info((unsigned)op);

    return (info != NULL) ? info->name : "unknown";
}

/* Payload bytes (opcode included) of a frame with these field lengths. */
static size_t zsh_store_payload_size(unsigned fields, size_t key_len, size_t value_len)
{
    size_t size = 1;

    size += (fields & ZSH_STORE_FIELD_KEY) ? 2 + key_len : 0;
    size += (fields & ZSH_STORE_FIELD_VALUE) ? 4 + value_len : 0;
    size += (fields & ZSH_STORE_FIELD_WAIT) ? 4 : 0;
    size += (fields & ZSH_STORE_FIELD_FLAGS) ? 4 : 0;
    size += (fields & ZSH_STORE_FIELD_RANK) ? 4 : 0;
    size += (fields & ZSH_STORE_FIELD_PID) ? 4 : 0;
    size += (fields & ZSH_STORE_FIELD_NONCE) ? ZSH_STORE_NONCE_SIZE : 0;
    size += (fields & ZSH_STORE_FIELD_MAC) ? ZSH_STORE_MAC_SIZE : 0;
    return size;
}

/* ---- decoding ---------------------------------------------------------------- */

/* A cursor over one payload; every read checks what is left. */
typedef struct {
    const uint8_t *pos, *end;
} zsh_store_reader_t;

static size_t zsh_store_reader_left(const zsh_store_reader_t *rd)
{
    return (size_t)(rd->end - rd->pos);
}

static bool zsh_store_read_uint(zsh_store_reader_t *rd, size_t width, uint32_t *value_p)
{
    uint32_t value = 0;
    size_t i;

    if (zsh_store_reader_left(rd) < width) {
        return false;
    }
    for (i = 0; i < width; i++) {
        value = (value << 8) | rd->pos[i];
    }
    rd->pos += width;
    *value_p = value;
    return true;
}

/* A length-prefixed field: the prefix is @width bytes, the bytes at most @max. */
static bool zsh_store_read_field(zsh_store_reader_t *rd, const char *what, size_t width, size_t max,
                                 const uint8_t **bytes_p, size_t *len_p, char *err, size_t err_len)
{
    uint32_t len;

    if (!zsh_store_read_uint(rd, width, &len)) {
        snprintf(err, err_len, "the %s length is cut off by the end of the frame", what);
        return false;
    }
    if (len > max) {
        snprintf(err, err_len, "%s length %u exceeds the limit of %zu bytes", what, len, max);
        return false;
    }
    if (len > zsh_store_reader_left(rd)) {
        snprintf(err, err_len, "%s length %u overruns the frame (%zu bytes left)", what, len,
                 zsh_store_reader_left(rd));
        return false;
    }
    *bytes_p = rd->pos;
    *len_p   = len;
    rd->pos += len;
    return true;
}

/* A u32 field @bit of @info, if the opcode carries it. */
static bool zsh_store_read_u32_field(zsh_store_reader_t *rd, const zsh_store_op_info_t *info,
                                     unsigned bit, const char *what, uint32_t *value_p, char *err,
                                     size_t err_len)
{
    if ((info->fields & bit) && !zsh_store_read_uint(rd, 4, value_p)) {
        snprintf(err, err_len, "the %s of a %s frame is cut off by the end of the frame", what,
                 info->name);
        return false;
    }
    return true;
}

/* A fixed-size field @bit of @info, if the opcode carries it. */
static bool zsh_store_read_fixed_field(zsh_store_reader_t *rd, const zsh_store_op_info_t *info,
                                       unsigned bit, const char *what, size_t size,
                                       const uint8_t **bytes_p, char *err, size_t err_len)
{
    if (!(info->fields & bit)) {
        return true;
    }
    if (zsh_store_reader_left(rd) < size) {
        snprintf(err, err_len, "the %s of a %s frame is cut off by the end of the frame", what,
                 info->name);
        return false;
    }
    *bytes_p = rd->pos;
    rd->pos += size;
    return true;
}

/* @payload holds the whole payload, opcode first, and the opcode is known. */
static zsh_store_decode_t zsh_store_decode_payload(const uint8_t *payload, size_t len,
                                                   const zsh_store_op_info_t *info,
                                                   zsh_store_frame_t *frame, char *err,
                                                   size_t err_len)
{
    zsh_store_reader_t rd = {payload + 1, payload + len};

    memset(frame, 0, sizeof(*frame));
    frame->op = info->op;
    if ((info->fields & ZSH_STORE_FIELD_KEY) &&
        !zsh_store_read_field(&rd, "key", 2, ZSH_STORE_KEY_MAX, &frame->key, &frame->key_len, err,
                              err_len)) {
        return ZSH_STORE_DECODE_MALFORMED;
    }
    if ((info->fields & ZSH_STORE_FIELD_VALUE) &&
        !zsh_store_read_field(&rd, "value", 4, ZSH_STORE_VALUE_MAX, &frame->value,
                              &frame->value_len, err, err_len)) {
        return ZSH_STORE_DECODE_MALFORMED;
    }
    if (!zsh_store_read_u32_field(&rd, info, ZSH_STORE_FIELD_WAIT, "wait", &frame->wait_ms, err,
                                  err_len) ||
        !zsh_store_read_u32_field(&rd, info, ZSH_STORE_FIELD_FLAGS, "flags", &frame->flags, err,
                                  err_len) ||
        !zsh_store_read_u32_field(&rd, info, ZSH_STORE_FIELD_RANK, "rank", &frame->rank, err,
                                  err_len) ||
        !zsh_store_read_u32_field(&rd, info, ZSH_STORE_FIELD_PID, "pid", &frame->pid, err,
                                  err_len) ||
        !zsh_store_read_fixed_field(&rd, info, ZSH_STORE_FIELD_NONCE, "nonce",
                                    ZSH_STORE_NONCE_SIZE, &frame->nonce, err, err_len) ||
        !zsh_store_read_fixed_field(&rd, info, ZSH_STORE_FIELD_MAC, "mac", ZSH_STORE_MAC_SIZE,
                                    &frame->mac, err, err_len)) {
        return ZSH_STORE_DECODE_MALFORMED;
    }
    if (zsh_store_reader_left(&rd) != 0) {
        snprintf(err, err_len, "%zu bytes of trailing garbage after the fields of a %s frame",
                 zsh_store_reader_left(&rd), info->name);
        return ZSH_STORE_DECODE_MALFORMED;
    }
    return ZSH_STORE_DECODE_FRAME;
}

zsh_store_decode_t zsh_store_frame_decode(const uint8_t *buf, size_t len,
                                          zsh_store_frame_t *frame_p, size_t *used_p, char *err,
                                          size_t err_len)
{
    const zsh_store_op_info_t *info;
    zsh_store_reader_t rd;
    zsh_store_frame_t frame;
    zsh_store_decode_t result;
    uint32_t payload_len;
    size_t max;

    /* Checked before the cursor is built: @buf may be NULL when it is empty. */
    if (len < ZSH_STORE_HEADER_SIZE) {
        return ZSH_STORE_DECODE_PARTIAL;
    }
    rd.pos = buf;
    rd.end = buf + len;
    zsh_store_read_uint(&rd, ZSH_STORE_HEADER_SIZE, &payload_len);
    if (payload_len == 0) {
        snprintf(err, err_len, "empty frame: no opcode");
        return ZSH_STORE_DECODE_MALFORMED;
    }
    if (payload_len > ZSH_STORE_PAYLOAD_MAX) {
        snprintf(err, err_len, "frame length %u exceeds the limit of %u bytes", payload_len,
                 ZSH_STORE_PAYLOAD_MAX);
        return ZSH_STORE_DECODE_MALFORMED;
    }
    if (zsh_store_reader_left(&rd) == 0) {
        return ZSH_STORE_DECODE_PARTIAL;
    }
    info = zsh_store_op_info(rd.pos[0]);
    if (info == NULL) {
        snprintf(err, err_len, "unknown opcode 0x%02x", rd.pos[0]);
        return ZSH_STORE_DECODE_MALFORMED;
    }
    max = zsh_store_payload_size(info->fields, ZSH_STORE_KEY_MAX, ZSH_STORE_VALUE_MAX);
    if (payload_len > max) {
        snprintf(err, err_len, "%s frame length %u exceeds its limit of %zu bytes", info->name,
                 payload_len, max);
        return ZSH_STORE_DECODE_MALFORMED;
    }
    if (zsh_store_reader_left(&rd) < payload_len) {
        return ZSH_STORE_DECODE_PARTIAL;
    }
    result = zsh_store_decode_payload(rd.pos, payload_len, info, &frame, err, err_len);
    if (result == ZSH_STORE_DECODE_FRAME) {
        *frame_p = frame;
        *used_p  = ZSH_STORE_HEADER_SIZE + payload_len;
    }
    return result;
}

bool zsh_store_frame_peek_op(const uint8_t *buf, size_t len, unsigned *op_p)
{
    if (len < ZSH_STORE_HEADER_SIZE + 1) {
        return false;
    }
    *op_p = buf[ZSH_STORE_HEADER_SIZE];
    return true;
}

/* ---- byte queue ---------------------------------------------------------------- */

zsh_status_t zsh_store_buf_reserve(zsh_store_buf_t *buf, size_t n)
{
    size_t held = zsh_store_buf_len(buf), cap;
    uint8_t *data;

    if (buf->cap - buf->tail >= n) {
        return ZSH_OK;
    }
    /* Sliding the held bytes to the front is enough when the queue has drained. */
    if (buf->cap - held >= n) {
        memmove(buf->data, buf->data + buf->head, held);
        buf->head = 0;
        buf->tail = held;
        return ZSH_OK;
    }
    cap = (buf->cap != 0) ? buf->cap : 256;
    while (cap - held < n) {
        cap *= 2;
    }
    data = malloc(cap);
    if (data == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot grow a store buffer to %zu bytes", cap);
    }
    if (held != 0) {
        memcpy(data, buf->data + buf->head, held);
    }
    free(buf->data);
    buf->data = data;
    buf->cap  = cap;
    buf->head = 0;
    buf->tail = held;
    return ZSH_OK;
}

void zsh_store_buf_consume(zsh_store_buf_t *buf, size_t n)
{
    buf->head += n;
    if (buf->head == buf->tail) {
        buf->head = buf->tail = 0;
    }
}

void zsh_store_buf_cleanup(zsh_store_buf_t *buf)
{
    free(buf->data);
    memset(buf, 0, sizeof(*buf));
}

/* ---- encoding ---------------------------------------------------------------- */

static uint8_t *zsh_store_put_uint(uint8_t *p, size_t width, uint32_t value)
{
    size_t i;

    for (i = 0; i < width; i++) {
        p[i] = (uint8_t)(value >> (8 * (width - 1 - i)));
    }
    return p + width;
}

static uint8_t *zsh_store_put_bytes(uint8_t *p, const uint8_t *bytes, size_t len)
{
    if (len != 0) {
        memcpy(p, bytes, len);
    }
    return p + len;
}

/* A fixed-size field: zeros when @bytes is NULL. */
static uint8_t *zsh_store_put_fixed(uint8_t *p, const uint8_t *bytes, size_t len)
{
    if (bytes == NULL) {
        memset(p, 0, len);
        return p + len;
    }
    return zsh_store_put_bytes(p, bytes, len);
}

zsh_status_t zsh_store_frame_encode(const zsh_store_frame_t *frame, zsh_store_buf_t *out)
{
    const zsh_store_op_info_t *info = zsh_store_op_info((unsigned)frame->op);
    size_t payload;
    zsh_status_t status;
    uint8_t *p;

    if (info == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "unknown store opcode 0x%02x", (unsigned)frame->op);
    }
    if ((info->fields & ZSH_STORE_FIELD_KEY) && (frame->key_len > ZSH_STORE_KEY_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "store key of %zu bytes exceeds the limit of %u bytes", frame->key_len,
                         ZSH_STORE_KEY_MAX);
    }
    if ((info->fields & ZSH_STORE_FIELD_VALUE) && (frame->value_len > ZSH_STORE_VALUE_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "store value of %zu bytes exceeds the limit of %u bytes",
                         frame->value_len, ZSH_STORE_VALUE_MAX);
    }
    payload = zsh_store_payload_size(info->fields, frame->key_len, frame->value_len);
    status  = zsh_store_buf_reserve(out, ZSH_STORE_HEADER_SIZE + payload);
    if (status != ZSH_OK) {
        return status;
    }
    p    = zsh_store_put_uint(out->data + out->tail, ZSH_STORE_HEADER_SIZE, (uint32_t)payload);
    *p++ = (uint8_t)info->op;
    if (info->fields & ZSH_STORE_FIELD_KEY) {
        p = zsh_store_put_uint(p, 2, (uint32_t)frame->key_len);
        p = zsh_store_put_bytes(p, frame->key, frame->key_len);
    }
    if (info->fields & ZSH_STORE_FIELD_VALUE) {
        p = zsh_store_put_uint(p, 4, (uint32_t)frame->value_len);
        p = zsh_store_put_bytes(p, frame->value, frame->value_len);
    }
    if (info->fields & ZSH_STORE_FIELD_WAIT) {
        p = zsh_store_put_uint(p, 4, frame->wait_ms);
    }
    if (info->fields & ZSH_STORE_FIELD_FLAGS) {
        p = zsh_store_put_uint(p, 4, frame->flags);
    }
    if (info->fields & ZSH_STORE_FIELD_RANK) {
        p = zsh_store_put_uint(p, 4, frame->rank);
    }
    if (info->fields & ZSH_STORE_FIELD_PID) {
        p = zsh_store_put_uint(p, 4, frame->pid);
    }
    if (info->fields & ZSH_STORE_FIELD_NONCE) {
        p = zsh_store_put_fixed(p, frame->nonce, ZSH_STORE_NONCE_SIZE);
    }
    if (info->fields & ZSH_STORE_FIELD_MAC) {
        p = zsh_store_put_fixed(p, frame->mac, ZSH_STORE_MAC_SIZE);
    }
    out->tail = (size_t)(p - out->data);
    return ZSH_OK;
}
