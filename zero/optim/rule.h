/*
 * Update rules on fp32 arrays: the vectorized CPU kernels of the optimizer.
 *
 * They see only contiguous runs of (parameter, gradient, states), so the
 * same kernel serves a full replica, a shard or a slice of a framework
 * buffer. The loops are plain element-wise code over restrict pointers that
 * gcc -O3 vectorizes; per-step scalars are folded into zsh_update_t first.
 */
#ifndef ZSH_OPTIM_RULE_H_
#define ZSH_OPTIM_RULE_H_

#include <zeroshard/optim.h>

#include <stddef.h>

typedef struct zsh_update {
    zsh_optim_kind_t kind;
    float lr, beta1, beta2, eps, weight_decay, momentum;
    int   nesterov;
    float bc1, bc2;    /* Adam bias corrections 1 - beta^t */
    float grad_mul;    /* 1 / loss scale, times the clipping coefficient */
} zsh_update_t;

/* Per-step scalars for step @t (1-based) of @cfg, with @grad_mul. */
zsh_update_t zsh_update_make(const zsh_optim_config_t *cfg, unsigned long t, float grad_mul);

/* Adam or AdamW (u->kind) over @n elements. */
void zsh_adam_update(float *restrict p, const float *restrict g, float *restrict m,
                     float *restrict v, size_t n, const zsh_update_t *u);

/* SGD over @n elements; @buf is the momentum buffer (unused without momentum). */
void zsh_sgd_update(float *restrict p, const float *restrict g, float *restrict buf, size_t n,
                    const zsh_update_t *u);

#endif
