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
    size_t           tiles;       /* row blocks per linear weight */
    float            lr;          /* 0: the optimizer's default for zsh_train */
    float            clip;        /* max global gradient norm, 0: none */
    size_t           bucket_size; /* bytes */
    size_t           max_live;    /* bytes */
    const char      *data;
} zsh_train_opts_t;

/* Parse argv; 0 to run, 1 to exit successfully (--help), 2 on a usage error. */
int zsh_train_parse(int argc, char **argv, zsh_train_opts_t *o);

#endif
