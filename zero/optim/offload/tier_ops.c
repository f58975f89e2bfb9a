/*
 * The offload tiers' tables (tier_ops.h): a kind of model state in memory
 * (compute, or the host tier of cpu offload) or in the NVMe tier's files
 * (tier.c). In memory a region is allocated and read or written in place;
 * in a file it goes through host buffers of the tier's pool: the initial
 * values and values set through a temporary buffer, a reduced gradient
 * shard through a transit buffer written behind the backward pass (its
 * writes are grads.c's), and a stage 3 shard through a buffer it is read
 * into, possibly well ahead of its gather.
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#include <string.h>

/* Where flat element @s of @b's region of @kind lives in memory. */
static char *zsh_tier_mem_at(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s)
{
    size_t off = (s - zsh_obucket_base(opt, b)) * zsh_tier_esize(opt, kind);

    switch (kind) {
    case ZSH_TK_PARAMS:
        return (char *)zsh_shard_local(b->fetch.pshard) + off;
    case ZSH_TK_GRADS:
        return (char *)b->grad_shard + off;
    case ZSH_TK_MASTER:
        return (char *)b->master + off;
    case ZSH_TK_EXP_AVG:
        return (char *)b->m + off;
    default:
        return (char *)b->v + off;
    }
}

/* ---- memory ---- */

/* The initial values are copied directly. */
static zsh_status_t zsh_tier_mem_place(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind,
                                       size_t base, size_t region, void **mem_p)
{
    bool to_float = kind == ZSH_TK_MASTER;
    size_t es     = zsh_tier_esize(opt, kind);
    zsh_status_t status;
    void *dst;

    if (kind == ZSH_TK_PARAMS) {
        status = zsh_bucket_seal_counted(b->layout, &opt->acct, zsh_tier_acct(opt, kind),
                                         ZSH_MEM_PARAMS, &b->fetch.pshard);
        if (status != ZSH_OK) {
            return status;
        }
        dst = zsh_shard_local(b->fetch.pshard);
    } else {
        dst = zsh_account_alloc(zsh_tier_acct(opt, kind), ZSH_MEM_STATES, region * es);
        if (dst == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY,
                             "zsh_optim_setup: no memory for the master weights of the bucket "
                             "from parameter '%s'", b->params[0]->name);
        }
        *mem_p = dst;
    }
    return zsh_optim_layout_copy_in(opt, b, base, base + region, base, dst, to_float);
}

static bool zsh_tier_mem_alloc(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind,
                               size_t bytes, void **mem_p)
{
    (void)b;
    *mem_p = zsh_account_alloc(zsh_tier_acct(opt, kind),
                               (kind == ZSH_TK_GRADS) ? ZSH_MEM_GRADS : ZSH_MEM_STATES, bytes);
    return *mem_p != NULL;
}

static zsh_status_t zsh_tier_mem_peek(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b,
                                      size_t s, size_t e, void *dst)
{
    memcpy(dst, zsh_tier_mem_at(opt, kind, b, s), (e - s) * zsh_tier_esize(opt, kind));
    return ZSH_OK;
}

static zsh_status_t zsh_tier_mem_patch(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b,
                                       size_t s, size_t e, const void *src)
{
    memcpy(zsh_tier_mem_at(opt, kind, b, s), src, (e - s) * zsh_tier_esize(opt, kind));
    return ZSH_OK;
}

static zsh_status_t zsh_tier_mem_put(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b,
                                     size_t s, size_t e, const void *src, bool widen)
{
    char *at = zsh_tier_mem_at(opt, kind, b, s);

    if (widen) {
        return opt->dev_ops->to_float(opt, src, (float *)at, e - s);
    }
    return opt->dev_ops->copy(opt, at, src, (e - s) * zsh_tier_esize(opt, kind));
}

/* The reduction writes into the shard itself. */
static zsh_status_t zsh_tier_mem_grad_prepare(zsh_optim_t *opt, zsh_obucket_t *b)
{
    (void)opt;
    (void)b;
    return ZSH_OK;
}

static void zsh_tier_mem_grad_sumsq(const zsh_optim_t *opt, const zsh_obucket_t *b,
                                    zsh_norm_sum_t *acc)
{
    const void *g;
    size_t n;

    g = opt->stage_ops->grads_owned(opt, b, &n);
    zsh_optim_sumsq(opt, g, n, acc);
}

/* From the shard in memory, staged into device memory when the shards are
 * away from the device. */
static zsh_status_t zsh_tier_mem_gather_src(zsh_optim_t *opt, zsh_obucket_t *b,
                                            zsh_shard_src_t *src)
{
    (void)b;
    src->staged = zsh_optim_dev_params_away(opt);
    return ZSH_OK;
}

static void zsh_tier_mem_gather_done(zsh_optim_t *opt, zsh_obucket_t *b)
{
    (void)opt;
    (void)b;
}

static zsh_status_t zsh_tier_mem_read_ahead(zsh_optim_t *opt, int depth)
{
    (void)opt;
    (void)depth;
    return ZSH_OK;
}

static zsh_status_t zsh_tier_mem_fetch_check(zsh_optim_t *opt, const char *fn)
{
    (void)opt;
    (void)fn;
    return ZSH_OK;
}

const zsh_tier_ops_t zsh_tier_mem_ops = {
    .name         = "memory",
    .place        = zsh_tier_mem_place,
    .alloc        = zsh_tier_mem_alloc,
    .peek         = zsh_tier_mem_peek,
    .patch        = zsh_tier_mem_patch,
    .put          = zsh_tier_mem_put,
    .grad_prepare = zsh_tier_mem_grad_prepare,
    .grad_sumsq   = zsh_tier_mem_grad_sumsq,
    .gather_src   = zsh_tier_mem_gather_src,
    .gather_done  = zsh_tier_mem_gather_done,
    .read_ahead   = zsh_tier_mem_read_ahead,
    .fetch_check  = zsh_tier_mem_fetch_check,
};

/* ---- the NVMe tier's files ---- */

/* Into the kind's file through a temporary buffer. */
static zsh_status_t zsh_tier_file_place(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind,
                                        size_t base, size_t region, void **mem_p)
{
    bool to_float = kind == ZSH_TK_MASTER;
    size_t es     = zsh_tier_esize(opt, kind);
    zsh_status_t status;
    void *dst;

    if (kind == ZSH_TK_PARAMS) {
        status = zsh_bucket_seal_counted(b->layout, &opt->acct, zsh_tier_acct(opt, kind),
                                         ZSH_MEM_KINDS, &b->fetch.pshard);
        if (status != ZSH_OK) {
            return status;
        }
    } else {
        *mem_p = NULL;
    }
    dst = opt->dev_ops->host_tmp(opt, region * es);
    if (dst == NULL) {
        zsh_error_prefix("zsh_optim_setup: ");
        return ZSH_ERR_NO_MEMORY;
    }
    status = zsh_optim_layout_copy_in(opt, b, base, base + region, base, dst, to_float);
    if (status == ZSH_OK) {
        status = opt->dev_ops->sync(opt); /* from the device: landed */
    }
    if (status == ZSH_OK) {
        status = zsh_tier_patch(opt, kind, b, base, base + region, dst);
    }
    opt->dev_ops->host_tmp_free(opt, dst);
    return status;
}

/* Nothing in memory: the step swaps the region through host buffers. */
static bool zsh_tier_file_alloc(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind,
                                size_t bytes, void **mem_p)
{
    (void)opt;
    (void)b;
    (void)kind;
    (void)bytes;
    (void)mem_p;
    return true;
}

/* Widened into a host buffer first; in the precision, through a host copy
 * where @src is device memory. */
static zsh_status_t zsh_tier_file_put(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b,
                                      size_t s, size_t e, const void *src, bool widen)
{
    zsh_status_t status;
    float *tmp;

    if (!widen) {
        return opt->dev_ops->file_patch(opt, kind, b, s, e, src);
    }
    tmp = opt->dev_ops->host_tmp(opt, (e - s) * sizeof(*tmp));
    if (tmp == NULL) {
        return ZSH_ERR_NO_MEMORY;
    }
    status = opt->dev_ops->to_float(opt, src, tmp, e - s);
    if (status == ZSH_OK) {
        status = opt->dev_ops->sync(opt); /* from the device: landed */
    }
    if (status == ZSH_OK) {
        status = zsh_tier_patch(opt, kind, b, s, e, tmp);
    }
    opt->dev_ops->host_tmp_free(opt, tmp);
    return status;
}

/* A host buffer for @b's reduced shard on its way to disk, within the
 * budget: when it is full, the reductions in flight and then the gradient
 * writes are waited for. */
static zsh_status_t zsh_optim_grad_transit(zsh_optim_t *opt, zsh_obucket_t *b)
{
    size_t bytes = zsh_pool_round(b->count * opt->esize), used = b->count * opt->esize;

    b->nvme.gtransit = zsh_pool_get(&opt->tiers.pool, bytes);
    if (b->nvme.gtransit == NULL) {
        zsh_optim_grad_room(opt);
        b->nvme.gtransit = zsh_pool_get(&opt->tiers.pool, bytes);
    }
    if (b->nvme.gtransit == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY,
                         "no room in host_mem_limit (%zu bytes, ZSH_HOST_MEM_LIMIT) for a "
                         "gradient shard of %zu bytes", opt->cfg.host_mem_limit, bytes);
    }
    memset((char *)b->nvme.gtransit + used, 0, bytes - used); /* the file gets no stale bytes */
    return ZSH_OK;
}

static void zsh_tier_file_grad_sumsq(const zsh_optim_t *opt, const zsh_obucket_t *b,
                                     zsh_norm_sum_t *acc)
{
    (void)opt;
    zsh_norm_sum_merge(acc, &b->nvme.gsumsq); /* taken as the shard left for disk */
}

/* NVMe parameters: a gather sends this rank's shard from a host buffer the
 * shard was read into, possibly well ahead of use (prefetch reads twice as
 * far ahead as it gathers). The buffer goes back once the gather is done. */
static size_t zsh_optim_bounce_bytes(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return zsh_pool_round(b->count * opt->esize);
}

static void zsh_optim_bounce_put(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_tier_wait(opt, &b->nvme.pread);
    zsh_pool_put(&opt->tiers.pool, b->nvme.pbounce, zsh_optim_bounce_bytes(opt, b));
    b->nvme.pbounce = NULL;
}

/* Start reading @b's shard (sharded or reading); ZSH_ERR_NO_MEMORY when
 * the budget has no room. */
static zsh_status_t zsh_optim_param_read_start(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_status_t status;

    if (b->fetch.state == ZSH_BSTATE_READING) {
        return ZSH_OK;
    }
    b->nvme.pbounce = zsh_pool_get(&opt->tiers.pool, zsh_optim_bounce_bytes(opt, b));
    if (b->nvme.pbounce == NULL) {
        return ZSH_ERR_NO_MEMORY;
    }
    status = zsh_tier_io(opt, ZSH_TK_PARAMS, false, b->nvme.foff, b->nvme.pbounce, b->count,
                         &b->nvme.pread);
    if (status != ZSH_OK) {
        zsh_optim_bounce_put(opt, b);
        return status;
    }
    return zsh_obucket_move(b, ZSH_BSTATE_READING);
}

void zsh_optim_param_reads_drop(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        if (opt->buckets[i].fetch.state == ZSH_BSTATE_READING) {
            zsh_optim_bounce_put(opt, &opt->buckets[i]);
            /* Reading may always go back: the move cannot be refused. */
            zsh_obucket_move(&opt->buckets[i], ZSH_BSTATE_SHARDED);
        }
    }
}

/* Have @b's shard in its host buffer: read it now if it was not read ahead
 * (waiting for the gradient writes to leave room when the budget is full).
 * A shard that cannot be read aborts the communicator, so the other ranks'
 * gathers fail, naming this rank, instead of waiting for it. */
static zsh_status_t zsh_optim_param_read_wait(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_status_t status = zsh_optim_param_read_start(opt, b);

    if (status == ZSH_ERR_NO_MEMORY) {
        zsh_optim_grad_room(opt);
        zsh_optim_param_reads_drop(opt);
        status = zsh_optim_param_read_start(opt, b);
        if (status == ZSH_ERR_NO_MEMORY) {
            status = zsh_error(ZSH_ERR_NO_MEMORY,
                               "no room in host_mem_limit (%zu bytes, ZSH_HOST_MEM_LIMIT) to read "
                               "a parameter shard of %zu bytes", opt->cfg.host_mem_limit,
                               zsh_optim_bounce_bytes(opt, b));
        }
    }
    if (status == ZSH_OK) {
        status = zsh_tier_wait(opt, &b->nvme.pread);
    }
    if (status != ZSH_OK) {
        if (b->fetch.state == ZSH_BSTATE_READING) {
            zsh_optim_bounce_put(opt, b);
            zsh_obucket_move(b, ZSH_BSTATE_SHARDED); /* allowed: the failure is the one told */
        }
        zsh_comm_abort(opt->comm);
        return zsh_sticky_failed(&opt->tiers.failed)
                   ? zsh_tier_check(opt, "reading a parameter shard")
                   : status;
    }
    return ZSH_OK;
}

/* From the shard read into its host buffer (now, if it was not read
 * ahead), staged into the gathered buffer where that is device memory. */
static zsh_status_t zsh_tier_file_gather_src(zsh_optim_t *opt, zsh_obucket_t *b,
                                             zsh_shard_src_t *src)
{
    zsh_status_t status = zsh_optim_param_read_wait(opt, b);

    src->buf    = b->nvme.pbounce;
    src->staged = opt->dev_ops->device;
    return status;
}

static void zsh_tier_file_gather_done(zsh_optim_t *opt, zsh_obucket_t *b)
{
    if (b->nvme.pbounce != NULL) {
        zsh_optim_bounce_put(opt, b);
    }
}

/* Reads are local: issued twice as far ahead as the gathers, while the
 * budget has room, so the disk is busy before the gathers need them. */
static zsh_status_t zsh_tier_file_read_ahead(zsh_optim_t *opt, int depth)
{
    zsh_status_t status;
    size_t i, c;

    for (i = 0; ((int)i < 2 * depth) && zsh_prefetch_ahead(&opt->prefetch, i, &c); i++) {
        if (zsh_bstate_gathered(opt->buckets[c].fetch.state)) {
            continue;
        }
        status = zsh_optim_param_read_start(opt, &opt->buckets[c]);
        if (status == ZSH_ERR_INTERNAL) {
            return status;
        }
        if (status != ZSH_OK) {
            break; /* no room, or the tier failed: the fetch will see */
        }
    }
    return ZSH_OK;
}

/* A failed step may have rewritten some of the file's sub-groups and not
 * others: no mix of the two is handed out. Only once every rank knows (a
 * gradient write can fail on one rank before the step's agreement), so no
 * rank leaves the others in the gather. */
static zsh_status_t zsh_tier_file_fetch_check(zsh_optim_t *opt, const char *fn)
{
    return opt->tiers.agreed ? zsh_tier_check(opt, fn) : ZSH_OK;
}

const zsh_tier_ops_t zsh_tier_file_ops = {
    .name         = "NVMe file",
    .place        = zsh_tier_file_place,
    .alloc        = zsh_tier_file_alloc,
    .peek         = zsh_tier_peek,
    .patch        = zsh_tier_patch,
    .put          = zsh_tier_file_put,
    .grad_prepare = zsh_optim_grad_transit,
    .grad_sumsq   = zsh_tier_file_grad_sumsq,
    .gather_src   = zsh_tier_file_gather_src,
    .gather_done  = zsh_tier_file_gather_done,
    .read_ahead   = zsh_tier_file_read_ahead,
    .fetch_check  = zsh_tier_file_fetch_check,
};

void zsh_tier_ops_reset(zsh_optim_t *opt)
{
    int k;

    for (k = 0; k < ZSH_TK_KINDS; k++) {
        opt->tiers.ops[k] = &zsh_tier_mem_ops;
    }
}
