/*
 * Node-local boards: one message that every other member of a communicator
 * reads, through shared memory.
 *
 * A mailbox (box.h) carries a message to one peer, so a call on n ranks
 * that sends every peer the same descriptor would write it n - 1 times into
 * n - 1 segments. On a board the sender writes it once, into its own
 * segment, and each peer reads it from there. With ranks outnumbering cores,
 * where every call waits for each member to be scheduled, what a rank does
 * per message decides the latency: eight ranks on two cores took 20 µs per
 * 8-byte all-reduce through UCX's shared memory, whose sends, receives and
 * requests cost a quarter of every process's time.
 *
 * Board i of a process belongs to its communicator with id i, which it alone
 * writes; messages carry tickets 0, 1, 2, ... in the order every member
 * uses, ticket t in slot t % ZSH_BOARD_SLOTS. The writer publishes a slot
 * with the number of readers still to take it; each reader takes it once and
 * counts itself off, and the slot is written again only when that count is
 * zero. A key (the communicator's uid) tells a board's current communicator
 * from an earlier one with the same id, whose slots may be overwritten.
 *
 * The boards live in the mailbox segment (box.h), after the boxes, and cost
 * pages only where they are used.
 */
#ifndef ZSH_TRANSPORTS_SHM_BOARD_H_
#define ZSH_TRANSPORTS_SHM_BOARD_H_

#include "transports/shm/box.h"

#include <zeroshard.h>

#include <stddef.h>
#include <stdint.h>

#define ZSH_BOARD_COUNT ZSH_BOX_COUNT
#define ZSH_BOARD_SLOTS 4

/* Bytes of a segment the boards take. */
size_t zsh_board_region_len(void);

/*
 * Publish message @ticket of board @board, @len bytes, in @seg (ours) for
 * @readers peers. ZSH_INPROGRESS while its slot still holds an earlier
 * message with the same @key that some reader has not taken: try again
 * later, in ticket order.
 */
zsh_status_t zsh_board_put(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                           uint64_t ticket, uint32_t readers, const void *buf, size_t len);

/*
 * Take message @ticket of board @board with @key from @seg (a peer's) into
 * @buf of @cap bytes; its length in *@len_p. ZSH_INPROGRESS until it is
 * there; ZSH_ERR_MISMATCH if it is longer than @cap (it then counts as
 * taken). Each reader takes each message once.
 */
zsh_status_t zsh_board_take(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                            uint64_t ticket, void *buf, size_t cap, size_t *len_p);

#endif
