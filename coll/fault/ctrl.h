/*
 * The control channel: messages between ranks about failures, outside any
 * collective.
 *
 * Whoever learns of a failure tells every other rank concerned, so ranks
 * that would otherwise wait on a peer that is itself stuck fail promptly,
 * with the same diagnosis, instead of hanging until their deadline. Two
 * kinds of message: a job rank failed (every rank is told), and a
 * communicator is revoked from a collective on (its members are told).
 *
 * Control messages travel on the reserved communicator id ZSH_COMM_ID_CTRL,
 * so they never match a collective's receive. Each rank keeps one receive
 * for them posted at all times and handles them in every progress pass.
 */
#ifndef ZSH_COLL_FAULT_CTRL_H_
#define ZSH_COLL_FAULT_CTRL_H_

#include "fault/failure.h"
#include "tl.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stdint.h>

typedef struct zsh_ctrl zsh_ctrl_t;

/* A revocation arrived for communicator (@comm_id, @comm_uid): apply it and
 * return true, or return false if no such communicator exists here yet (the
 * channel keeps it for zsh_ctrl_take_early()). */
typedef bool (*zsh_ctrl_revoke_cb_t)(void *arg, uint32_t comm_id, uint64_t comm_uid,
                                     zsh_status_t status, uint32_t seq, const char *why);

/* The channel of rank @self of @nranks over @tl; failures reported by peers
 * go into @failures, revocations to @on_revoke. */
zsh_status_t zsh_ctrl_create(const zsh_tl_ops_t *tl, zsh_tl_ctx_t *tl_ctx, int self, int nranks,
                             zsh_failures_t *failures, zsh_ctrl_revoke_cb_t on_revoke,
                             void *arg, zsh_ctrl_t **ctrl_p);

/* Start listening; once connected. */
zsh_status_t zsh_ctrl_start(zsh_ctrl_t *ctrl);

/* Handle what arrived, record what the transport reported, tell the other
 * ranks of failures first seen here, and reap finished sends. */
void         zsh_ctrl_progress(zsh_ctrl_t *ctrl);

/* Tell job ranks @ranks[0 .. n) (this one skipped) that communicator
 * (@comm_id, @comm_uid) is revoked from collective @seq on, with @status
 * and @why. */
void         zsh_ctrl_tell_revoke(zsh_ctrl_t *ctrl, const int *ranks, int n, uint32_t comm_id,
                                  uint64_t comm_uid, zsh_status_t status, uint32_t seq,
                                  const char *why);

/* A revocation that arrived before communicator (@comm_id, @comm_uid) was
 * created here: a fast rank may see a mismatch on a new communicator before
 * a slow one has returned from zsh_comm_split(). Taken off the channel's
 * list (the caller frees *@why_p); false if there is none. */
bool         zsh_ctrl_take_early(zsh_ctrl_t *ctrl, uint32_t comm_id, uint64_t comm_uid,
                                 zsh_status_t *status_p, uint32_t *seq_p, char **why_p);

/* Stop listening and let go of unfinished sends: before the transport's
 * endpoints close. zsh_ctrl_destroy() frees the rest after they have. */
void         zsh_ctrl_stop(zsh_ctrl_t *ctrl);
void         zsh_ctrl_destroy(zsh_ctrl_t *ctrl);

#endif
