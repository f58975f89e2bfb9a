#include "ucx/shm/board.h"

#include "core/status.h"

#include <stdatomic.h>
#include <stddef.h>


/*
 * One slot: a message as a mailbox slot holds it (box.h), only longer, and
 * on a line of its own the number of readers that have yet to release it.
 * Readers poll the state's line; they count themselves off elsewhere, so
 * that one reader's decrement does not take that line away from the others.
 */
typedef struct zsh_board_slot {
    zsh_box_msg_t    h;
    uint8_t          msg[ZSH_BOARD_MSG_MAX];
    uint8_t          pad[48];
    _Atomic uint32_t readers;
    uint8_t          pad_readers[60];
} zsh_board_slot_t;

_Static_assert(sizeof(zsh_board_slot_t) % 64 == 0, "slots start on cache lines");
_Static_assert(offsetof(zsh_board_slot_t, readers) % 64 == 0, "the count has a line of its own");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "reader counts must be lock-free to be shared");

size_t zsh_board_region_len(void)
{
    return (size_t)ZSH_BOARD_SLOTS * sizeof(zsh_board_slot_t);
}

/* The board follows the box on its line (box.h). */
static zsh_board_slot_t *zsh_board_slot(uint8_t *line, uint64_t ticket)
{
    return (zsh_board_slot_t *)(line + zsh_box_region_len()) + ticket % ZSH_BOARD_SLOTS;
}

zsh_status_t zsh_board_put(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                           uint64_t ticket, uint32_t readers, const zsh_box_parts_t *parts)
{
    size_t len = parts->head_len + parts->body_len;
    zsh_board_slot_t *slot;
    zsh_status_t status;
    uint8_t *line;

    if ((board >= ZSH_BOARD_COUNT) || (len > ZSH_BOARD_MSG_MAX) || (readers == 0)) {
        return zsh_error(ZSH_ERR_INTERNAL, "board %u, message of %zu bytes for %u readers: out "
                         "of range", board, len, readers);
    }
    status = zsh_box_line(seg, board, &line);
    if (status != ZSH_OK) {
        return status;
    }
    slot = zsh_board_slot(line, ticket);
    /* A slot full under another key was left by an earlier communicator
     * with this id, whose members are done with it: ids are handed out
     * round all ZSH_BOARD_COUNT before one comes back (comm/split.c). */
    if (zsh_box_msg_held(&slot->h, key) &&
        (atomic_load_explicit(&slot->readers, memory_order_acquire) > 0)) {
        return ZSH_INPROGRESS;
    }
    /* Every reader of the previous message has released it, and none polls
     * for its word again: the slot is ours until the message is published. */
    atomic_store_explicit(&slot->readers, readers, memory_order_relaxed);
    zsh_box_msg_write(&slot->h, slot->msg, key, ticket, parts);
    return ZSH_OK;
}

zsh_status_t zsh_board_peek(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                            uint64_t ticket, const void **msg_p, size_t *len_p)
{
    const zsh_board_slot_t *slot;
    zsh_status_t status;
    uint8_t *line;

    if (board >= ZSH_BOARD_COUNT) {
        return zsh_error(ZSH_ERR_INTERNAL, "board %u: out of range", board);
    }
    status = zsh_box_line(seg, board, &line);
    if (status != ZSH_OK) {
        return status;
    }
    slot = zsh_board_slot(line, ticket);
    if (!zsh_box_msg_there(&slot->h, key, ticket)) {
        return ZSH_INPROGRESS;
    }
    if (slot->h.len > ZSH_BOARD_MSG_MAX) {
        return zsh_error(ZSH_ERR_MISMATCH, "a board message claims %llu bytes, more than a "
                         "board holds", (unsigned long long)slot->h.len);
    }
    *msg_p = slot->msg;
    *len_p = slot->h.len;
    return ZSH_OK;
}

void zsh_board_release(const zsh_box_seg_t *seg, unsigned board, uint64_t ticket)
{
    /* Peeked at, so the line is mapped. Release: our reads of the slot
     * happen before the writer reuses it. */
    atomic_fetch_sub_explicit(&zsh_board_slot(seg->lines[board], ticket)->readers, 1,
                              memory_order_release);
}
