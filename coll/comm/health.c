#include "comm/health.h"

#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>

bool zsh_ctx_on_revoke(void *arg, uint32_t comm_id, uint64_t comm_uid, zsh_status_t status,
                       uint32_t seq, const char *why)
{
    zsh_ctx_t *ctx = arg;
    zsh_list_t *elem;

    for (elem = ctx->comms.next; elem != &ctx->comms; elem = elem->next) {
        zsh_comm_t *comm = zsh_container_of(elem, zsh_comm_t, link);

        if ((comm->id == comm_id) && (comm->uid == comm_uid)) {
            zsh_revoke_set(&comm->health.revoke, status, seq, why);
            return true;
        }
    }
    return false;
}

void zsh_comm_health_created(zsh_comm_t *comm)
{
    zsh_status_t status;
    uint32_t seq;
    char *why;

    if ((comm->ctx->ctrl != NULL) &&
        zsh_ctrl_take_early(comm->ctx->ctrl, comm->id, comm->uid, &status, &seq, &why)) {
        zsh_revoke_set(&comm->health.revoke, status, seq, why);
        free(why);
    }
}

void zsh_comm_revoke(zsh_comm_t *comm, zsh_status_t status, uint32_t seq, const char *why)
{
    if (zsh_revoke_set(&comm->health.revoke, status, seq, why)) {
        zsh_ctrl_tell_revoke(comm->ctx->ctrl, comm->ctx_ranks, comm->size, comm->id, comm->uid,
                             status, seq, why);
    }
}

void zsh_ctx_tell_aborts(zsh_ctx_t *ctx)
{
    char why[160];
    zsh_list_t *elem;

    for (elem = ctx->comms.next; elem != &ctx->comms; elem = elem->next) {
        zsh_comm_t *comm = zsh_container_of(elem, zsh_comm_t, link);

        if (atomic_load(&comm->aborted) && !comm->health.abort_told) {
            comm->health.abort_told = true;
            snprintf(why, sizeof(why), "rank %d of comm %u called zsh_comm_abort()", comm->rank,
                     comm->id);
            zsh_ctrl_tell_revoke(ctx->ctrl, comm->ctx_ranks, comm->size, comm->id, comm->uid,
                                 ZSH_ERR_ABORTED, 0, why);
        }
    }
}

/* The member of @comm that failed first, recomputed only when the job's
 * failures changed. */
static int zsh_comm_failed_rank(zsh_comm_t *comm)
{
    zsh_comm_health_t *h = &comm->health;
    unsigned count       = zsh_failures_count(comm->ctx->failures);

    if (h->failed_seen != count) {
        h->failed_seen = count;
        h->failed_rank = zsh_failures_first(comm->ctx->failures, comm->ctx_ranks, comm->size);
    }
    return h->failed_rank;
}

zsh_status_t zsh_comm_check_all(zsh_comm_t *comm, uint32_t seq)
{
    zsh_failures_t *failures = comm->ctx->failures;
    char others[768];
    zsh_status_t status;
    int first, job_rank;

    /* A failure the transport found outside its progress (a call that
     * failed on it) counts before the next call is posted. */
    if (zsh_failures_deferred(failures)) {
        zsh_failures_apply(failures);
    }
    if (atomic_load(&comm->aborted)) {
        return zsh_error(ZSH_ERR_ABORTED, "comm %u was aborted on this rank (zsh_comm_abort)",
                         comm->id);
    }
    status = zsh_revoke_check(&comm->health.revoke, seq);
    if (status != ZSH_OK) {
        return status;
    }
    first = zsh_comm_failed_rank(comm);
    if (first < 0) {
        return ZSH_OK;
    }
    job_rank = comm->ctx_ranks[first];
    zsh_failures_after(failures, comm->ctx_ranks, comm->size, first, others, sizeof(others));
    if (job_rank == first) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d failed: %s%s", job_rank,
                         zsh_failures_why(failures, job_rank), others);
    }
    return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d of comm %u (job rank %d) failed: %s%s", first,
                     comm->id, job_rank, zsh_failures_why(failures, job_rank), others);
}
