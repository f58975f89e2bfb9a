/*
 * Stage 3: the parameters are sharded too. Each bucket's parameters live in
 * a shard of this rank's (in compute memory, the host tier or the NVMe
 * tier's file), which a fetch gathers into a whole bucket (fetch.c: the
 * gathers, their cache within max_live_bytes and the prefetch) and the step
 * updates in place; nothing is published after it, since the next fetch
 * gathers the updated shards.
 */
#include "optim/stage/shared.h"

#include "core/status.h"
#include "mem/device.h"

static zsh_status_t zsh_stage3_params_place(zsh_optim_t *opt, zsh_obucket_t *b)
{
    return zsh_optim_layout_place(opt, b, ZSH_TK_PARAMS, b->lo, b->count, NULL);
}

/* What was gathered goes: the update would make it stale. */
static zsh_status_t zsh_stage3_step_begin(zsh_optim_t *opt)
{
    zsh_optim_param_reads_drop(opt);
    return zsh_optim_drop_gathers(opt);
}

/* In memory every array is contiguous over the shard, so the range is one
 * run where every parameter takes the step's update; a swapped sub-group's,
 * or one where a parameter has no gradient or a count of its own, one run
 * per parameter. */
static zsh_status_t zsh_stage3_update_walk(zsh_optim_t *opt, zsh_obucket_t *b,
                                           const zsh_update_t *u, size_t s0, size_t e0,
                                           const zsh_swap_view_t *view, void *out)
{
    if ((view != NULL) || !zsh_obucket_uniform(opt, b)) {
        return zsh_optim_update_params(opt, b, u, s0, e0, view, out);
    }
    if ((s0 >= e0) || (b->nparams == 0)) {
        return ZSH_OK;
    }
    return zsh_optim_update_run(opt, b, b->params[0], u, s0, e0, NULL, out);
}

static void zsh_stage3_step_end(zsh_optim_t *opt)
{
    zsh_prefetch_end_step(&opt->prefetch);
}

static zsh_status_t zsh_stage3_params_up(zsh_optim_t *opt, zsh_obucket_t *b, size_t s0,
                                         size_t e0, const char *src, void *stream)
{
    size_t es = opt->esize;

    return zsh_dev_copy((char *)zsh_shard_local(b->fetch.pshard) + (s0 - b->lo) * es,
                        src + (s0 - b->lo) * es, (e0 - s0) * es, stream);
}

static void *zsh_stage3_param_at(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                 size_t s)
{
    (void)param;
    return (char *)zsh_shard_local(b->fetch.pshard) + (s - b->lo) * opt->esize;
}

/* The owned part of the shard; the gathered copies holding it are dropped,
 * so the next fetch sees the new values. */
static zsh_status_t zsh_stage3_set_param(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                         const void *values)
{
    zsh_status_t status;
    const char *src;
    size_t s, e;

    zsh_optim_param_reads_drop(opt); /* a shard read ahead would be stale */
    status       = zsh_optim_drop_gather(opt, b);
    b->hpz.sec_valid = false; /* every rank sets the same values: the next gather is primary */
    b->qwz.sent      = false;
    if ((status == ZSH_OK) && zsh_param_overlap(param, b->lo, b->hi, &s, &e)) {
        src = (const char *)values + (s - param->offset) * opt->esize;
        status = opt->tiers.ops[ZSH_TK_PARAMS]->put(opt, ZSH_TK_PARAMS, b, s, e, src, false);
    }
    return status;
}

static zsh_status_t zsh_stage3_params_rw(zsh_optim_t *opt, zsh_obucket_t *b, size_t s, size_t e,
                                         void *vals, bool write)
{
    const zsh_tier_ops_t *tier = opt->tiers.ops[ZSH_TK_PARAMS];

    return write ? tier->patch(opt, ZSH_TK_PARAMS, b, s, e, vals)
                 : tier->peek(opt, ZSH_TK_PARAMS, b, s, e, vals);
}

const zsh_stage_ops_t zsh_stage3_ops = {
    .stage         = 3,
    .name          = "sharded parameters",
    .shards_grads  = true,
    .shards_params = true,
    .state_base    = zsh_stage_shard_base,
    .state_count   = zsh_stage_shard_count,
    .owned_end     = zsh_stage_shard_end,
    .grads_alloc   = zsh_stage_grads_shard_alloc,
    .grads_free    = zsh_stage_grads_shard_free,
    .params_place  = zsh_stage3_params_place,
    .grad_dst      = zsh_stage_grad_staging_dst,
    .reduce_start  = zsh_stage_reduce_staged,
    .grads_owned   = zsh_stage_grads_shard,
    .norm_sum      = zsh_stage_norm_allreduce,
    .fetch         = zsh_optim_fetch_gathered,
    .read          = zsh_optim_fetch_exact,
    .release       = zsh_optim_release_gathered,
    .step_begin    = zsh_stage3_step_begin,
    .update_walk   = zsh_stage3_update_walk,
    .publish       = zsh_stage_bucket_nothing,
    .step_end      = zsh_stage3_step_end,
    .up_prepare    = zsh_stage_bucket_nothing,
    .params_up     = zsh_stage3_params_up,
    .param_at      = zsh_stage3_param_at,
    .set_param     = zsh_stage3_set_param,
    .params_rw     = zsh_stage3_params_rw,
};
