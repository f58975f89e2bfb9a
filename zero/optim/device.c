/*
 * The optimizer on CUDA device memory. The registered buffers say where the
 * model lives: device parameters make the layer's compute account allocate
 * device memory (in stream order on the optimizer's stream), its copies go
 * through the CUDA runtime, the update and the gradient norm run as the
 * kernels of optim/rule/cuda, and the collectives, given device buffers, take
 * the NCCL path on a communicator split for the optimizer's stream.
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
    if (opt->cfg.hpz > 1) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' is CUDA device memory, and hpZ (hpz %d) is not "
                         "supported with device parameters yet", fn, name, opt->cfg.hpz);
    }
    return ZSH_OK;
}

bool zsh_optim_dev_params_away(const zsh_optim_t *opt)
{
    return opt->device && opt->stage_ops->shards_params &&
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
        status = zsh_optim_dev_offload_setup(opt);
    }
    /* The framework may free its buffers once setup returns (stage 3). */
    return (status == ZSH_OK && opt->device) ? zsh_dev_sync(opt->cfg.stream) : status;
}

void zsh_optim_dev_teardown(zsh_optim_t *opt)
{
    zsh_devopt_t *d = &opt->dev;

    if (!opt->device || (d->ucomm == NULL)) {
        return;
    }
    (void)zsh_dev_sync(opt->cfg.stream);
    zsh_optim_dev_offload_teardown(opt);
    zsh_dev_free(ZSH_PLACE_DEVICE, d->sum, opt->cfg.stream);
    (void)zsh_dev_sync(opt->cfg.stream);
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
