/*
 * Applying the update rule to the region of each bucket this rank owns, and
 * publishing the result: stages 1-2 all-gather the updated parameters back
 * into every rank's framework buffers; stage 3 leaves them in the shard for
 * the next fetch; stage 0 updated a full replica on every rank already.
 * Which of these, and how the owned range is walked, is the stage's (its
 * table's publish and update_walk, stage/).
 *
 * Mixed precision runs the rule on the fp32 master weights (apply.c) and
 * rounds them into the half-precision parameters in the same pass, so the
 * master weights are read once per step, not twice.
 */
#include "optim/optim_impl.h"

#include "core/half.h"
#include "core/status.h"

#include <string.h>

/* Where flat element @s of @param lives: in the framework's buffer, or in
 * the stage 3 shard. */
static void *zsh_optim_param_at(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param, size_t s)
{
    return opt->stage_ops->param_at(opt, b, param, s);
}

/* Where flat element @s of @kind for @param lives: in a swapped sub-group's
 * host buffer (@view), or in memory. NULL for a state the rule lacks. */
static void *zsh_optim_at(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                          zsh_tkind_t kind, size_t s, const zsh_swap_view_t *view)
{
    size_t base = zsh_obucket_base(opt, b);

    if ((view != NULL) && (view->buf[kind] != NULL)) {
        return view->buf[kind] + (b->nvme.foff + (s - base) - view->lo) * zsh_tier_esize(opt, kind);
    }
    switch (kind) {
    case ZSH_TK_PARAMS:
        return zsh_optim_param_at(opt, b, param, s);
    case ZSH_TK_GRADS:
        return (b->grad_full != NULL) ? (char *)b->grad_full + s * opt->esize
                                      : (char *)b->grad_shard + (s - b->lo) * opt->esize;
    case ZSH_TK_MASTER:
        return b->master + (s - base);
    case ZSH_TK_EXP_AVG:
        return (b->m != NULL) ? b->m + (s - base) : NULL;
    default:
        return (b->v != NULL) ? b->v + (s - base) : NULL;
    }
}

bool zsh_obucket_uniform(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    size_t i;

    for (i = 0; i < b->nparams; i++) {
        if (b->params[i]->no_grad || (b->params[i]->updates != opt->updates) ||
            b->params[i]->own_decay) {
            return false;
        }
    }
    return true;
}

zsh_status_t zsh_optim_update_run(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                  const zsh_update_t *u, size_t s, size_t e,
                                  const zsh_swap_view_t *view, void *out)
{
    zsh_tkind_t pk = opt->has_master ? ZSH_TK_MASTER : ZSH_TK_PARAMS;
    zsh_update_t own;
    zsh_status_t status;
    void *o;

    o = !opt->has_master ? NULL
        : (out != NULL)  ? (char *)out + (s - b->lo) * opt->esize
                         : zsh_optim_at(opt, b, param, ZSH_TK_PARAMS, s, view);
    if (param->no_grad) {
        /* Left as torch.optim leaves a parameter without a gradient; an
         * output buffer (sent up to the device whole) gets its values. */
        if ((out != NULL) && (o != NULL)) {
            zsh_half_narrow(opt->cfg.precision, zsh_optim_at(opt, b, param, pk, s, view), e - s,
                            o);
        }
        return ZSH_OK;
    }
    if ((param->updates != opt->updates) || param->own_decay) {
        /* Steps left it out: its bias correction is its own count's; or its
         * decay is its own, as a torch.optim parameter group's. */
        zsh_optim_config_t c = opt->cfg;

        if (param->own_decay) {
            c.weight_decay = param->weight_decay;
        }
        own = zsh_update_make(&c, param->updates, u->grad_mul);
        u   = &own;
    }
    /* On the device, or on the host (where it cannot fail). */
    status = opt->dev_ops->apply(opt, zsh_optim_at(opt, b, param, pk, s, view),
                                 zsh_optim_at(opt, b, param, ZSH_TK_GRADS, s, view),
                                 zsh_optim_at(opt, b, param, ZSH_TK_EXP_AVG, s, view),
                                 zsh_optim_at(opt, b, param, ZSH_TK_EXP_AVG_SQ, s, view), o, e - s,
                                 u);
    if (status != ZSH_OK) {
        zsh_error_prefix("zsh_optim_step: parameter '%s': ", param->name);
        return status;
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_update_params(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                     size_t s0, size_t e0, const zsh_swap_view_t *view,
                                     void *out)
{
    zsh_status_t status;
    size_t i, s, e;

    for (i = 0; i < b->nparams; i++) {
        if (!zsh_param_overlap(b->params[i], s0, e0, &s, &e)) {
            continue;
        }
        status = zsh_optim_update_run(opt, b, b->params[i], u, s, e, view, out);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_update_range(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                    size_t s0, size_t e0, const zsh_swap_view_t *view, void *out)
{
    return opt->stage_ops->update_walk(opt, b, u, s0, e0, view, out);
}

zsh_status_t zsh_optim_update_bucket(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u)
{
    return zsh_optim_update_range(opt, b, u, zsh_obucket_base(opt, b),
                                  zsh_obucket_owned_end(opt, b), NULL, NULL);
}

/* The owned flat elements [*s0_p, *e0_p) of @b in @view's sub-group;
 * false when there are none. */
static bool zsh_optim_view_range(const zsh_optim_t *opt, const zsh_obucket_t *b,
                                 const zsh_swap_view_t *view, size_t *s0_p, size_t *e0_p)
{
    size_t base = zsh_obucket_base(opt, b), region = zsh_obucket_region(opt, b);
    size_t end = zsh_obucket_owned_end(opt, b), s0, e0;

    if ((view->hi <= b->nvme.foff) || (view->lo >= b->nvme.foff + region)) {
        return false;
    }
    s0 = base + ((view->lo > b->nvme.foff) ? view->lo - b->nvme.foff : 0);
    e0 = base + ((view->hi - b->nvme.foff < region) ? view->hi - b->nvme.foff : region);
    e0 = (e0 < end) ? e0 : end;
    *s0_p = s0;
    *e0_p = e0;
    return s0 < e0; /* else the sub-group starts in this rank's padding */
}

zsh_status_t zsh_optim_update_view(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                   const zsh_swap_view_t *view)
{
    size_t s0, e0;

    if (!zsh_optim_view_range(opt, b, view, &s0, &e0)) {
        return ZSH_OK;
    }
    /* From the device: updated on the host like the swapped states, then sent up. */
    return opt->dev_ops->update_view(opt, b, u, s0, e0, view);
}

void zsh_optim_params_swap(zsh_optim_t *opt, const zsh_swap_view_t *view, bool save)
{
    size_t i, j, s0, e0, s, e, bytes;
    zsh_obucket_t *b;
    zsh_param_t *param;
    char *mem, *kept;

    for (i = 0; i < opt->nbuckets; i++) {
        b = &opt->buckets[i];
        if (!zsh_optim_view_range(opt, b, view, &s0, &e0)) {
            continue;
        }
        for (j = 0; j < b->nparams; j++) {
            param = b->params[j];
            if (!zsh_param_overlap(param, s0, e0, &s, &e)) {
                continue;
            }
            mem   = zsh_optim_param_at(opt, b, param, s);
            kept  = zsh_optim_at(opt, b, param, ZSH_TK_UNDO, s, view);
            bytes = (e - s) * opt->esize;
            if (save) {
                memcpy(kept, mem, bytes);
            } else {
                memcpy(mem, kept, bytes);
            }
        }
    }
}

/* Where @b's parameters lie as the all-gather leaves them, if they do: the
 * framework's storage for the bucket (storage.c), or its one parameter's
 * buffer when that has no padding. The step all-gathers there in place,
 * where this rank's updated block already sits at rank * count. */
static char *zsh_obucket_publish_in_place(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    if (b->storage != NULL) {
        return b->storage;
    }
    if ((b->nparams == 1) && (b->params[0]->offset == 0) &&
        (b->params[0]->numel == b->count * (size_t)opt->size)) {
        return b->params[0]->buf;
    }
    return NULL;
}

/* @param's elements of the all-gathered bucket @full into its buffer. Those
 * of this rank's block [lo, hi) are there already, as the all-gather read
 * them from it, unless the block was sent up into @full (@own_sent): the
 * copy skips them, 1/N of the bucket fewer bytes read and written. */
static zsh_status_t zsh_optim_publish_copy_back(zsh_optim_t *opt, const zsh_obucket_t *b,
                                                const zsh_param_t *param, const char *full,
                                                bool own_sent)
{
    size_t es = opt->esize, end = param->offset + param->numel, s, e;
    zsh_status_t status = ZSH_OK;

    if (own_sent || !zsh_param_overlap(param, b->lo, b->hi, &s, &e)) {
        return opt->dev_ops->copy(opt, param->buf, full + param->offset * es, param->numel * es);
    }
    if (param->offset < s) {
        status = opt->dev_ops->copy(opt, param->buf, full + param->offset * es,
                                    (s - param->offset) * es);
    }
    if ((status == ZSH_OK) && (e < end)) {
        status = opt->dev_ops->copy(opt, (char *)param->buf + (e - param->offset) * es,
                                    full + e * es, (end - e) * es);
    }
    return status;
}

zsh_status_t zsh_optim_publish_bucket(zsh_optim_t *opt, zsh_obucket_t *b)
{
    size_t bytes = zsh_obucket_full_bytes(opt, b), i, s, e;
    zsh_status_t status = ZSH_OK;
    size_t block = 0;
    zsh_param_t *param;
    bool in_place, own_sent;
    char *full;

    /* Offload from the device sent this rank's block up into it already. */
    full           = b->dev.publish;
    own_sent       = (full != NULL);
    b->dev.publish = NULL;
    in_place       = false;
    if (!own_sent) {
        full     = zsh_obucket_publish_in_place(opt, b);
        in_place = (full != NULL);
    }
    if (full == NULL) {
        full = zsh_optim_buf_get(opt, bytes, &block);
        if (full == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_step: no memory for %zu bytes", bytes);
        }
        for (i = 0; (status == ZSH_OK) && (i < b->nparams); i++) {
            param = b->params[i];
            if (zsh_param_overlap(param, b->lo, b->hi, &s, &e)) {
                status = opt->dev_ops->copy(opt, full + s * opt->esize,
                                            zsh_optim_param_at(opt, b, param, s),
                                            (e - s) * opt->esize);
            }
        }
    }
    /* In place: this rank's block already sits at rank * count. */
    if (status == ZSH_OK) {
        status = zsh_optim_comm_status(
            opt, zsh_allgather(full + (size_t)opt->rank * b->count * opt->esize, full, b->count,
                               opt->cfg.precision, opt->comm));
        opt->comm_bytes += bytes;
    }
    if (in_place) {
        return status;
    }
    for (i = 0; (status == ZSH_OK) && (i < b->nparams); i++) {
        param  = b->params[i];
        status = zsh_optim_publish_copy_back(opt, b, param, full, own_sent);
    }
    /* After a failure, its transfers may still write it. */
    zsh_optim_buf_put(opt, full, bytes, block, (status != ZSH_OK) ? opt->comm : NULL);
    return status;
}
