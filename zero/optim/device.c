/*
 * The optimizer on CUDA device memory. The registered buffers say where the
 * model lives, and the first registration chooses the table of that place
 * (device_ops.h): device parameters make the layer's compute account
 * allocate device memory (in stream order on the optimizer's stream), its
 * copies go through the CUDA runtime, the update and the gradient norm run
 * as the kernels of optim/rule/cuda (the CUDA table, here), or on the host
 * with the optimizer offloaded (offload/offload_device.c's table, which
 * shares this file's CUDA side), and the collectives, given device buffers,
 * take the NCCL path on a communicator split for the optimizer's stream.
 */
#include "optim/optim_impl.h"

#include "core/dtype.h"
#include "core/clock.h"
#include "core/status.h"
#include "optim/config.h"
#include "optim/rule/cuda/kernels.h"

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
    if ((opt->cfg.offload_optimizer != ZSH_OFFLOAD_NONE) && !opt->stage_ops->shards_grads) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and offload_optimizer=%s "
                         "needs stage 2 or 3 there (the stage is %d): below it the gradients "
                         "are reduced in full in device memory", fn, name,
                         zsh_offload_names[opt->cfg.offload_optimizer], opt->cfg.stage);
    }
    if (opt->cfg.quantize_weights == ZSH_QUANTIZE_ON) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and quantize_weights (qwZ) "
                         "quantizes host parameters only yet", fn, name);
    }
    if (opt->cfg.quantize_grads == ZSH_QUANTIZE_ON) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and quantize_grads (qgZ) "
                         "reduces host gradients only yet", fn, name);
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
    return opt->dev_ops->device && opt->stage_ops->shards_params &&
           (opt->cfg.offload_params != ZSH_OFFLOAD_NONE);
}

zsh_status_t zsh_optim_dev_register(zsh_optim_t *opt, const char *name, const void *buf)
{
    zsh_mem_type_t type;
    bool device;

    if (zsh_mem_type(buf, &type) != ZSH_OK) {
        return ZSH_ERR_INVALID_ARG;
    }
    device = type == ZSH_MEM_CUDA;
    if ((opt->nparams > 0) && (device != opt->dev_ops->device)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_register: parameter '%s' is %s memory, but the parameters "
                         "registered before it are %s memory: one optimizer keeps its model in "
                         "one place", name, zsh_place_name(device),
                         zsh_place_name(opt->dev_ops->device));
    }
    if (device && (opt->nparams == 0)) {
        zsh_status_t status = zsh_optim_dev_check_config(opt, name);

        if (status != ZSH_OK) {
            return status;
        }
    }
    opt->dev_ops    = !device ? &zsh_dev_host_ops
                      : (opt->cfg.offload_optimizer == ZSH_OFFLOAD_NONE) ? &zsh_dev_cuda_ops
                                                                          : &zsh_dev_offload_ops;
    opt->has_master = opt->mixed || opt->dev_ops->offloaded;
    return ZSH_OK;
}

zsh_status_t zsh_optim_dev_check_ptr(const zsh_optim_t *opt, const char *fn, const char *what,
                                     const zsh_param_t *param, const void *ptr)
{
    zsh_mem_type_t type;

    if (zsh_mem_type(ptr, &type) != ZSH_OK) {
        return ZSH_ERR_INVALID_ARG;
    }
    if ((type == ZSH_MEM_CUDA) != opt->dev_ops->device) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: the %s of parameter '%s' is %s memory, but the parameters are %s "
                         "memory", fn, what, param->name, zsh_place_name(type == ZSH_MEM_CUDA),
                         zsh_place_name(opt->dev_ops->device));
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_cuda_setup(zsh_optim_t *opt)
{
    zsh_status_t status;

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

/* After the buckets: the framework may free its buffers once setup
 * returns (stage 3). */
static zsh_status_t zsh_optim_cuda_setup_buckets(zsh_optim_t *opt)
{
    return zsh_dev_sync(opt->cfg.stream);
}

void zsh_optim_cuda_teardown(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;

    if (d->ucomm == NULL) {
        return;
    }
    (void)zsh_dev_sync(opt->cfg.stream);
    zsh_dev_free(ZSH_PLACE_DEVICE, d->sum, opt->cfg.stream);
    (void)zsh_dev_sync(opt->cfg.stream);
    zsh_comm_destroy(opt->comm);
    opt->comm = d->ucomm;
    *d = (zsh_devopt_t){.copy_bytes = d->copy_bytes, .copy_s = d->copy_s,
                        .copy_wait_s = d->copy_wait_s};
}

zsh_status_t zsh_optim_cuda_copy(zsh_optim_t *opt, void *dst, const void *src, size_t bytes)
{
    return zsh_dev_copy(dst, src, bytes, opt->cfg.stream);
}

zsh_status_t zsh_optim_cuda_to_float(zsh_optim_t *opt, const void *src, float *dst, size_t n)
{
    if (opt->cfg.precision == ZSH_FLOAT32) {
        return zsh_dev_copy(dst, src, n * sizeof(float), opt->cfg.stream);
    }
    return zsh_cuda_to_float(src, opt->cfg.precision, dst, n, opt->cfg.stream);
}

void *zsh_optim_cuda_host_tmp(zsh_optim_t *opt, size_t bytes)
{
    (void)opt;
    return zsh_dev_alloc(ZSH_PLACE_PINNED, bytes, NULL);
}

void zsh_optim_cuda_host_tmp_free(zsh_optim_t *opt, void *ptr)
{
    (void)opt;
    zsh_dev_free(ZSH_PLACE_PINNED, ptr, NULL);
}

zsh_status_t zsh_optim_cuda_sync(zsh_optim_t *opt)
{
    return zsh_dev_sync(opt->cfg.stream);
}

/* Through a host copy: the file is written from host memory. */
zsh_status_t zsh_optim_cuda_file_patch(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b,
                                       size_t s, size_t e, const void *src)
{
    size_t es = zsh_tier_esize(opt, kind);
    zsh_status_t status;
    void *tmp;

    tmp = zsh_optim_cuda_host_tmp(opt, (e - s) * es);
    if (tmp == NULL) {
        return ZSH_ERR_NO_MEMORY;
    }
    status = zsh_optim_cuda_copy(opt, tmp, src, (e - s) * es);
    if (status == ZSH_OK) {
        status = zsh_optim_cuda_sync(opt);
    }
    if (status == ZSH_OK) {
        status = zsh_tier_patch(opt, kind, b, s, e, tmp);
    }
    zsh_optim_cuda_host_tmp_free(opt, tmp);
    return status;
}

static zsh_status_t zsh_optim_cuda_apply(zsh_optim_t *opt, float *p, const void *g, float *m,
                                         float *v, void *out, size_t n, const zsh_update_t *u)
{
    zsh_cuda_step_args_t a;

    memset(&a, 0, sizeof(a));
    a.u          = (zsh_cuda_update_t){u->kind,     u->beta1,    u->beta2,    u->omb1,
                                       u->omb2,     u->eps,      u->weight_decay, u->momentum,
                                       u->nesterov, u->decay,    u->neg_step, u->bc2_sqrt,
                                       u->inv_bc2_sqrt, u->grad_mul};
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

static zsh_status_t zsh_optim_cuda_sumsq(zsh_optim_t *opt, const void *g, size_t n, bool first)
{
    return zsh_cuda_sumsq(g, opt->cfg.precision, n, opt->dev.sum, !first, opt->dev.sum + 1,
                          opt->cfg.stream);
}

static zsh_status_t zsh_optim_cuda_sumsq_get(zsh_optim_t *opt, double *sum_p)
{
    zsh_status_t status = zsh_dev_copy(sum_p, opt->dev.sum, sizeof(double), opt->cfg.stream);

    return (status == ZSH_OK) ? zsh_dev_sync(opt->cfg.stream) : status;
}

/* The owned gradients' squares summed on the device, in the device sum,
 * then read back. */
static zsh_status_t zsh_optim_cuda_grad_sumsq(zsh_optim_t *opt, zsh_norm_sum_t *acc)
{
    const zsh_obucket_t *b;
    double sum = 0.0;
    zsh_status_t status;
    const void *g;
    size_t i, n;

    for (i = 0; i < opt->nbuckets; i++) {
        b      = &opt->buckets[i];
        g      = opt->stage_ops->grads_owned(opt, b, &n);
        status = zsh_optim_cuda_sumsq(opt, g, n, i == 0);
        if (status != ZSH_OK) {
            return status;
        }
    }
    status = (opt->nbuckets > 0) ? zsh_optim_cuda_sumsq_get(opt, &sum) : ZSH_OK;
    if (status != ZSH_OK) {
        return status;
    }
    acc->sum += sum; /* never exact: reductions on the device refuse the deterministic mode */
    return ZSH_OK;
}

zsh_status_t zsh_optim_cuda_failed(zsh_optim_t *opt, zsh_status_t status)
{
    if (status != ZSH_OK) {
        /* The other ranks would wait in the next collective for this one:
         * stop them, naming this rank, and keep the failure. */
        zsh_optim_comm_status(opt, status);
        zsh_comm_abort(opt->comm);
    }
    return status;
}

void zsh_optim_cuda_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    stats->device            = true;
    stats->device_bytes      = opt->acct.all;
    stats->device_peak_bytes = opt->acct.all_peak;
    stats->copy_bytes        = opt->dev.copy_bytes;
    stats->copy_s            = opt->dev.copy_s;
    stats->copy_wait_s       = opt->dev.copy_wait_s;
}

const zsh_dev_ops_t zsh_dev_cuda_ops = {
    .name          = "CUDA device",
    .device        = true,
    .offloaded     = false,
    .setup         = zsh_optim_cuda_setup,
    .setup_buckets = zsh_optim_cuda_setup_buckets,
    .teardown      = zsh_optim_cuda_teardown,
    .copy          = zsh_optim_cuda_copy,
    .to_float      = zsh_optim_cuda_to_float,
    .sync          = zsh_optim_cuda_sync,
    .host_tmp      = zsh_optim_cuda_host_tmp,
    .host_tmp_free = zsh_optim_cuda_host_tmp_free,
    .file_patch    = zsh_optim_cuda_file_patch,
    .apply         = zsh_optim_cuda_apply,
    .grad_sumsq    = zsh_optim_cuda_grad_sumsq,
    .shard_dst     = zsh_optim_host_shard_dst,
    .grad_down     = zsh_optim_host_grad_down,
    .grad_landed   = zsh_optim_host_grad_landed,
    .copies_wait   = zsh_optim_host_nothing,
    .update_bucket = zsh_optim_update_bucket,
    .update_view   = zsh_optim_update_view_host,
    .close_step    = zsh_optim_host_end,
    .failed        = zsh_optim_cuda_failed,
    .stats         = zsh_optim_cuda_stats,
};
