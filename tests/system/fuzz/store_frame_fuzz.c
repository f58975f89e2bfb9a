/*
 * libFuzzer target for the TCP store's frame decoder and handshake. The
 * store's server decodes whatever a peer sends, so zsh_store_frame_decode
 * must never read outside its input, whatever the bytes, and the handshake
 * (store_auth.h) must admit exactly the HELLOs that carry the job key's mac.
 * Built with -fsanitize=fuzzer,address,undefined by tests/system/fuzz/run_fuzz.sh.
 *
 * Each input is decoded the way the server consumes its receive buffer:
 * frame after frame until one is partial or malformed. Besides memory safety
 * it checks the decoder's contract:
 *   - outputs are set only for a whole frame, and it claims no more bytes
 *     than it was given (and at least a header and an opcode);
 *   - a malformed frame comes with a message;
 *   - the format has one encoding per frame: encoding a decoded frame gives
 *     back exactly the bytes it was decoded from;
 *   - every proper prefix of a whole frame is partial;
 *   - the opcode peeked from the header is the decoded one.
 * Then every decoded frame is offered to the server's handshake as a first
 * frame (keyed when the input's length is odd, for a job of 4 ranks when it
 * is 2 or 3 modulo 4), checking that:
 *   - only a HELLO is ever admitted, and a refusal says why;
 *   - with a key, a HELLO is admitted only with the mac computed here, the
 *     same HELLO with that mac is never refused for its mac, and one flipped
 *     bit of it always is;
 *   - a WELCOME's mac is accepted only if it is the server's proof.
 */
#include "boot/store_auth.h"
#include "boot/store_frame.h"
#include "fuzz_check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>


static int field_inside(const uint8_t *field, size_t field_len, const uint8_t *buf, size_t len)
{
    if (field_len == 0) {
        return 1;
    }
    return (field != NULL) && (field >= buf) && (field_len <= len) &&
           ((size_t)(field - buf) <= len - field_len);
}

/* @frame was decoded from @buf[0, used): re-encoding it gives those bytes. */
static void check_canonical(const zsh_store_frame_t *frame, const uint8_t *buf, size_t used)
{
    zsh_store_buf_t out = {0};

    FUZZ_CHECK(zsh_store_frame_encode(frame, &out) == ZSH_OK);
    FUZZ_CHECK(zsh_store_buf_len(&out) == used);
    FUZZ_CHECK(memcmp(zsh_store_buf_head(&out), buf, used) == 0);
    zsh_store_buf_cleanup(&out);
}

/* Every proper prefix of the whole frame @buf[0, used) needs more bytes. A
 * few prefixes are enough: the header, header plus opcode, and the last. */
static void check_prefixes_partial(const uint8_t *buf, size_t used)
{
    const size_t cuts[] = {0, ZSH_STORE_HEADER_SIZE - 1, ZSH_STORE_HEADER_SIZE,
                           ZSH_STORE_HEADER_SIZE + 1, used - 1};
    zsh_store_frame_t frame;
    size_t i, got;
    char err[16];

    for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        if (cuts[i] < used) {
            /* An exact-size copy, so AddressSanitizer sees a read past the cut. */
            uint8_t *copy = malloc(cuts[i] ? cuts[i] : 1);

            FUZZ_CHECK(copy != NULL);
            memcpy(copy, buf, cuts[i]);
            FUZZ_CHECK(zsh_store_frame_decode(cuts[i] ? copy : NULL, cuts[i], &frame, &got, err,
                                              sizeof(err)) == ZSH_STORE_DECODE_PARTIAL);
            free(copy);
        }
    }
}

#define FUZZ_KEY "fuzz-job-key-0123456789abcdef"

/* @frame, decoded from the input, as the first frame of a connection. */
static void check_handshake(const zsh_store_frame_t *frame, const char *key, uint32_t world)
{
    static const uint8_t server_nonce[ZSH_STORE_NONCE_SIZE] = {0x5a, 0x17, 0xc3};
    uint8_t mac[ZSH_STORE_MAC_SIZE];
    zsh_store_frame_t fixed;
    zsh_store_admit_t admit, again;
    char err[256];

    err[0] = '\0';
    admit  = zsh_store_auth_admit(key, server_nonce, world, frame, err, sizeof(err));
    FUZZ_CHECK((admit == ZSH_STORE_ADMIT_YES) || (err[0] != '\0'));
    if (frame->op != ZSH_STORE_OP_HELLO) {
        FUZZ_CHECK(admit == ZSH_STORE_ADMIT_NOT_HELLO);
        if ((frame->op == ZSH_STORE_OP_WELCOME) && (key != NULL)) {
            /* The client's check: only the server's proof passes. */
            zsh_store_auth_welcome_mac(key, server_nonce, server_nonce, mac);
            FUZZ_CHECK(zsh_store_auth_mac_equal(mac, frame->mac) ==
                       (memcmp(mac, frame->mac, sizeof(mac)) == 0));
        }
        return;
    }
    FUZZ_CHECK(admit != ZSH_STORE_ADMIT_NOT_HELLO);
    zsh_store_auth_hello_mac(key, server_nonce, frame, mac);
    if (key != NULL) {
        FUZZ_CHECK((admit == ZSH_STORE_ADMIT_BAD_MAC) ==
                   (memcmp(mac, frame->mac, sizeof(mac)) != 0));
    } else {
        FUZZ_CHECK(admit != ZSH_STORE_ADMIT_BAD_MAC);
    }
    /* The same HELLO with the right mac passes the mac check... */
    fixed     = *frame;
    fixed.mac = mac;
    again     = zsh_store_auth_admit(key, server_nonce, world, &fixed, err, sizeof(err));
    FUZZ_CHECK(again != ZSH_STORE_ADMIT_BAD_MAC);
    /* Only the mac changed: what passed or failed for other reasons still does. */
    FUZZ_CHECK((admit != ZSH_STORE_ADMIT_YES) || (again == ZSH_STORE_ADMIT_YES));
    FUZZ_CHECK((admit != ZSH_STORE_ADMIT_BAD_HELLO) || (again == ZSH_STORE_ADMIT_BAD_HELLO));
    if ((again == ZSH_STORE_ADMIT_YES) && (world != 0)) {
        FUZZ_CHECK((frame->rank == ZSH_STORE_NO_RANK) || (frame->rank < world));
    }
    /* ... and with one bit of it flipped, never does, when keyed. */
    if (key != NULL) {
        mac[frame->pid % ZSH_STORE_MAC_SIZE] ^= (uint8_t)(1u << (frame->rank % 8));
        FUZZ_CHECK(zsh_store_auth_admit(key, server_nonce, world, &fixed, err, sizeof(err)) ==
                   ZSH_STORE_ADMIT_BAD_MAC);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *pos = data;
    size_t left        = size;
    const char *key    = (size % 2 == 1) ? FUZZ_KEY : NULL;
    uint32_t world     = (size % 4 >= 2) ? 4 : 0;
    unsigned peeked;

    for (;;) {
        zsh_store_frame_t frame, untouched;
        zsh_store_decode_t result;
        size_t used = (size_t)-1;
        char err[128];

        memset(&frame, 0xa5, sizeof(frame));
        untouched = frame;
        err[0]    = '\0';
        result = zsh_store_frame_decode((left != 0) ? pos : NULL, left, &frame, &used, err,
                                        sizeof(err));
        if (result != ZSH_STORE_DECODE_FRAME) {
            FUZZ_CHECK((result == ZSH_STORE_DECODE_PARTIAL) ||
                       (result == ZSH_STORE_DECODE_MALFORMED));
            FUZZ_CHECK(used == (size_t)-1);
            FUZZ_CHECK(memcmp(&frame, &untouched, sizeof(frame)) == 0);
            FUZZ_CHECK((result == ZSH_STORE_DECODE_PARTIAL) || (err[0] != '\0'));
            return 0;
        }
        FUZZ_CHECK(used >= ZSH_STORE_HEADER_SIZE + 1);
        FUZZ_CHECK(used <= left);
        FUZZ_CHECK(used <= ZSH_STORE_FRAME_MAX);
        FUZZ_CHECK(strcmp(zsh_store_op_name(frame.op), "unknown") != 0);
        FUZZ_CHECK(frame.key_len <= ZSH_STORE_KEY_MAX);
        FUZZ_CHECK(frame.value_len <= ZSH_STORE_VALUE_MAX);
        FUZZ_CHECK(field_inside(frame.key, frame.key_len, pos, used));
        FUZZ_CHECK(field_inside(frame.value, frame.value_len, pos, used));
        check_canonical(&frame, pos, used);
        check_prefixes_partial(pos, used);
        FUZZ_CHECK(zsh_store_frame_peek_op(pos, used, &peeked) && (peeked == (unsigned)frame.op));
        check_handshake(&frame, key, world);
        pos += used;
        left -= used;
    }
}
