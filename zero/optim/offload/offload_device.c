/*
 * Optimizer offload from the device.
 *
 * With offload_optimizer cpu (stages 2-3, ZeRO-Offload), the states and
 * fp32 master weights live in pinned host memory. Each bucket's reduced
 * shard is copied down on a copy stream as its reduction ends, while the
 * backward pass goes on; the step updates on the host into one of two
 * pinned buffers, and each bucket's updated parameters go up on the copy
 * stream while the host updates the next bucket. Events around every copy
 * time the copy stream; the host's waits for it are timed too, so the stats
 * say how much of the copying was hidden.
 *
 * With offload_optimizer nvme the same copies serve the NVMe tier: a shard
 * comes down into the transit buffer of its write (the pool is page-locked
 * for it), and the write starts once it has landed; the step updates each
 * swapped sub-group on the host and sends the parameters of every bucket it
 * covers up from the same two pinned buffers (stage 2: into the framework's
 * buffers, which the publishing all-gather reads).
 *
 * With offload_params too (stage 3, ZeRO-Infinity), the parameter shards
 * live in pinned host memory or in the file: the host updates them in
 * place, and a gather copies this rank's shard up into its block of the
 * gathered device buffer and all-gathers in place (a staged gather,
 * zsh_shard_src_t.staged).
 *
 * This is the offload table of device_ops.h: it shares the CUDA side's
 * copies, setup and failures (device.c), and the host's rule and norm.
 */
#include "optim/optim_impl.h"

#include "core/clock.h"
#include "core/status.h"
#include "mem/device.h"

#include <stdint.h>
#include <stdlib.h>

/* The events of one bucket's copies: down (gradient shard), up (parameters). */
enum { ZSH_DEV_DOWN0, ZSH_DEV_DOWN1, ZSH_DEV_UP0, ZSH_DEV_UP1, ZSH_DEV_EVENTS };

static zsh_status_t zsh_optim_dev_offload_setup(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;
    size_t i, k, most = 0;

    d->cstream = zsh_dev_stream_create();
    d->sev     = zsh_dev_event_create();
    if ((d->cstream == NULL) || (d->sev == NULL)) {
        return ZSH_ERR_TRANSPORT;
    }
    d->events = calloc(opt->nbuckets * ZSH_DEV_EVENTS, sizeof(*d->events));
    d->timed  = calloc(opt->nbuckets * 2, sizeof(*d->timed));
    if ((d->events == NULL) || (d->timed == NULL)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_setup: out of memory");
    }
    for (i = 0; i < opt->nbuckets * ZSH_DEV_EVENTS; i++) {
        d->events[i] = zsh_dev_event_create();
        if (d->events[i] == NULL) {
            return ZSH_ERR_TRANSPORT;
        }
    }
    for (i = 0; i < opt->nbuckets; i++) {
        most = (opt->buckets[i].count > most) ? opt->buckets[i].count : most;
    }
    d->up_bytes = most * opt->esize;
    for (k = 0; k < 2; k++) {
        d->up[k] = zsh_account_alloc(&opt->tiers.host, ZSH_MEM_BUFFERS, d->up_bytes);
        if (d->up[k] == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY,
                             "zsh_optim_setup: no pinned host memory for %zu bytes of updated "
                             "parameters", d->up_bytes);
        }
        d->up_done[k] = zsh_dev_event_create();
        if (d->up_done[k] == NULL) {
            return ZSH_ERR_TRANSPORT;
        }
    }
    return ZSH_OK;
}

/* After the buckets; the framework may free its buffers once setup returns
 * (stage 3). */
static zsh_status_t zsh_optim_dev_offload_setup_buckets(zsh_optim_t *opt)
{
    zsh_status_t status = zsh_optim_dev_offload_setup(opt);

    return (status == ZSH_OK) ? zsh_dev_sync(opt->cfg.stream) : status;
}

static void zsh_optim_dev_offload_teardown(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;
    size_t i, k;

    if (d->cstream != NULL) {
        (void)zsh_dev_sync(d->cstream);
    }
    for (k = 0; k < 2; k++) {
        zsh_account_free(&opt->tiers.host, ZSH_MEM_BUFFERS, d->up[k], d->up_bytes);
        zsh_dev_event_destroy(d->up_done[k]);
    }
    if (d->events != NULL) {
        for (i = 0; i < opt->nbuckets * ZSH_DEV_EVENTS; i++) {
            zsh_dev_event_destroy(d->events[i]);
        }
    }
    free(d->events);
    free(d->timed);
    zsh_dev_event_destroy(d->sev);
    zsh_dev_stream_destroy(d->cstream);
}

static void **zsh_optim_dev_ev(zsh_optim_t *opt, const zsh_obucket_t *b, int which)
{
    return &opt->dev.events[(size_t)(b - opt->buckets) * ZSH_DEV_EVENTS + (size_t)which];
}

/* Add the copy-stream time between events @e0 and @e0 + 1 of bucket @i,
 * once, if a copy was timed there. Both events must be done. */
static void zsh_optim_dev_time_take(zsh_optim_t *opt, size_t i, int e0)
{
    zsh_devopt_t *d = &opt->dev;
    bool *timed     = &d->timed[i * 2 + (e0 == ZSH_DEV_UP0)];

    if (*timed) {
        d->copy_s += zsh_dev_event_elapsed(d->events[i * ZSH_DEV_EVENTS + (size_t)e0],
                                           d->events[i * ZSH_DEV_EVENTS + (size_t)e0 + 1]);
        *timed = false;
    }
}

/* Block until @event is done, counting the wait. */
static zsh_status_t zsh_optim_dev_wait(zsh_optim_t *opt, void *event)
{
    double t0 = zsh_clock_now();
    zsh_status_t status = zsh_dev_event_sync(event);

    opt->dev.copy_wait_s += zsh_clock_now() - t0;
    return status;
}

/* Open a timed copy of @b's (@e0: down or up) on the copy stream. A bucket
 * copied the same way before in this step (sub-groups of the NVMe tier cut
 * buckets) has that copy counted before its events are recorded again. */
static zsh_status_t zsh_optim_dev_copy_begin(zsh_optim_t *opt, zsh_obucket_t *b, int e0)
{
    size_t i = (size_t)(b - opt->buckets);
    zsh_status_t status = ZSH_OK;

    if (opt->dev.timed[i * 2 + (e0 == ZSH_DEV_UP0)]) {
        status = zsh_optim_dev_wait(opt, *zsh_optim_dev_ev(opt, b, e0 + 1));
        zsh_optim_dev_time_take(opt, i, e0);
    }
    return (status == ZSH_OK) ? zsh_dev_event_record(*zsh_optim_dev_ev(opt, b, e0),
                                                     opt->dev.cstream)
                              : status;
}

static zsh_status_t zsh_optim_dev_copy_end(zsh_optim_t *opt, zsh_obucket_t *b, int e0,
                                           size_t bytes)
{
    zsh_status_t status = zsh_dev_event_record(*zsh_optim_dev_ev(opt, b, e0 + 1),
                                               opt->dev.cstream);

    if (status == ZSH_OK) {
        opt->dev.timed[(size_t)(b - opt->buckets) * 2 + (e0 == ZSH_DEV_UP0)] = true;
        opt->dev.copy_bytes += bytes;
    }
    return status;
}

static zsh_status_t zsh_optim_dev_grad_down(zsh_optim_t *opt, zsh_obucket_t *b)
{
    const char *shard = (const char *)b->staging + (size_t)opt->rank * b->count * opt->esize;
    void *dst         = (b->nvme.gtransit != NULL) ? b->nvme.gtransit : b->grad_shard;
    size_t bytes      = b->count * opt->esize;
    zsh_status_t status;

    /* The reduction's stream work is done (its request completed), so the
     * copy stream needs no wait; the staging buffer is freed behind the
     * copy, in its stream's order. */
    status = zsh_optim_dev_copy_begin(opt, b, ZSH_DEV_DOWN0);
    if (status == ZSH_OK) {
        status = zsh_dev_copy(dst, shard, bytes, opt->dev.cstream);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_dev_copy_end(opt, b, ZSH_DEV_DOWN0, bytes);
    }
    if (status != ZSH_OK) {
        /* A copy may have been enqueued before the failure: nothing it
         * reads or writes is given back before it is done. */
        (void)zsh_dev_sync(opt->dev.cstream);
    }
    zsh_account_unhold(&opt->acct, ZSH_MEM_BUFFERS, zsh_obucket_full_bytes(opt, b));
    zsh_dev_free(ZSH_PLACE_DEVICE, b->staging,
                 (status == ZSH_OK) ? opt->dev.cstream : opt->cfg.stream);
    b->staging = NULL;
    return status;
}

static zsh_status_t zsh_optim_dev_grad_landed(zsh_optim_t *opt, zsh_obucket_t *b,
                                              bool wait)
{
    void *landed = *zsh_optim_dev_ev(opt, b, ZSH_DEV_DOWN1);

    return wait ? zsh_optim_dev_wait(opt, landed) : zsh_dev_event_query(landed);
}

static zsh_status_t zsh_optim_dev_copies_wait(zsh_optim_t *opt)
{
    double t0;
    zsh_status_t status;

    t0     = zsh_clock_now();
    status = zsh_dev_sync(opt->dev.cstream);
    opt->dev.copy_wait_s += zsh_clock_now() - t0;
    return status;
}

static zsh_status_t zsh_optim_dev_update_offloaded(zsh_optim_t *opt, zsh_obucket_t *b,
                                                   const zsh_update_t *u, size_t s0, size_t e0,
                                                   const zsh_swap_view_t *view)
{
    zsh_devopt_t *d = &opt->dev;
    int k = d->next_up;
    zsh_status_t status = ZSH_OK;

    if (zsh_optim_dev_params_away(opt)) {
        /* The shard is host memory or a swapped sub-group: updated in place
         * there, and the next gather takes it up. */
        return zsh_optim_update_range(opt, b, u, s0, e0, view, NULL);
    }

    /* The buffer's previous parameters must have gone up before it is rewritten. */
    if (d->up_busy[k]) {
        status = zsh_optim_dev_wait(opt, d->up_done[k]);
        d->up_busy[k] = false;
    }
    if (status == ZSH_OK) {
        status = zsh_optim_update_range(opt, b, u, s0, e0, view, d->up[k]);
    }
    /* The destination was allocated, or last read, in the optimizer's
     * stream order: the copy stream goes after it. */
    if (status == ZSH_OK) {
        status = zsh_dev_event_record(d->sev, opt->cfg.stream);
    }
    if (status == ZSH_OK) {
        status = zsh_dev_stream_wait(d->cstream, d->sev);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_dev_copy_begin(opt, b, ZSH_DEV_UP0);
    }
    if (status == ZSH_OK) {
        /* To where the stage keeps them on the device. */
        status = opt->stage_ops->params_up(opt, b, s0, e0, d->up[k], d->cstream);
    }
    if (status == ZSH_OK) {
        status = zsh_optim_dev_copy_end(opt, b, ZSH_DEV_UP0, (e0 - s0) * opt->esize);
    }
    if (status == ZSH_OK) {
        status = zsh_dev_event_record(d->up_done[k], d->cstream);
        d->up_busy[k] = status == ZSH_OK;
    }
    d->next_up = 1 - k;
    if (status == ZSH_OK) {
        /* The optimizer's stream reads what went up only after it landed. */
        status = zsh_dev_stream_wait(opt->cfg.stream, d->up_done[k]);
    }
    return status;
}

static void zsh_optim_dev_close_step(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;
    size_t i;

    (void)zsh_dev_sync(d->cstream);
    for (i = 0; i < opt->nbuckets; i++) {
        zsh_optim_dev_time_take(opt, i, ZSH_DEV_DOWN0);
        zsh_optim_dev_time_take(opt, i, ZSH_DEV_UP0);
    }
    d->up_busy[0] = d->up_busy[1] = false;
}

/* Offload's copy stream, events and buffers, then the CUDA side's. */
static void zsh_optim_dev_offload_close(zsh_optim_t *opt)
{
    if (opt->dev.ucomm != NULL) {
        (void)zsh_dev_sync(opt->cfg.stream);
        zsh_optim_dev_offload_teardown(opt);
    }
    zsh_optim_cuda_teardown(opt);
}

/* The host tier's shard cannot take a device reduction: the bucket is
 * reduced in place, and this rank's block goes down (grad_down). */
static void *zsh_optim_dev_offload_shard_dst(zsh_optim_t *opt, zsh_obucket_t *b)
{
    return (char *)b->staging + (size_t)opt->rank * b->count * opt->esize;
}

static zsh_status_t zsh_optim_dev_offload_bucket(zsh_optim_t *opt, zsh_obucket_t *b,
                                                 const zsh_update_t *u)
{
    zsh_status_t status = opt->stage_ops->up_prepare(opt, b);

    if (status != ZSH_OK) {
        return status;
    }
    return zsh_optim_dev_update_offloaded(opt, b, u, b->lo, b->hi, NULL);
}

const zsh_dev_ops_t zsh_dev_offload_ops = {
    .name          = "CUDA device, optimizer on the host",
    .device        = true,
    .offloaded     = true,
    .setup         = zsh_optim_cuda_setup,
    .setup_buckets = zsh_optim_dev_offload_setup_buckets,
    .teardown      = zsh_optim_dev_offload_close,
    .copy          = zsh_optim_cuda_copy,
    .to_float      = zsh_optim_cuda_to_float,
    .sync          = zsh_optim_cuda_sync,
    .host_tmp      = zsh_optim_cuda_host_tmp,
    .host_tmp_free = zsh_optim_cuda_host_tmp_free,
    .file_patch    = zsh_optim_cuda_file_patch,
    .apply         = zsh_optim_host_apply,
    .grad_sumsq    = zsh_optim_host_grad_sumsq,
    .shard_dst     = zsh_optim_dev_offload_shard_dst,
    .grad_down     = zsh_optim_dev_grad_down,
    .grad_landed   = zsh_optim_dev_grad_landed,
    .copies_wait   = zsh_optim_dev_copies_wait,
    .update_bucket = zsh_optim_dev_offload_bucket,
    .update_view   = zsh_optim_dev_update_offloaded,
    .close_step    = zsh_optim_dev_close_step,
    .failed        = zsh_optim_cuda_failed,
    .stats         = zsh_optim_cuda_stats,
};
