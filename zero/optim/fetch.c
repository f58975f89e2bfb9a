/*
 * Fetch and release. At stage 3 a fetch gathers the parameter's whole
 * bucket into a buffer that stays live while any of its parameters is
 * fetched, and after that as a cache, until the live bytes exceed
 * max_live_bytes: then the least recently used unreferenced bucket goes.
 * After each fetch, the next buckets of the recorded order are gathered
 * ahead of use (nonblocking) while they fit in the budget. A step drops
 * every gathered bucket, since the update makes them stale. Which of these
 * a bucket is in is its state (bstate.h), and every decision here reads it.
 *
 * Every rank fetches in the same order, so every rank makes the same
 * eviction and prefetch decisions and the collectives match.
 *
 * A read (zsh_optim_get_param(), through zsh_optim_fetch_exact()) gathers
 * as a fetch does, but in full precision always under qwZ, without taking
 * part in the recorded order or prefetching: it reads values out, it is
 * not a step's use. A copy it leaves cached is dropped by the step's first
 * fetch of that bucket where that fetch would have been int8 (qwz.c), so a
 * read changes no step's values.
 *
 * The public calls check their arguments and ask the stage's table; stage
 * 3's points to zsh_optim_fetch_gathered(), zsh_optim_fetch_exact() and
 * zsh_optim_release_gathered() (below it a fetch hands the framework's
 * buffer back, stage/replicas.c).
 */
#include "optim/optim_impl.h"

#include "core/log.h"
#include "core/status.h"

static bool zsh_optim_in(const size_t *list, size_t n, size_t x)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (list[i] == x) {
            return true;
        }
    }
    return false;
}

static zsh_status_t zsh_optim_evict(zsh_optim_t *opt, zsh_obucket_t *b)
{
    opt->live_bytes -= zsh_shard_gathered_bytes(b->fetch.pshard);
    zsh_shard_release(b->fetch.pshard);
    return zsh_obucket_move(b, ZSH_BSTATE_SHARDED);
}

/* Post the gather of @b (sharded or reading), from where its data is:
 * hpZ's slice once gathered since the last update (the node group has it),
 * the shard read from the NVMe file, or the shard in memory, staged into
 * device memory when the shards are away from the device; a bucket's first
 * gather since the last update quantized under qwZ (qwz.c), unless
 * @exact: then never int8, nor hpZ's slice of an int8 gather. @b's state
 * is the caller's to move. */
static zsh_status_t zsh_optim_gather_start(zsh_optim_t *opt, zsh_obucket_t *b, bool exact)
{
    zsh_shard_src_t src = {0};
    zsh_status_t status = ZSH_OK;

    if (b->hpz.sec_valid && !(exact && zsh_optim_qwz_rounded_sec(opt, b))) {
        src.buf  = b->hpz.sec;
        src.comm = opt->hpzcomm;
    } else {
        status = opt->tiers.ops[ZSH_TK_PARAMS]->gather_src(opt, b, &src);
        if (!exact) {
            zsh_optim_qwz_src(opt, b, &src);
        }
    }
    if (status == ZSH_OK) {
        /* A staged copy that fails leaves the all-gather unposted: the
         * others are stopped rather than left waiting in it. */
        status = zsh_shard_gather_start_src(b->fetch.pshard, &src);
        status = src.staged ? opt->dev_ops->failed(opt, status)
                            : zsh_optim_comm_status(opt, status);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (b->hpz.sec_valid) {
        opt->node_bytes += zsh_shard_gathered_bytes(b->fetch.pshard);
        opt->stats.hpz_gathers++;
    }
    b->qwz.live = (src.quant_block != 0);
    if (src.quant_block != 0) {
        b->qwz.sent = true;
        opt->quant_bytes += zsh_shard_sent_bytes(b->fetch.pshard);
        opt->stats.qwz_gathers++;
    }
    opt->live_bytes += zsh_shard_gathered_bytes(b->fetch.pshard);
    opt->comm_bytes += zsh_shard_sent_bytes(b->fetch.pshard);
    if (opt->live_bytes > opt->stats.gathered_peak_bytes) {
        opt->stats.gathered_peak_bytes = opt->live_bytes;
    }
    return ZSH_OK;
}

/* Evict cached buckets, least recently used first, until @bytes more fit in
 * the budget; buckets in @keep, fetched or prefetched stay. ZSH_OK if they
 * fit, ZSH_ERR_NO_MEMORY if not (nothing else could go), or the error of a
 * refused move. */
static zsh_status_t zsh_optim_make_room(zsh_optim_t *opt, size_t bytes, const size_t *keep,
                                        size_t nkeep)
{
    zsh_obucket_t *b, *lru;
    zsh_status_t status;
    size_t i;

    while (opt->live_bytes + bytes > opt->cfg.max_live_bytes) {
        lru = NULL;
        for (i = 0; i < opt->nbuckets; i++) {
            b = &opt->buckets[i];
            if ((b->fetch.state == ZSH_BSTATE_CACHED) && !zsh_optim_in(keep, nkeep, i) &&
                ((lru == NULL) || (b->fetch.last_use < lru->fetch.last_use))) {
                lru = b;
            }
        }
        if (lru == NULL) {
            return ZSH_ERR_NO_MEMORY;
        }
        status = zsh_optim_evict(opt, lru);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

/* Gather the next buckets of the recorded order that fit in the budget. */
#define ZSH_PREFETCH_MAX 16

static zsh_status_t zsh_optim_prefetch_ahead(zsh_optim_t *opt)
{
    size_t window[ZSH_PREFETCH_MAX], n = 0, i, c;
    zsh_obucket_t *b;
    int depth = (opt->cfg.prefetch < ZSH_PREFETCH_MAX) ? opt->cfg.prefetch : ZSH_PREFETCH_MAX;
    zsh_status_t status;

    for (i = 0; ((int)i < depth) && zsh_prefetch_ahead(&opt->prefetch, i, &c); i++) {
        window[n++] = c;
    }
    status = opt->tiers.ops[ZSH_TK_PARAMS]->read_ahead(opt, depth); /* the NVMe tier's reads */
    if (status != ZSH_OK) {
        return status;
    }
    for (i = 0; i < n; i++) {
        b = &opt->buckets[window[i]];
        if (zsh_bstate_gathered(b->fetch.state)) {
            continue;
        }
        status = zsh_optim_make_room(opt, zsh_obucket_full_bytes(opt, b), window, n);
        if (status == ZSH_ERR_NO_MEMORY) {
            break; /* no room: the fetch will gather it when it comes */
        }
        if (status == ZSH_OK) {
            status = zsh_optim_gather_start(opt, b, false);
        }
        if (status == ZSH_OK) {
            status = zsh_obucket_move(b, ZSH_BSTATE_PREFETCHED);
        }
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

/* Make bucket @bi live and wait for its data; @exact: a read's (see the
 * top). */
static zsh_status_t zsh_optim_fetch_bucket(zsh_optim_t *opt, size_t bi, void **full_p,
                                           bool exact)
{
    zsh_obucket_t *b = &opt->buckets[bi];
    zsh_status_t status, moved;

    if (zsh_bstate_gathered(b->fetch.state) && zsh_optim_qwz_regather(opt, b, exact)) {
        if (b->fetch.refs > 0) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "its bucket is fetched with qwZ's int8 values; release its "
                             "parameters before reading the exact ones");
        }
        status = zsh_optim_drop_gather(opt, b);
        if (status != ZSH_OK) {
            return status;
        }
    }
    if (!zsh_bstate_gathered(b->fetch.state)) {
        /* Over budget is allowed when everything live is in use: a fetch must succeed. */
        status = zsh_optim_make_room(opt, zsh_obucket_full_bytes(opt, b), &bi, 1);
        if ((status == ZSH_OK) || (status == ZSH_ERR_NO_MEMORY)) {
            status = zsh_optim_gather_start(opt, b, exact);
        }
        if (status == ZSH_OK) {
            status = zsh_obucket_move(b, ZSH_BSTATE_GATHERING);
        }
        if (status != ZSH_OK) {
            return status;
        }
    } else if (b->fetch.state == ZSH_BSTATE_PREFETCHED) {
        opt->stats.prefetch_hits++;
    }
    status = zsh_optim_comm_status(opt, zsh_shard_gather_wait(b->fetch.pshard, full_p));
    opt->tiers.ops[ZSH_TK_PARAMS]->gather_done(opt, b);
    if (status != ZSH_OK) {
        opt->live_bytes -= zsh_obucket_full_bytes(opt, b); /* the shard released it */
        moved = zsh_obucket_move(b, ZSH_BSTATE_SHARDED);
        return (moved != ZSH_OK) ? moved : status;
    }
    if (b->fetch.state != ZSH_BSTATE_LIVE) {
        status = zsh_obucket_move(b, ZSH_BSTATE_LIVE);
        if (status != ZSH_OK) {
            return status;
        }
    }
    if (!(exact && zsh_optim_qwz_rounded_sec(opt, b))) {
        zsh_optim_hpz_keep(opt, b, *full_p); /* a read under qwZ: the slice is the forward's */
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_fetch(zsh_optim_t *opt, zsh_param_t *param, void **data_p)
{
    const char *fn = "zsh_optim_fetch";
    zsh_status_t status;

    if ((opt == NULL) || (param == NULL) || (data_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : (param == NULL) ? "param" : "data_p");
    }
    status = zsh_optim_enter(opt, fn);
    if (status != ZSH_OK) {
        return status;
    }
    if (param->fetched) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is already fetched; release it before fetching it "
                         "again", fn, param->name);
    }
    return opt->stage_ops->fetch(opt, param, data_p);
}

/* @param's bucket, gathered into @full, is held for it until its release. */
static void zsh_optim_fetch_hold(zsh_optim_t *opt, zsh_param_t *param, void *full,
                                 void **data_p)
{
    opt->buckets[param->bucket].fetch.refs++;
    opt->buckets[param->bucket].fetch.last_use = ++opt->tick;
    param->fetched = true;
    *data_p        = (char *)full + param->offset * opt->esize;
}

zsh_status_t zsh_optim_fetch_gathered(zsh_optim_t *opt, zsh_param_t *param, void **data_p)
{
    const char *fn = "zsh_optim_fetch";
    zsh_status_t status;
    void *full;
    int noted;

    status = opt->tiers.ops[ZSH_TK_PARAMS]->fetch_check(opt, fn);
    if (status != ZSH_OK) {
        return status;
    }
    noted = zsh_prefetch_note(&opt->prefetch, param->bucket);
    if (noted < 0) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "%s: out of memory recording the fetch order", fn);
    }
    if (noted > 0) {
        /* Info, not a warning: a state dict, an evaluation pass or a layer
         * skipped on purpose fetch in another order legitimately; it costs
         * one step without prefetching, and the stats count it. */
        opt->stats.order_rebuilds++;
        zsh_log(ZSH_LOG_INFO,
                "fetch order changed at step %lu (parameter '%s'): prefetching stops for this "
                "step and the recorded order is rebuilt", opt->stats.steps + 1, param->name);
    }
    status = zsh_optim_fetch_bucket(opt, param->bucket, &full, false);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
        return status;
    }
    zsh_optim_fetch_hold(opt, param, full, data_p);
    return zsh_optim_prefetch_ahead(opt);
}

zsh_status_t zsh_optim_fetch_exact(zsh_optim_t *opt, zsh_param_t *param, void **data_p)
{
    const char *fn = "zsh_optim_get_param";
    zsh_status_t status;
    void *full;

    status = opt->tiers.ops[ZSH_TK_PARAMS]->fetch_check(opt, fn);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_optim_fetch_bucket(opt, param->bucket, &full, true);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: parameter '%s': ", fn, param->name);
        return status;
    }
    zsh_optim_fetch_hold(opt, param, full, data_p);
    return ZSH_OK;
}

zsh_status_t zsh_optim_release(zsh_optim_t *opt, zsh_param_t *param)
{
    if ((opt == NULL) || (param == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_release: %s is NULL",
                         (opt == NULL) ? "opt" : "param");
    }
    if (!param->fetched) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_release: parameter '%s' is not fetched", param->name);
    }
    param->fetched = false;
    return opt->stage_ops->release(opt, param);
}

zsh_status_t zsh_optim_release_gathered(zsh_optim_t *opt, zsh_param_t *param)
{
    zsh_obucket_t *b = &opt->buckets[param->bucket];
    zsh_status_t status;

    if (--b->fetch.refs > 0) {
        return ZSH_OK;
    }
    status = zsh_obucket_move(b, ZSH_BSTATE_CACHED);
    if ((status == ZSH_OK) && (zsh_optim_qwz_forward_only(opt, b) ||
                               (opt->live_bytes > opt->cfg.max_live_bytes))) {
        status = zsh_optim_evict(opt, b);
    }
    return status;
}

zsh_status_t zsh_optim_drop_gather(zsh_optim_t *opt, zsh_obucket_t *b)
{
    zsh_status_t status, moved;
    void *full;

    if (!zsh_bstate_gathered(b->fetch.state)) {
        return ZSH_OK;
    }
    status = zsh_optim_comm_status(opt, zsh_shard_gather_wait(b->fetch.pshard, &full));
    opt->tiers.ops[ZSH_TK_PARAMS]->gather_done(opt, b);
    opt->live_bytes -= zsh_obucket_full_bytes(opt, b);
    zsh_shard_release(b->fetch.pshard); /* a failed wait released it already */
    moved = zsh_obucket_move(b, ZSH_BSTATE_SHARDED);
    return (moved != ZSH_OK) ? moved : status;
}

zsh_status_t zsh_optim_drop_gathers(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        status = zsh_optim_drop_gather(opt, &opt->buckets[i]);
        first  = (first == ZSH_OK) ? status : first;
    }
    return first;
}
