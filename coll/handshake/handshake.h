/*
 * The handshake: the descriptor exchange every collective on two or more
 * ranks makes before it may complete, and before any data it received is
 * used or passed on.
 *
 * Each rank sends what it believes the call is (base/desc.h) and compares
 * what it gets. If any two ranks disagree, then some pair that exchanged
 * disagrees, so at least one rank sees the mismatch; it fails with
 * ZSH_ERR_MISMATCH naming both calls and revokes the communicator, so the
 * ranks that could not see it fail with the same message instead of
 * waiting. The exchange may carry a little data after the descriptor: an
 * eager call's whole input, a direct call's buffer addresses.
 *
 * Four variants, each behind the same small table of functions, with its
 * state in zsh_hs_t:
 *
 *   ring     to the right ring neighbour and from the left, through the
 *            transport: every call that is none of the below (ring.c)
 *   all      to and from every peer through the transport: eager and direct
 *            calls on more than two ranks without boards (all.c)
 *   mailbox  through the mailbox of a two-rank communicator on one node:
 *            eager and direct calls where comm->local.box (box.c)
 *   board    once onto this rank's board, read by every peer where it lies:
 *            eager and direct calls on more ranks where comm->local.board
 *            (board.c)
 *
 * Mailbox and board messages go in ticket order, one ticket per call (two
 * for a direct call, whose "done" message follows its descriptor there). A
 * rank whose peer's message does not come that way after ZSH_HS_PROBE
 * seconds also listens for it through the transport, so that a peer that
 * chose another way (a mismatched call, ZSH_SHM set differently) is
 * reported rather than waited out.
 */
#ifndef ZSH_COLL_HANDSHAKE_HANDSHAKE_H_
#define ZSH_COLL_HANDSHAKE_HANDSHAKE_H_

#include "base/desc.h"
#include "comm/xfer.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stdint.h>

/* Seconds a shared-memory variant waits before it listens on the transport too. */
#define ZSH_HS_PROBE 0.01

/* Where an exchange stands. */
enum {
    ZSH_HS_NONE,       /* not started */
    ZSH_HS_POSTED,     /* ours sent or on its way, the peers' awaited */
    ZSH_HS_MATCHED,    /* the peers' matched; ours may still be in flight */
    ZSH_HS_VERIFIED    /* done, or nothing to exchange */
};

typedef struct zsh_hs zsh_hs_t;

typedef struct zsh_hs_ops {
    const char  *name;      /* for messages: "ring", "all", "mailbox", "board" */
    /* Start: our descriptor (bufs->out) with hs->inline_len bytes of data. */
    zsh_status_t (*post)(zsh_hs_t *hs);
    /* ZSH_OK once verified, ZSH_INPROGRESS before, else the mismatch or the
     * transport's error. */
    zsh_status_t (*progress)(zsh_hs_t *hs);
    /* The data that came with @peer's descriptor, once matched. */
    const void  *(*data)(const zsh_hs_t *hs, int peer);
    /* Whether the exchange still waits for @peer's message in shared memory
     * (a transfer it waits on is seen in its slot). */
    bool         (*waits_for)(const zsh_hs_t *hs, int peer);
    /* Shared memory only (NULL otherwise): a direct call's "done" message,
     * the ticket after its descriptor; ZSH_OK once ours went / all came. */
    zsh_status_t (*done_send)(zsh_hs_t *hs);
    zsh_status_t (*done_recv)(zsh_hs_t *hs);
    /* Boards only (NULL otherwise): let go of the peers' messages held. */
    void         (*release)(zsh_hs_t *hs);
} zsh_hs_ops_t;

/* What an exchange keeps across the calls of the pooled task that owns it:
 * grown as needed, never shrunk. */
typedef struct zsh_hs_bufs {
    zsh_desc_msg_t  out;       /* our descriptor and the data it may carry */
    zsh_desc_msg_t  in;        /* the left neighbour's (ring, mailbox) */
    zsh_desc_msg_t *probe;     /* mailbox: what may come through the transport instead */
    zsh_desc_msg_t *all_in;    /* all, board: by comm rank, what each peer sent */
    unsigned        all_in_cap;
    const void    **held;      /* board: by comm rank, each peer's message where it lies, or
                                  NULL; held until release */
    unsigned        held_cap;
    zsh_xfer_t     *xfers;     /* the exchange's transfers (hs->nxfers in use) */
    unsigned        xfers_cap;
} zsh_hs_bufs_t;

struct zsh_hs {
    const zsh_hs_ops_t *ops;       /* the variant; NULL until posted, or with one rank */
    zsh_hs_bufs_t      *bufs;
    zsh_comm_t         *comm;
    const char         *name;      /* the collective, for messages */
    uint32_t            seq;
    uint8_t             state;
    unsigned            nxfers;
    double              posted_at;
    /* What the call asks for, set before post. */
    bool                all;       /* to and from every peer: eager and direct on > 2 ranks */
    bool                done;      /* in shared memory, a "done" message follows (direct) */
    uint32_t            inline_len;/* bytes of data after the descriptor */
    const void         *body;      /* board: the data goes from here, not bufs->out.data */
    char               *all_out;   /* all: a message per peer, all_stride bytes apart (else
                                      bufs->out to every peer) */
    size_t              all_stride;
    /* Shared memory: where our message and the peers' stand. */
    uint64_t            ticket;    /* the call's first ticket */
    bool                sent;      /* our descriptor went */
    bool                probing;   /* mailbox: we listen on the transport too */
    bool                done_sent; /* our "done" went */
    unsigned            taken;     /* board: peers whose descriptor we took, in the order
                                      rank + 1, rank + 2, ... */
    unsigned            done_taken;/* board: ... and whose "done" */
};

/* A fresh exchange for collective @seq, @name, of @comm. */
static inline zsh_hs_t zsh_hs_init(zsh_hs_bufs_t *bufs, zsh_comm_t *comm, const char *name,
                                   uint32_t seq)
{
    return (zsh_hs_t){.bufs = bufs, .comm = comm, .name = name, .seq = seq};
}

/* To and from every peer, with a receive slot for each (eager and direct
 * calls on more than two ranks); call before post. */
zsh_status_t zsh_hs_want_all(zsh_hs_t *hs);

/* Start the exchange of bufs->out (its descriptor made by the caller) for a
 * call run as @algo, posted at @posted_at (zsh_clock_now()); with one rank
 * there is nothing to exchange. */
zsh_status_t zsh_hs_post(zsh_hs_t *hs, zsh_algo_t algo, double posted_at);

/* See zsh_hs_ops_t; it is verified at once with nothing to exchange. */
static inline zsh_status_t zsh_hs_progress(zsh_hs_t *hs)
{
    return (hs->state == ZSH_HS_VERIFIED) ? ZSH_OK : hs->ops->progress(hs);
}

const void  *zsh_hs_data(const zsh_hs_t *hs, int peer);
bool         zsh_hs_waits_for(const zsh_hs_t *hs, int peer);
zsh_status_t zsh_hs_done_send(zsh_hs_t *hs);
zsh_status_t zsh_hs_done_recv(zsh_hs_t *hs);

/* Whether the peers' descriptors matched ours: data that came with them may
 * be used, and what this rank received may be passed on. */
static inline bool zsh_hs_matched(const zsh_hs_t *hs)
{
    return hs->state >= ZSH_HS_MATCHED;
}

/* Whether the exchange goes through mailboxes or boards. */
static inline bool zsh_hs_shared(const zsh_hs_t *hs)
{
    return (hs->ops != NULL) && (hs->ops->done_send != NULL);
}

/* Hand back the peers' board messages the exchange holds (zsh_hs_data()
 * points into them), once the call is done with them, failed or not. */
void         zsh_hs_release(zsh_hs_t *hs);

/* The call failed with @status: if its message was due in a mailbox or
 * board and never went, revoke the communicator, since peers would wait
 * for it and every later message would queue behind it. */
void         zsh_hs_abandon(zsh_hs_t *hs, zsh_status_t status);

#endif
