/*
 * Gradients: grad-ready copies a parameter's gradient into its bucket and,
 * once the bucket is complete, starts the bucket's reduction without
 * waiting, so reductions overlap the rest of the backward pass.
 *
 *   stage 0: all-reduce of the full gradient buffer, in place;
 *   stage 1: reduce-scatter of the full buffer, in place (only this rank's
 *            block is used by the step);
 *   stages 2-3: the bucket is collected in a staging buffer, reduce-scattered
 *            into the gradient shard, and the staging buffer is freed as soon
 *            as the reduction is done: only shards outlive the backward pass.
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <string.h>

static size_t zsh_obucket_staging_bytes(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return zsh_obucket_full_bytes(opt, b);
}

/* The reduction of @b finished (or failed): release what it held. */
static void zsh_optim_reduction_done(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_request_free(b->req);
    b->req = NULL;
    if (b->staging != NULL) {
        zsh_account_free(&opt->acct, ZSH_MEM_BUFFERS, b->staging,
                         zsh_obucket_staging_bytes(opt, b));
        opt->staging_bytes -= zsh_obucket_staging_bytes(opt, b);
        b->staging = NULL;
    }
}

/* Drive the reductions in flight; finished ones give their buffers back. */
static zsh_status_t zsh_optim_grads_progress(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        if (opt->buckets[i].req == NULL) {
            continue;
        }
        status = zsh_request_test(opt->buckets[i].req);
        if (status == ZSH_INPROGRESS) {
            continue;
        }
        zsh_optim_reduction_done(opt, &opt->buckets[i]);
        if ((status != ZSH_OK) && (first == ZSH_OK)) {
            first = status;
        }
    }
    return first;
}

/* Keep staging within max_live_bytes: wait for reductions in flight (the
 * oldest bucket first) until @bytes more fit, or none is left to wait for. */
static zsh_status_t zsh_optim_staging_room(zsh_optim_t *opt, size_t bytes)
{
    zsh_status_t status = ZSH_OK;
    size_t i;

    for (i = opt->nbuckets; (i-- > 0) && (opt->staging_bytes + bytes > opt->cfg.max_live_bytes);) {
        if (opt->buckets[i].req != NULL) {
            status = zsh_request_wait(opt->buckets[i].req);
            zsh_optim_reduction_done(opt, &opt->buckets[i]);
            if (status != ZSH_OK) {
                return status;
            }
        }
    }
    return status;
}

static zsh_status_t zsh_optim_reduce_start(zsh_optim_t *opt, zsh_obucket_t *b)
{
    size_t full = zsh_obucket_full_bytes(opt, b);
    zsh_dtype_t dt = opt->cfg.precision;
    char *grads    = b->grad_full;

    switch (opt->cfg.stage) {
    case 0:
        opt->comm_bytes += 2 * b->numel * opt->esize;
        return zsh_iallreduce(grads, grads, b->numel, dt, ZSH_SUM, opt->comm, &b->req);
    case 1:
        opt->comm_bytes += full;
        return zsh_ireduce_scatter(grads, grads + (size_t)opt->rank * b->count * opt->esize,
                                   b->count, dt, ZSH_SUM, opt->comm, &b->req);
    default:
        opt->comm_bytes += full;
        return zsh_ireduce_scatter(b->staging, b->grad_shard, b->count, dt, ZSH_SUM, opt->comm,
                                   &b->req);
    }
}

zsh_status_t zsh_optim_grad_ready(zsh_optim_t *opt, zsh_param_t *param, const void *grad)
{
    const char *fn = "zsh_optim_grad_ready";
    zsh_obucket_t *b;
    zsh_status_t status;
    char *dst;

    if ((opt == NULL) || (param == NULL) || (grad == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "grad");
    }
    status = zsh_optim_setup(opt);
    if (status != ZSH_OK) {
        return status;
    }
    if (param->has_grad) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' already has a gradient pending this step", fn,
                         param->name);
    }
    b = &opt->buckets[param->bucket];
    if (opt->cfg.stage <= 1) {
        dst = b->grad_full;
    } else {
        if (b->staging == NULL) {
            status = zsh_optim_staging_room(opt, zsh_obucket_staging_bytes(opt, b));
            if (status != ZSH_OK) {
                return status;
            }
            b->staging = zsh_account_alloc(&opt->acct, ZSH_MEM_BUFFERS,
                                           zsh_obucket_staging_bytes(opt, b));
            if (b->staging == NULL) {
                return zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory to stage parameter '%s'", fn,
                                 param->name);
            }
            opt->staging_bytes += zsh_obucket_staging_bytes(opt, b);
        }
        dst = b->staging;
    }
    memcpy(dst + param->offset * opt->esize, grad, param->numel * opt->esize);
    param->has_grad = true;
    if (--b->pending == 0) {
        status = zsh_optim_reduce_start(opt, b);
        if (status != ZSH_OK) {
            zsh_error_prefix("%s: reducing the bucket of parameter '%s': ", fn, param->name);
            return status;
        }
    }
    return zsh_optim_grads_progress(opt);
}

zsh_status_t zsh_optim_grads_wait(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    zsh_obucket_t *b;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        b = &opt->buckets[i];
        if (b->req != NULL) {
            status = zsh_request_wait(b->req);
            if ((status != ZSH_OK) && (first == ZSH_OK)) {
                first = status;
            }
        }
        zsh_optim_reduction_done(opt, b);
    }
    return first;
}

void zsh_optim_grads_reset(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nparams; i++) {
        opt->params[i]->has_grad = false;
    }
    for (i = 0; i < opt->nbuckets; i++) {
        opt->buckets[i].pending = opt->buckets[i].nparams;
    }
}

zsh_status_t zsh_optim_zero_grad(zsh_optim_t *opt)
{
    zsh_status_t status;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_zero_grad: opt is NULL");
    }
    status = zsh_optim_grads_wait(opt);
    zsh_optim_grads_reset(opt);
    return status;
}
