/*
 * The device optimizer tests' shared parts (device_quad.h).
 */
#include "device_quad.h"

#include "cuda_helpers.h"

#include <zeroshard/device.h>

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const zsh_quad_mem_t zsh_dv_mem = {zsh_ck_dev_alloc, zsh_ck_dev_free, zsh_ck_put,
                                          zsh_ck_get};

const char *const zsh_dv_prec_names[3] = {"fp32", "bf16", "fp16"};
const zsh_dtype_t zsh_dv_precs[3] = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
const char *const zsh_dv_rule_names[3] = {"adamw+wd", "adam", "sgd+nesterov"};

/* NULL where the optimizer can run on a device here, else why not. */
const char *zsh_dv_no_device(void)
{
#if defined(ZSH_HAVE_NVCC) && defined(ZSH_HAVE_NCCL)
    static __thread char why[512]; /* ranks are threads of one process */

    if (!zsh_device_available()) {
        snprintf(why, sizeof(why), "the optimizer cannot run on a device here: %s",
                 zsh_last_error());
        return why;
    }
    return NULL;
#else
    return "built without the device optimizer: needs nvcc, CUDA and NCCL "
           "(configure --with-cuda --with-nccl)";
#endif
}

/* A one-rank communicator of this rank's own (collective over @comm). */
zsh_comm_t *zsh_dv_self(zsh_comm_t *comm)
{
    zsh_comm_t *self = NULL;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_split(comm, zsh_comm_rank(comm), 0, &self));
    return self;
}

/* The settings of a case: @rule indexes zsh_dv_rule_names. Every tier and
 * hpZ are set, so the ZSH_* variables of the environment change nothing. */
void zsh_dv_config(zsh_optim_config_t *cfg, int stage, zsh_dtype_t prec, int rule)
{
    zsh_optim_config_init(cfg);
    cfg->stage             = stage;
    cfg->precision         = prec;
    cfg->offload_optimizer = ZSH_OFFLOAD_NONE;
    cfg->offload_params    = ZSH_OFFLOAD_NONE;
    cfg->hpz               = ZSH_HPZ_OFF;
    cfg->bucket_size       = 1024; /* several buckets, the large parameter alone in one */
    cfg->lr                = 0.05f;
    switch (rule) {
    case 0: cfg->kind = ZSH_OPTIM_ADAMW; cfg->weight_decay = 0.1f; break;
    case 1: cfg->kind = ZSH_OPTIM_ADAM; cfg->weight_decay = 0.01f; break;
    default:
        cfg->kind     = ZSH_OPTIM_SGD;
        cfg->lr       = 0.1f;
        cfg->momentum = 0.9f;
        cfg->nesterov = 1;
        break;
    }
    if (prec == ZSH_FLOAT16) {
        cfg->loss_scale = 256.0f; /* dynamic; no gradient of the model overflows at it */
    }
}

/* Losses, applied flags and final parameters are the same bits. */
bool zsh_dv_expect_bits(const zsh_quad_run_t *run, const zsh_quad_run_t *ref, int steps,
                        const char *what)
{
    size_t p, e;
    int k;

    for (k = 0; k < steps; k++) {
        if ((memcmp(&run->loss[k], &ref->loss[k], sizeof(double)) != 0) ||
            (run->applied[k] != ref->applied[k])) {
            zsh_test_fail(__FILE__, __LINE__, "%s: step %d: loss %a applied %d, host %a applied %d",
                          what, k + 1, run->loss[k], run->applied[k], ref->loss[k],
                          ref->applied[k]);
            return false;
        }
    }
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            if (memcmp(&run->final[p][e], &ref->final[p][e], sizeof(float)) != 0) {
                zsh_test_fail(__FILE__, __LINE__, "%s: final quad%zu[%zu] is %a, host %a", what, p,
                              e, (double)run->final[p][e], (double)ref->final[p][e]);
                return false;
            }
        }
    }
    return true;
}

/* A device run @dev against the host run @host of the same settings:
 * bits when @bits, else within 1e-6; the step counters and the loss scale
 * equal; the norm within 1e-6; the device counted on one side only. */
void zsh_dv_compare(const zsh_quad_run_t *dev, const zsh_quad_run_t *host, bool bits,
                    const char *what)
{
    const zsh_optim_stats_t *d = &dev->stats, *h = &host->stats;
    int k;

    if (bits) {
        zsh_dv_expect_bits(dev, host, ZSH_DV_STEPS, what);
    } else if (zsh_quad_expect_near(dev, host, ZSH_DV_STEPS, 1e-6, what)) {
        for (k = 0; k < ZSH_DV_STEPS; k++) {
            if (dev->applied[k] != host->applied[k]) {
                zsh_test_fail(__FILE__, __LINE__, "%s: step %d applied %d on the device, %d on "
                              "the host", what, k + 1, dev->applied[k], host->applied[k]);
            }
        }
    }
    if ((d->steps != h->steps) || (d->skipped_steps != h->skipped_steps) ||
        (d->loss_scale != h->loss_scale) ||
        !(fabs(d->last_grad_norm - h->last_grad_norm) <= 1e-6 * h->last_grad_norm)) {
        zsh_test_fail(__FILE__, __LINE__, "%s: device steps %lu skipped %lu scale %g norm %.9g, "
                      "host %lu %lu %g %.9g", what, d->steps, d->skipped_steps,
                      (double)d->loss_scale, d->last_grad_norm, h->steps, h->skipped_steps,
                      (double)h->loss_scale, h->last_grad_norm);
    }
    if ((d->device != 1) || (d->device_bytes == 0) || (h->device != 0) ||
        (h->device_bytes != 0) || (h->device_peak_bytes != 0)) {
        zsh_test_fail(__FILE__, __LINE__, "%s: device run: device=%d device_bytes=%zu; host run: "
                      "device=%d device_bytes=%zu peak=%zu", what, d->device, d->device_bytes,
                      h->device, h->device_bytes, h->device_peak_bytes);
    }
}

/* Train @cfg with parameters on the device into @dev and in host memory
 * into @host, both starting from @tmpl (which step overflows, if any). */
bool zsh_dv_pair(zsh_comm_t *self, const zsh_optim_config_t *cfg, const zsh_quad_run_t *tmpl,
                 zsh_quad_run_t *dev, zsh_quad_run_t *host)
{
    *host    = *tmpl;
    *dev     = *tmpl;
    dev->mem = &zsh_dv_mem;
    return zsh_quad_train(self, cfg, ZSH_DV_STEPS, host) &&
           zsh_quad_train(self, cfg, ZSH_DV_STEPS, dev);
}

/* Whether @msg mentions @word, ignoring case. */
bool zsh_dv_mentions(const char *msg, const char *word)
{
    size_t i, j;

    for (i = 0; (msg != NULL) && (msg[i] != '\0'); i++) {
        for (j = 0; (word[j] != '\0') &&
                    (tolower((unsigned char)msg[i + j]) == tolower((unsigned char)word[j]));
             j++) {
        }
        if (word[j] == '\0') {
            return true;
        }
    }
    return false;
}
