/*
 * Stage 2: the gradients are sharded too. Each bucket is staged and
 * reduce-scattered into this rank's gradient shard (shards.c); the
 * parameters stay the framework's buffers, which the step's all-gather
 * refreshes, as at stage 1.
 */
#include "optim/stage/shared.h"

const zsh_stage_ops_t zsh_stage2_ops = {
    .stage         = 2,
    .name          = "sharded gradients",
    .shards_grads  = true,
    .shards_params = false,
    .state_base    = zsh_stage_shard_base,
    .state_count   = zsh_stage_shard_count,
    .owned_end     = zsh_stage_shard_end,
    .grads_alloc   = zsh_stage_grads_shard_alloc,
    .grads_free    = zsh_stage_grads_shard_free,
    .params_place  = zsh_stage_params_hold,
    .grad_dst      = zsh_stage_grad_staging_dst,
    .reduce_start  = zsh_stage_reduce_staged,
    .grads_owned   = zsh_stage_grads_shard,
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
