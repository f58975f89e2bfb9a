#ifndef ZSH_TRAIN_OPTIONS_H_
#define ZSH_TRAIN_OPTIONS_H_

#include <zeroshard/optim.h>

#include <stddef.h>
#include <stdint.h>

typedef struct zsh_train_opts {
    int              stage;
    unsigned long    steps;
    zsh_dtype_t      precision;
    zsh_optim_kind_t kind;
    uint64_t         seed;
    size_t           hidden, layers, embed, context, batch;
    size_t           tiles;       /* row blocks per linear weight; 0: by the live budget */
    double           params;      /* --params: about this many parameters; 0: not given */
    double           lr;          /* 0: the optimizer's default for zsh_train */
    float            clip;        /* max global gradient norm, 0: none */
    size_t           bucket_size; /* bytes */
    size_t           max_live;    /* bytes */
    const char      *data;
    zsh_offload_t    offload_optimizer; /* ZSH_OFFLOAD_DEFAULT: not given */
    zsh_offload_t    offload_params;
    const char      *nvme_dir;    /* NULL: not given */
    size_t           host_mem_limit; /* bytes; 0: not given */
    int              hpz;         /* ZSH_HPZ_AUTO, ZSH_HPZ_OFF or a group size; 0: not given */
    int              loops;       /* --matmul loops: the model's products without the BLAS */
    int              deterministic; /* --deterministic: zsh_optim_config_t's, and exact losses */
    int              loss_bits;     /* --loss-bits (and --deterministic): losses in hexadecimal */
    const char      *ckpt_dir;    /* NULL: no checkpoints */
    unsigned long    ckpt_every;  /* save after every step that is a multiple; 0: none */
    int              ckpt_last;   /* save after the last step (--ckpt-dir without --ckpt-every) */
    int              resume;      /* load ckpt_dir's latest checkpoint before training */
    unsigned long    snap_every;  /* zsh_optim_snapshot after every multiple; 0: never */
} zsh_train_opts_t;

/* The live budget --params sizes its tiles for when --max-live is not given:
 * the optimizer layer's own default (ZSH_MAX_LIVE_BYTES). */
#define ZSH_TRAIN_PARAMS_MAX_LIVE ((size_t)256 << 20)

/* Parse argv; 0 to run, 1 to exit successfully (--help), 2 on a usage error. */
int zsh_train_parse(int argc, char **argv, zsh_train_opts_t *o);

#endif
