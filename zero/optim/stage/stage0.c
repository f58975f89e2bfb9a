/*
 * Stage 0: data parallelism, every rank a replica. The gradients are
 * all-reduced in full, in place, and every rank updates the whole bucket:
 * its states are full too, and there is nothing to publish after the step.
 */
#include "optim/stage/shared.h"

static size_t zsh_stage0_base(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    (void)opt;
    (void)b;
    return 0;
}

static size_t zsh_stage0_count(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    (void)opt;
    return b->numel;
}

static bool zsh_stage0_grads_alloc(zsh_optim_t *opt, zsh_obucket_t *b)
{
    return zsh_stage_grads_full_alloc(opt, b, b->numel);
}

static void zsh_stage0_grads_free(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm)
{
    zsh_stage_grads_full_free(opt, b, b->numel, comm);
}

static zsh_status_t zsh_stage0_reduce_start(zsh_optim_t *opt, zsh_obucket_t *b)
{
    char *grads = b->grad_full;

    opt->comm_bytes += 2 * b->numel * opt->esize;
    return zsh_iallreduce(grads, grads, b->numel, opt->cfg.precision, ZSH_SUM, opt->comm,
                          &b->req);
}

/* Every rank holds the same full reduction: its own sum is the norm's. */
static const void *zsh_stage0_grads_owned(const zsh_optim_t *opt, const zsh_obucket_t *b,
                                          size_t *n_p)
{
    (void)opt;
    *n_p = b->numel;
    return b->grad_full;
}

static zsh_status_t zsh_stage0_norm_sum(zsh_optim_t *opt, zsh_norm_sum_t *sum)
{
    (void)opt;
    (void)sum;
    return ZSH_OK;
}

const zsh_stage_ops_t zsh_stage0_ops = {
    .stage         = 0,
    .name          = "replicated",
    .shards_grads  = false,
    .shards_params = false,
    .state_base    = zsh_stage0_base,
    .state_count   = zsh_stage0_count,
    .owned_end     = zsh_stage0_count,
    .grads_alloc   = zsh_stage0_grads_alloc,
    .grads_free    = zsh_stage0_grads_free,
    .params_place  = zsh_stage_params_hold,
    .grad_dst      = zsh_stage_grad_full_dst,
    .reduce_start  = zsh_stage0_reduce_start,
    .grads_owned   = zsh_stage0_grads_owned,
    .norm_sum      = zsh_stage0_norm_sum,
    .fetch         = zsh_stage_fetch_buf,
    .read          = zsh_stage_fetch_buf,
    .release       = zsh_stage_release_buf,
    .step_begin    = zsh_stage_nothing,
    .update_walk   = zsh_optim_update_params,
    .publish       = zsh_stage_bucket_nothing,
    .step_end      = zsh_stage_end_nothing,
    .up_prepare    = zsh_stage_bucket_nothing,
    .params_up     = zsh_stage_params_up_buf,
    .param_at      = zsh_stage_param_buf_at,
    .set_param     = zsh_stage_set_param_buf,
    .params_rw     = zsh_stage_params_buf_rw,
};
