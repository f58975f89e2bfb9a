/*
 * Gradients: grad-ready copies a parameter's gradient into its bucket and,
 * once the bucket is complete, starts the bucket's reduction without
 * waiting, so reductions overlap the rest of the backward pass.
 *
 *   stage 0: all-reduce of the full gradient buffer, in place;
 *   stage 1: reduce-scatter of the full buffer, in place (only this rank's
 *            block is used by the step);
 *   stages 2-3: the bucket is collected in a staging buffer, reduce-scattered
 *            into the gradient shard, and the staging buffer goes back as
 *            soon as the reduction is done: only shards and the buffers kept
 *            for the next backward (bufs.c) outlive the backward pass; a
 *            bucket of one parameter whose gradient the caller lends
 *            (zsh_optim_grad_lend) is reduced from the caller's memory, and
 *            the caller hears when the reduction is done with it.
 *
 * Where a gradient goes and which reduction starts are the stage's (its
 * table's grad_dst and reduce_start, stage/); this file drives the
 * reductions in flight and the NVMe tier's writes of the reduced shards.
 */
#include "optim/optim_impl.h"

#include "core/half.h"
#include "core/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t zsh_obucket_staging_bytes(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return zsh_obucket_full_bytes(opt, b);
}

static void zsh_optim_grad_transit_put(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_pool_put(&opt->tiers.pool, b->nvme.gtransit, zsh_pool_round(b->count * opt->esize));
    b->nvme.gtransit = NULL;
}

static void zsh_optim_grad_landed(zsh_optim_t *opt, zsh_obucket_t *b, bool wait);

/* Whether @b's gradients are being reduced: a collective, or qgZ's two. */
static bool zsh_obucket_reducing(const zsh_obucket_t *b)
{
    return (b->req != NULL) || (b->qgz.q != NULL);
}

/* Test (@wait: wait for) @b's reduction: ZSH_INPROGRESS, or how it ended. */
static zsh_status_t zsh_obucket_reduction(zsh_optim_t *opt, zsh_obucket_t *b, bool wait)
{
    if (b->qgz.q != NULL) {
        return zsh_optim_qgz_poll(opt, b, wait);
    }
    return wait ? zsh_request_wait(b->req) : zsh_request_test(b->req);
}

/* Put a finished gradient write's buffer back; a failure becomes the tier's. */
static zsh_status_t zsh_optim_grad_write_done(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_status_t status = zsh_tier_wait(opt, &b->nvme.gwrite);

    zsh_optim_grad_transit_put(opt, b);
    return status;
}

zsh_status_t zsh_optim_grad_writes_wait(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        if (zsh_obucket_reducing(&opt->buckets[i])) {
            continue; /* its reduction still writes its transit buffer */
        }
        if (opt->buckets[i].nvme.gdown) {
            zsh_optim_grad_landed(opt, &opt->buckets[i], true);
        }
        if (opt->buckets[i].nvme.gtransit != NULL) {
            status = zsh_optim_grad_write_done(opt, &opt->buckets[i]);
            first  = (first == ZSH_OK) ? status : first;
        }
    }
    return first;
}

/* A reduced shard bound for the NVMe tier: note its sum of squares (the
 * step's norm must not read it back) and start writing it. */
static void zsh_optim_grad_to_file(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_norm_sum_init(&b->nvme.gsumsq, zsh_optim_exact_norm(opt));
    zsh_optim_sumsq(opt, b->nvme.gtransit, b->hi - b->lo, &b->nvme.gsumsq);
    if (zsh_tier_io(opt, ZSH_TK_GRADS, true, b->nvme.foff, b->nvme.gtransit, b->count,
                    &b->nvme.gwrite) != ZSH_OK) {
        zsh_optim_grad_transit_put(opt, b);
    }
}

/* From the device, the shard bound for the NVMe tier is written once it has
 * come down (@wait: block till then). A failed copy is the optimizer's. */
static void zsh_optim_grad_landed(zsh_optim_t *opt, zsh_obucket_t *b, bool wait)
{
    zsh_status_t status = opt->dev_ops->grad_landed(opt, b, wait);

    if (status == ZSH_INPROGRESS) {
        return;
    }
    b->nvme.gdown = false;
    if (opt->dev_ops->failed(opt, status) == ZSH_OK) {
        zsh_optim_grad_to_file(opt, b);
    } else {
        zsh_optim_grad_transit_put(opt, b); /* a failed copy has nothing left to write it */
    }
}

/* A lent gradient's callback, for zsh_comm_free_buffer(), which hands a
 * release its one pointer back. */
typedef struct {
    zsh_optim_lent_fn done;
    void             *arg;
} zsh_lent_back_t;

static void zsh_lent_back_run(void *ptr)
{
    zsh_lent_back_t *back = ptr;

    back->done(back->arg);
    free(back);
}

/* The reduction no longer reads @b's lent gradient: tell its owner. After
 * a failed reduction (@failed) a transfer the peers left under way may
 * still read it, so the owner hears through the communicator once none
 * can. Without memory for that note it never hears: the gradient stays
 * lent, which reads nothing freed. */
static void zsh_optim_lent_back(zsh_optim_t *opt, zsh_obucket_t *b, bool failed)
{
    zsh_optim_lent_fn done = b->lent.done;
    void *arg              = b->lent.arg;
    zsh_lent_back_t *back;

    memset(&b->lent, 0, sizeof(b->lent));
    if (done == NULL) {
        return;
    }
    if (!failed) {
        done(arg);
        return;
    }
    back = malloc(sizeof(*back));
    if (back == NULL) {
        return;
    }
    back->done = done;
    back->arg  = arg;
    if (zsh_comm_free_buffer(opt->comm, back, zsh_lent_back_run) != ZSH_OK) {
        zsh_lent_back_run(back);
    }
}

/* The reduction of @b finished with @status: release what it held. A
 * failed one's buffers may still be written by a receive it left under
 * way: they leave the pool and go through the communicator. */
static void zsh_optim_reduction_done(zsh_optim_t *opt, zsh_obucket_t *b, zsh_status_t status)
{
    bool reduced = b->req != NULL; /* else a staging buffer dropped unreduced */
    /* Offload from the device: the reduced shard goes down (to the host
     * tier, or to the transit buffer of its write), and the staging buffer
     * is freed behind that copy. */
    bool down = reduced && (status == ZSH_OK) && (b->staging != NULL) &&
                opt->dev_ops->offloaded;

    zsh_request_free(b->req);
    b->req = NULL;
    zsh_optim_comm_status(opt, status);
    if ((b->nvme.gtransit != NULL) && (b->nvme.gwrite == NULL) && !down) {
        if (status == ZSH_OK) {
            zsh_optim_grad_to_file(opt, b);
        } else {
            zsh_pool_retire(&opt->tiers.pool, b->nvme.gtransit,
                            zsh_pool_round(b->count * opt->esize), opt->comm);
            b->nvme.gtransit = NULL;
        }
    }
    if (down) {
        opt->staging_bytes -= zsh_obucket_staging_bytes(opt, b);
        status = opt->dev_ops->failed(opt, opt->dev_ops->grad_down(opt, b));
        if (b->nvme.gtransit != NULL) {
            if (status == ZSH_OK) {
                b->nvme.gdown = true;
            } else {
                zsh_optim_grad_transit_put(opt, b); /* the copy stream was drained */
            }
        }
    }
    if (b->staging != NULL) {
        zsh_optim_staging_put(opt, b, (status != ZSH_OK) ? opt->comm : NULL);
        opt->staging_bytes -= zsh_obucket_staging_bytes(opt, b);
    }
    if (b->lent.grad != NULL) {
        opt->staging_bytes -= zsh_obucket_staging_bytes(opt, b);
        zsh_optim_lent_back(opt, b, reduced && (status != ZSH_OK));
    }
}

/* Drive the reductions in flight; finished ones give their buffers back. */
static zsh_status_t zsh_optim_grads_progress(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        if (opt->buckets[i].nvme.gdown) {
            zsh_optim_grad_landed(opt, &opt->buckets[i], false);
        }
        if ((opt->buckets[i].nvme.gwrite != NULL) &&
            (zsh_aio_test(opt->buckets[i].nvme.gwrite) != ZSH_INPROGRESS)) {
            zsh_optim_grad_write_done(opt, &opt->buckets[i]); /* a failure is the tier's */
        }
        if (!zsh_obucket_reducing(&opt->buckets[i])) {
            continue;
        }
        status = zsh_obucket_reduction(opt, &opt->buckets[i], false);
        if (status == ZSH_INPROGRESS) {
            continue;
        }
        zsh_optim_reduction_done(opt, &opt->buckets[i], status);
        if ((status != ZSH_OK) && (first == ZSH_OK)) {
            first = status;
        }
    }
    return first;
}

/* Whether staging @bytes more would go past max_live_bytes, or, for a
 * buffer of the pool (@pooled; a lent gradient is not), make the pool of
 * kept buffers drop some for a new one (bufs.c): a reduction in flight
 * gives one back. */
static bool zsh_optim_staging_full(const zsh_optim_t *opt, size_t bytes, bool pooled)
{
    return (opt->staging_bytes + bytes > opt->cfg.max_live_bytes) ||
           (pooled && (opt->acct.place == ZSH_PLACE_HOST) &&
            !zsh_pool_fits(&opt->bufs, zsh_pool_round(bytes)));
}

/* Reductions in flight waited for until @bytes more fit in max_live_bytes
 * (@pooled: in a kept buffer of the pool too), or none is left. */
static zsh_status_t zsh_optim_inflight_room(zsh_optim_t *opt, size_t bytes, bool pooled)
{
    zsh_status_t status = ZSH_OK;
    size_t i;

    for (i = opt->nbuckets; (i-- > 0) && zsh_optim_staging_full(opt, bytes, pooled);) {
        if (zsh_obucket_reducing(&opt->buckets[i])) {
            status = zsh_obucket_reduction(opt, &opt->buckets[i], true);
            zsh_optim_reduction_done(opt, &opt->buckets[i], status);
            if (status != ZSH_OK) {
                return status;
            }
        }
    }
    return status;
}

zsh_status_t zsh_optim_staging_room(zsh_optim_t *opt, size_t bytes)
{
    return zsh_optim_inflight_room(opt, bytes, true);
}

zsh_status_t zsh_optim_grad_room(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        if (zsh_obucket_reducing(&opt->buckets[i])) {
            /* A failure is the optimizer's from now on: the step reports it. */
            zsh_optim_reduction_done(opt, &opt->buckets[i],
                                     zsh_obucket_reduction(opt, &opt->buckets[i], true));
        }
    }
    return zsh_optim_grad_writes_wait(opt);
}

static zsh_status_t zsh_optim_reduce_start(zsh_optim_t *opt, zsh_obucket_t *b)
{
    /* Where the reduced shard is kept on its way (the NVMe tier: a transit
     * buffer). */
    zsh_status_t status = opt->tiers.ops[ZSH_TK_GRADS]->grad_prepare(opt, b);

    return (status == ZSH_OK) ? opt->stage_ops->reduce_start(opt, b) : status;
}

/* Backward has begun: the caller said so, or the step's first gradient
 * came. Once per step; only stage 3 gathers anything to drop. */
static zsh_status_t zsh_optim_backward_starts(zsh_optim_t *opt)
{
    if (opt->grads_begun || !opt->stage_ops->shards_params) {
        return ZSH_OK;
    }
    return zsh_optim_comm_status(opt, zsh_optim_qwz_backward_begins(opt));
}

zsh_status_t zsh_optim_backward_begin(zsh_optim_t *opt)
{
    const char *fn = "zsh_optim_backward_begin";
    zsh_status_t status;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: opt is NULL", fn);
    }
    status = zsh_optim_enter(opt, fn);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_optim_backward_starts(opt);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", fn);
    }
    return status;
}

/* What grad-ready and grad-none refuse before anything changes. */
static zsh_status_t zsh_optim_grad_check(zsh_optim_t *opt, const zsh_param_t *param,
                                         const char *fn)
{
    zsh_status_t status = zsh_optim_enter(opt, fn);

    if (status != ZSH_OK) {
        return status;
    }
    if (param->has_grad) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' already has a gradient pending this step", fn,
                         param->name);
    }
    return ZSH_OK;
}

/* Zeros where @param's gradient goes, so that the bucket's reduction adds
 * nothing for it and the norm counts nothing. On the host the place is
 * cleared; on the device zeros are copied there from the host. */
static zsh_status_t zsh_optim_grad_zero(zsh_optim_t *opt, char *dst, size_t bytes)
{
    zsh_status_t status;
    void *zeros;

    if (!opt->dev_ops->device) {
        memset(dst, 0, bytes);
        return ZSH_OK;
    }
    zeros = calloc(1, bytes);
    if (zeros == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for %zu bytes of zeros", bytes);
    }
    status = opt->dev_ops->copy(opt, dst, zeros, bytes);
    if (status == ZSH_OK) {
        status = opt->dev_ops->sync(opt); /* the copy has read them */
    }
    free(zeros);
    return status;
}

/* Where @param's gradient goes in its bucket, @grad times @mul or zeros
 * (@grad NULL), written there. A @mul other than 1 is the host's
 * (zsh_optim_grad_ready_scaled). */
static zsh_status_t zsh_optim_grad_copy(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                        const void *grad, float mul, const char *fn)
{
    char *dst;
    zsh_status_t status = opt->stage_ops->grad_dst(opt, b, param, &dst);

    if (status != ZSH_OK) {
        return status;
    }
    dst += param->offset * opt->esize;
    if (grad == NULL) {
        status = zsh_optim_grad_zero(opt, dst, param->numel * opt->esize);
    } else if (mul != 1.0f) {
        zsh_half_scale(opt->cfg.precision, grad, param->numel, mul, dst);
    } else {
        status = opt->dev_ops->copy(opt, dst, grad, param->numel * opt->esize);
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
        return zsh_optim_comm_status(opt, status);
    }
    return ZSH_OK;
}

/* @param's gradient, @grad times @mul or none (NULL: zeros in its place, and
 * the step leaves it), into its bucket, whose reduction starts once it is
 * complete; or, @lent, the bucket's reduction started from the caller's
 * gradient itself, which goes back (its done) on any failure here. */
static zsh_status_t zsh_optim_grad_place(zsh_optim_t *opt, zsh_param_t *param,
                                         const void *grad, float mul,
                                         const zsh_obucket_lent_t *lent, const char *fn)
{
    zsh_obucket_t *b = &opt->buckets[param->bucket];
    size_t bytes     = zsh_obucket_staging_bytes(opt, b);
    zsh_status_t status;

    if (lent != NULL) {
        b->lent = *lent;
    }
    status = zsh_optim_backward_starts(opt);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
    } else if (lent == NULL) {
        status = zsh_optim_grad_copy(opt, b, param, grad, mul, fn);
    } else {
        status = zsh_optim_inflight_room(opt, bytes, false);
        opt->staging_bytes += (status == ZSH_OK) ? bytes : 0;
    }
    if (status != ZSH_OK) {
        zsh_optim_lent_back(opt, b, false);
        return status;
    }
    param->has_grad = true;
    param->no_grad  = (grad == NULL);
    if (--b->pending == 0) {
        status = zsh_optim_reduce_start(opt, b);
        if (status != ZSH_OK) {
            /* The bucket cannot be reduced this step: a step would apply it
             * unreduced, so the failure is the optimizer's from now on.
             * Nothing was posted: its transit buffer goes back to the pool,
             * a lent gradient to its owner. */
            zsh_error_prefix("%s: reducing the bucket of parameter '%s': ", fn, param->name);
            if (b->nvme.gtransit != NULL) {
                zsh_optim_grad_transit_put(opt, b);
            }
            if (b->lent.grad != NULL) {
                opt->staging_bytes -= bytes;
                zsh_optim_lent_back(opt, b, false);
            }
            return zsh_optim_comm_status(opt, status);
        }
    }
    return zsh_optim_grads_progress(opt);
}

zsh_status_t zsh_optim_grad_ready(zsh_optim_t *opt, zsh_param_t *param, const void *grad)
{
    const char *fn = "zsh_optim_grad_ready";
    zsh_status_t status;

    if ((opt == NULL) || (param == NULL) || (grad == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "grad");
    }
    status = zsh_optim_grad_check(opt, param, fn);
    if (status == ZSH_OK) {
        status = zsh_optim_dev_check_ptr(opt, fn, "gradient", param, grad);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_grad_place(opt, param, grad, 1.0f, NULL, fn);
    }
    return status;
}

/* What zsh_optim_grad_ready_scaled() and zsh_optim_grad_lend() refuse
 * before anything changes. */
static zsh_status_t zsh_optim_grad_scaled_check(zsh_optim_t *opt, zsh_param_t *param,
                                                const void *grad, float mul, const char *fn)
{
    zsh_status_t status;

    if ((opt == NULL) || (param == NULL) || (grad == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "grad");
    }
    if (!isfinite(mul)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s': the factor %g is not finite",
                         fn, param->name, (double)mul);
    }
    status = zsh_optim_grad_check(opt, param, fn);
    if ((status == ZSH_OK) && opt->dev_ops->device) {
        /* A scaled copy would need a kernel on the device's stream; the
         * caller's framework has one. */
        status = zsh_error(ZSH_ERR_UNSUPPORTED,
                           "%s: parameter '%s' is on a device (%s): scale the gradient there "
                           "and hand it over with zsh_optim_grad_ready()",
                           fn, param->name, opt->dev_ops->name);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_dev_check_ptr(opt, fn, "gradient", param, grad);
    }
    return status;
}

zsh_status_t zsh_optim_grad_ready_scaled(zsh_optim_t *opt, zsh_param_t *param, const void *grad,
                                         float mul)
{
    const char *fn      = "zsh_optim_grad_ready_scaled";
    zsh_status_t status = zsh_optim_grad_scaled_check(opt, param, grad, mul, fn);

    if (status == ZSH_OK) {
        status = zsh_optim_grad_place(opt, param, grad, mul, NULL, fn);
    }
    return status;
}

/*
 * Whether @param's gradient can be reduced from where it lies, and by which
 * op: its bucket holds it alone, with no padding the reduction would read
 * past its end, in host memory and not through qgZ's quantized exchange;
 * the factor is 1 (a sum) or 1/N for a power-of-two N (an average: dividing
 * by a power of two commutes with rounding above the smallest normal
 * number, so the sum's bits are the scaled copies' sum's). Half precision
 * is bf16 only: fp16's normal range ends where gradients often lie.
 */
static bool zsh_optim_lend_op(const zsh_optim_t *opt, const zsh_param_t *param, float mul,
                              zsh_op_t *op_p)
{
    const zsh_obucket_t *b = &opt->buckets[param->bucket];
    size_t n               = (size_t)opt->size;
    zsh_dtype_t dt         = opt->cfg.precision;

    if (!opt->stage_ops->shards_grads || opt->dev_ops->device || (opt->qgz.owner != NULL) ||
        (b->nparams != 1) || (b->count * n != param->numel) ||
        ((dt != ZSH_FLOAT32) && (dt != ZSH_BFLOAT16))) {
        return false;
    }
    if (mul == 1.0f) {
        *op_p = ZSH_SUM;
        return true;
    }
    *op_p = ZSH_AVG;
    return ((n & (n - 1)) == 0) && (mul == 1.0f / (float)n);
}

zsh_status_t zsh_optim_grad_lend(zsh_optim_t *opt, zsh_param_t *param, const void *grad,
                                 float mul, zsh_optim_lent_fn done, void *arg)
{
    const char *fn      = "zsh_optim_grad_lend";
    zsh_status_t status = zsh_optim_grad_scaled_check(opt, param, grad, mul, fn);
    zsh_obucket_lent_t lent = {.grad = grad, .done = done, .arg = arg};

    if ((status == ZSH_OK) && zsh_optim_lend_op(opt, param, mul, &lent.op)) {
        return zsh_optim_grad_place(opt, param, grad, mul, &lent, fn); /* calls done */
    }
    if (status == ZSH_OK) {
        status = zsh_optim_grad_place(opt, param, grad, mul, NULL, fn);
    }
    if (done != NULL) {
        done(arg);
    }
    return status;
}

zsh_status_t zsh_optim_grad_wait(zsh_optim_t *opt, zsh_param_t *param)
{
    const char *fn      = "zsh_optim_grad_wait";
    zsh_status_t status = zsh_optim_enter_param(opt, param, fn);
    zsh_obucket_t *b;

    if (status != ZSH_OK) {
        return status;
    }
    b = &opt->buckets[param->bucket];
    if ((b->lent.grad == NULL) || !zsh_obucket_reducing(b)) {
        return ZSH_OK; /* nothing lent: copied, not handed over yet, or given back */
    }
    status = zsh_obucket_reduction(opt, b, true);
    zsh_optim_reduction_done(opt, b, status); /* a failure is the optimizer's from now on */
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
    }
    return status;
}

zsh_status_t zsh_optim_grad_none(zsh_optim_t *opt, zsh_param_t *param)
{
    const char *fn = "zsh_optim_grad_none";
    zsh_status_t status;

    if ((opt == NULL) || (param == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : "param");
    }
    status = zsh_optim_grad_check(opt, param, fn);
    if (status == ZSH_OK) {
        status = zsh_optim_grad_place(opt, param, NULL, 1.0f, NULL, fn);
    }
    return status;
}

zsh_status_t zsh_optim_grads_wait(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    zsh_obucket_t *b;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        b = &opt->buckets[i];
        if (zsh_obucket_reducing(b)) {
            status = zsh_obucket_reduction(opt, b, true);
            if ((status != ZSH_OK) && (first == ZSH_OK)) {
                first = status;
            }
            zsh_optim_reduction_done(opt, b, status);
        } else {
            zsh_optim_reduction_done(opt, b, ZSH_OK); /* a staging buffer never reduced */
        }
    }
    return first;
}

void zsh_optim_grads_reset(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nparams; i++) {
        opt->params[i]->has_grad = false;
        opt->params[i]->no_grad  = false;
    }
    for (i = 0; i < opt->nbuckets; i++) {
        opt->buckets[i].pending = opt->buckets[i].nparams;
    }
    opt->grads_begun = false;
    memset(&opt->clip, 0, sizeof(opt->clip));
}

zsh_status_t zsh_optim_zero_grad(zsh_optim_t *opt)
{
    zsh_status_t status;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_zero_grad: opt is NULL");
    }
    status = zsh_optim_grads_wait(opt);
    /* A failed write of a gradient being dropped loses nothing; the tier
     * keeps the failure and the next step reports it. */
    (void)zsh_optim_grad_writes_wait(opt);
    zsh_optim_grads_reset(opt);
    return status;
}
