/*
 * Where the model lives, as tables: what differs between parameters and
 * gradients in host memory, on a CUDA device with the rule run there, and
 * on a CUDA device with the optimizer offloaded to the host
 * (offload_optimizer cpu or nvme) is one table of typed functions each,
 * chosen at the first parameter registration (device.c), the host's until
 * then; the rest of the layer asks opt->dev_ops instead of testing where
 * the model is.
 *
 *            copies, sync      the rule and the norm    the reduced shard       the step
 *   host     memmove, none     host kernels             where it was reduced    in memory
 *   cuda     CUDA, its stream  CUDA kernels, the sum    where it was reduced    on the device
 *                              read back
 *   offload  CUDA, its stream  host kernels             down a copy stream      on the host, sent up
 *
 * The host table is host.c's, the CUDA one device.c's, the offload one
 * offload/offload_device.c's; the last two share the CUDA side's copies,
 * setup and stats, the first and last the host's rule and norm (declared
 * below).
 */
#ifndef ZSH_OPTIM_DEVICE_OPS_H_
#define ZSH_OPTIM_DEVICE_OPS_H_

#include "optim/norm.h"
#include "optim/rule/rule.h"
#include "optim/tier.h"

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stddef.h>

typedef struct zsh_obucket   zsh_obucket_t;
typedef struct zsh_swap_view zsh_swap_view_t;

typedef struct zsh_dev_ops {
    const char *name;
    bool        device;    /* parameters and gradients are CUDA device memory */
    bool        offloaded; /* the states and the rule are the host's, away from the model:
                            * fp32 master weights, gradient shards copied down */

    /* Setup before the buckets (the stream's communicator, the accounts'
     * place), after them (offload's streams, events and pinned buffers),
     * and teardown, before the tiers (its pinned buffers are theirs). */
    zsh_status_t (*setup)(zsh_optim_t *opt);
    zsh_status_t (*setup_buckets)(zsh_optim_t *opt);
    void         (*teardown)(zsh_optim_t *opt);

    /* Copies and widening wherever the model lives, in the optimizer's
     * stream order; sync waits for them (nothing on the host). */
    zsh_status_t (*copy)(zsh_optim_t *opt, void *dst, const void *src, size_t bytes);
    zsh_status_t (*to_float)(zsh_optim_t *opt, const void *src, float *dst, size_t n);
    zsh_status_t (*sync)(zsh_optim_t *opt);
    /* A zeroed host buffer that copies and kernels from the model's place
     * can fill (pinned with device parameters), or NULL with the reason. */
    void        *(*host_tmp)(zsh_optim_t *opt, size_t bytes);
    void         (*host_tmp_free)(zsh_optim_t *opt, void *ptr);
    /* Elements [s, e) of bucket @b's region of @kind's file written from
     * @src in the model's place (through a host copy from the device). */
    zsh_status_t (*file_patch)(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                               size_t e, const void *src);

    /* The rule over @n elements (update.c's zsh_optim_update_run()), and
     * the sum of squares of the gradients this rank owns, read back. */
    zsh_status_t (*apply)(zsh_optim_t *opt, float *p, const void *g, float *m, float *v,
                          void *out, size_t n, const zsh_update_t *u);
    zsh_status_t (*grad_sumsq)(zsh_optim_t *opt, zsh_norm_sum_t *acc);

    /* Gradients, stages 2-3: where a bucket's reduce-scatter leaves this
     * rank's shard; the shard sent down once reduced (offloaded tables:
     * grads.c calls it where offloaded is set), whether it has landed
     * (@wait: block till it has), and every copy down waited for. */
    void        *(*shard_dst)(zsh_optim_t *opt, zsh_obucket_t *b);
    zsh_status_t (*grad_down)(zsh_optim_t *opt, zsh_obucket_t *b);
    zsh_status_t (*grad_landed)(zsh_optim_t *opt, zsh_obucket_t *b, bool wait);
    zsh_status_t (*copies_wait)(zsh_optim_t *opt);

    /* The step: a bucket's owned region updated in memory (and sent up),
     * the owned range [s0, e0) of a bucket in a swapped sub-group's @view,
     * and the step's close (the copies' times added up). */
    zsh_status_t (*update_bucket)(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u);
    zsh_status_t (*update_view)(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                size_t s0, size_t e0, const zsh_swap_view_t *view);
    void         (*close_step)(zsh_optim_t *opt);

    /* A failure of the device's own work in a collective path: recorded as
     * the optimizer's, and the communicator aborted so no rank waits for
     * this one (the host's has none: @status as it is). */
    zsh_status_t (*failed)(zsh_optim_t *opt, zsh_status_t status);
    void         (*stats)(const zsh_optim_t *opt, zsh_optim_stats_t *stats);
} zsh_dev_ops_t;

extern const zsh_dev_ops_t zsh_dev_host_ops;    /* host.c */
extern const zsh_dev_ops_t zsh_dev_cuda_ops;    /* device.c */
extern const zsh_dev_ops_t zsh_dev_offload_ops; /* offload/offload_device.c */

/* What the tables share. The host's (host.c; the norm's sum, norm.c):
 * nothing to do, the rule and the norm, the reduced shard where it was
 * reduced, the update on the host of a swapped sub-group. The CUDA side's
 * (device.c): setup and teardown, copies, host buffers, the file's patch
 * through one, the failure and the stats. */
zsh_status_t zsh_optim_host_nothing(zsh_optim_t *opt);
void         zsh_optim_host_end(zsh_optim_t *opt);
zsh_status_t zsh_optim_host_apply(zsh_optim_t *opt, float *p, const void *g, float *m, float *v,
                                  void *out, size_t n, const zsh_update_t *u);
zsh_status_t zsh_optim_host_grad_sumsq(zsh_optim_t *opt, zsh_norm_sum_t *acc);
void        *zsh_optim_host_shard_dst(zsh_optim_t *opt, zsh_obucket_t *b);
zsh_status_t zsh_optim_host_grad_down(zsh_optim_t *opt, zsh_obucket_t *b);
zsh_status_t zsh_optim_host_grad_landed(zsh_optim_t *opt, zsh_obucket_t *b, bool wait);
zsh_status_t zsh_optim_update_view_host(zsh_optim_t *opt, zsh_obucket_t *b,
                                        const zsh_update_t *u, size_t s0, size_t e0,
                                        const zsh_swap_view_t *view);

zsh_status_t zsh_optim_cuda_setup(zsh_optim_t *opt);
void         zsh_optim_cuda_teardown(zsh_optim_t *opt);
zsh_status_t zsh_optim_cuda_copy(zsh_optim_t *opt, void *dst, const void *src, size_t bytes);
zsh_status_t zsh_optim_cuda_to_float(zsh_optim_t *opt, const void *src, float *dst, size_t n);
zsh_status_t zsh_optim_cuda_sync(zsh_optim_t *opt);
void        *zsh_optim_cuda_host_tmp(zsh_optim_t *opt, size_t bytes);
void         zsh_optim_cuda_host_tmp_free(zsh_optim_t *opt, void *ptr);
zsh_status_t zsh_optim_cuda_file_patch(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b,
                                       size_t s, size_t e, const void *src);
zsh_status_t zsh_optim_cuda_failed(zsh_optim_t *opt, zsh_status_t status);
void         zsh_optim_cuda_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats);

#endif
