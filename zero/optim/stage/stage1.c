/*
 * Stage 1: the optimizer states are sharded. The gradients are still one
 * full buffer per bucket, reduce-scattered in place (only this rank's block
 * is used by the step); each rank updates its owned shard, and the updated
 * parameters are all-gathered back into every rank's framework buffers.
 */
#include "optim/stage/shared.h"

static bool zsh_stage1_grads_alloc(zsh_optim_t *opt, zsh_obucket_t *b)
{
    return zsh_stage_grads_full_alloc(opt, b, b->count * (size_t)opt->size);
}

static void zsh_stage1_grads_free(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm)
{
    zsh_stage_grads_full_free(opt, b, b->count * (size_t)opt->size, comm);
}

static zsh_status_t zsh_stage1_reduce_start(zsh_optim_t *opt, zsh_obucket_t *b)
{
    char *grads = b->grad_full;

    opt->comm_bytes += zsh_obucket_full_bytes(opt, b);
    return zsh_ireduce_scatter(grads, grads + (size_t)opt->rank * b->count * opt->esize,
                               b->count, opt->cfg.precision, ZSH_SUM, opt->comm, &b->req);
}

/* The owned block of the full buffer the reduce-scatter left. */
static const void *zsh_stage1_grads_owned(const zsh_optim_t *opt, const zsh_obucket_t *b,
                                          size_t *n_p)
{
    *n_p = b->hi - b->lo;
    return (const char *)b->grad_full + b->lo * opt->esize;
}

const zsh_stage_ops_t zsh_stage1_ops = {
    .stage         = 1,
    .name          = "sharded states",
    .shards_grads  = false,
    .shards_params = false,
    .state_base    = zsh_stage_shard_base,
    .state_count   = zsh_stage_shard_count,
    .owned_end     = zsh_stage_shard_end,
    .grads_alloc   = zsh_stage1_grads_alloc,
    .grads_free    = zsh_stage1_grads_free,
    .params_place  = zsh_stage_params_hold,
    .grad_dst      = zsh_stage_grad_full_dst,
    .reduce_start  = zsh_stage1_reduce_start,
    .grads_owned   = zsh_stage1_grads_owned,
    .norm_sum      = zsh_stage_norm_allreduce,
    .fetch         = zsh_stage_fetch_buf,
    .read          = zsh_stage_fetch_buf,
    .release       = zsh_stage_release_buf,
    .step_begin    = zsh_stage_nothing,
    .update_walk   = zsh_optim_update_params,
    .publish       = zsh_optim_publish_bucket,
    .step_end      = zsh_stage_end_nothing,
    .up_prepare    = zsh_stage_publish_prepare,
    .params_up     = zsh_stage_params_up_buf,
    .param_at      = zsh_stage_param_buf_at,
    .set_param     = zsh_stage_set_param_buf,
    .params_rw     = zsh_stage_params_buf_rw,
};
