/*
 * The layout: parameters coalesced into flat buckets, and what each stage
 * allocates per bucket. Every allocation goes through the byte account,
 * so the reported bytes are the held bytes:
 *
 *            params         grads             states (+ fp32 master if mixed)
 *   stage 0  framework, Ψ   full, T           full, T
 *   stage 1  framework, Ψ   full, N * count   shard, count
 *   stage 2  framework, Ψ   shard, count      shard, count
 *   stage 3  shard, count   shard, count      shard, count
 *
 * The gradients and parameters are the stage's to place (its table,
 * stage.h); the states and master weights are the same at every stage.
 */
#include "optim/optim_impl.h"

#include "core/dtype.h"
#include "core/status.h"
#include "mem/checked.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Append every parameter, in order, to buckets of at most @capacity elements. */
static zsh_status_t zsh_optim_layout_buckets(zsh_optim_t *opt, size_t capacity)
{
    zsh_obucket_t *b = NULL;
    zsh_param_t *p;
    zsh_status_t status;
    size_t i;

    opt->buckets = calloc(opt->nparams, sizeof(*opt->buckets));
    if ((opt->buckets == NULL) && (opt->nparams > 0)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_setup: out of memory");
    }
    for (i = 0; i < opt->nparams; i++) {
        p = opt->params[i];
        if ((b == NULL) || (b->numel + p->numel > capacity)) {
            b = &opt->buckets[opt->nbuckets++];
            b->params = calloc(opt->nparams - i, sizeof(*b->params));
            if (b->params == NULL) {
                return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_setup: out of memory");
            }
            status = zsh_bucket_create(opt->comm, opt->cfg.precision, capacity, &b->layout);
            if (status != ZSH_OK) {
                return status;
            }
        }
        status = zsh_bucket_add(b->layout, p->numel, &p->offset);
        if (status != ZSH_OK) {
            return status;
        }
        p->bucket               = opt->nbuckets - 1;
        b->params[b->nparams++] = p;
        b->numel               += p->numel;
    }
    return ZSH_OK;
}

/* Copy (and widen, if @to_float) the parameters' initial values over the
 * flat range [lo, hi) into @dst, indexed from @base, wherever they live. */
zsh_status_t zsh_optim_layout_copy_in(zsh_optim_t *opt, const zsh_obucket_t *b, size_t lo,
                                      size_t hi, size_t base, void *dst, bool to_float)
{
    zsh_status_t status = ZSH_OK;
    const zsh_param_t *p;
    const char *src;
    size_t i, s, e;

    for (i = 0; (status == ZSH_OK) && (i < b->nparams); i++) {
        p = b->params[i];
        if (!zsh_param_overlap(p, lo, hi, &s, &e)) {
            continue;
        }
        src = (const char *)p->buf + (s - p->offset) * opt->esize;
        if (to_float) {
            status = opt->dev_ops->to_float(opt, src, (float *)dst + (s - base), e - s);
        } else {
            status = opt->dev_ops->copy(opt, (char *)dst + (s - base) * opt->esize, src,
                                        (e - s) * opt->esize);
        }
    }
    return status;
}

/* Registration bounds the elements (zsh_optim_elem_bytes()); padding to
 * N equal shards adds up to N - 1 more, so check the padded copy too. */
static zsh_status_t zsh_optim_layout_check(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    size_t count = zsh_shard_part_count(b->numel, opt->size), bytes;

    if (!zsh_size_mul3(count, (size_t)opt->size, zsh_optim_elem_bytes(opt), &bytes)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_setup: the bucket from parameter '%s' (%zu elements, "
                         "padded to %zu x %d ranks) is more than %zu bytes",
                         b->params[0]->name, b->numel, count, opt->size, SIZE_MAX);
    }
    return ZSH_OK;
}

/* In the kind's tier (its table's place). */
zsh_status_t zsh_optim_layout_place(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind,
                                    size_t base, size_t region, void **mem_p)
{
    return opt->tiers.ops[kind]->place(opt, b, kind, base, region, mem_p);
}

static zsh_status_t zsh_optim_layout_bucket(zsh_optim_t *opt, zsh_obucket_t *b)
{
    size_t region, base;
    zsh_status_t status;

    region = zsh_obucket_region(opt, b);
    base   = zsh_obucket_base(opt, b);
    if (!opt->stage_ops->grads_alloc(opt, b)) {
        goto err_nomem;
    }
    if ((opt->nstates >= 1) &&
        !opt->tiers.ops[ZSH_TK_EXP_AVG]->alloc(opt, b, ZSH_TK_EXP_AVG, region * sizeof(float),
                                               (void **)&b->m)) {
        goto err_nomem;
    }
    if ((opt->nstates >= 2) &&
        !opt->tiers.ops[ZSH_TK_EXP_AVG_SQ]->alloc(opt, b, ZSH_TK_EXP_AVG_SQ,
                                                  region * sizeof(float), (void **)&b->v)) {
        goto err_nomem;
    }
    if (opt->has_master) {
        status = zsh_optim_layout_place(opt, b, ZSH_TK_MASTER, base, region, (void **)&b->master);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return opt->stage_ops->params_place(opt, b);

err_nomem:
    return zsh_error(ZSH_ERR_NO_MEMORY,
                     "zsh_optim_setup: no memory for the bucket from parameter '%s' "
                     "(%zu elements of %s)", b->params[0]->name, b->numel,
                     zsh_dtype_name(opt->cfg.precision));
}

zsh_status_t zsh_optim_layout_build(zsh_optim_t *opt)
{
    size_t capacity = opt->cfg.bucket_size / opt->esize, i;
    zsh_obucket_t *b;
    zsh_status_t status;

    status = opt->dev_ops->setup(opt); /* the buckets' communicator and memory */
    zsh_optim_bufs_init(opt);
    if (status == ZSH_OK) {
        status = zsh_optim_layout_buckets(opt, (capacity == 0) ? 1 : capacity);
    }
    for (i = 0; (status == ZSH_OK) && (i < opt->nbuckets); i++) {
        b      = &opt->buckets[i];
        status = zsh_optim_layout_check(opt, b);
        b->count   = zsh_shard_part_count(b->numel, opt->size);
        b->pending = b->nparams;
        zsh_shard_part_range(b->numel, opt->size, opt->rank, &b->lo, &b->hi);
    }
    if (status == ZSH_OK) {
        status = zsh_tier_setup(opt);
    }
    for (i = 0; (status == ZSH_OK) && (i < opt->nbuckets); i++) {
        status = zsh_optim_layout_bucket(opt, &opt->buckets[i]);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_hpz_setup(opt);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_qwz_setup(opt);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_qgz_setup(opt);
    }
    if (status == ZSH_OK) {
        status = opt->dev_ops->setup_buckets(opt);
    }
    if (status != ZSH_OK) {
        zsh_optim_layout_free(opt);
        return status;
    }
    zsh_optim_bufs_attach(opt);
    opt->ready = true;
    return ZSH_OK;
}

void zsh_optim_layout_free(zsh_optim_t *opt)
{
    zsh_comm_t *comm;
    zsh_obucket_t *b;
    size_t i, region;

    zsh_optim_grads_wait(opt);
    zsh_optim_grad_writes_wait(opt);
    for (i = 0; i < opt->nbuckets; i++) {
        /* Destroyed with parameters still fetched: their buckets go as
         * cached ones do. */
        if (opt->buckets[i].fetch.refs > 0) {
            opt->buckets[i].fetch.refs = 0;
            zsh_obucket_move(&opt->buckets[i], ZSH_BSTATE_CACHED);
        }
    }
    zsh_optim_param_reads_drop(opt);
    zsh_optim_drop_gathers(opt);
    zsh_optim_hpz_free(opt);
    zsh_optim_qgz_free(opt);
    zsh_optim_qwz_free(opt);
    for (i = 0; i < opt->nbuckets; i++) {
        b      = &opt->buckets[i];
        region = zsh_obucket_region(opt, b);
        /* The buffers every step's reductions use: after a failed one its
         * transfers may still write them. */
        comm = zsh_sticky_failed(&opt->comm_failed) ? opt->comm : NULL;
        opt->stage_ops->grads_free(opt, b, comm);
        zsh_account_free(zsh_tier_acct(opt, ZSH_TK_EXP_AVG), ZSH_MEM_STATES, b->m,
                         region * sizeof(float));
        zsh_account_free(zsh_tier_acct(opt, ZSH_TK_EXP_AVG_SQ), ZSH_MEM_STATES, b->v,
                         region * sizeof(float));
        zsh_account_free(zsh_tier_acct(opt, ZSH_TK_MASTER), ZSH_MEM_STATES, b->master,
                         region * sizeof(float));
        zsh_bucket_destroy(b->layout); /* and the stage 3 shard it sealed */
        free(b->params);
    }
    opt->dev_ops->teardown(opt); /* before the tiers: its pinned buffers are theirs */
    zsh_tier_teardown(opt);
    zsh_optim_bufs_fini(opt); /* after the buckets, whose buffers came back to them */
    free(opt->buckets);
    opt->buckets  = NULL;
    opt->nbuckets = 0;
    opt->ready    = false;
}
