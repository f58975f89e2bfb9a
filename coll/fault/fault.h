/*
 * Failures that outlive one call, and telling peers about them.
 *
 * Three things make a communicator unusable: a member that died (reported by
 * the transport, or by another rank that saw it first), zsh_comm_abort() on
 * any member, and two members that called different collectives at the same
 * sequence number. Whoever learns of one tells every other rank concerned
 * with a control message, so ranks that would otherwise wait on a peer that
 * is itself stuck fail promptly with the same diagnosis instead of hanging
 * until their deadline. From then on every pending and future collective on
 * the communicator fails with that status.
 */
#ifndef ZSH_COMM_FAULT_H_
#define ZSH_COMM_FAULT_H_

#include "comm/comm.h"

typedef struct zsh_ctrl zsh_ctrl_t;

/* Set up failure tracking and the control channel; call before connecting,
 * and zsh_fault_start() once connected. */
zsh_status_t zsh_fault_init(zsh_ctx_t *ctx);
zsh_status_t zsh_fault_start(zsh_ctx_t *ctx);
/* Stop listening and let go of unfinished sends: before the transport's
 * endpoints close. zsh_fault_cleanup() frees the rest after they have. */
void         zsh_fault_stop(zsh_ctx_t *ctx);
void         zsh_fault_cleanup(zsh_ctx_t *ctx);

/* Apply a revocation that arrived before @comm was created here. */
void         zsh_fault_comm_created(zsh_comm_t *comm);

/* Receive control messages and send the ones due; part of every progress pass. */
void         zsh_fault_progress(zsh_ctx_t *ctx);

/* Record that job rank @rank failed, because of @why. */
void         zsh_fault_peer_failed(zsh_ctx_t *ctx, int rank, const char *why);

/* Revoke @comm from its collective @seq on, with @status (ZSH_ERR_MISMATCH,
 * ZSH_ERR_ABORTED), and tell its other members; @why is what they will
 * report. Earlier collectives, which every member called alike, may finish. */
void         zsh_fault_revoke(zsh_comm_t *comm, zsh_status_t status, uint32_t seq,
                              const char *why);

/* ZSH_OK while collective @seq of @comm may go on; else the status it fails
 * with, with the reason as the thread's last error. */
zsh_status_t zsh_fault_check(zsh_comm_t *comm, uint32_t seq);

#endif
