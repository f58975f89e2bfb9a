/*
 * The model in host memory (device_ops.h's host table): copies are
 * memmove, nothing is left to wait for, the rule and the norm run as the
 * host kernels, and a failure is only the caller's to report.
 */
#include "optim/optim_impl.h"

#include "core/half.h"
#include "core/status.h"
#include "mem/device.h"

#include <stdlib.h>
#include <string.h>

zsh_status_t zsh_optim_host_nothing(zsh_optim_t *opt)
{
    (void)opt;
    return ZSH_OK;
}

void zsh_optim_host_end(zsh_optim_t *opt)
{
    (void)opt;
}

static zsh_status_t zsh_optim_host_copy(zsh_optim_t *opt, void *dst, const void *src,
                                        size_t bytes)
{
    (void)opt;
    memmove(dst, src, bytes);
    return ZSH_OK;
}

static zsh_status_t zsh_optim_host_to_float(zsh_optim_t *opt, const void *src, float *dst,
                                            size_t n)
{
    zsh_half_widen(opt->cfg.precision, src, n, dst);
    return ZSH_OK;
}

static void *zsh_optim_host_tmp(zsh_optim_t *opt, size_t bytes)
{
    void *ptr = calloc(1, (bytes == 0) ? 1 : bytes);

    (void)opt;
    if (ptr == NULL) {
        zsh_error(ZSH_ERR_NO_MEMORY, "out of memory for %zu bytes", bytes);
    }
    return ptr;
}

static void zsh_optim_host_tmp_free(zsh_optim_t *opt, void *ptr)
{
    (void)opt;
    zsh_dev_free(ZSH_PLACE_HOST, ptr, NULL);
}

zsh_status_t zsh_optim_host_apply(zsh_optim_t *opt, float *p, const void *g, float *m, float *v,
                                  void *out, size_t n, const zsh_update_t *u)
{
    zsh_optim_apply_out(opt, p, g, m, v, out, n, u);
    return ZSH_OK;
}

void *zsh_optim_host_shard_dst(zsh_optim_t *opt, zsh_obucket_t *b)
{
    (void)opt;
    return (b->nvme.gtransit != NULL) ? b->nvme.gtransit : b->grad_shard;
}

/* The reduced shard is where the reduction left it: nothing goes down. */
zsh_status_t zsh_optim_host_grad_down(zsh_optim_t *opt, zsh_obucket_t *b)
{
    (void)opt;
    (void)b;
    return ZSH_OK;
}

zsh_status_t zsh_optim_host_grad_landed(zsh_optim_t *opt, zsh_obucket_t *b, bool wait)
{
    (void)opt;
    (void)b;
    (void)wait;
    return ZSH_OK;
}

/* On the host: cannot fail. */
zsh_status_t zsh_optim_update_view_host(zsh_optim_t *opt, zsh_obucket_t *b,
                                        const zsh_update_t *u, size_t s0, size_t e0,
                                        const zsh_swap_view_t *view)
{
    return zsh_optim_update_range(opt, b, u, s0, e0, view, NULL);
}

static zsh_status_t zsh_optim_host_failed(zsh_optim_t *opt, zsh_status_t status)
{
    (void)opt;
    return status;
}

static void zsh_optim_host_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    (void)opt;
    stats->device = false;
}

const zsh_dev_ops_t zsh_dev_host_ops = {
    .name          = "host",
    .device        = false,
    .offloaded     = false,
    .setup         = zsh_optim_host_nothing,
    .setup_buckets = zsh_optim_host_nothing,
    .teardown      = zsh_optim_host_end,
    .copy          = zsh_optim_host_copy,
    .to_float      = zsh_optim_host_to_float,
    .sync          = zsh_optim_host_nothing,
    .host_tmp      = zsh_optim_host_tmp,
    .host_tmp_free = zsh_optim_host_tmp_free,
    .file_patch    = zsh_tier_patch,
    .apply         = zsh_optim_host_apply,
    .grad_sumsq    = zsh_optim_host_grad_sumsq,
    .shard_dst     = zsh_optim_host_shard_dst,
    .grad_down     = zsh_optim_host_grad_down,
    .grad_landed   = zsh_optim_host_grad_landed,
    .copies_wait   = zsh_optim_host_nothing,
    .update_bucket = zsh_optim_update_bucket,
    .update_view   = zsh_optim_update_view_host,
    .close_step    = zsh_optim_host_end,
    .failed        = zsh_optim_host_failed,
    .stats         = zsh_optim_host_stats,
};
