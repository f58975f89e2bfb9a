/*
 * A parameter's optimizer states from and to outside the layer, as
 * torch.optim's state dict holds them: read whole on every rank from the
 * ranks' parts (wherever the tiers keep them), written into this rank's
 * own part; and its count of updates (Adam's t, torch's "step"). In mixed
 * precision the fp32 master weights are one more such state.
 *
 * A read gathers by an integer sum of the parts' bits, every other rank
 * contributing zeros: an fp32 sum would turn a state of -0.0 into +0.0 and
 * quiet a signalling NaN, and a state dict is read to be loaded again.
 */
#include "optim/state.h"
#include "optim/optim_impl.h"

#include "core/status.h"

#include <stdint.h>
#include <string.h>

_Static_assert((int)ZSH_OPTIM_EXP_AVG == (int)ZSH_OSTATE_EXP_AVG &&
                   (int)ZSH_OPTIM_EXP_AVG_SQ == (int)ZSH_OSTATE_EXP_AVG_SQ,
               "the public states are the walk's kinds");

static const char *zsh_param_state_name(const zsh_optim_t *opt, zsh_optim_state_t kind)
{
    if (kind == ZSH_OPTIM_MASTER) {
        return "master_weight";
    }
    if (kind == ZSH_OPTIM_EXP_AVG_SQ) {
        return "exp_avg_sq";
    }
    return (opt->cfg.kind == ZSH_OPTIM_SGD) ? "momentum_buffer" : "exp_avg";
}

/* @param's place in registration order, after the checks every call makes. */
static zsh_status_t zsh_param_state_args(zsh_optim_t *opt, const char *fn,
                                         const zsh_param_t *param, zsh_optim_state_t kind,
                                         const void *values, size_t *index_p)
{
    static const char *const rules[] = {"SGD", "Adam", "AdamW"};
    zsh_status_t status;
    size_t i;

    if ((param == NULL) || (values == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (param == NULL) ? "param" : "values");
    }
    status = zsh_optim_setup(opt);
    if (status != ZSH_OK) {
        return status;
    }
    for (i = 0; (i < opt->nparams) && (opt->params[i] != param); i++) {
    }
    if (i == opt->nparams) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: the parameter is not one of this optimizer's",
                         fn);
    }
    if ((kind != ZSH_OPTIM_EXP_AVG) && (kind != ZSH_OPTIM_EXP_AVG_SQ) &&
        (kind != ZSH_OPTIM_MASTER)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s': state %d is none of "
                         "ZSH_OPTIM_EXP_AVG, ZSH_OPTIM_EXP_AVG_SQ and ZSH_OPTIM_MASTER", fn,
                         param->name, (int)kind);
    }
    if ((kind == ZSH_OPTIM_MASTER) && !opt->has_master) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s': fp32 parameters have no "
                         "master weights (mixed precision keeps them)", fn, param->name);
    }
    if ((kind != ZSH_OPTIM_MASTER) && ((int)kind > opt->nstates)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s': %s%s keeps no %s", fn,
                         param->name, rules[opt->cfg.kind],
                         (opt->nstates == 0) ? " without momentum" : "",
                         zsh_param_state_name(opt, kind));
    }
    *index_p = i;
    return zsh_optim_state_check(opt, fn, false);
}

/* Parameter @i's elements in [lo, hi) of its bucket as a piece: false if none. */
static bool zsh_param_state_piece(const zsh_optim_t *opt, size_t i, size_t lo, size_t hi,
                                  zsh_ostate_piece_t *pc)
{
    const zsh_param_t *p = opt->params[i];
    size_t s, e;

    if (!zsh_param_overlap(p, lo, hi, &s, &e)) {
        return false;
    }
    pc->param  = i;
    pc->bucket = p->bucket;
    pc->start  = s - p->offset;
    pc->count  = e - s;
    pc->flat   = s;
    return true;
}

/* Move @pc of @kind between @vals (the parameter's elements) and the layer,
 * a span at a time. The master weights are the walk's weights, which it
 * reads from the masters in mixed precision; written, they alone change. */
static zsh_status_t zsh_param_state_move(zsh_optim_t *opt, zsh_optim_state_t kind,
                                         const zsh_ostate_piece_t *pc, float *vals, bool write)
{
    zsh_status_t status = ZSH_OK;
    zsh_ostate_info_t info;
    size_t off, n;

    zsh_optim_state_info(opt, &info);
    for (off = 0; (status == ZSH_OK) && (off < pc->count); off += n) {
        n = (pc->count - off < info.span) ? pc->count - off : info.span;
        if (kind == ZSH_OPTIM_MASTER) {
            status = write ? zsh_optim_state_set_master(opt, pc, off, n, vals + pc->start + off)
                           : zsh_optim_state_get(opt, ZSH_OSTATE_WEIGHTS, pc, off, n,
                                                 vals + pc->start + off);
        } else {
            status = write ? zsh_optim_state_set(opt, (zsh_ostate_t)kind, pc, off, n,
                                                 vals + pc->start + off, NULL)
                           : zsh_optim_state_get(opt, (zsh_ostate_t)kind, pc, off, n,
                                                 vals + pc->start + off);
        }
    }
    return status;
}

/* Collective: ZSH_OK when every rank asked for parameter @i's state @kind. */
static zsh_status_t zsh_param_state_same(zsh_optim_t *opt, const char *fn, size_t i,
                                         zsh_optim_state_t kind)
{
    int64_t mine[4] = {(int64_t)i, -(int64_t)i, (int64_t)kind, -(int64_t)kind}, all[4];
    zsh_status_t status;

    status = zsh_optim_state_comm_status(opt, zsh_allreduce(mine, all, 4, ZSH_INT64, ZSH_MAX,
                                                            opt->comm));
    if ((status == ZSH_OK) && ((all[0] != -all[1]) || (all[2] != -all[3]))) {
        return zsh_error(ZSH_ERR_MISMATCH, "%s: the ranks asked for different parameters or "
                         "states (this one for '%s''s %s): every rank reads the same, in the "
                         "same order", fn, opt->params[i]->name, zsh_param_state_name(opt, kind));
    }
    return status;
}

zsh_status_t zsh_optim_get_state(zsh_optim_t *opt, zsh_param_t *param, zsh_optim_state_t kind,
                                 float *values)
{
    const char *fn = "zsh_optim_get_state";
    zsh_ostate_piece_t pc;
    zsh_status_t status, mine;
    size_t i = 0, lo, hi;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: opt is NULL", fn);
    }
    status = zsh_optim_setup(opt);
    if (status == ZSH_OK) {
        status = zsh_optim_state_prepare(opt, fn);
    }
    if (status != ZSH_OK) {
        return status;
    }
    mine = zsh_param_state_args(opt, fn, param, kind, values, &i);
    if (mine == ZSH_OK) {
        memset(values, 0, param->numel * sizeof(float));
        zsh_shard_part_range(opt->buckets[param->bucket].numel, opt->size, opt->rank, &lo, &hi);
        if (zsh_param_state_piece(opt, i, lo, hi, &pc)) {
            mine = zsh_param_state_move(opt, kind, &pc, values, false);
        }
    }
    /* A rank that stopped here would leave the others in the sum. */
    status = zsh_optim_state_agree(opt, mine);
    if (status == ZSH_OK) {
        status = zsh_param_state_same(opt, fn, i, kind);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_state_comm_status(opt, zsh_allreduce(values, values, param->numel,
                                                                ZSH_INT32, ZSH_SUM, opt->comm));
    }
    return status;
}

zsh_status_t zsh_optim_set_state(zsh_optim_t *opt, zsh_param_t *param, zsh_optim_state_t kind,
                                 const float *values)
{
    const char *fn = "zsh_optim_set_state";
    const zsh_obucket_t *b;
    zsh_ostate_piece_t pc;
    zsh_status_t status;
    size_t i;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: opt is NULL", fn);
    }
    status = zsh_param_state_args(opt, fn, param, kind, values, &i);
    if (status == ZSH_OK) {
        status = zsh_optim_state_prepare(opt, fn);
    }
    if (status != ZSH_OK) {
        return status;
    }
    b = &opt->buckets[param->bucket];
    if (zsh_param_state_piece(opt, i, zsh_obucket_base(opt, b), zsh_obucket_owned_end(opt, b),
                              &pc)) {
        status = zsh_param_state_move(opt, kind, &pc, (float *)values, true);
    }
    return status;
}

zsh_status_t zsh_optim_get_updates(const zsh_optim_t *opt, const zsh_param_t *param,
                                   unsigned long *updates_p)
{
    if ((opt == NULL) || (param == NULL) || (updates_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_get_updates: %s is NULL",
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "updates_p");
    }
    *updates_p = param->updates;
    return ZSH_OK;
}

zsh_status_t zsh_optim_set_updates(zsh_optim_t *opt, zsh_param_t *param, unsigned long updates)
{
    const char *fn = "zsh_optim_set_updates";
    unsigned long most = updates;
    bool ours          = false;
    size_t i;

    if ((opt == NULL) || (param == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : "param");
    }
    for (i = 0; i < opt->nparams; i++) {
        ours = ours || (opt->params[i] == param);
        if (opt->params[i] != param) {
            most = (opt->params[i]->updates > most) ? opt->params[i]->updates : most;
        }
    }
    if (!ours) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: the parameter is not one of this optimizer's",
                         fn);
    }
    if (param->has_grad) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s' has a gradient pending; step "
                         "or zero_grad first", fn, param->name);
    }
    param->updates = updates;
    /* The optimizer's count is its parameters' newest: those at it take the
     * step's shared scalars, the others their own (update.c). */
    opt->updates = most;
    return ZSH_OK;
}
