/*
 * The global gradient norm, for clipping and for fp16 overflow detection.
 *
 * Each rank sums the squares of the reduced gradients it owns (all of them
 * at stage 0, where every rank holds the same full reduction), in double;
 * at stages 1-3 one 8-byte all-reduce adds the shards' sums. An inf or NaN
 * anywhere makes the sum non-finite on every rank, so the same all-reduce
 * is the overflow check, and every rank takes the same decision. Which
 * gradients a rank sums, and whether the sums are added up, is the
 * stage's (its table's grads_owned and norm_sum).
 */
#include "optim/optim_impl.h"

#include "core/status.h"

#define ZSH_NORM_CHUNK 512

double zsh_optim_sumsq(const zsh_optim_t *opt, const void *g, size_t n)
{
    float chunk[ZSH_NORM_CHUNK];
    const float *f;
    double sum = 0.0;
    size_t i, j, c;

    for (i = 0; i < n; i += c) {
        c = (n - i < ZSH_NORM_CHUNK) ? n - i : ZSH_NORM_CHUNK;
        if (opt->mixed) {
            zsh_optim_to_float(opt->cfg.precision, (const char *)g + i * opt->esize, chunk, c);
            f = chunk;
        } else {
            f = (const float *)g + i;
        }
        for (j = 0; j < c; j++) {
            sum += (double)f[j] * (double)f[j];
        }
    }
    return sum;
}

/* The host's sum of the owned gradients (the device's tables: where the
 * model is, device.c; on the host with the optimizer offloaded). */
zsh_status_t zsh_optim_host_grad_sumsq(zsh_optim_t *opt, double *sum_p)
{
    double sum = 0.0;
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        sum += opt->tiers.ops[ZSH_TK_GRADS]->grad_sumsq(opt, &opt->buckets[i]);
    }
    *sum_p = sum;
    return ZSH_OK;
}

zsh_status_t zsh_optim_grad_sumsq(zsh_optim_t *opt, double *sumsq_p)
{
    double sum = 0.0;
    zsh_status_t status;

    status = opt->dev_ops->grad_sumsq(opt, &sum);
    if (status != ZSH_OK) {
        return status;
    }
    status = opt->stage_ops->norm_sum(opt, &sum);
    if (status != ZSH_OK) {
        return status;
    }
    *sumsq_p = sum;
    return ZSH_OK;
}
