/*
 * What the tests of a parameter's states from outside the layer share
 * (param_state_test.c, master_state_test.c): an optimizer of three
 * parameters of awkward sizes, in fp32 or bf16, its states in memory or the
 * NVMe tier, trained on gradients every rank gives alike (parameter 1 has
 * none at step 1, so its count of updates falls behind).
 */
#ifndef ZSH_TEST_PARAM_STATE_RUN_H_
#define ZSH_TEST_PARAM_STATE_RUN_H_

#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stddef.h>

#define ZSH_PS_NPARAMS 3
#define ZSH_PS_MOST    301

extern const size_t zsh_ps_sizes[ZSH_PS_NPARAMS];

typedef struct {
    zsh_optim_t *opt;
    void        *buf[ZSH_PS_NPARAMS]; /* of the precision */
    zsh_param_t *param[ZSH_PS_NPARAMS];
    zsh_dtype_t  precision;
    char        *dir; /* the NVMe tier's, or NULL */
} zsh_ps_run_t;

/* Element @i of parameter @p: its initial value, and its gradient at step
 * @t (multiples of 2^-6 below 1: exact in bf16 and in the sum over up to 8
 * ranks). */
float zsh_ps_init(int p, size_t i);
float zsh_ps_grad(int p, size_t i, int t);
/* Parameter @p has no gradient at step @t. */
bool zsh_ps_skips(int p, int t);

void zsh_ps_config(zsh_optim_config_t *cfg, zsh_optim_kind_t kind, int stage);
/* @kind at @stage with parameters of @precision (fp32 or bf16), the states
 * in the NVMe tier with @nvme, into @r (zsh_ps_free() it whatever this
 * returns). */
bool zsh_ps_make(zsh_comm_t *comm, zsh_optim_kind_t kind, int stage, zsh_dtype_t precision,
                 bool nvme, zsh_ps_run_t *r);
void zsh_ps_free(zsh_ps_run_t *r);
/* Steps [from, to]. */
bool zsh_ps_steps(zsh_ps_run_t *r, int from, int to);
/* @n elements of @es bytes the same, bit for bit; else a failure naming @what. */
bool zsh_ps_same_bits(const void *got, const void *want, size_t n, size_t es, const char *what);

#endif
