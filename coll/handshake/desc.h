/*
 * Collective descriptors: what a rank believes the call at a sequence number
 * is (type, count, dtype, op, root).
 *
 * Every collective on a communicator of two or more ranks sends its
 * descriptor to its right ring neighbour and compares it with its left
 * neighbour's before it may complete. If any two ranks disagree, then some
 * pair of neighbours disagrees, so at least one rank sees the mismatch. That
 * rank fails with ZSH_ERR_MISMATCH naming both sides and revokes the
 * communicator, so the ranks that could not see it fail with the same
 * message instead of waiting. Descriptors use a tag step of their own, so
 * they match whatever the two ranks called. Eager and direct calls on more
 * than two ranks send theirs, with data, to every peer and check every
 * peer's. On one node those calls' descriptors go through shared memory
 * instead of UCX: on two ranks into the peer's mailbox, on more onto the
 * rank's own board, which every peer reads (transports/shm).
 */
#ifndef ZSH_COLL_DESC_H_
#define ZSH_COLL_DESC_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zsh_desc {
    uint32_t magic;
    uint32_t seq;      /* the whole sequence number; tags carry only its low bits */
    uint64_t uid;      /* the communicator's */
    uint64_t count;
    int32_t  root;
    uint8_t  type;     /* zsh_coll_type_t */
    uint8_t  dtype;
    uint8_t  op;
    uint8_t  algo;     /* zsh_algo_t the rank chose: ranks configured differently disagree */
} zsh_desc_t;

/*
 * Bytes of data a descriptor message may carry after the descriptor. A
 * small collective on a few ranks needs one message to each peer and no more
 * (the eager algorithm, coll/eager.c): the data travels with the descriptor,
 * so checking the call costs no extra message. Every descriptor receive
 * takes this much, so a message with data meets any receive.
 */
#define ZSH_DESC_INLINE_MAX 4096

/*
 * Bytes of data a descriptor message may carry on a board: the message is
 * written once for every peer and read where it lies, so a longer one costs
 * its writer one copy and each reader only what it uses of it.
 */
#define ZSH_DESC_BOARD_INLINE_MAX 16384

typedef struct zsh_desc_msg {
    zsh_desc_t desc;
    uint8_t    data[ZSH_DESC_INLINE_MAX];
} zsh_desc_msg_t;

struct zsh_request;

/* Describe @task's call; fields its type ignores are zero. */
void zsh_desc_make(const struct zsh_request *task, zsh_desc_t *desc);

/* "allgather(count=10, fp32)", "broadcast(count=4, int32, root=2)". */
void zsh_desc_format(const zsh_desc_t *desc, char *buf, size_t len);

/* The name of a collective type: "allgather", "reduce_scatter", ... */
const char *zsh_desc_type_name(unsigned type);

/* Start @task's exchange of task->desc_out, made at post, with the
 * task->desc_inline bytes of data that follow it (no-op on a single rank). */
zsh_status_t zsh_desc_post(struct zsh_request *task);

/* Hand back the peers' board messages @task holds (zsh_desc_data() points
 * into them), once it is done with them, failed or not. */
void zsh_desc_release(struct zsh_request *task);

/* @task failed with @status: if its descriptor was due through a mailbox or
 * board and never went, revoke the communicator, since peers would wait for it. */
void zsh_desc_abandon(struct zsh_request *task, zsh_status_t status);

/*
 * A direct call whose descriptors go through mailboxes or boards
 * (task->box_done) says that it is done with the peers' buffers as the
 * next message there: send ours once our descriptor has gone, take every
 * peer's. Both return ZSH_OK once done and ZSH_INPROGRESS before.
 */
zsh_status_t zsh_desc_done_send(struct zsh_request *task);
zsh_status_t zsh_desc_done_recv(struct zsh_request *task);

/* Whether @task still waits for @peer's message in a mailbox or board (its
 * descriptor, or a direct call's "done" once ours went), for a timeout to
 * name the peers not heard from. */
bool zsh_desc_box_waits_for(const struct zsh_request *task, int peer);

/* The data that came with @peer's descriptor: on two ranks the one from the
 * left, else the peer's own (task->desc_all), on a board where it lies on the
 * peer's board. Valid once the descriptors matched (desc_state
 * ZSH_DESC_MATCHED) and until zsh_desc_release(). */
const void *zsh_desc_data(const struct zsh_request *task, int peer);

/* ZSH_OK once the left neighbour's descriptor matched and ours was sent (or
 * none is exchanged), ZSH_INPROGRESS before, else ZSH_ERR_MISMATCH (or the
 * transport's error) with a message naming both calls. */
zsh_status_t zsh_desc_progress(struct zsh_request *task);

#endif
