/*
 * The optimizer's state as a checkpoint sees it (state.h): per owned flat
 * range of a bucket, the fp32 weights (the master weights in mixed
 * precision, else the parameters) and each optimizer state, read or written
 * wherever they live (the framework's buffers, the stage 3 shard, memory or
 * the NVMe tier's files). Writing the weights rewrites every copy: the
 * master weights and the parameters rounded to the precision. Around a
 * load's writes: what a write would leave stale, and what it must publish.
 */
#include "optim/state.h"
#include "optim/optim_impl.h"

#include "core/half.h"
#include "core/status.h"

#include <stdint.h>
#include <string.h>

/* The most elements one get or set may move: the NVMe tier's host buffers
 * bound it. */
static size_t zsh_optim_state_span(const zsh_optim_t *opt)
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

/* The tier kind of a state other than the weights. */
static zsh_tkind_t zsh_optim_state_tkind(zsh_ostate_t kind)
{
    return (kind == ZSH_OSTATE_EXP_AVG) ? ZSH_TK_EXP_AVG : ZSH_TK_EXP_AVG_SQ;
}

/* The parameters of [s, e) in the precision: between @vals (indexed from s)
 * and where the stage keeps them, in the direction @write. */
static zsh_status_t zsh_optim_state_params(zsh_optim_t *opt, zsh_obucket_t *b, size_t s,
                                           size_t e, void *vals, bool write)
{
    return opt->stage_ops->params_rw(opt, b, s, e, vals, write);
}

/* The bucket of @pc and the flat position of its element @off, after
 * checking that kind @kind and elements [off, off + n) of @pc are this
 * rank's to move. */
static zsh_status_t zsh_optim_state_at(const zsh_optim_t *opt, const char *fn, zsh_ostate_t kind,
                                       const zsh_ostate_piece_t *pc, size_t off, size_t n,
                                       zsh_obucket_t **b_p, size_t *s_p)
{
    size_t lo, hi, span = zsh_optim_state_span(opt);
    zsh_obucket_t *b;

    if (((int)kind < 0) || ((int)kind > opt->nstates)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: state kind %d; this optimizer keeps %d", fn,
                         (int)kind, 1 + opt->nstates);
    }
    if ((pc->bucket >= opt->nbuckets) || (off > pc->count) || (n > pc->count - off) ||
        (n > span)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: elements [%zu, +%zu) of a piece of %zu in "
                         "bucket %zu of %zu (at most %zu at once)", fn, off, n, pc->count,
                         pc->bucket, opt->nbuckets, span);
    }
    b  = &opt->buckets[pc->bucket];
    lo = zsh_obucket_base(opt, b);
    hi = opt->stage_ops->owned_end(opt, b);
    if ((pc->flat < lo) || (pc->flat > hi) || (pc->count > hi - pc->flat)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: the piece at [%zu, +%zu) of bucket %zu is "
                         "outside this rank's state region [%zu, %zu)", fn, pc->flat, pc->count,
                         pc->bucket, lo, hi);
    }
    *b_p = b;
    *s_p = pc->flat + off;
    return ZSH_OK;
}

zsh_status_t zsh_optim_state_get(zsh_optim_t *opt, zsh_ostate_t kind,
                                 const zsh_ostate_piece_t *piece, size_t off, size_t n,
                                 float *dst)
{
    zsh_obucket_t *b;
    size_t s, e;
    zsh_status_t status;
    zsh_tkind_t tk;

    status = zsh_optim_state_at(opt, "zsh_optim_state_get", kind, piece, off, n, &b, &s);
    if (status != ZSH_OK) {
        return status;
    }
    e = s + n;
    if (kind == ZSH_OSTATE_WEIGHTS) {
        if (!opt->has_master) { /* fp32 parameters are the weights */
            return zsh_optim_state_params(opt, b, s, e, dst, false);
        }
        tk = ZSH_TK_MASTER;
    } else {
        tk = zsh_optim_state_tkind(kind);
    }
    return opt->tiers.ops[tk]->peek(opt, tk, b, s, e, dst);
}

zsh_status_t zsh_optim_state_set(zsh_optim_t *opt, zsh_ostate_t kind,
                                 const zsh_ostate_piece_t *piece, size_t off, size_t n,
                                 const float *src, void *scratch)
{
    zsh_obucket_t *b;
    size_t s, e;
    zsh_status_t status;
    zsh_tkind_t tk;

    status = zsh_optim_state_at(opt, "zsh_optim_state_set", kind, piece, off, n, &b, &s);
    if (status != ZSH_OK) {
        return status;
    }
    e = s + n;
    if (kind == ZSH_OSTATE_WEIGHTS) {
        if (!opt->has_master) {
            return zsh_optim_state_params(opt, b, s, e, (void *)src, true);
        }
        /* The parameters are the master weights rounded, as a step leaves them. */
        zsh_half_narrow(opt->cfg.precision, src, e - s, scratch);
        status = zsh_optim_state_params(opt, b, s, e, scratch, true);
        if (status != ZSH_OK) {
            return status;
        }
        tk = ZSH_TK_MASTER;
    } else {
        tk = zsh_optim_state_tkind(kind);
    }
    return opt->tiers.ops[tk]->patch(opt, tk, b, s, e, src);
}

zsh_status_t zsh_optim_state_set_master(zsh_optim_t *opt, const zsh_ostate_piece_t *piece,
                                        size_t off, size_t n, const float *src)
{
    zsh_obucket_t *b;
    zsh_status_t status;
    size_t s;

    status = zsh_optim_state_at(opt, "zsh_optim_state_set_master", ZSH_OSTATE_WEIGHTS, piece,
                                off, n, &b, &s);
    if ((status == ZSH_OK) && !opt->has_master) {
        status = zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_state_set_master: fp32 parameters "
                           "have no master weights");
    }
    if (status != ZSH_OK) {
        return status;
    }
    return opt->tiers.ops[ZSH_TK_MASTER]->patch(opt, ZSH_TK_MASTER, b, s, s + n, src);
}

zsh_status_t zsh_optim_state_set_begin(zsh_optim_t *opt)
{
    zsh_status_t status = ZSH_OK;

    /* What the stage holds beyond its state region (stage 3's gathered
     * copies, hpZ's slices) would be stale after the writes. */
    status = opt->stage_ops->step_begin(opt);
    zsh_optim_hpz_invalidate(opt);
    zsh_optim_qwz_invalidate(opt);
    return status;
}

zsh_status_t zsh_optim_state_set_end(zsh_optim_t *opt)
{
    zsh_status_t status = ZSH_OK;
    size_t b;

    /* Each rank wrote its part; the stage publishes it as after an update
     * (stages 1-2 gather the rest of the framework's buffers). */
    for (b = 0; (status == ZSH_OK) && (b < opt->nbuckets); b++) {
        status = opt->stage_ops->publish(opt, &opt->buckets[b]);
    }
    return status;
}

void zsh_optim_state_info(const zsh_optim_t *opt, zsh_ostate_info_t *info)
{
    memset(info, 0, sizeof(*info));
    info->rank      = opt->rank;
    info->size      = opt->size;
    info->stage     = opt->cfg.stage;
    info->precision = opt->cfg.precision;
    info->esize     = opt->esize;
    info->kind      = opt->cfg.kind;
    info->nkinds    = 1 + opt->nstates;
    info->nparams   = opt->nparams;
    info->span      = zsh_optim_state_span(opt);
}
