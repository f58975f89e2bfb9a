/*
 * The store's wire format: every frame type round-trips, the decoder takes
 * bytes in any slicing, and malformed input is reported, never read past.
 * Every decode here reads from a heap copy of exactly the bytes under test,
 * so a read past them is caught by AddressSanitizer.
 */
#include "boot/store_frame.h"
#include "harness/zsh_test.h"

#include <stdlib.h>
#include <string.h>

/* Decode @len bytes of @bytes from an exact-size heap copy. The decoded frame
 * points into the copy, so it is handed over in *keep_p, or freed if NULL. */
static zsh_store_decode_t decode_copy(const uint8_t *bytes, size_t len, zsh_store_frame_t *frame,
                                      size_t *used, char *err, size_t err_len, uint8_t **keep_p)
{
    uint8_t *copy = malloc(len ? len : 1);
    zsh_store_decode_t result;

    if (len != 0) {
        memcpy(copy, bytes, len);
    }
    result = zsh_store_frame_decode(len ? copy : NULL, len, frame, used, err, err_len);
    if (keep_p != NULL) {
        *keep_p = copy;
    } else {
        free(copy);
    }
    return result;
}

static void expect_same_frame(const zsh_store_frame_t *want, const zsh_store_frame_t *got)
{
    ZSH_EXPECT_EQ(want->op, got->op);
    if ((want->op == ZSH_STORE_OP_SET) || (want->op == ZSH_STORE_OP_GET)) {
        ZSH_EXPECT_EQ(want->key_len, got->key_len);
        ZSH_EXPECT_TRUE((want->key_len == 0) || (memcmp(want->key, got->key, want->key_len) == 0));
    }
    if ((want->op == ZSH_STORE_OP_SET) || (want->op == ZSH_STORE_OP_VALUE)) {
        ZSH_EXPECT_EQ(want->value_len, got->value_len);
        ZSH_EXPECT_TRUE((want->value_len == 0) ||
                        (memcmp(want->value, got->value, want->value_len) == 0));
    }
    if (want->op == ZSH_STORE_OP_GET) {
        ZSH_EXPECT_EQ(want->wait_ms, got->wait_ms);
    }
}

/* Encode @frame, decode it back from exactly its bytes, and compare. */
static void expect_round_trip(const zsh_store_frame_t *frame)
{
    zsh_store_buf_t buf = {0};
    zsh_store_frame_t got;
    size_t used = 0;
    char err[256] = "";

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(frame, &buf));
    ZSH_EXPECT_EQ(ZSH_STORE_DECODE_FRAME,
                  zsh_store_frame_decode(buf.data, zsh_store_buf_len(&buf), &got, &used, err,
                                         sizeof(err)));
    ZSH_EXPECT_EQ(zsh_store_buf_len(&buf), used);
    expect_same_frame(frame, &got);
    zsh_store_buf_cleanup(&buf);
}

static const uint8_t value_bytes[] = {0, 1, 2, 0xff, 0x80, 'v'};

ZSH_TEST(store_frame, every_frame_type_round_trips)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"ag/1/0", .key_len = 6,
                             .value = value_bytes, .value_len = sizeof(value_bytes)};
    zsh_store_frame_t get = {.op = ZSH_STORE_OP_GET, .key = (const uint8_t *)"ag/1/2", .key_len = 6,
                             .wait_ms = 0xfedcba98u};
    zsh_store_frame_t value = {.op = ZSH_STORE_OP_VALUE, .value = value_bytes,
                               .value_len = sizeof(value_bytes)};
    zsh_store_frame_t ok = {.op = ZSH_STORE_OP_OK}, not_found = {.op = ZSH_STORE_OP_NOT_FOUND};

    expect_round_trip(&set);
    expect_round_trip(&get);
    expect_round_trip(&value);
    expect_round_trip(&ok);
    expect_round_trip(&not_found);
}

ZSH_TEST(store_frame, empty_key_and_empty_value_round_trip)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"", .key_len = 0,
                             .value = NULL, .value_len = 0};
    zsh_store_frame_t get = {.op = ZSH_STORE_OP_GET, .key = (const uint8_t *)"", .key_len = 0};
    zsh_store_frame_t value = {.op = ZSH_STORE_OP_VALUE, .value = NULL, .value_len = 0};

    expect_round_trip(&set);
    expect_round_trip(&get);
    expect_round_trip(&value);
}

ZSH_TEST(store_frame, largest_key_and_value_round_trip)
{
    uint8_t *key = malloc(ZSH_STORE_KEY_MAX), *value = malloc(ZSH_STORE_VALUE_MAX);
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = key, .key_len = ZSH_STORE_KEY_MAX,
                             .value = value, .value_len = ZSH_STORE_VALUE_MAX};
    size_t i;

    for (i = 0; i < ZSH_STORE_KEY_MAX; i++) {
        key[i] = (uint8_t)(i * 7);
    }
    for (i = 0; i < ZSH_STORE_VALUE_MAX; i++) {
        value[i] = (uint8_t)(i * 13 + 1);
    }
    expect_round_trip(&set);
    free(key);
    free(value);
}

ZSH_TEST(store_frame, encode_rejects_key_or_value_over_the_limit)
{
    static uint8_t big[ZSH_STORE_VALUE_MAX + 1];
    zsh_store_frame_t long_key = {.op = ZSH_STORE_OP_GET, .key = big,
                                  .key_len = ZSH_STORE_KEY_MAX + 1};
    zsh_store_frame_t long_value = {.op = ZSH_STORE_OP_VALUE, .value = big,
                                    .value_len = ZSH_STORE_VALUE_MAX + 1};
    zsh_store_frame_t bad_op = {.op = (zsh_store_op_t)0x42};
    zsh_store_buf_t buf = {0};

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_frame_encode(&long_key, &buf));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "1024");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_frame_encode(&long_value, &buf));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_store_frame_encode(&bad_op, &buf));
    ZSH_EXPECT_EQ(0, zsh_store_buf_len(&buf));
    zsh_store_buf_cleanup(&buf);
}

/* Two frames back to back, fed one byte more at a time: every proper prefix
 * of a frame needs more bytes, and a whole frame leaves the next one alone. */
ZSH_TEST(store_frame, decodes_incrementally_byte_by_byte)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"k", .key_len = 1,
                             .value = value_bytes, .value_len = sizeof(value_bytes)};
    zsh_store_frame_t get = {.op = ZSH_STORE_OP_GET, .key = (const uint8_t *)"key2", .key_len = 4,
                             .wait_ms = 300};
    zsh_store_buf_t buf = {0};
    zsh_store_frame_t got;
    size_t first, used, have, start = 0, frames = 0;
    uint8_t *copy;
    char err[256];

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&set, &buf));
    first = zsh_store_buf_len(&buf);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&get, &buf));
    for (have = 0; have <= zsh_store_buf_len(&buf) - start; have++) {
        zsh_store_decode_t result = decode_copy(buf.data + start, have, &got, &used, err,
                                                sizeof(err), &copy);
        if (result == ZSH_STORE_DECODE_FRAME) {
            expect_same_frame((frames == 0) ? &set : &get, &got);
        }
        free(copy);
        if (result == ZSH_STORE_DECODE_PARTIAL) {
            continue;
        }
        ZSH_ASSERT_TRUE(result == ZSH_STORE_DECODE_FRAME);
        ZSH_EXPECT_EQ((frames == 0) ? first : zsh_store_buf_len(&buf) - first, used);
        ZSH_EXPECT_EQ(used, have);
        start += used;
        have = 0;
        frames++;
        if (start == zsh_store_buf_len(&buf)) {
            break;
        }
    }
    ZSH_EXPECT_EQ(2, frames);
    zsh_store_buf_cleanup(&buf);
}

/* A hand-built frame: header with @payload_len, then @n payload bytes. */
static size_t build(uint8_t *out, uint32_t payload_len, const uint8_t *payload, size_t n)
{
    out[0] = (uint8_t)(payload_len >> 24);
    out[1] = (uint8_t)(payload_len >> 16);
    out[2] = (uint8_t)(payload_len >> 8);
    out[3] = (uint8_t)payload_len;
    if (n != 0) {
        memcpy(out + 4, payload, n);
    }
    return 4 + n;
}

static void expect_malformed(const uint8_t *bytes, size_t len, const char *why)
{
    zsh_store_frame_t got;
    size_t used = 12345;
    char err[256] = "";

    ZSH_EXPECT_EQ(ZSH_STORE_DECODE_MALFORMED,
                  decode_copy(bytes, len, &got, &used, err, sizeof(err), NULL));
    ZSH_EXPECT_STR_CONTAINS(err, why);
    ZSH_EXPECT_EQ(12345, used); /* outputs untouched */
}

ZSH_TEST(store_frame, oversized_length_is_malformed_from_the_header_alone)
{
    uint8_t bytes[8];

    build(bytes, ZSH_STORE_PAYLOAD_MAX + 1, NULL, 0);
    expect_malformed(bytes, 4, "exceeds the limit");
    build(bytes, 0xffffffffu, NULL, 0);
    expect_malformed(bytes, 4, "exceeds the limit");
}

ZSH_TEST(store_frame, oversized_length_for_its_opcode_is_malformed_before_the_payload)
{
    const uint8_t get = ZSH_STORE_OP_GET, ok = ZSH_STORE_OP_OK;
    uint8_t bytes[8];

    build(bytes, 1 + 2 + ZSH_STORE_KEY_MAX + 4 + 1, &get, 1);
    expect_malformed(bytes, 5, "GET frame length");
    build(bytes, 2, &ok, 1);
    expect_malformed(bytes, 5, "OK frame length");
}

ZSH_TEST(store_frame, empty_frame_and_unknown_opcode_are_malformed)
{
    const uint8_t unknown[] = {0x42, 0, 0};
    uint8_t bytes[16];

    build(bytes, 0, NULL, 0);
    expect_malformed(bytes, 4, "empty frame");
    build(bytes, sizeof(unknown), unknown, 1);
    expect_malformed(bytes, 5, "unknown opcode 0x42");
}

ZSH_TEST(store_frame, field_lengths_overrunning_the_frame_are_malformed)
{
    /* SET whose key claims 10 bytes in a 6-byte payload. */
    const uint8_t key_over[] = {ZSH_STORE_OP_SET, 0, 10, 'a', 'b', 'c'};
    /* SET with a 1-byte key and a value claiming 100 bytes where 2 are left. */
    const uint8_t value_over[] = {ZSH_STORE_OP_SET, 0, 1, 'k', 0, 0, 0, 100, 'x', 'y'};
    /* VALUE claiming 0xffffffff bytes. */
    const uint8_t value_huge[] = {ZSH_STORE_OP_VALUE, 0xff, 0xff, 0xff, 0xff};
    /* GET with a key longer than the limit (the length itself is checked). */
    const uint8_t key_long[] = {ZSH_STORE_OP_GET, 0x04, 0x01, 'k'};
    /* GET whose wait is cut off. */
    const uint8_t wait_cut[] = {ZSH_STORE_OP_GET, 0, 1, 'k', 0, 0};
    /* SET whose value length is cut off. */
    const uint8_t len_cut[] = {ZSH_STORE_OP_SET, 0, 1, 'k', 0};
    uint8_t bytes[32];

    expect_malformed(bytes, build(bytes, sizeof(key_over), key_over, sizeof(key_over)),
                     "key length 10 overruns the frame");
    expect_malformed(bytes, build(bytes, sizeof(value_over), value_over, sizeof(value_over)),
                     "value length 100 overruns the frame");
    expect_malformed(bytes, build(bytes, sizeof(value_huge), value_huge, sizeof(value_huge)),
                     "exceeds the limit");
    expect_malformed(bytes, build(bytes, sizeof(key_long), key_long, sizeof(key_long)),
                     "key length 1025 exceeds the limit");
    expect_malformed(bytes, build(bytes, sizeof(wait_cut), wait_cut, sizeof(wait_cut)),
                     "wait of a GET frame is cut off");
    expect_malformed(bytes, build(bytes, sizeof(len_cut), len_cut, sizeof(len_cut)),
                     "value length is cut off");
}

ZSH_TEST(store_frame, trailing_garbage_inside_a_frame_is_malformed)
{
    const uint8_t ok_extra[]  = {ZSH_STORE_OP_OK, 0};
    const uint8_t get_extra[] = {ZSH_STORE_OP_GET, 0, 1, 'k', 0, 0, 0, 5, 'z', 'z'};
    uint8_t bytes[32];

    expect_malformed(bytes, build(bytes, sizeof(ok_extra), ok_extra, sizeof(ok_extra)),
                     "OK frame length");
    expect_malformed(bytes, build(bytes, sizeof(get_extra), get_extra, sizeof(get_extra)),
                     "2 bytes of trailing garbage after the fields of a GET frame");
}

/* Every truncation of a valid frame needs more bytes and sets no output. */
ZSH_TEST(store_frame, truncated_frames_need_more_bytes)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"rank", .key_len = 4,
                             .value = value_bytes, .value_len = sizeof(value_bytes)};
    zsh_store_buf_t buf = {0};
    zsh_store_frame_t got;
    size_t have, used;
    char err[8];

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&set, &buf));
    for (have = 0; have < zsh_store_buf_len(&buf); have++) {
        used = 777;
        ZSH_EXPECT_EQ(ZSH_STORE_DECODE_PARTIAL, decode_copy(buf.data, have, &got, &used, err,
                                                            sizeof(err), NULL));
        ZSH_EXPECT_EQ(777, used);
    }
    zsh_store_buf_cleanup(&buf);
}

/* Random corruptions of valid frames: the decoder always gives one of its
 * three answers, never claims more bytes than it had, and never reads past
 * them (AddressSanitizer watches). A fixed seed keeps the test repeatable. */
ZSH_TEST(store_frame, corrupted_frames_never_read_out_of_bounds)
{
    zsh_store_frame_t set = {.op = ZSH_STORE_OP_SET, .key = (const uint8_t *)"ag/7/3", .key_len = 6,
                             .value = value_bytes, .value_len = sizeof(value_bytes)};
    zsh_store_buf_t buf = {0};
    uint8_t bytes[64];
    zsh_store_frame_t got;
    zsh_store_decode_t result;
    unsigned seed = 12345, iter;
    size_t len, used, cut;
    char err[64];

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_store_frame_encode(&set, &buf));
    len = zsh_store_buf_len(&buf);
    ZSH_ASSERT_TRUE(len <= sizeof(bytes));
    for (iter = 0; iter < 20000; iter++) {
        memcpy(bytes, buf.data, len);
        seed               = seed * 1103515245u + 12345u;
        bytes[seed % len] ^= (uint8_t)(1u << ((seed >> 16) % 8));
        seed               = seed * 1103515245u + 12345u;
        cut                = (seed >> 8) % (len + 1);
        used               = 0;
        result             = decode_copy(bytes, cut, &got, &used, err, sizeof(err), NULL);
        ZSH_ASSERT_TRUE((result == ZSH_STORE_DECODE_FRAME) ||
                        (result == ZSH_STORE_DECODE_PARTIAL) ||
                        (result == ZSH_STORE_DECODE_MALFORMED));
        ZSH_ASSERT_TRUE(used <= cut);
    }
    zsh_store_buf_cleanup(&buf);
}
