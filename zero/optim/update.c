/*
 * Applying the update rule to the region of each bucket this rank owns, and
 * publishing the result: stages 1-2 all-gather the updated parameters back
 * into every rank's framework buffers; stage 3 leaves them in the shard for
 * the next fetch; stage 0 updated a full replica on every rank already.
 *
 * Mixed precision runs the rule on the fp32 master weights (apply.c), then
 * rounds them into the half-precision parameters.
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <string.h>

/* Where flat element @s of @param lives: in the framework's buffer, or in
 * the stage 3 shard. */
static void *zsh_optim_param_at(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param, size_t s)
{
    if (opt->cfg.stage == 3) {
        return (char *)zsh_shard_local(b->pshard) + (s - b->lo) * opt->esize;
    }
    return (char *)param->buf + (s - param->offset) * opt->esize;
}

void zsh_optim_update_bucket(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u)
{
    size_t base = zsh_obucket_base(opt, b);
    size_t hi = (opt->cfg.stage == 0) ? b->numel : b->hi;
    size_t i, s, e;
    const char *g;
    float *p;
    zsh_param_t *param;

    for (i = 0; i < b->nparams; i++) {
        param = b->params[i];
        if (!zsh_param_overlap(param, base, hi, &s, &e)) {
            continue;
        }
        g = (b->grad_full != NULL) ? (const char *)b->grad_full + s * opt->esize
                                   : (const char *)b->grad_shard + (s - b->lo) * opt->esize;
        p = opt->mixed ? b->master + (s - base) : zsh_optim_param_at(opt, b, param, s);
        zsh_optim_apply(opt, p, g, (b->m != NULL) ? b->m + (s - base) : NULL,
                        (b->v != NULL) ? b->v + (s - base) : NULL, e - s, u);
        if (opt->mixed) {
            zsh_optim_from_float(opt->cfg.precision, p, zsh_optim_param_at(opt, b, param, s),
                                 e - s);
        }
    }
}

zsh_status_t zsh_optim_publish_bucket(zsh_optim_t *opt, zsh_obucket_t *b)
{
    size_t bytes = zsh_obucket_full_bytes(opt, b), i, s, e;
    zsh_param_t *param;
    zsh_status_t status;
    char *full;

    full = zsh_account_alloc(&opt->acct, ZSH_MEM_BUFFERS, bytes);
    if (full == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_step: no memory for %zu bytes", bytes);
    }
    for (i = 0; i < b->nparams; i++) {
        param = b->params[i];
        if (zsh_param_overlap(param, b->lo, b->hi, &s, &e)) {
            memcpy(full + s * opt->esize, zsh_optim_param_at(opt, b, param, s),
                   (e - s) * opt->esize);
        }
    }
    /* In place: this rank's block already sits at rank * count. */
    status = zsh_allgather(full + (size_t)opt->rank * b->count * opt->esize, full, b->count,
                           opt->cfg.precision, opt->comm);
    opt->comm_bytes += bytes;
    for (i = 0; (status == ZSH_OK) && (i < b->nparams); i++) {
        param = b->params[i];
        memcpy(param->buf, full + param->offset * opt->esize, param->numel * opt->esize);
    }
    zsh_account_free(&opt->acct, ZSH_MEM_BUFFERS, full, bytes);
    return status;
}
