#include "transports/shm/board.h"

#include "core/status.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

/*
 * One slot: state as a mailbox slot's (box.h), the message, and on a line
 * of its own the number of readers that have yet to take it. Readers poll
 * the state's line; they count themselves off elsewhere, so that one
 * reader's decrement does not take that line away from the others.
 */
typedef struct zsh_board_slot {
    _Atomic uint64_t state;
    uint64_t         len;
    uint8_t          msg[ZSH_BOX_MSG_MAX];
    uint8_t          pad[48];
    _Atomic uint32_t readers;
    uint8_t          pad2[60];
} zsh_board_slot_t;

/* Bytes of a message on the header's line. */
#define ZSH_BOARD_HEAD_MSG (64 - offsetof(zsh_board_slot_t, msg))

_Static_assert(sizeof(zsh_board_slot_t) % 64 == 0, "slots start on cache lines");
_Static_assert(offsetof(zsh_board_slot_t, readers) % 64 == 0, "the count has a line of its own");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "reader counts must be lock-free to be shared");

size_t zsh_board_region_len(void)
{
    return (size_t)ZSH_BOARD_COUNT * ZSH_BOARD_SLOTS * sizeof(zsh_board_slot_t);
}

static zsh_board_slot_t *zsh_board_slot(const zsh_box_seg_t *seg, unsigned board,
                                        uint64_t ticket)
{
    return (zsh_board_slot_t *)((char *)seg->base + zsh_box_region_len()) +
           (size_t)board * ZSH_BOARD_SLOTS + ticket % ZSH_BOARD_SLOTS;
}

static bool zsh_board_same_key(uint64_t state, uint64_t key)
{
    return (state >> 32) == (zsh_box_word(key, 0, false) >> 32);
}

zsh_status_t zsh_board_put(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                           uint64_t ticket, uint32_t readers, const void *buf, size_t len)
{
    zsh_board_slot_t *slot;
    uint64_t state;

    if ((board >= ZSH_BOARD_COUNT) || (len > ZSH_BOX_MSG_MAX) || (readers == 0)) {
        return zsh_error(ZSH_ERR_INTERNAL, "board %u, message of %zu bytes for %u readers: out "
                         "of range", board, len, readers);
    }
    slot  = zsh_board_slot(seg, board, ticket);
    state = atomic_load_explicit(&slot->state, memory_order_acquire);
    /* A slot full under another key was left by an earlier communicator
     * with this id, whose members are done with it. */
    if ((state & 1) && zsh_board_same_key(state, key) &&
        (atomic_load_explicit(&slot->readers, memory_order_acquire) > 0)) {
        return ZSH_INPROGRESS;
    }
    /* Every reader of the previous message has taken it, and none polls
     * for its word again: the slot is ours until the release below. */
    atomic_store_explicit(&slot->readers, readers, memory_order_relaxed);
    if (len > ZSH_BOARD_HEAD_MSG) {
        memcpy(slot->msg + ZSH_BOARD_HEAD_MSG, (const uint8_t *)buf + ZSH_BOARD_HEAD_MSG,
               len - ZSH_BOARD_HEAD_MSG);
    }
    memcpy(slot->msg, buf, (len < ZSH_BOARD_HEAD_MSG) ? len : ZSH_BOARD_HEAD_MSG);
    slot->len = len;
    atomic_store_explicit(&slot->state, zsh_box_word(key, ticket, true), memory_order_release);
    return ZSH_OK;
}

zsh_status_t zsh_board_take(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                            uint64_t ticket, void *buf, size_t cap, size_t *len_p)
{
    zsh_board_slot_t *slot;
    zsh_status_t status = ZSH_OK;
    size_t len;

    if (board >= ZSH_BOARD_COUNT) {
        return zsh_error(ZSH_ERR_INTERNAL, "board %u: out of range", board);
    }
    slot = zsh_board_slot(seg, board, ticket);
    if (atomic_load_explicit(&slot->state, memory_order_acquire) !=
        zsh_box_word(key, ticket, true)) {
        return ZSH_INPROGRESS;
    }
    len = slot->len;
    if (len > cap) {
        status = zsh_error(ZSH_ERR_MISMATCH, "a %zu-byte message is longer than the %zu-byte "
                           "receive", len, cap);
    } else {
        memcpy(buf, slot->msg, len);
        *len_p = len;
    }
    /* Release: our reads of the slot happen before the writer reuses it. */
    atomic_fetch_sub_explicit(&slot->readers, 1, memory_order_release);
    return status;
}
