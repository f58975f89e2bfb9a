/*
 * Transfers: point-to-point operations of one collective on a communicator,
 * each in a slot that its owner (a task, or its handshake) keeps.
 *
 * Tags carry (communicator id, collective sequence number, step, sender),
 * base/tag.h; ranks are the communicator's. A slot is idle (req NULL) or
 * holds one operation until a test finds it done and releases it.
 */
#ifndef ZSH_COLL_COMM_XFER_H_
#define ZSH_COLL_COMM_XFER_H_

#include "comm/comm.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct zsh_xfer {
    zsh_tl_req_t *req;     /* NULL when idle or finished */
    int           peer;    /* comm rank; a receive from any sender: -1, then its sender's
                              once done */
    bool          is_recv;
} zsh_xfer_t;

/* A run of slots, for draining them together. */
typedef struct zsh_xfer_span {
    zsh_xfer_t *xfers;
    unsigned    n;
} zsh_xfer_span_t;

/* Post a send or receive of collective @seq on slot @x with comm rank @peer,
 * tag step @step. A receive of exactly @len bytes, or with _upto of at
 * most @len. */
zsh_status_t zsh_xfer_send(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                           uint32_t step, const void *buf, size_t len);
zsh_status_t zsh_xfer_recv(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                           uint32_t step, void *buf, size_t len);
zsh_status_t zsh_xfer_recv_upto(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, int peer,
                                uint32_t step, void *buf, size_t len);

/* Post a receive of exactly @len bytes from whichever member of @comm
 * sends first with (@seq, @step); the slot's peer names it once done. */
zsh_status_t zsh_xfer_recv_any(zsh_comm_t *comm, uint32_t seq, zsh_xfer_t *x, uint32_t step,
                               void *buf, size_t len);

/* Post a one-sided read of @len bytes at @raddr of comm rank @peer into @buf
 * (the transport's rma group). */
zsh_status_t zsh_xfer_get(zsh_comm_t *comm, zsh_xfer_t *x, int peer, void *buf, size_t len,
                          uint64_t raddr, zsh_tl_rkey_t *rkey);

/* ZSH_OK once the slot is idle (its operation done and released),
 * ZSH_INPROGRESS before, or the operation's error. */
zsh_status_t zsh_xfer_test(zsh_comm_t *comm, zsh_xfer_t *x);

/* zsh_xfer_test() over @n slots: ZSH_OK when all are idle, the first error
 * seen, else ZSH_INPROGRESS. */
zsh_status_t zsh_xfer_test_all(zsh_comm_t *comm, zsh_xfer_t *xfers, unsigned n);

/* Give back slot @x's operation, cancelling it if it is a receive that has
 * not matched. */
void         zsh_xfer_drop(zsh_comm_t *comm, zsh_xfer_t *x);

/*
 * Stop every operation still pending in @spans before the caller gets its
 * buffers back, for collective @name @seq that failed with @why: see
 * xfer.c for how long each kind gets. What is still in flight then is left
 * to the transport; returns how many receives were. The thread's last error
 * is kept.
 */
unsigned     zsh_xfer_drain(zsh_comm_t *comm, const zsh_xfer_span_t *spans, unsigned nspans,
                            const char *name, uint32_t seq, zsh_status_t why);

#endif
