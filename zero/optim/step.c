/*
 * The step: check that every parameter is released and has its gradient,
 * finish the reductions, decide on overflow and clipping from the global
 * norm, update each bucket's owned region, publish the parameters, and
 * close the step's books (traffic, fetch order, gradient flags).
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <math.h>
#include <stdio.h>

/* Bad calls are refused before anything changes. */
static zsh_status_t zsh_optim_step_check(const zsh_optim_t *opt)
{
    const zsh_param_t *p;
    size_t i;

    for (i = 0; i < opt->nparams; i++) {
        p = opt->params[i];
        if (p->fetched) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "zsh_optim_step: parameter '%s' is still fetched; release it first",
                             p->name);
        }
        if (!p->has_grad) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "zsh_optim_step: parameter '%s' has no gradient this step "
                             "(neither zsh_optim_grad_ready nor zsh_optim_grad_none was called "
                             "for it)", p->name);
        }
    }
    return ZSH_OK;
}

static void zsh_optim_step_close(zsh_optim_t *opt)
{
    zsh_optim_grads_reset(opt);
    opt->stage_ops->step_end(opt);
    opt->stats.steps++;
    opt->stats.comm_bytes_last_step = opt->comm_bytes;
    opt->stats.comm_bytes_node_last_step = opt->node_bytes;
    opt->stats.comm_bytes_quantized_last_step = opt->quant_bytes;
    /* Every collective but hpZ's runs on the whole communicator. */
    opt->stats.comm_bytes_cross_node_last_step =
        (opt->nnodes > 1) ? opt->comm_bytes - opt->node_bytes : 0;
    opt->comm_bytes = 0;
    opt->node_bytes = 0;
    opt->quant_bytes = 0;
}

/* The sum of squares of this step's gradients (scaled by the loss scale),
 * once a step: zsh_optim_clip_grad_norm() may have taken it already. */
static zsh_status_t zsh_optim_step_sumsq(zsh_optim_t *opt, double *sumsq_p)
{
    zsh_status_t status;

    if (!opt->clip.known) {
        status = zsh_optim_grad_sumsq(opt, &opt->clip.sumsq);
        if (status != ZSH_OK) {
            return status;
        }
        opt->clip.known = true;
    }
    *sumsq_p = opt->clip.sumsq;
    return ZSH_OK;
}

/* The norm to clip to this step: the configured one, or the smallest that
 * zsh_optim_clip_grad_norm() asked for if lower; 0: none. */
static double zsh_optim_max_norm(const zsh_optim_t *opt)
{
    double cfg = opt->cfg.max_grad_norm;

    if (opt->clip.max_norm > 0.0 && (cfg <= 0.0 || opt->clip.max_norm < cfg)) {
        return opt->clip.max_norm;
    }
    return cfg > 0.0 ? cfg : 0.0;
}

/* The factor the gradients are multiplied by, or a skip for overflow. */
static zsh_status_t zsh_optim_grad_factor(zsh_optim_t *opt, float *mul_p, bool *skip_p)
{
    float inv_scale = 1.0f / opt->scaler.scale;
    double max_norm = zsh_optim_max_norm(opt);
    bool need_norm  = opt->scaler.dynamic || (max_norm > 0.0);
    double sumsq, norm, clip;
    zsh_status_t status;

    *mul_p  = inv_scale;
    *skip_p = false;
    if (!need_norm) {
        return ZSH_OK;
    }
    status = zsh_optim_step_sumsq(opt, &sumsq);
    if (status != ZSH_OK) {
        return status;
    }
    norm                       = sqrt(sumsq) * inv_scale;
    opt->stats.last_grad_norm  = norm;
    *skip_p                    = zsh_scaler_update(&opt->scaler, !isfinite(sumsq));
    /* As torch.nn.utils.clip_grad_norm_: the factor max_norm / (norm + 1e-6)
     * applies whenever it is below 1, which includes norms up to 1e-6 under
     * max_norm; testing norm > max_norm instead would leave those unclipped. */
    clip = max_norm / (norm + 1e-6);
    if (!*skip_p && (max_norm > 0.0) && (clip < 1.0)) {
        *mul_p = (float)(inv_scale * clip);
    }
    return ZSH_OK;
}

/* The checks a step or a clip makes before anything changes: the message
 * is the check's, and nothing needs undoing. */
static zsh_status_t zsh_optim_step_refuse(zsh_optim_t *opt, const char *fn)
{
    zsh_status_t status = zsh_optim_setup(opt);

    if (status == ZSH_OK) {
        status = zsh_optim_comm_check(opt, fn);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_step_check(opt);
    }
    return status;
}

/* The gradients complete: the reductions and the tiers' writes finished,
 * the offloaded shards copied down. A failed write of a gradient is the
 * tier's failure, which every rank learns at the agreement the caller makes
 * next (zsh_tier_agree()): a rank returning early here would leave the
 * others waiting in it. */
static zsh_status_t zsh_optim_grads_complete(zsh_optim_t *opt)
{
    zsh_status_t status = zsh_optim_grads_wait(opt);

    zsh_optim_grad_writes_wait(opt);
    if (status == ZSH_OK) {
        /* offload: the shards copied down */
        status = opt->dev_ops->failed(opt, opt->dev_ops->copies_wait(opt));
    }
    return status;
}

zsh_status_t zsh_optim_clip_grad_norm(zsh_optim_t *opt, double max_norm, double *norm_p)
{
    zsh_status_t status;
    double sumsq, norm, before;

    if ((opt == NULL) || (norm_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_clip_grad_norm: %s is NULL",
                         (opt == NULL) ? "opt" : "norm_p");
    }
    if (!(max_norm > 0.0) || !isfinite(max_norm)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_clip_grad_norm: max_norm=%g is out of range (finite and > 0)",
                         max_norm);
    }
    status = zsh_optim_step_refuse(opt, "zsh_optim_clip_grad_norm");
    if (status == ZSH_OK) {
        status = zsh_optim_grads_complete(opt);
        status = (status == ZSH_OK) ? zsh_tier_agree(opt, "zsh_optim_clip_grad_norm") : status;
    }
    if (status == ZSH_OK) {
        status = zsh_optim_step_sumsq(opt, &sumsq);
    }
    if (status != ZSH_OK) {
        return status;
    }
    /* The norm of the gradients as an earlier call this step left them. */
    norm   = sqrt(sumsq) / opt->scaler.scale;
    before = opt->clip.max_norm;
    if (before > 0.0 && before / (norm + 1e-6) < 1.0) {
        norm *= before / (norm + 1e-6);
    }
    if (opt->clip.max_norm <= 0.0 || max_norm < opt->clip.max_norm) {
        opt->clip.max_norm = max_norm;
    }
    *norm_p = norm;
    return ZSH_OK;
}

/* Update one bucket (unless the NVMe tier's sub-groups did) and publish it
 * as the stage does (an all-gather at stages 1-2). */
static zsh_status_t zsh_optim_step_bucket(zsh_optim_t *opt, zsh_obucket_t *b,
                                          const zsh_update_t *u)
{
    zsh_status_t status = ZSH_OK;

    if (opt->tiers.aio != NULL) {
        /* The NVMe tier's sub-groups updated it (and sent it up from the device). */
    } else {
        /* In memory, on the device, or on the host and sent up to it. */
        status = opt->dev_ops->update_bucket(opt, b, u);
    }
    if (status == ZSH_OK) {
        status = opt->stage_ops->publish(opt, b);
    }
    if ((status != ZSH_OK) && (b->dev.publish != NULL)) {
        (void)opt->dev_ops->copies_wait(opt); /* a copy up may still write it */
        zsh_account_free(&opt->acct, ZSH_MEM_BUFFERS, b->dev.publish,
                         zsh_obucket_full_bytes(opt, b));
        b->dev.publish = NULL;
    }
    return status;
}

/* A step the NVMe tier failed, on this rank or another: its parameters in
 * memory go back to what they were, and the error says whether they did.
 * Parameters in the tier's own file (stage 3) or on the device stay as the
 * step left them, behind the tier's sticky failure. */
static void zsh_optim_step_undo(zsh_optim_t *opt, zsh_status_t status)
{
    char why[1024], undo[1024];

    if (opt->tiers.file[ZSH_TK_UNDO] == NULL) {
        zsh_error_prefix("zsh_optim_step %lu: ", opt->stats.steps + 1);
        return;
    }
    /* What happened to the parameters first: a long cause is what gets
     * cut at the message's bound. */
    snprintf(why, sizeof(why), "%s", zsh_last_error());
    if (zsh_optim_swap_undo(opt) == ZSH_OK) {
        zsh_error(status, "zsh_optim_step %lu failed, and the parameters are as they were "
                  "before it: %s", opt->stats.steps + 1, why);
        return;
    }
    snprintf(undo, sizeof(undo), "%s", zsh_last_error());
    zsh_error(status, "zsh_optim_step %lu failed, and putting the parameters back failed too "
              "(%s): %s", opt->stats.steps + 1, undo, why);
}

/* How far a failed step got, which says what its one failure exit undoes. */
typedef enum zsh_step_phase {
    ZSH_STEP_PREPARING, /* waiting for gradients, agreeing, scaling: nothing updated */
    ZSH_STEP_SWAPPING,  /* the NVMe tier's sub-groups: parameters in memory may be updated */
    ZSH_STEP_UPDATING   /* the buckets in memory or on the device */
} zsh_step_phase_t;

zsh_status_t zsh_optim_step(zsh_optim_t *opt, int *applied_p)
{
    zsh_step_phase_t phase = ZSH_STEP_PREPARING;
    zsh_update_t u;
    zsh_status_t status;
    bool skip = false;
    float mul;
    size_t i;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_step: opt is NULL");
    }
    /* Refused before it starts: nothing to undo, and the message is the check's. */
    status = zsh_optim_step_refuse(opt, "zsh_optim_step");
    if (status != ZSH_OK) {
        return status;
    }
    opt->tiers.updated = 0; /* what a failure of this step puts back */
    status = zsh_optim_grads_complete(opt);
    if (status == ZSH_OK) {
        status = opt->stage_ops->step_begin(opt); /* stage 3: what the update makes stale */
    }
    if (status == ZSH_OK) {
        status = zsh_tier_agree(opt, "zsh_optim_step");
    }
    if (status == ZSH_OK) {
        status = zsh_optim_grad_factor(opt, &mul, &skip);
    }
    if (status != ZSH_OK) {
        goto failed;
    }
    if (skip) {
        opt->stats.skipped_steps++;
    } else {
        u = zsh_update_make(&opt->cfg, ++opt->updates, mul);
        for (i = 0; i < opt->nparams; i++) {
            opt->params[i]->updates += !opt->params[i]->no_grad;
        }
        zsh_optim_hpz_invalidate(opt); /* the next gathers read the updated primary shards */
        zsh_optim_qwz_invalidate(opt); /* and the first of each is quantized again */
        if (opt->tiers.aio != NULL) {
            /* A failure of the tier's is agreed on by every rank; one of
             * the device's aborted the communicator already. */
            zsh_status_t swapped;

            phase   = ZSH_STEP_SWAPPING;
            swapped = zsh_optim_swap_step(opt, &u);
            status  = zsh_tier_agree(opt, "zsh_optim_step");
            status  = (status == ZSH_OK) ? swapped : status;
            if (status != ZSH_OK) {
                goto failed;
            }
        }
        phase = ZSH_STEP_UPDATING;
        for (i = 0; (status == ZSH_OK) && (i < opt->nbuckets); i++) {
            status = zsh_optim_step_bucket(opt, &opt->buckets[i], &u);
        }
        opt->dev_ops->close_step(opt);
        if (status == ZSH_OK) {
            status = opt->dev_ops->sync(opt); /* the step returns once its device work is done */
        }
        opt->dev_ops->failed(opt, status);
        if (status != ZSH_OK) {
            goto failed;
        }
    }
    zsh_optim_step_close(opt);
    if (applied_p != NULL) {
        *applied_p = !skip;
    }
    return ZSH_OK;

failed:
    /* The step's one failure exit. A failure of the NVMe tier's, on any rank,
     * puts the parameters in memory back (and says whether it could); any
     * other failure is named with the step's number. */
    switch (phase) {
    case ZSH_STEP_SWAPPING:
        opt->dev_ops->close_step(opt); /* no copy up outlives the step */
        (void)opt->dev_ops->sync(opt);
        zsh_optim_step_undo(opt, status);
        break;
    case ZSH_STEP_PREPARING:
        if (zsh_sticky_failed(&opt->tiers.failed)) {
            zsh_optim_step_undo(opt, status); /* nothing to put back yet: it says so */
            break;
        }
        /* fall through */
    case ZSH_STEP_UPDATING:
        zsh_error_prefix("zsh_optim_step %lu: ", opt->stats.steps + 1);
        break;
    }
    return status;
}
