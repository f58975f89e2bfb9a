/*
 * What every rank keeps whole. At stages 0-1 the gradients: one buffer of
 * the bucket, which grad-ready fills and the reduction reduces in place.
 * At stages 0-2 the parameters: the framework's own buffers, which a fetch
 * hands back as they are, the step's rule updates in place (stage 0) or an
 * all-gather refreshes (stages 1-2, update.c's zsh_optim_publish_bucket).
 */
#include "optim/stage/shared.h"

#include "core/status.h"
#include "mem/device.h"

#include <string.h>

bool zsh_stage_grads_full_alloc(zsh_optim_t *opt, zsh_obucket_t *b, size_t elems)
{
    b->grad_full = zsh_account_alloc(&opt->acct, ZSH_MEM_GRADS, elems * opt->esize);
    return b->grad_full != NULL;
}

void zsh_stage_grads_full_free(zsh_optim_t *opt, zsh_obucket_t *b, size_t elems,
                               zsh_comm_t *comm)
{
    zsh_account_free_buffer(&opt->acct, ZSH_MEM_GRADS, b->grad_full, elems * opt->esize, comm);
}

zsh_status_t zsh_stage_grad_full_dst(zsh_optim_t *opt, zsh_obucket_t *b,
                                     const zsh_param_t *param, char **dst_p)
{
    (void)opt;
    (void)param;
    *dst_p = b->grad_full;
    return ZSH_OK;
}

/* The framework's buffers hold the parameters: count them as held. */
zsh_status_t zsh_stage_params_hold(zsh_optim_t *opt, zsh_obucket_t *b)
{
    size_t i;

    for (i = 0; i < b->nparams; i++) {
        zsh_account_hold(&opt->acct, ZSH_MEM_PARAMS, b->params[i]->numel * opt->esize);
    }
    return ZSH_OK;
}

zsh_status_t zsh_stage_fetch_buf(zsh_optim_t *opt, zsh_param_t *param, void **data_p)
{
    (void)opt;
    param->fetched = true;
    *data_p        = param->buf;
    return ZSH_OK;
}

zsh_status_t zsh_stage_release_buf(zsh_optim_t *opt, zsh_param_t *param)
{
    (void)opt;
    (void)param;
    return ZSH_OK;
}

/* Offload from the device sends the updated block straight into the
 * publishing all-gather's buffer (zsh_stage_params_up_buf). */
zsh_status_t zsh_stage_publish_prepare(zsh_optim_t *opt, zsh_obucket_t *b)
{
    b->dev.publish = zsh_account_alloc(&opt->acct, ZSH_MEM_BUFFERS, zsh_obucket_full_bytes(opt, b));
    if (b->dev.publish == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_step: no memory for %zu bytes",
                         zsh_obucket_full_bytes(opt, b));
    }
    return ZSH_OK;
}

zsh_status_t zsh_stage_params_up_buf(zsh_optim_t *opt, zsh_obucket_t *b, size_t s0, size_t e0,
                                     const char *src, void *stream)
{
    size_t es = opt->esize, i, s, e;
    zsh_status_t status = ZSH_OK;
    zsh_param_t *param;

    if (b->dev.publish != NULL) {
        /* Stage 2 from the host tier: straight into the publishing
         * all-gather's buffer, at this rank's block. */
        char *dst = (char *)b->dev.publish + ((size_t)opt->rank * b->count + s0 - b->lo) * es;

        return zsh_dev_copy(dst, src + (s0 - b->lo) * es, (e0 - s0) * es, stream);
    }
    /* Stage 2 from the NVMe tier: into the framework's buffers, which the
     * publishing all-gather reads (update.c), so no bucket-sized buffer
     * waits on the device for the whole swapped step. */
    for (i = 0; (status == ZSH_OK) && (i < b->nparams); i++) {
        param = b->params[i];
        if (zsh_param_overlap(param, s0, e0, &s, &e)) {
            status = zsh_dev_copy((char *)param->buf + (s - param->offset) * es,
                                  src + (s - b->lo) * es, (e - s) * es, stream);
        }
    }
    return status;
}

void *zsh_stage_param_buf_at(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param, size_t s)
{
    (void)b;
    return (char *)param->buf + (s - param->offset) * opt->esize;
}

zsh_status_t zsh_stage_set_param_buf(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                     const void *values)
{
    (void)b;
    if (values == param->buf) {
        return ZSH_OK;
    }
    return opt->dev_ops->copy(opt, param->buf, values, param->numel * opt->esize);
}

zsh_status_t zsh_stage_params_buf_rw(zsh_optim_t *opt, zsh_obucket_t *b, size_t s, size_t e,
                                     void *vals, bool write)
{
    size_t es = opt->esize, i, a, z;
    zsh_param_t *p;
    char *at;

    for (i = 0; i < b->nparams; i++) {
        p = b->params[i];
        if (zsh_param_overlap(p, s, e, &a, &z)) {
            at = (char *)p->buf + (a - p->offset) * es;
            memcpy(write ? at : (char *)vals + (a - s) * es,
                   write ? (char *)vals + (a - s) * es : at, (z - a) * es);
        }
    }
    return ZSH_OK;
}
