/*
 * The optimizer's state as a checkpoint sees it: per owned flat range of a
 * bucket, the fp32 weights (the master weights in mixed precision, else the
 * parameters) and each optimizer state, read or written wherever they live
 * (the framework's buffers, the stage 3 shard, memory or the NVMe tier's
 * files). Writing the weights rewrites every copy: the master weights and
 * the parameters rounded to the precision.
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <stdint.h>
#include <string.h>

int zsh_optim_state_count(const zsh_optim_t *opt)
{
    return 1 + opt->nstates;
}

size_t zsh_optim_state_span(const zsh_optim_t *opt)
{
    size_t n;

    if (opt->tiers.aio == NULL) {
        return SIZE_MAX;
    }
    /* A range in a file is widened to aligned blocks, one more at each end. */
    n = opt->tiers.pool.limit / sizeof(float);
    n = (n > 3 * ZSH_TIER_ALIGN_ELEMS) ? n - 2 * ZSH_TIER_ALIGN_ELEMS : ZSH_TIER_ALIGN_ELEMS;
    return n;
}

/* The tier kind and memory array of a state other than the weights. */
static zsh_tkind_t zsh_optim_state_tkind(zsh_ostate_t kind)
{
    return (kind == ZSH_OSTATE_EXP_AVG) ? ZSH_TK_EXP_AVG : ZSH_TK_EXP_AVG_SQ;
}

static float *zsh_optim_state_mem(zsh_obucket_t *b, zsh_ostate_t kind)
{
    return (kind == ZSH_OSTATE_EXP_AVG) ? b->m : b->v;
}

/* The parameters of [s, e) in the precision: between @vals (indexed from s)
 * and where the stage keeps them, in the direction @write. */
static zsh_status_t zsh_optim_state_params(zsh_optim_t *opt, zsh_obucket_t *b, size_t s,
                                           size_t e, void *vals, bool write)
{
    return opt->stage_ops->params_rw(opt, b, s, e, vals, write);
}

zsh_status_t zsh_optim_state_get(zsh_optim_t *opt, zsh_ostate_t kind, zsh_obucket_t *b,
                                 size_t s, size_t e, float *dst)
{
    size_t base = zsh_obucket_base(opt, b);
    zsh_tkind_t tk;

    if (kind == ZSH_OSTATE_WEIGHTS) {
        if (!opt->has_master) { /* fp32 parameters are the weights */
            return zsh_optim_state_params(opt, b, s, e, dst, false);
        }
        tk = ZSH_TK_MASTER;
        if (!zsh_tier_in_file(opt, tk)) {
            memcpy(dst, b->master + (s - base), (e - s) * sizeof(float));
            return ZSH_OK;
        }
    } else {
        tk = zsh_optim_state_tkind(kind);
        if (!zsh_tier_in_file(opt, tk)) {
            memcpy(dst, zsh_optim_state_mem(b, kind) + (s - base), (e - s) * sizeof(float));
            return ZSH_OK;
        }
    }
    return zsh_tier_peek(opt, tk, b, s, e, dst);
}

zsh_status_t zsh_optim_state_set(zsh_optim_t *opt, zsh_ostate_t kind, zsh_obucket_t *b,
                                 size_t s, size_t e, const float *src, void *scratch)
{
    size_t base = zsh_obucket_base(opt, b);
    zsh_status_t status;
    zsh_tkind_t tk;

    if (kind == ZSH_OSTATE_WEIGHTS) {
        if (!opt->has_master) {
            return zsh_optim_state_params(opt, b, s, e, (void *)src, true);
        }
        /* The parameters are the master weights rounded, as a step leaves them. */
        zsh_optim_from_float(opt->cfg.precision, src, scratch, e - s);
        status = zsh_optim_state_params(opt, b, s, e, scratch, true);
        if (status != ZSH_OK) {
            return status;
        }
        tk = ZSH_TK_MASTER;
        if (!zsh_tier_in_file(opt, tk)) {
            memcpy(b->master + (s - base), src, (e - s) * sizeof(float));
            return ZSH_OK;
        }
    } else {
        tk = zsh_optim_state_tkind(kind);
        if (!zsh_tier_in_file(opt, tk)) {
            memcpy(zsh_optim_state_mem(b, kind) + (s - base), src, (e - s) * sizeof(float));
            return ZSH_OK;
        }
    }
    return zsh_tier_patch(opt, tk, b, s, e, src);
}
