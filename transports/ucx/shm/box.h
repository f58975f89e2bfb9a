/*
 * Node-local mailboxes: small messages between processes of one node
 * through shared memory, with no UCX in the way.
 *
 * A two-rank collective of a few bytes is nothing but one message each way,
 * so its latency is the transport's, and a shared slot costs less than
 * UCX's matching, requests and FIFO (docs/DECISIONS.md, "Mailboxes").
 *
 * Each process owns one segment (a memfd) holding ZSH_BOX_COUNT lines, each
 * a box of ZSH_BOX_SLOTS slots and a board (board.h), and receives in it; a
 * peer duplicates its descriptor, through pidfd_getfd(2) on the number the
 * process published, and writes into it. A box has one writer at a time, which its user
 * guarantees (ZeroShard: box i belongs to the two-rank communicator with
 * id i, and ids of live communicators never collide on a rank). Messages of
 * a box carry tickets 0, 1, 2, ... in the order both sides use; ticket t
 * goes to slot t % ZSH_BOX_SLOTS, and a key (the communicator's uid) tells
 * a box's current user from an earlier one that left a message behind.
 * A box holds at most ZSH_BOX_SLOTS messages not yet taken.
 *
 * A segment is mapped line by line, when a communicator opens its line
 * (or a line is first used), and a line is unmapped when its communicator
 * goes: the address space a process reserves grows with the communicators
 * it uses and their members on the node, not with the ZSH_BOX_COUNT lines a
 * segment has room for, so that a job fits under a ulimit -v that its
 * memory fits under. All the segments a context maps draw on one budget
 * (ZSH_SHM_MAX). Pages are touched only where lines are used.
 */
#ifndef ZSH_TRANSPORTS_UCX_SHM_BOX_H_
#define ZSH_TRANSPORTS_UCX_SHM_BOX_H_

#include <zeroshard.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSH_BOX_COUNT   4096
#define ZSH_BOX_SLOTS   4
#define ZSH_BOX_MSG_MAX 4224

/* The address space that a context's segments may map, and do. */
typedef struct zsh_box_budget {
    size_t max;   /* bytes (ZSH_SHM_MAX) */
    size_t used;  /* bytes of the lines mapped now */
} zsh_box_budget_t;

typedef struct zsh_box_seg {
    int               fd;      /* ours, or our duplicate of a peer's; -1 when none */
    uint8_t         **lines;   /* by line: where it is mapped, NULL until it is;
                                  NULL when the segment is off */
    zsh_box_budget_t *budget;
    char              who[24]; /* whose segment, for messages: "rank 3" */
} zsh_box_seg_t;

/* A slot's header: the state word that says whose message the slot holds
 * (a key's hash, a ticket, and whether it is full), and the message's
 * length. The message's bytes follow it; mailbox and board slots (board.h)
 * differ in how many they hold. */
typedef struct zsh_box_msg {
    _Atomic uint64_t state;
    uint64_t         len;
} zsh_box_msg_t;

/* A message as two pieces, one after the other: a head (a descriptor, say)
 * and a body (its data, straight from where it lies). */
typedef struct zsh_box_parts {
    const void *head;
    size_t      head_len;
    const void *body;
    size_t      body_len;
} zsh_box_parts_t;

/* Whether @m is full with a message under @key. */
bool zsh_box_msg_held(const zsh_box_msg_t *m, uint64_t key);

/* Whether @m is full with exactly message @ticket of @key (acquire: its
 * bytes may be read once this says so). */
bool zsh_box_msg_there(const zsh_box_msg_t *m, uint64_t key, uint64_t ticket);

/* Fill the slot of header @m and bytes @msg with message @ticket of @key,
 * and publish it. */
void zsh_box_msg_write(zsh_box_msg_t *m, uint8_t *msg, uint64_t key, uint64_t ticket,
                       const zsh_box_parts_t *parts);

/* Copy message @ticket of @key out of the slot into @buf of @cap bytes, its
 * length in *@len_p: ZSH_INPROGRESS while it is not there, ZSH_ERR_MISMATCH
 * (and nothing copied) if it is longer than @cap. The caller then hands the
 * slot back its own way. */
zsh_status_t zsh_box_msg_read(const zsh_box_msg_t *m, const uint8_t *msg, uint64_t key,
                              uint64_t ticket, void *buf, size_t cap, size_t *len_p);

/* Bytes at the start of a line that its box takes; its board follows. */
size_t zsh_box_region_len(void);

/* Bytes of address space one line of a segment maps: whole pages. */
size_t zsh_box_line_len(void);

/* Create this process's segment (@who names it in messages), its lines
 * mapped against @budget: ZSH_ERR_UNSUPPORTED, with the reason as the last
 * error but nothing logged, where it cannot be. Maps nothing yet. */
zsh_status_t zsh_box_create(zsh_box_seg_t *seg, zsh_box_budget_t *budget, const char *who);

/* Whether a peer could map @seg (ours): where pidfd_getfd is refused
 * (seccomp, kernels before 5.6, valgrind 3.19) no peer could, and the
 * process publishes no mailboxes rather than have its peers fail on them.
 * ZSH_ERR_UNSUPPORTED as for zsh_box_create(). */
zsh_status_t zsh_box_check_shareable(const zsh_box_seg_t *seg);

/* Take the segment of process @pid, published as descriptor @fd, its lines
 * mapped against @budget; @who names it in messages ("rank 3"). Maps
 * nothing yet. */
zsh_status_t zsh_box_attach(int64_t pid, int64_t fd, zsh_box_seg_t *seg, zsh_box_budget_t *budget,
                            const char *who);

/* Whether @seg is there: created or attached, not released. */
static inline bool zsh_box_on(const zsh_box_seg_t *seg)
{
    return seg->lines != NULL;
}

/* Map line @line of @seg if it is not yet. Fails with ZSH_ERR_NO_MEMORY,
 * naming ZSH_SHM_MAX and ZSH_SHM=0, where the budget or the address space
 * has no room for it. */
zsh_status_t zsh_box_line_open(const zsh_box_seg_t *seg, unsigned line);

/* Unmap line @line of @seg, if mapped: nothing of this process uses it
 * any more. Its messages stay in the segment. */
void zsh_box_line_close(const zsh_box_seg_t *seg, unsigned line);

/* Where line @line of @seg is mapped, mapping it first if need be. */
static inline zsh_status_t zsh_box_line(const zsh_box_seg_t *seg, unsigned line,
                                        uint8_t **base_p)
{
    zsh_status_t status;

    if (seg->lines[line] == NULL) {
        status = zsh_box_line_open(seg, line);
        if (status != ZSH_OK) {
            return status;
        }
    }
    *base_p = seg->lines[line];
    return ZSH_OK;
}

/* Unmap every line of a segment, and close its descriptor; a zeroed one is
 * left alone. */
void zsh_box_release(zsh_box_seg_t *seg);

/*
 * Write message @ticket of box @box, @len bytes, into @seg (the receiver's).
 * ZSH_INPROGRESS while its slot still holds an earlier message with the same
 * @key that the receiver has not taken: try again later, in ticket order.
 */
zsh_status_t zsh_box_put(const zsh_box_seg_t *seg, unsigned box, uint64_t key, uint64_t ticket,
                         const void *buf, size_t len);

/*
 * Take message @ticket of box @box with @key from @seg (ours) into @buf of
 * @cap bytes; its length in *@len_p. ZSH_INPROGRESS until it is there;
 * ZSH_ERR_MISMATCH if it is longer than @cap (it is then dropped).
 */
zsh_status_t zsh_box_take(const zsh_box_seg_t *seg, unsigned box, uint64_t key, uint64_t ticket,
                          void *buf, size_t cap, size_t *len_p);

#endif
