/*
 * The offload tiers: where each kind of model state lives, the NVMe tier's
 * files and sub-groups, and what the stats report about them.
 *
 *   kind        none      cpu        nvme             follows
 *   params      compute   host       file "params"    offload_params (stage 3)
 *   grads       compute   host       file "grads"     offload_optimizer (stages 2-3)
 *   master, m, v compute  host       files            offload_optimizer
 *   undo        -         -          file "undo"      offload_optimizer nvme, while
 *                                                     the parameters are in memory
 *
 * Below stage 2 the gradients are the full buffers the stage reduces in
 * place, and stay in compute memory; below stage 3 the parameters are the
 * framework's.
 */
#include "optim/optim_impl.h"

#include "core/log.h"
#include "core/status.h"
#include "optim/config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const zsh_tier_file_names[ZSH_TK_KINDS] = {
    "params", "grads", "master", "exp_avg", "exp_avg_sq", "undo"};

size_t zsh_tier_esize(const zsh_optim_t *opt, zsh_tkind_t kind)
{
    return ((kind <= ZSH_TK_GRADS) || (kind == ZSH_TK_UNDO)) ? opt->esize : sizeof(float);
}

/* The tier a kind is configured to, or -1 when this optimizer has no such
 * kind of state apart from the framework's own buffers. */
static int zsh_tier_of(const zsh_optim_t *opt, zsh_tkind_t kind)
{
    switch (kind) {
    case ZSH_TK_PARAMS:
        return opt->stage_ops->shards_params ? (int)opt->cfg.offload_params : -1;
    case ZSH_TK_GRADS:
        return opt->stage_ops->shards_grads ? (int)opt->cfg.offload_optimizer : -1;
    case ZSH_TK_MASTER:
        return opt->has_master ? (int)opt->cfg.offload_optimizer : -1;
    case ZSH_TK_EXP_AVG:
        return (opt->nstates >= 1) ? (int)opt->cfg.offload_optimizer : -1;
    case ZSH_TK_EXP_AVG_SQ:
        return (opt->nstates >= 2) ? (int)opt->cfg.offload_optimizer : -1;
    default:
        /* A step swapping states changes the host's parameters in memory
         * sub-group by sub-group. Parameters in the file are only written
         * back, and the device's are sent up by offload_device.c. */
        return ((opt->cfg.offload_optimizer == ZSH_OFFLOAD_NVME) && !opt->dev_ops->device &&
                (zsh_tier_of(opt, ZSH_TK_PARAMS) != ZSH_OFFLOAD_NVME))
                   ? ZSH_OFFLOAD_NVME
                   : -1;
    }
}

zsh_account_t *zsh_tier_acct(zsh_optim_t *opt, zsh_tkind_t kind)
{
    return (zsh_tier_of(opt, kind) == ZSH_OFFLOAD_CPU) ? &opt->tiers.host : &opt->acct;
}

/* Bytes of @kind in the files: the regions, without their alignment. */
static size_t zsh_tier_file_bytes(const zsh_optim_t *opt, zsh_tkind_t kind)
{
    size_t bytes = 0, i;

    if (opt->tiers.file[kind] == NULL) {
        return 0;
    }
    for (i = 0; i < opt->nbuckets; i++) {
        bytes += zsh_obucket_region(opt, &opt->buckets[i]) * zsh_tier_esize(opt, kind);
    }
    return bytes;
}

static size_t zsh_tier_round(size_t elems)
{
    return (elems + ZSH_TIER_ALIGN_ELEMS - 1) / ZSH_TIER_ALIGN_ELEMS * ZSH_TIER_ALIGN_ELEMS;
}

/* Sub-groups and how many fit in the budget at once; refuse a budget
 * smaller than one of them, or than the largest buffer a bucket needs. */
static zsh_status_t zsh_tier_plan(zsh_optim_t *opt)
{
    zsh_tiers_t *t = &opt->tiers;
    size_t per = 0, sg_bytes, shard_bytes = 0, i;
    int k;

    for (k = 0; k < ZSH_TK_KINDS; k++) {
        if (t->file[k] != NULL) {
            per += zsh_tier_esize(opt, (zsh_tkind_t)k);
        }
    }
    t->sg_elems = opt->cfg.sub_group_size / ZSH_TIER_ALIGN_ELEMS * ZSH_TIER_ALIGN_ELEMS;
    if (t->sg_elems < ZSH_TIER_ALIGN_ELEMS) {
        t->sg_elems = ZSH_TIER_ALIGN_ELEMS;
    }
    if (t->sg_elems > t->felems) {
        t->sg_elems = t->felems;
    }
    sg_bytes = t->sg_elems * per;
    for (i = 0; i < opt->nbuckets; i++) {
        size_t b = zsh_pool_round(opt->buckets[i].count * opt->esize);

        shard_bytes = (b > shard_bytes) ? b : shard_bytes;
    }
    if ((sg_bytes > opt->cfg.host_mem_limit) || (shard_bytes > opt->cfg.host_mem_limit)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_setup: host_mem_limit (ZSH_HOST_MEM_LIMIT) is %zu bytes, and "
                         "the NVMe tier needs at least %zu: one sub-group of %zu elements "
                         "(sub_group_size, ZSH_SUB_GROUP_SIZE) x %zu bytes of swapped state per "
                         "element is %zu bytes, and a bucket's shard is %zu bytes",
                         opt->cfg.host_mem_limit,
                         (sg_bytes > shard_bytes) ? sg_bytes : shard_bytes, t->sg_elems, per,
                         sg_bytes, shard_bytes);
    }
    t->nsg   = (t->felems + t->sg_elems - 1) / t->sg_elems;
    t->slots = (sg_bytes == 0) ? 1 : opt->cfg.host_mem_limit / sg_bytes;
    if (t->slots > ZSH_TIER_SLOTS_MAX) {
        t->slots = ZSH_TIER_SLOTS_MAX;
    }
    t->fresh = malloc(t->nsg * sizeof(*t->fresh));
    if (t->fresh == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_setup: out of memory");
    }
    for (i = 0; i < t->nsg; i++) {
        t->fresh[i] = true;
    }
    return ZSH_OK;
}

zsh_status_t zsh_tier_setup(zsh_optim_t *opt)
{
    zsh_tiers_t *t = &opt->tiers;
    zsh_aio_params_t params;
    zsh_status_t status;
    bool any = false;
    size_t i;
    int k;

    zsh_tier_ops_reset(opt);
    zsh_pool_init(&t->pool, opt->cfg.host_mem_limit);
    t->pool.pinned = opt->dev_ops->device; /* gradient shards come down into it from the device */
    for (i = 0; i < opt->nbuckets; i++) {
        opt->buckets[i].nvme.foff = t->felems;
        t->felems += zsh_tier_round(zsh_obucket_region(opt, &opt->buckets[i]));
    }
    for (k = 0; k < ZSH_TK_KINDS; k++) {
        /* The undo copy alone swaps nothing: no tier for it (SGD without
         * momentum below stage 2, say). */
        any |= (k != ZSH_TK_UNDO) && (zsh_tier_of(opt, (zsh_tkind_t)k) == ZSH_OFFLOAD_NVME);
    }
    if (!any) {
        return ZSH_OK;
    }
    memset(&params, 0, sizeof(params));
    params.dir    = opt->nvme_dir;
    params.job_id = opt->job_id;
    params.rank   = opt->rank;
    params.kind   = ZSH_AIO_AUTO;
    status        = zsh_aio_create(&params, &t->aio);
    for (k = 0; (status == ZSH_OK) && (k < ZSH_TK_KINDS); k++) {
        if (zsh_tier_of(opt, (zsh_tkind_t)k) != ZSH_OFFLOAD_NVME) {
            continue;
        }
        status = zsh_aio_open(t->aio, zsh_tier_file_names[k], &t->file[k]);
        if (status == ZSH_OK) {
            t->ops[k] = &zsh_tier_file_ops;
            status = zsh_aio_reserve(t->file[k],
                                     (uint64_t)t->felems * zsh_tier_esize(opt, (zsh_tkind_t)k));
        }
    }
    if (status == ZSH_OK) {
        status = zsh_tier_plan(opt);
    }
    if (status != ZSH_OK) {
        zsh_error_prefix("zsh_optim_setup: the NVMe tier: ");
        return status;
    }
    zsh_log(ZSH_LOG_INFO,
            "optimizer: NVMe tier in %s (%s), %zu sub-groups of %zu elements, %zu in host buffers "
            "at once", zsh_aio_dir(t->aio), zsh_aio_backend(t->aio), t->nsg, t->sg_elems, t->slots);
    return ZSH_OK;
}

void zsh_tier_teardown(zsh_optim_t *opt)
{
    zsh_tiers_t *t = &opt->tiers;

    zsh_aio_destroy(t->aio); /* closes and removes the files */
    memset(t->file, 0, sizeof(t->file));
    zsh_tier_ops_reset(opt);
    t->aio    = NULL;
    t->felems = 0;
    free(t->fresh);
    t->fresh = NULL;
    zsh_pool_fini(&t->pool);
}

void zsh_tier_fail(zsh_optim_t *opt, zsh_status_t status)
{
    zsh_sticky_set(&opt->tiers.failed, status);
}

zsh_status_t zsh_tier_io(zsh_optim_t *opt, zsh_tkind_t kind, bool write, size_t felem, void *buf,
                         size_t nelem, zsh_aio_req_t **req_p)
{
    size_t es      = zsh_tier_esize(opt, kind);
    uint64_t off   = (uint64_t)felem * es;
    size_t len     = zsh_pool_round(nelem * es);
    zsh_status_t status;

    status = write ? zsh_aio_write(opt->tiers.aio, opt->tiers.file[kind], off, buf, len, req_p)
                   : zsh_aio_read(opt->tiers.aio, opt->tiers.file[kind], off, buf, len, req_p);
    if (status != ZSH_OK) {
        *req_p = NULL;
        zsh_tier_fail(opt, status);
    }
    return status;
}

zsh_status_t zsh_tier_wait(zsh_optim_t *opt, zsh_aio_req_t **req_p)
{
    zsh_status_t status;

    if (*req_p == NULL) {
        return ZSH_OK;
    }
    status = zsh_aio_wait(*req_p);
    if (status != ZSH_OK) {
        zsh_tier_fail(opt, status);
    }
    zsh_aio_req_free(*req_p);
    *req_p = NULL;
    return status;
}

zsh_status_t zsh_tier_check(zsh_optim_t *opt, const char *fn)
{
    if (!zsh_sticky_failed(&opt->tiers.failed)) {
        return ZSH_OK;
    }
    if (fn == NULL) {
        return opt->tiers.failed.status;
    }
    return zsh_error(opt->tiers.failed.status,
                     "%s: the NVMe tier failed, and the state in its files may be partly "
                     "updated: %s", fn, opt->tiers.failed.msg);
}

zsh_status_t zsh_tier_agree(zsh_optim_t *opt, const char *fn)
{
    int32_t mine, any = 0;
    zsh_status_t status;

    if (opt->tiers.aio == NULL) {
        return ZSH_OK;
    }
    mine   = zsh_sticky_failed(&opt->tiers.failed) ? opt->rank + 1 : 0;
    status = zsh_optim_comm_status(opt,
                                   zsh_allreduce(&mine, &any, 1, ZSH_INT32, ZSH_MAX, opt->comm));
    if (status != ZSH_OK) {
        return status;
    }
    if (any == 0) {
        return ZSH_OK;
    }
    opt->tiers.agreed = true;
    if (mine == 0) {
        zsh_error(ZSH_ERR_IO, "rank %d's NVMe tier failed; every rank stops with it", any - 1);
        zsh_tier_fail(opt, ZSH_ERR_IO);
    }
    return zsh_tier_check(opt, fn);
}

/* The aligned span of @kind's file around bucket @b's flat elements
 * [s, e): elements [*lo_p, *lo_p + *n_p), of which [s, e) starts at
 * *first_p; and a pool buffer for it. */
static zsh_status_t zsh_tier_span(zsh_optim_t *opt, zsh_tkind_t kind, const zsh_obucket_t *b,
                                  size_t s, size_t e, size_t *first_p, size_t *lo_p,
                                  size_t *n_p, char **buf_p)
{
    size_t es    = zsh_tier_esize(opt, kind);
    size_t base  = zsh_obucket_base(opt, b);
    size_t first = b->nvme.foff + (s - base), last = b->nvme.foff + (e - base);
    size_t lo    = first / ZSH_TIER_ALIGN_ELEMS * ZSH_TIER_ALIGN_ELEMS;
    size_t n     = zsh_tier_round(last) - lo;

    *buf_p = zsh_pool_get(&opt->tiers.pool, zsh_pool_round(n * es));
    if (*buf_p == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY,
                         "no room in host_mem_limit (%zu bytes) for %zu bytes of '%s'",
                         opt->cfg.host_mem_limit, zsh_pool_round(n * es),
                         zsh_aio_file_path(opt->tiers.file[kind]));
    }
    *first_p = first;
    *lo_p    = lo;
    *n_p     = n;
    return ZSH_OK;
}

static bool zsh_tier_is_state(zsh_tkind_t kind)
{
    return (kind == ZSH_TK_EXP_AVG) || (kind == ZSH_TK_EXP_AVG_SQ);
}

zsh_status_t zsh_tier_patch(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                            size_t e, const void *src)
{
    size_t es = zsh_tier_esize(opt, kind), sgn = opt->tiers.sg_elems, first, lo, n, sg;
    zsh_aio_req_t *req = NULL;
    zsh_status_t status;
    char *buf;

    status = zsh_tier_span(opt, kind, b, s, e, &first, &lo, &n, &buf);
    if (status != ZSH_OK) {
        return status;
    }
    if ((lo != first) || (n != first - lo + (e - s))) {
        status = zsh_tier_io(opt, kind, false, lo, buf, n, &req);
        if (status == ZSH_OK) {
            status = zsh_tier_wait(opt, &req);
        }
    }
    if (status == ZSH_OK) {
        memcpy(buf + (first - lo) * es, src, (e - s) * es);
        status = zsh_tier_io(opt, kind, true, lo, buf, n, &req);
    }
    if (status == ZSH_OK) {
        status = zsh_tier_wait(opt, &req);
    }
    /* A fresh sub-group's file reads as zeros (its blocks were reserved,
     * never written), so once written in part it is read like any other. */
    for (sg = first / sgn; (status == ZSH_OK) && zsh_tier_is_state(kind) &&
                           (sg * sgn < first + (e - s));
         sg++) {
        opt->tiers.fresh[sg] = false;
    }
    zsh_pool_put(&opt->tiers.pool, buf, zsh_pool_round(n * es));
    return status;
}

zsh_status_t zsh_tier_peek(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                           size_t e, void *dst)
{
    size_t es = zsh_tier_esize(opt, kind), sgn = opt->tiers.sg_elems, first, lo, n = 0, sg;
    size_t a, z;
    zsh_aio_req_t *req = NULL;
    zsh_status_t status;
    char *buf;

    status = zsh_tier_span(opt, kind, b, s, e, &first, &lo, &n, &buf);
    if (status == ZSH_OK) {
        status = zsh_tier_io(opt, kind, false, lo, buf, n, &req);
    }
    if (status == ZSH_OK) {
        status = zsh_tier_wait(opt, &req);
    }
    if (status == ZSH_OK) {
        memcpy(dst, buf + (first - lo) * es, (e - s) * es);
        /* States a step has not written yet are zeros, whatever the file holds. */
        for (sg = first / sgn; zsh_tier_is_state(kind) && (sg * sgn < first + (e - s)); sg++) {
            if (opt->tiers.fresh[sg]) {
                a = (sg * sgn > first) ? sg * sgn : first;
                z = ((sg + 1) * sgn < first + (e - s)) ? (sg + 1) * sgn : first + (e - s);
                memset((char *)dst + (a - first) * es, 0, (z - a) * es);
            }
        }
    }
    if (buf != NULL) {
        zsh_pool_put(&opt->tiers.pool, buf, zsh_pool_round(n * es));
    }
    return status;
}

void zsh_optim_tier_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    const zsh_tiers_t *t = &opt->tiers;
    size_t host[ZSH_MEM_KINDS], nvme[ZSH_TK_KINDS];
    zsh_aio_stats_t io;
    int k;

    for (k = 0; k < ZSH_TK_KINDS; k++) {
        nvme[k] = zsh_tier_file_bytes(opt, (zsh_tkind_t)k);
    }
    for (k = 0; k < ZSH_MEM_KINDS; k++) {
        host[k] = t->host.cur[k];
    }
    stats->compute_bytes = stats->param_bytes + stats->grad_bytes + stats->state_bytes;
    stats->host_bytes    = host[ZSH_MEM_PARAMS] + host[ZSH_MEM_GRADS] + host[ZSH_MEM_STATES];
    stats->nvme_bytes    = nvme[ZSH_TK_PARAMS] + nvme[ZSH_TK_GRADS] + nvme[ZSH_TK_MASTER] +
                        nvme[ZSH_TK_EXP_AVG] + nvme[ZSH_TK_EXP_AVG_SQ];
    /* The kinds' totals count every tier, so the ZeRO formulas hold whatever the tier. */
    stats->param_bytes += host[ZSH_MEM_PARAMS] + nvme[ZSH_TK_PARAMS];
    stats->grad_bytes  += host[ZSH_MEM_GRADS] + nvme[ZSH_TK_GRADS];
    stats->state_bytes += host[ZSH_MEM_STATES] + nvme[ZSH_TK_MASTER] + nvme[ZSH_TK_EXP_AVG] +
                          nvme[ZSH_TK_EXP_AVG_SQ];
    stats->host_buffer_bytes      = t->pool.held;
    stats->host_buffer_peak_bytes = t->pool.peak;
    stats->io_engine              = (t->aio != NULL) ? zsh_aio_backend(t->aio) : NULL;
    if (t->aio != NULL) {
        zsh_aio_get_stats(t->aio, &io);
        stats->io_read_bytes  = io.read_bytes;
        stats->io_write_bytes = io.write_bytes;
        stats->io_wait_s      = io.wait_s;
        stats->io_busy_s      = io.busy_s;
        stats->io_overlap_s   = (io.busy_s > io.wait_s) ? io.busy_s - io.wait_s : 0.0;
    }
}
