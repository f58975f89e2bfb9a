/*
 * The state of a zsh_train run, shared by its main loop and its set-up.
 */
#ifndef ZSH_TRAIN_TRAIN_H_
#define ZSH_TRAIN_TRAIN_H_

#include "train/data.h"
#include "train/model.h"
#include "train/options.h"
#include "train/split.h"

#include <zeroshard/optim.h>

typedef struct zsh_train {
    zsh_train_opts_t  o;
    zsh_train_dims_t  d;
    zsh_train_text_t  text;
    zsh_comm_t       *comm;
    int               rank, size;
    zsh_optim_t      *opt;
    size_t            np;       /* the model's parameters (train/model.h order) */
    zsh_param_t     **handles;  /* what was registered: weights as --tiles row blocks */
    size_t           *first_handle; /* per parameter: its first handle */
    size_t           *ntiles;   /* per parameter: its handles */
    size_t           *rpt;      /* per parameter: output rows per tile (weights) */
    size_t            nhandles;
    size_t            maxtile;  /* elements of the largest handle */
    size_t            maxout;   /* the widest layer's outputs */
    void            **init;     /* stages 0-2: the framework's parameter buffers */
    size_t            rows, first;  /* this rank's slice of the global batch */
    uint8_t          *tokens, *targets;
    float           **acts;     /* acts[0]: embeddings; acts[l + 1]: output of layer l */
    float            *dbuf[2];  /* ping-pong gradients of the activations */
    float            *w32, *b32, *g32; /* widened weights, bias; fp32 gradient */
    uint16_t         *g16;      /* narrowed gradient (mixed precision) */
    zsh_train_split_t split;    /* where this step's time went */
} zsh_train_t;

/* Handle of tile @k of parameter @i (k = 0 for an untiled one). */
static inline zsh_param_t *zsh_train_param(const zsh_train_t *t, size_t i, size_t k)
{
    return t->handles[t->first_handle[i] + k];
}

/* Build the optimizer, register the parameters and allocate the activations. */
zsh_status_t zsh_train_setup(zsh_train_t *t);

/* Print the bytes per rank (the most of any rank); 0 on success. Collective. */
int zsh_train_report(zsh_train_t *t);

void zsh_train_teardown(zsh_train_t *t);

#endif
