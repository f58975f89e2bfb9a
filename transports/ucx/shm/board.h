/*
 * Node-local boards: one message that every other member of a communicator
 * reads, through shared memory.
 *
 * A mailbox (box.h) carries a message to one peer, so a call on n ranks
 * that sends every peer the same descriptor would write it n - 1 times into
 * n - 1 segments. On a board the sender writes it once, into its own
 * segment, and each peer reads it from there. With ranks outnumbering cores,
 * where every call waits for each member to be scheduled, what a rank does
 * per message decides the latency (docs/DECISIONS.md, "Boards").
 *
 * Board i of a process belongs to its communicator with id i, which it alone
 * writes; messages carry tickets 0, 1, 2, ... in the order every member
 * uses, ticket t in slot t % ZSH_BOARD_SLOTS. The writer publishes a slot
 * with the number of readers still to release it; each reader reads the
 * message where it lies, for as long as its call needs it, then counts
 * itself off, and the slot is written again only when that count is zero.
 * A reader that reduces several peers' inputs thus reads each straight from
 * its board, with no copy of its own. A key (the communicator's uid) tells a
 * board's current communicator from an earlier one with the same id, whose
 * slots may be overwritten.
 *
 * The boards live in the mailbox segment (box.h), board i on line i after
 * box i, and cost address space only where their lines are mapped, pages
 * only where they are used.
 */
#ifndef ZSH_TRANSPORTS_UCX_SHM_BOARD_H_
#define ZSH_TRANSPORTS_UCX_SHM_BOARD_H_

#include "ucx/shm/box.h"

#include <zeroshard.h>

#include <stddef.h>
#include <stdint.h>

#define ZSH_BOARD_COUNT ZSH_BOX_COUNT
#define ZSH_BOARD_SLOTS 4
/* The longest message a board carries: 16 KiB of data and a header. */
#define ZSH_BOARD_MSG_MAX (16384 + 64)

/* Bytes of a line its board takes, after its box. */
size_t zsh_board_region_len(void);

/*
 * Publish message @ticket of board @board, made of @parts, in @seg (ours)
 * for @readers peers. ZSH_INPROGRESS while its slot still holds an earlier
 * message with the same @key that some reader has not released: try again
 * later, in ticket order.
 */
zsh_status_t zsh_board_put(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                           uint64_t ticket, uint32_t readers, const zsh_box_parts_t *parts);

/*
 * Look at message @ticket of board @board with @key in @seg (a peer's):
 * ZSH_INPROGRESS until it is there, then ZSH_OK with its bytes at *@msg_p
 * and its length in *@len_p. They stay there, unchanged, until this reader
 * releases the message, so that it can be used where it lies; each reader
 * looks at and releases each message once.
 */
zsh_status_t zsh_board_peek(const zsh_box_seg_t *seg, unsigned board, uint64_t key,
                            uint64_t ticket, const void **msg_p, size_t *len_p);

/* Count this reader off message @ticket of board @board in @seg, which it
 * peeked at: the writer may reuse the slot once every reader has. */
void zsh_board_release(const zsh_box_seg_t *seg, unsigned board, uint64_t ticket);

#endif
