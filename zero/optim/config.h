/*
 * The ZeRO layer's ZSH_* variables: defaults for the zsh_optim_config_t
 * fields a caller leaves at zero.
 */
#ifndef ZSH_ZERO_OPTIM_CONFIG_H_
#define ZSH_ZERO_OPTIM_CONFIG_H_

#include "core/config.h"

#include <zeroshard.h>

#include <stddef.h>

typedef struct zsh_zero_config {
    size_t   bucket_size;     /* bytes per flat bucket */
    size_t   max_live_bytes;  /* stage 3: gathered bucket bytes kept live */
    unsigned prefetch;        /* stage 3: buckets gathered ahead of use */
    int      offload_optimizer; /* zsh_offload_t: none, cpu, nvme */
    int      offload_params;    /* zsh_offload_t, stage 3 */
    char     nvme_dir[ZSH_CONFIG_STR_MAX];
    size_t   host_mem_limit;  /* bytes of the NVMe tier's host buffers */
    size_t   sub_group_size;  /* elements per sub-group of the step */
    char     job_id[ZSH_CONFIG_STR_MAX]; /* names the job's directory of NVMe files */
    unsigned update_threads;  /* threads applying the update rule in a step */
    char     hpz[ZSH_CONFIG_STR_MAX]; /* stage 3: off, auto or the secondary group size */
    int      quantize_weights; /* stage 3, qwZ: zsh_quantize_names' index: off, on, auto */
    unsigned quantize_block;   /* elements per quantization block */
    int      quantize_grads;   /* stages 2-3, qgZ: zsh_quantize_names' index */
    unsigned quantize_grad_bits; /* bits of qgZ's levels: 8 or 4 */
} zsh_zero_config_t;

/* The names of zsh_offload_t's values, as ZSH_OFFLOAD_* take them. */
extern const char *const zsh_offload_names[];

/* The names of ZSH_QUANTIZE_WEIGHTS' values, in the order of their indices. */
extern const char *const zsh_quantize_names[];

/* Defaults, then the environment: only these variables, so a malformed one
 * of another layer never fails an optimizer. */
zsh_status_t zsh_zero_config_read(zsh_zero_config_t *cfg);

#endif
