/*
 * Whether a communicator may go on.
 *
 * Three things make it unusable: a member that died (fault/failure.h), a
 * zsh_comm_abort() on any member, and two members that called different
 * collectives at the same sequence number. The rank that learns of one
 * tells the others through the control channel (fault/ctrl.h); from then on
 * every pending and later collective on the communicator fails with that
 * status, naming the cause.
 */
#ifndef ZSH_COLL_COMM_HEALTH_H_
#define ZSH_COLL_COMM_HEALTH_H_

#include "comm/comm.h"

#include <zeroshard.h>

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* zsh_comm_check() where something may be wrong. */
zsh_status_t zsh_comm_check_all(zsh_comm_t *comm, uint32_t seq);

/* ZSH_OK while collective @seq of @comm may go on; else the status it fails
 * with, with the reason as the thread's last error. Every call makes it
 * before it posts and at every progress step: with nothing wrong, it is a
 * few loads. */
static inline zsh_status_t zsh_comm_check(zsh_comm_t *comm, uint32_t seq)
{
    const zsh_failures_t *failures = comm->ctx->failures;

    if (!zsh_failures_deferred(failures) && !atomic_load(&comm->aborted) &&
        (comm->health.revoke.status == ZSH_OK) &&
        (zsh_failures_count(failures) == comm->health.failed_seen) &&
        (comm->health.failed_rank < 0)) {
        return ZSH_OK;
    }
    return zsh_comm_check_all(comm, seq);
}

/* Revoke @comm from its collective @seq on, with @status (ZSH_ERR_MISMATCH,
 * ZSH_ERR_ABORTED), and tell its other members; @why is what they will
 * report. Earlier collectives, which every member called alike, may finish. */
void         zsh_comm_revoke(zsh_comm_t *comm, zsh_status_t status, uint32_t seq,
                             const char *why);

/* Apply a revocation that arrived before @comm was created here. */
void         zsh_comm_health_created(zsh_comm_t *comm);

/* Tell the members of communicators aborted here (zsh_ctx_health_progress). */
void         zsh_ctx_tell_aborts(zsh_ctx_t *ctx);

/* Part of every progress pass: the control channel, then telling the
 * members of communicators aborted here. */
static inline void zsh_ctx_health_progress(zsh_ctx_t *ctx)
{
    zsh_ctrl_progress(ctx->ctrl);
    if (atomic_load_explicit(&ctx->abort_pending, memory_order_relaxed) &&
        atomic_exchange(&ctx->abort_pending, 0)) {
        zsh_ctx_tell_aborts(ctx);
    }
}

/* The control channel's hook for revocations (zsh_ctrl_revoke_cb_t), with
 * the context as @arg. */
bool         zsh_ctx_on_revoke(void *arg, uint32_t comm_id, uint64_t comm_uid,
                               zsh_status_t status, uint32_t seq, const char *why);

#endif
