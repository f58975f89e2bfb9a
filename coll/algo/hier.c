#include "algo/hier.h"

#include "core/dtype.h"
#include "core/status.h"

#include <stdlib.h>
#include <string.h>

/* Give the turn to the parent's next hierarchical call: once this one
 * posted its last step, or failed while it had the turn. */
static void zsh_hier_pass_turn(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);

    if (!st->started && (task->comm->hier.turn == st->turn)) {
        st->started = true;
        task->comm->hier.turn++;
    }
}

/* Give the step in flight back once it settled. A receive it left to the
 * transport may still write into this call's scratch, where the step
 * gathered or reduced: then the call keeps its scratch out of every later
 * call's way too (zsh_ctx_orphan()). */
static void zsh_hier_put_sub(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);

    if (st->sub->orphan) {
        task->orphan = true;
    }
    zsh_task_put(st->sub);
    st->sub = NULL;
}

static zsh_status_t zsh_hier_progress(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);
    zsh_status_t status;

    if (!st->started && (task->comm->hier.turn != st->turn)) {
        return ZSH_INPROGRESS; /* an earlier call has steps to post first */
    }
    for (;;) {
        if (st->sub != NULL) {
            status = st->sub->run.status;
            if (status == ZSH_INPROGRESS) {
                return ZSH_INPROGRESS;
            }
            zsh_hier_put_sub(task);
            if (status != ZSH_OK) {
                return status;
            }
            task->run.phase++;
        }
        if ((unsigned)task->run.phase == st->nsteps) {
            if (st->finish != NULL) {
                st->finish(task);
            }
            return ZSH_OK;
        }
        /* A later step sends what an earlier one received: only once the
         * peers' descriptors matched ours. */
        if ((task->run.phase > 0) && !zsh_task_may_forward(task)) {
            return ZSH_INPROGRESS;
        }
        status = st->step(task, (unsigned)task->run.phase, &st->sub);
        if (status != ZSH_OK) {
            return status;
        }
        if ((unsigned)task->run.phase + 1 == st->nsteps) {
            zsh_hier_pass_turn(task);
        }
        if (st->sub == NULL) {
            task->run.phase++; /* no part in this step */
        }
    }
}

/* A step still in flight is cancelled. After a timeout it fails as timed
 * out, which lets its receives go as soon as the call's own (comm/xfer.h),
 * so the call fails at its deadline, not a few liveness periods later;
 * after anything else it is aborted (as a mismatch it would revoke the
 * child and name a rank that saw none), with the call's message, which the
 * step's peers get as the cause: a peer still in the step would otherwise
 * report only that this one left it. The error the call failed with is
 * kept, not the step's. */
static void zsh_hier_cleanup(zsh_task_t *task, zsh_status_t status)
{
    zsh_hier_t *st = zsh_hier(task);
    char *why;

    if (st->sub != NULL) {
        why = strdup(zsh_last_error());
        zsh_task_cancel(st->sub, (status == ZSH_ERR_TIMEOUT) ? status : ZSH_ERR_ABORTED);
        zsh_hier_put_sub(task);
        if (why != NULL) {
            zsh_error_set_quiet(why);
            free(why);
        }
    }
    zsh_hier_pass_turn(task);
}

zsh_status_t zsh_hier_start(zsh_task_t *task, unsigned nsteps, zsh_hier_step_t step,
                            zsh_hier_finish_t finish)
{
    zsh_hier_t *st = zsh_hier(task);

    if (task->comm->hier.node == NULL) {
        return zsh_error(ZSH_ERR_INTERNAL, "%s: comm %u has no node and rail for hier",
                         task->name, task->comm->id);
    }
    st->step           = step;
    st->finish         = finish;
    st->nsteps         = nsteps;
    st->turn           = task->comm->hier.tickets++;
    st->started        = false;
    st->sub            = NULL;
    task->run.phase    = 0;
    task->run.progress = zsh_hier_progress;
    task->run.cleanup  = zsh_hier_cleanup;
    return ZSH_OK;
}

void zsh_hier_reduction(zsh_task_t *task)
{
    zsh_hier_t *st = zsh_hier(task);

    st->wtype   = zsh_dtype_acc(task->args.dtype);
    st->wop     = (task->args.op == ZSH_AVG) ? ZSH_SUM : task->args.op;
    st->convert = (st->wtype != task->args.dtype) || (st->wop != task->args.op);
}

bool zsh_hier_rank_order(const zsh_comm_t *comm)
{
    const zsh_topo_t *t = comm->topo;
    int r;

    for (r = 0; r < t->size; r++) {
        if (t->ranks[r].local_rank * t->nnodes + t->ranks[r].node != r) {
            return false;
        }
    }
    return true;
}

static size_t zsh_hier_align(size_t bytes)
{
    return (bytes + 63) & ~(size_t)63;
}

zsh_status_t zsh_hier_scratch(zsh_task_t *task, size_t na, size_t nb, size_t nc)
{
    zsh_hier_t *st = zsh_hier(task);
    size_t oa = 0, ob = zsh_hier_align(na), oc = ob + zsh_hier_align(nb);
    zsh_status_t status;
    void *buf;

    if (oc + nc == 0) {
        return ZSH_OK;
    }
    status = zsh_task_scratch(task, oc + nc, &buf);
    if (status != ZSH_OK) {
        return status;
    }
    st->a = (na > 0) ? (char *)buf + oa : NULL;
    st->b = (nb > 0) ? (char *)buf + ob : NULL;
    st->c = (nc > 0) ? (char *)buf + oc : NULL;
    return ZSH_OK;
}
