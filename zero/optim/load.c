/*
 * A parameter's values from and to outside the layer: read out (a state
 * dict, a model given back whole), exact always, through the stage's read
 * (stage 3 gathers in full precision under qwZ, fetch.c); and replaced
 * (loading a checkpoint or a state dict). Every copy the layer keeps of the
 * values is rewritten: the framework's buffer at stages 0-2, the owned part
 * of the stage 3 shard, and the owned part of the fp32 master weights in
 * mixed precision, where an element's master does not already round to its
 * value. Gathered stage 3 buckets holding the parameter are dropped, so the
 * next fetch sees the new values. The parameters' copies are the stage's to
 * set (its table's set_param, stage/).
 */
#include "optim/optim_impl.h"
#include "optim/state.h"

#include "core/half.h"
#include "core/status.h"

#include <stdlib.h>
#include <string.h>

/* Elements of the master weights compared and written at once: in the
 * NVMe tier each is one read and one write, so not small (4 MiB of fp32). */
#define ZSH_SET_MASTER_CHUNK ((size_t)1 << 20)

/* The master weights of [s, e) of @param from @values, into @b's memory or
 * the master file. On the host an element whose master already rounds to
 * its value keeps the master: a state dict's parameters are the masters
 * rounded, and a buffer written back after a framework changed some of its
 * elements changed only those (a master set from its rounding would lose
 * the low bits every later step adds to). */
static zsh_status_t zsh_optim_set_master(zsh_optim_t *opt, zsh_obucket_t *b,
                                         const zsh_param_t *param, const void *values, size_t s,
                                         size_t e)
{
    const zsh_tier_ops_t *ops = opt->tiers.ops[ZSH_TK_MASTER];
    const char *src = (const char *)values + (s - param->offset) * opt->esize;
    zsh_status_t status = ZSH_OK;
    zsh_ostate_info_t info;
    size_t es = opt->esize, chunk, at, n, k;
    char *rounded;
    float *m;

    if (opt->dev_ops->device) {
        return ops->put(opt, ZSH_TK_MASTER, b, s, e, src, true);
    }
    if (e <= s) {
        return ZSH_OK;
    }
    zsh_optim_state_info(opt, &info);
    chunk = (info.span < ZSH_SET_MASTER_CHUNK) ? info.span : ZSH_SET_MASTER_CHUNK;
    chunk = (e - s < chunk) ? e - s : chunk;
    m     = malloc(chunk * (sizeof(*m) + es));
    if (m == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory to compare the master weights");
    }
    rounded = (char *)(m + chunk);
    for (at = s; (status == ZSH_OK) && (at < e); at += n) {
        n      = (e - at < chunk) ? e - at : chunk;
        status = ops->peek(opt, ZSH_TK_MASTER, b, at, at + n, m);
        if (status != ZSH_OK) {
            break;
        }
        zsh_half_narrow(opt->cfg.precision, m, n, rounded);
        for (k = 0; k < n; k++) {
            if (memcmp(rounded + k * es, src + (at - s + k) * es, es) != 0) {
                zsh_half_widen(opt->cfg.precision, src + (at - s + k) * es, 1, &m[k]);
            }
        }
        status = ops->patch(opt, ZSH_TK_MASTER, b, at, at + n, m);
    }
    free(m);
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
    if (param->fetched || (b->fetch.refs > 0)) { /* refs: stage 3's fetches */
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
    status = zsh_optim_dev_check_ptr(opt, fn, "values", param, values);
    if (status != ZSH_OK) {
        return status;
    }
    status = opt->stage_ops->set_param(opt, b, param, values);
    if ((status == ZSH_OK) && opt->has_master) {
        base = zsh_obucket_base(opt, b);
        hi   = zsh_obucket_owned_end(opt, b);
        if (zsh_param_overlap(param, base, hi, &s, &e)) {
            status = zsh_optim_set_master(opt, b, param, values, s, e);
        }
    }
    if (status == ZSH_OK) {
        status = opt->dev_ops->sync(opt); /* @values may be reused once this returns */
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
    }
    return status;
}

zsh_status_t zsh_optim_get_param(zsh_optim_t *opt, zsh_param_t *param, void *values)
{
    const char *fn = "zsh_optim_get_param";
    zsh_status_t status, released;
    void *data;

    if ((opt == NULL) || (param == NULL) || (values == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "values");
    }
    status = zsh_optim_enter(opt, fn);
    if (status != ZSH_OK) {
        return status;
    }
    if (param->fetched) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is fetched; release it before reading its values",
                         fn, param->name);
    }
    status = zsh_optim_dev_check_ptr(opt, fn, "values", param, values);
    if (status == ZSH_OK) {
        status = opt->stage_ops->read(opt, param, &data);
    }
    if (status != ZSH_OK) {
        return status;
    }
    status = opt->dev_ops->copy(opt, values, data, param->numel * opt->esize);
    if (status == ZSH_OK) {
        status = opt->dev_ops->sync(opt); /* @values is the caller's once this returns */
    }
    param->fetched = false;
    released       = opt->stage_ops->release(opt, param);
    return (status != ZSH_OK) ? status : released;
}
