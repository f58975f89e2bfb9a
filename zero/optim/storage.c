/*
 * A bucket's parameters moved into storage the framework gives, laid out as
 * the bucket is (stages 0-2, host memory).
 *
 * At stages 1-2 each step all-gathers the updated parameters. Registered one
 * by one, they lie wherever the framework put them, so the all-gather runs in
 * a buffer of the layer's: this rank's block copied in, the peers' blocks
 * copied back out, two passes over the bucket that a framework with flat
 * parameters (FSDP's, DeepSpeed's) does not pay. A framework that can move its
 * parameters asks where each lies (zsh_optim_param_place()) and hands over a
 * buffer of the bucket's padded size; from then on the step all-gathers into
 * it in place (update.c, zsh_optim_publish_bucket()).
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <stdint.h>
#include <string.h>

zsh_status_t zsh_optim_param_place(zsh_optim_t *opt, const zsh_param_t *param, size_t *bucket_p,
                                   size_t *offset_p, size_t *bucket_numel_p)
{
    const char *fn      = "zsh_optim_param_place";
    zsh_status_t status = zsh_optim_enter_param(opt, param, fn);
    const zsh_obucket_t *b;

    if (status != ZSH_OK) {
        return status;
    }
    b = &opt->buckets[param->bucket];
    if (bucket_p != NULL) {
        *bucket_p = param->bucket;
    }
    if (offset_p != NULL) {
        *offset_p = param->offset;
    }
    if (bucket_numel_p != NULL) {
        *bucket_numel_p = b->count * (size_t)opt->size;
    }
    return ZSH_OK;
}

/* Whether [a, a + an) and [b, b + bn) share a byte. */
static bool zsh_ranges_meet(const char *a, size_t an, const char *b, size_t bn)
{
    return ((uintptr_t)a < (uintptr_t)b + bn) && ((uintptr_t)b < (uintptr_t)a + an);
}

/* What would make moving bucket @index into @buf (@bytes, its padded size)
 * lose values: one of its parameters fetched (its caller holds the old
 * address); a parameter of any bucket whose current buffer meets @buf
 * anywhere but at its own place there (the copies or a later all-gather,
 * padding included, would overwrite it); another bucket's storage meeting
 * @buf (their all-gathers would write each other's elements). */
static zsh_status_t zsh_optim_storage_check(const zsh_optim_t *opt, size_t index,
                                            const char *buf, size_t bytes, const char *fn)
{
    size_t i, es = opt->esize;
    const zsh_obucket_t *b = &opt->buckets[index], *other;
    const zsh_param_t *p;

    for (i = 0; i < b->nparams; i++) {
        if (b->params[i]->fetched) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: bucket %zu: parameter '%s' is fetched; release it first",
                             fn, index, b->params[i]->name);
        }
    }
    for (i = 0; i < opt->nparams; i++) {
        p = opt->params[i];
        if (((p->bucket != index) || ((const char *)p->buf != buf + p->offset * es)) &&
            zsh_ranges_meet(p->buf, p->numel * es, buf, bytes)) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: bucket %zu: the storage overlaps the buffer of parameter '%s' "
                             "elsewhere than at its place; give memory of its own",
                             fn, index, p->name);
        }
    }
    for (i = 0; i < opt->nbuckets; i++) {
        other = &opt->buckets[i];
        if ((i != index) && (other->storage != NULL) &&
            zsh_ranges_meet(other->storage, zsh_obucket_full_bytes(opt, other), buf, bytes)) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: bucket %zu: the storage overlaps bucket %zu's; give memory of "
                             "its own", fn, index, i);
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_set_bucket_storage(zsh_optim_t *opt, size_t bucket, void *buf,
                                          size_t bytes)
{
    const char *fn = "zsh_optim_set_bucket_storage";
    zsh_obucket_t *b;
    zsh_param_t *p;
    zsh_status_t status;
    size_t i, need;
    char *at;

    if ((opt == NULL) || (buf == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : "buf");
    }
    status = zsh_optim_enter(opt, fn);
    if (status != ZSH_OK) {
        return status;
    }
    if (opt->stage_ops->shards_params) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: at stage %d the parameters live in the layer's shards, not in the "
                         "framework's memory", fn, opt->cfg.stage);
    }
    if (opt->dev_ops->device) {
        return zsh_error(ZSH_ERR_UNSUPPORTED,
                         "%s: the parameters are on a device (%s); bucket storage is host memory "
                         "only", fn, opt->dev_ops->name);
    }
    if (bucket >= opt->nbuckets) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: bucket %zu of %zu", fn, bucket,
                         opt->nbuckets);
    }
    b    = &opt->buckets[bucket];
    need = zsh_obucket_full_bytes(opt, b);
    if (bytes < need) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: bucket %zu needs %zu bytes (%zu elements padded to %d equal "
                         "blocks), %zu given", fn, bucket, need, b->count * (size_t)opt->size,
                         opt->size, bytes);
    }
    if ((uintptr_t)buf % opt->esize != 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: bucket %zu: the storage is not aligned to its %zu-byte elements",
                         fn, bucket, opt->esize);
    }
    status = zsh_optim_storage_check(opt, bucket, buf, need, fn);
    if (status != ZSH_OK) {
        return status;
    }
    for (i = 0; i < b->nparams; i++) {
        p  = b->params[i];
        at = (char *)buf + p->offset * opt->esize;
        if (p->buf != at) {
            memcpy(at, p->buf, p->numel * opt->esize);
            p->buf = at;
        }
    }
    b->storage = buf;
    return ZSH_OK;
}
