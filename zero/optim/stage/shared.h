/*
 * What two or three stages share, for the stage tables of this folder only
 * (the rest of the optimizer reaches a stage through optim/stage.h).
 */
#ifndef ZSH_OPTIM_STAGE_SHARED_H_
#define ZSH_OPTIM_STAGE_SHARED_H_

#include "optim/optim_impl.h"

/* replicas.c: what every rank keeps whole. Stages 0-1: the gradients, a
 * buffer of @elems elements reduced in place; stages 0-2: the parameters,
 * the framework's buffers. */
bool         zsh_stage_grads_full_alloc(zsh_optim_t *opt, zsh_obucket_t *b, size_t elems);
void         zsh_stage_grads_full_free(zsh_optim_t *opt, zsh_obucket_t *b, size_t elems,
                                       zsh_comm_t *comm);
zsh_status_t zsh_stage_grad_full_dst(zsh_optim_t *opt, zsh_obucket_t *b,
                                     const zsh_param_t *param, char **dst_p);
zsh_status_t zsh_stage_params_hold(zsh_optim_t *opt, zsh_obucket_t *b);
zsh_status_t zsh_stage_fetch_buf(zsh_optim_t *opt, zsh_param_t *param, void **data_p);
zsh_status_t zsh_stage_release_buf(zsh_optim_t *opt, zsh_param_t *param);
zsh_status_t zsh_stage_update_params(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                     size_t s0, size_t e0, const zsh_swap_view_t *view,
                                     void *out);
zsh_status_t zsh_stage_publish_prepare(zsh_optim_t *opt, zsh_obucket_t *b);
zsh_status_t zsh_stage_params_up_buf(zsh_optim_t *opt, zsh_obucket_t *b, size_t s0, size_t e0,
                                     const char *src, void *stream);
void        *zsh_stage_param_buf_at(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                    size_t s);
zsh_status_t zsh_stage_set_param_buf(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                     const void *values);
zsh_status_t zsh_stage_params_buf_rw(zsh_optim_t *opt, zsh_obucket_t *b, size_t s, size_t e,
                                     void *vals, bool write);
zsh_status_t zsh_stage_nothing(zsh_optim_t *opt);
zsh_status_t zsh_stage_bucket_nothing(zsh_optim_t *opt, zsh_obucket_t *b);
void         zsh_stage_end_nothing(zsh_optim_t *opt);

/* shards.c: what each rank keeps a shard of. Stages 1-3: the states, whose
 * region is the owned shard; stages 2-3: the gradients, staged and
 * reduce-scattered into a shard. */
size_t       zsh_stage_shard_base(const zsh_optim_t *opt, const zsh_obucket_t *b);
size_t       zsh_stage_shard_count(const zsh_optim_t *opt, const zsh_obucket_t *b);
size_t       zsh_stage_shard_end(const zsh_optim_t *opt, const zsh_obucket_t *b);
zsh_status_t zsh_stage_norm_allreduce(zsh_optim_t *opt, zsh_norm_sum_t *sum);
bool         zsh_stage_grads_shard_alloc(zsh_optim_t *opt, zsh_obucket_t *b);
void         zsh_stage_grads_shard_free(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm);
zsh_status_t zsh_stage_grad_staging_dst(zsh_optim_t *opt, zsh_obucket_t *b,
                                        const zsh_param_t *param, char **dst_p);
zsh_status_t zsh_stage_reduce_staged(zsh_optim_t *opt, zsh_obucket_t *b);
const void  *zsh_stage_grads_shard(const zsh_optim_t *opt, const zsh_obucket_t *b, size_t *n_p);

#endif
