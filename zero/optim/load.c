/*
 * Replacing a parameter's values from outside the layer (loading a
 * checkpoint or a state dict). Every copy the layer keeps of the values is
 * rewritten: the framework's buffer at stages 0-2, the owned part of the
 * stage 3 shard, and the owned part of the fp32 master weights in mixed
 * precision. Gathered stage 3 buckets holding the parameter are dropped, so
 * the next fetch sees the new values.
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <string.h>

/* Drop bucket @b's gathered copy (cached or prefetched, not fetched). */
static zsh_status_t zsh_optim_drop_bucket(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_status_t status;
    void *full;

    if ((b->pshard == NULL) || !zsh_shard_is_gathered(b->pshard)) {
        return ZSH_OK;
    }
    status = zsh_shard_gather_wait(b->pshard, &full);
    opt->live_bytes -= zsh_obucket_full_bytes(opt, b);
    if (status == ZSH_OK) {
        zsh_shard_release(b->pshard);
    }
    b->prefetched = false;
    return status;
}

zsh_status_t zsh_optim_set_param(zsh_optim_t *opt, zsh_param_t *param, const void *values)
{
    const char *fn = "zsh_optim_set_param";
    zsh_obucket_t *b;
    zsh_status_t status;
    size_t base, hi, s, e;

    if ((opt == NULL) || (param == NULL) || (values == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "values");
    }
    status = zsh_optim_setup(opt);
    if (status != ZSH_OK) {
        return status;
    }
    b = &opt->buckets[param->bucket];
    if (param->fetched || ((opt->cfg.stage == 3) && (b->refs > 0))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' %s; release it before setting its values", fn,
                         param->name,
                         param->fetched ? "is fetched" : "shares its bucket with a fetched one");
    }
    if (param->has_grad) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' has a gradient pending; step or zero_grad first", fn,
                         param->name);
    }
    if (opt->cfg.stage == 3) {
        status = zsh_optim_drop_bucket(opt, b);
        if (status != ZSH_OK) {
            zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
            return status;
        }
        if (zsh_param_overlap(param, b->lo, b->hi, &s, &e)) {
            memcpy((char *)zsh_shard_local(b->pshard) + (s - b->lo) * opt->esize,
                   (const char *)values + (s - param->offset) * opt->esize, (e - s) * opt->esize);
        }
    } else if (values != param->buf) {
        memmove(param->buf, values, param->numel * opt->esize);
    }
    if (opt->mixed) {
        base = zsh_obucket_base(opt, b);
        hi   = (opt->cfg.stage == 0) ? b->numel : b->hi;
        if (zsh_param_overlap(param, base, hi, &s, &e)) {
            zsh_optim_to_float(opt->cfg.precision,
                               (const char *)values + (s - param->offset) * opt->esize,
                               b->master + (s - base), e - s);
        }
    }
    return ZSH_OK;
}
