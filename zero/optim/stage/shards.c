/*
 * What each rank keeps a shard of. At stages 1-3 the optimizer states:
 * their region is the flat range [lo, hi) this rank owns (count elements,
 * padded), which is all the step updates, and the norm adds up the ranks'
 * sums of their owned gradients. At stages 2-3 the gradients too: a bucket
 * is collected in a staging buffer (within max_live_bytes), reduce-scattered
 * into the gradient shard, and the staging buffer goes back as soon as the
 * reduction is done (grads.c): only shards and the staging buffers kept for
 * the next backward (bufs.c, within max_live_bytes) outlive it. A bucket
 * whose gradient the caller lent (zsh_optim_grad_lend) is reduced from the
 * caller's memory instead, with no staging buffer.
 */
#include "optim/stage/shared.h"

#include "core/status.h"

size_t zsh_stage_shard_base(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    (void)opt;
    return b->lo;
}

size_t zsh_stage_shard_count(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    (void)opt;
    return b->count;
}

size_t zsh_stage_shard_end(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    (void)opt;
    return b->hi;
}

zsh_status_t zsh_stage_norm_allreduce(zsh_optim_t *opt, zsh_norm_sum_t *sum)
{
    zsh_status_t status;

    if (opt->size == 1) {
        return ZSH_OK;
    }
    status = zsh_optim_comm_status(
        opt, zsh_allreduce(&sum->sum, &sum->sum, 1, ZSH_FLOAT64, ZSH_SUM, opt->comm));
    if (status != ZSH_OK) {
        return status;
    }
    opt->comm_bytes += 2 * sizeof(sum->sum);
    if (!sum->exact) {
        return ZSH_OK;
    }
    /* The digits, carried into 32 bits: integers add exactly in any order. */
    zsh_norm_sum_carry(sum);
    status = zsh_optim_comm_status(opt, zsh_allreduce(sum->limb, sum->limb, ZSH_NORM_LIMBS,
                                                      ZSH_INT64, ZSH_SUM, opt->comm));
    if (status == ZSH_OK) {
        opt->comm_bytes += 2 * sizeof(sum->limb);
    }
    return status;
}

const void *zsh_stage_grads_shard(const zsh_optim_t *opt, const zsh_obucket_t *b, size_t *n_p)
{
    (void)opt;
    *n_p = b->hi - b->lo;
    return b->grad_shard;
}

/* A shard in the NVMe tier's file has no buffer: its reduction writes into
 * the transit buffer of its write (grads.c). */
bool zsh_stage_grads_shard_alloc(zsh_optim_t *opt, zsh_obucket_t *b)
{
    return opt->tiers.ops[ZSH_TK_GRADS]->alloc(opt, b, ZSH_TK_GRADS, b->count * opt->esize,
                                               &b->grad_shard);
}

void zsh_stage_grads_shard_free(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm)
{
    zsh_account_free_buffer(zsh_tier_acct(opt, ZSH_TK_GRADS), ZSH_MEM_GRADS, b->grad_shard,
                            b->count * opt->esize, comm);
}

zsh_status_t zsh_stage_grad_staging_dst(zsh_optim_t *opt, zsh_obucket_t *b,
                                        const zsh_param_t *param, char **dst_p)
{
    zsh_status_t status = ZSH_OK;

    if (b->staging == NULL) {
        status = zsh_optim_staging_get(opt, b, param);
    }
    *dst_p = b->staging;
    return status;
}

zsh_status_t zsh_stage_reduce_staged(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_dtype_t dt = opt->cfg.precision;

    if (opt->qgz.owner != NULL) {
        return zsh_optim_qgz_reduce(opt, b);
    }
    opt->comm_bytes += zsh_obucket_full_bytes(opt, b);
    if (b->lent.grad != NULL) {
        return zsh_ireduce_scatter(b->lent.grad, opt->dev_ops->shard_dst(opt, b), b->count, dt,
                                   b->lent.op, opt->comm, &b->req);
    }
    /* With the optimizer offloaded from the device, the host tier's shard
     * cannot take a device reduction: it is reduced in place, then copied
     * down (the table's grad_down). */
    return zsh_ireduce_scatter(b->staging, opt->dev_ops->shard_dst(opt, b), b->count, dt, ZSH_SUM,
                               opt->comm, &b->req);
}
