/*
 * The optimizer on CUDA device memory. The registered buffers say where the
 * model lives: device parameters make the layer's compute account allocate
 * device memory (in stream order on the optimizer's stream), its copies go
 * through the CUDA runtime, the update and the gradient norm run as the
 * kernels of optim/cuda, and the collectives, given device buffers, take
 * the NCCL path on a communicator split for the optimizer's stream.
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
 * gathered device buffer and all-gathers in place (zsh_shard_gather_start_staged).
 */
#include "optim/optim_impl.h"

#include "core/dtype.h"
#include "core/clock.h"
#include "core/status.h"
#include "optim/config.h"
#include "optim/cuda/kernels.h"

#include <zeroshard/device.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const char *zsh_place_name(bool device)
{
    return device ? "CUDA device" : "host";
}

/* What the device path cannot honour yet, named. */
static zsh_status_t zsh_optim_dev_check_config(const zsh_optim_t *opt, const char *name)
{
    const char *fn = "zsh_optim_register";

    if (!zsh_dev_built()) {
        zsh_error_prefix("%s: parameter '%s' is CUDA device memory: ", fn, name);
        return ZSH_ERR_INVALID_ARG;
    }
    if ((opt->cfg.offload_params != ZSH_OFFLOAD_NONE) &&
        (opt->cfg.offload_optimizer == ZSH_OFFLOAD_NONE)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and offload_params=%s needs "
                         "offload_optimizer cpu or nvme there: the host updates the offloaded "
                         "parameters", fn, name, zsh_offload_names[opt->cfg.offload_params]);
    }
    if ((opt->cfg.offload_optimizer != ZSH_OFFLOAD_NONE) && (opt->cfg.stage < 2)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and offload_optimizer=%s "
                         "needs stage 2 or 3 there (the stage is %d): below it the gradients "
                         "are reduced in full in device memory", fn, name,
                         zsh_offload_names[opt->cfg.offload_optimizer], opt->cfg.stage);
    }
    if (opt->cfg.hpz > 1) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and hpZ (hpz %d) is not "
                         "supported with device parameters yet", fn, name, opt->cfg.hpz);
    }
    return ZSH_OK;
}

bool zsh_optim_dev_params_away(const zsh_optim_t *opt)
{
    return opt->device && (opt->cfg.stage == 3) && (opt->cfg.offload_params != ZSH_OFFLOAD_NONE);
}

zsh_status_t zsh_optim_dev_register(zsh_optim_t *opt, const char *name, const void *buf)
{
    zsh_mem_type_t type;
    bool device;

    if (zsh_mem_type(buf, &type) != ZSH_OK) {
        return ZSH_ERR_INVALID_ARG;
    }
    device = type == ZSH_MEM_CUDA;
    if ((opt->nparams > 0) && (device != opt->device)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_register: parameter '%s' is %s memory, but the parameters "
                         "registered before it are %s memory: one optimizer keeps its model in "
                         "one place", name, zsh_place_name(device), zsh_place_name(opt->device));
    }
    if (device && (opt->nparams == 0)) {
        zsh_status_t status = zsh_optim_dev_check_config(opt, name);

        if (status != ZSH_OK) {
            return status;
        }
    }
    opt->device     = device;
    opt->dev_update = device && (opt->cfg.offload_optimizer == ZSH_OFFLOAD_NONE);
    opt->has_master = opt->mixed || (device && !opt->dev_update);
    return ZSH_OK;
}

zsh_status_t zsh_optim_dev_check_ptr(const zsh_optim_t *opt, const char *fn, const char *what,
                                     const zsh_param_t *param, const void *ptr)
{
    zsh_mem_type_t type;

    if (zsh_mem_type(ptr, &type) != ZSH_OK) {
        return ZSH_ERR_INVALID_ARG;
    }
    if ((type == ZSH_MEM_CUDA) != opt->device) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: the %s of parameter '%s' is %s memory, but the parameters are %s "
                         "memory", fn, what, param->name, zsh_place_name(type == ZSH_MEM_CUDA),
                         zsh_place_name(opt->device));
    }
    return ZSH_OK;
}

/* The events of one bucket's copies: down (gradient shard), up (parameters). */
enum { ZSH_DEV_DOWN0, ZSH_DEV_DOWN1, ZSH_DEV_UP0, ZSH_DEV_UP1, ZSH_DEV_EVENTS };

static zsh_status_t zsh_optim_dev_setup_offload(zsh_optim_t *opt)
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

zsh_status_t zsh_optim_dev_setup(zsh_optim_t *opt)
{
    zsh_status_t status;

    if (!opt->device) {
        return ZSH_OK;
    }
    /* The optimizer's collectives are enqueued on its stream, on a
     * communicator of its own, so the caller's keeps its stream. */
    opt->dev.ucomm = opt->comm;
    status = zsh_comm_split(opt->dev.ucomm, 0, opt->rank, &opt->comm);
    if (status != ZSH_OK) {
        opt->comm = opt->dev.ucomm;
        opt->dev.ucomm = NULL;
        zsh_error_prefix("zsh_optim_setup: the optimizer's communicator: ");
        return status;
    }
    status = zsh_comm_set_stream(opt->comm, opt->cfg.stream, ZSH_STREAM_WAIT);
    if (status != ZSH_OK) {
        return status;
    }
    opt->acct.place       = ZSH_PLACE_DEVICE;
    opt->acct.stream      = opt->cfg.stream;
    opt->tiers.host.place = ZSH_PLACE_PINNED;
    opt->dev.sum = zsh_dev_alloc(ZSH_PLACE_DEVICE, (ZSH_CUDA_SUMSQ_SCRATCH + 1) * sizeof(double),
                                 opt->cfg.stream);
    if (opt->dev.sum == NULL) {
        zsh_error_prefix("zsh_optim_setup: ");
        return ZSH_ERR_NO_MEMORY;
    }
    return ZSH_OK;
}

/* After the buckets: what offload needs per bucket. */
zsh_status_t zsh_optim_dev_setup_buckets(zsh_optim_t *opt)
{
    zsh_status_t status = ZSH_OK;

    if (opt->device && !opt->dev_update) {
        status = zsh_optim_dev_setup_offload(opt);
    }
    /* The framework may free its buffers once setup returns (stage 3). */
    return (status == ZSH_OK && opt->device) ? zsh_dev_sync(opt->cfg.stream) : status;
}

void zsh_optim_dev_teardown(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;
    size_t i, k;

    if (!opt->device || (d->ucomm == NULL)) {
        return;
    }
    (void)zsh_dev_sync(opt->cfg.stream);
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
    zsh_dev_free(ZSH_PLACE_DEVICE, d->sum, opt->cfg.stream);
    (void)zsh_dev_sync(opt->cfg.stream);
    zsh_dev_stream_destroy(d->cstream);
    zsh_comm_destroy(opt->comm);
    opt->comm = d->ucomm;
    *d = (zsh_devopt_t){.copy_bytes = d->copy_bytes, .copy_s = d->copy_s,
                        .copy_wait_s = d->copy_wait_s};
}

zsh_status_t zsh_optim_copy(zsh_optim_t *opt, void *dst, const void *src, size_t bytes)
{
    if (!opt->device) {
        memmove(dst, src, bytes);
        return ZSH_OK;
    }
    return zsh_dev_copy(dst, src, bytes, opt->cfg.stream);
}

zsh_status_t zsh_optim_to_float_at(zsh_optim_t *opt, const void *src, float *dst, size_t n)
{
    if (!opt->device) {
        zsh_optim_to_float(opt->cfg.precision, src, dst, n);
        return ZSH_OK;
    }
    if (opt->cfg.precision == ZSH_FLOAT32) {
        return zsh_dev_copy(dst, src, n * sizeof(float), opt->cfg.stream);
    }
    return zsh_cuda_to_float(src, opt->cfg.precision, dst, n, opt->cfg.stream);
}

void *zsh_optim_host_tmp(zsh_optim_t *opt, size_t bytes)
{
    void *ptr = opt->device ? zsh_dev_alloc(ZSH_PLACE_PINNED, bytes, NULL)
                            : calloc(1, (bytes == 0) ? 1 : bytes);

    if (!opt->device && (ptr == NULL)) {
        zsh_error(ZSH_ERR_NO_MEMORY, "out of memory for %zu bytes", bytes);
    }
    return ptr;
}

void zsh_optim_host_tmp_free(zsh_optim_t *opt, void *ptr)
{
    zsh_dev_free(opt->device ? ZSH_PLACE_PINNED : ZSH_PLACE_HOST, ptr, NULL);
}

zsh_status_t zsh_optim_dev_sync(zsh_optim_t *opt)
{
    return opt->device ? zsh_dev_sync(opt->cfg.stream) : ZSH_OK;
}

zsh_status_t zsh_optim_dev_apply(zsh_optim_t *opt, float *p, const void *g, float *m, float *v,
                                 void *out, size_t n, const zsh_update_t *u)
{
    zsh_cuda_step_args_t a;

    memset(&a, 0, sizeof(a));
    a.u          = (zsh_cuda_update_t){u->kind,     u->lr,  u->beta1, u->beta2, u->eps,
                                       u->weight_decay, u->momentum, u->nesterov, u->bc1, u->bc2,
                                       u->grad_mul};
    a.p          = p;
    a.g          = g;
    a.grad_dtype = opt->cfg.precision;
    a.m          = m;
    a.v          = v;
    a.out        = out;
    a.out_dtype  = opt->cfg.precision;
    a.n          = n;
    return zsh_cuda_step(&a, opt->cfg.stream);
}

zsh_status_t zsh_optim_dev_sumsq(zsh_optim_t *opt, const void *g, size_t n, bool first)
{
    return zsh_cuda_sumsq(g, opt->cfg.precision, n, opt->dev.sum, !first, opt->dev.sum + 1,
                          opt->cfg.stream);
}

zsh_status_t zsh_optim_dev_sumsq_get(zsh_optim_t *opt, double *sum_p)
{
    zsh_status_t status = zsh_dev_copy(sum_p, opt->dev.sum, sizeof(double), opt->cfg.stream);

    return (status == ZSH_OK) ? zsh_dev_sync(opt->cfg.stream) : status;
}

/* --- offload_optimizer cpu from the device --- */

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

zsh_status_t zsh_optim_dev_grad_down(zsh_optim_t *opt, zsh_obucket_t *b)
{
    const char *shard = (const char *)b->staging + (size_t)opt->rank * b->count * opt->esize;
    void *dst         = (b->gtransit != NULL) ? b->gtransit : b->grad_shard;
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

zsh_status_t zsh_optim_dev_grad_landed(zsh_optim_t *opt, zsh_obucket_t *b, bool wait)
{
    void *landed = *zsh_optim_dev_ev(opt, b, ZSH_DEV_DOWN1);

    return wait ? zsh_optim_dev_wait(opt, landed) : zsh_dev_event_query(landed);
}

zsh_status_t zsh_optim_dev_failed(zsh_optim_t *opt, zsh_status_t status)
{
    if ((status != ZSH_OK) && opt->device) {
        /* The other ranks would wait in the next collective for this one:
         * stop them, naming this rank, and keep the failure. */
        zsh_optim_comm_status(opt, status);
        zsh_comm_abort(opt->comm);
    }
    return status;
}

zsh_status_t zsh_optim_dev_copies_wait(zsh_optim_t *opt)
{
    double t0;
    zsh_status_t status;

    if (!opt->device || opt->dev_update) {
        return ZSH_OK;
    }
    t0     = zsh_clock_now();
    status = zsh_dev_sync(opt->dev.cstream);
    opt->dev.copy_wait_s += zsh_clock_now() - t0;
    return status;
}

/* Enqueue the copies of @b's updated parameters [s0, e0), from @src
 * (indexed from b->lo), to where the device keeps them. */
static zsh_status_t zsh_optim_dev_up_copies(zsh_optim_t *opt, zsh_obucket_t *b, size_t s0,
                                            size_t e0, const char *src)
{
    size_t es = opt->esize, i, s, e;
    zsh_status_t status = ZSH_OK;
    zsh_param_t *param;

    if (opt->cfg.stage == 3) {
        return zsh_dev_copy((char *)zsh_shard_local(b->pshard) + (s0 - b->lo) * es,
                            src + (s0 - b->lo) * es, (e0 - s0) * es, opt->dev.cstream);
    }
    if (b->publish != NULL) {
        /* Stage 2 from the host tier: straight into the publishing
         * all-gather's buffer, at this rank's block. */
        return zsh_dev_copy((char *)b->publish + ((size_t)opt->rank * b->count + s0 - b->lo) * es,
                            src + (s0 - b->lo) * es, (e0 - s0) * es, opt->dev.cstream);
    }
    /* Stage 2 from the NVMe tier: into the framework's buffers, which the
     * publishing all-gather reads (update.c), so no bucket-sized buffer
     * waits on the device for the whole swapped step. */
    for (i = 0; (status == ZSH_OK) && (i < b->nparams); i++) {
        param = b->params[i];
        if (zsh_param_overlap(param, s0, e0, &s, &e)) {
            status = zsh_dev_copy((char *)param->buf + (s - param->offset) * es,
                                  src + (s - b->lo) * es, (e - s) * es, opt->dev.cstream);
        }
    }
    return status;
}

zsh_status_t zsh_optim_dev_update_offloaded(zsh_optim_t *opt, zsh_obucket_t *b,
                                            const zsh_update_t *u, size_t s0, size_t e0,
                                            const zsh_swap_view_t *view)
{
    zsh_devopt_t *d = &opt->dev;
    int k = d->next_up;
    zsh_status_t status = ZSH_OK;

    if (zsh_optim_dev_params_away(opt)) {
        /* The shard is host memory or a swapped sub-group: updated in place
         * there, and the next gather takes it up. */
        return zsh_optim_update_range_out(opt, b, u, s0, e0, view, NULL);
    }

    /* The buffer's previous parameters must have gone up before it is rewritten. */
    if (d->up_busy[k]) {
        status = zsh_optim_dev_wait(opt, d->up_done[k]);
        d->up_busy[k] = false;
    }
    if (status == ZSH_OK) {
        status = zsh_optim_update_range_out(opt, b, u, s0, e0, view, d->up[k]);
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
        status = zsh_optim_dev_up_copies(opt, b, s0, e0, d->up[k]);
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

void zsh_optim_dev_close_step(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;
    size_t i;

    if (!opt->device || opt->dev_update) {
        return;
    }
    (void)zsh_dev_sync(d->cstream);
    for (i = 0; i < opt->nbuckets; i++) {
        zsh_optim_dev_time_take(opt, i, ZSH_DEV_DOWN0);
        zsh_optim_dev_time_take(opt, i, ZSH_DEV_UP0);
    }
    d->up_busy[0] = d->up_busy[1] = false;
}

void zsh_optim_dev_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    stats->device = opt->device;
    if (!opt->device) {
        return;
    }
    stats->device_bytes      = opt->acct.all;
    stats->device_peak_bytes = opt->acct.all_peak;
    stats->copy_bytes        = opt->dev.copy_bytes;
    stats->copy_s            = opt->dev.copy_s;
    stats->copy_wait_s       = opt->dev.copy_wait_s;
}
