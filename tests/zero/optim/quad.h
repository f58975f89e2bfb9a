/*
 * A small synthetic model for optimizer tests: six parameters of awkward
 * sizes and a weighted quadratic loss over a global batch of 12 examples
 * whose targets change every step. Each rank computes the gradient of its
 * contiguous slice of the batch, scaled by 1 / 12, through the same
 * fetch / release / grad-ready / step calls a framework makes, so any stage
 * at any rank count can be compared with one rank at stage 0.
 */
#ifndef ZSH_TESTS_OPTIM_QUAD_H_
#define ZSH_TESTS_OPTIM_QUAD_H_

#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdbool.h>

#define ZSH_QUAD_NPARAMS  6
#define ZSH_QUAD_MAXSTEPS 8

extern const size_t zsh_quad_sizes[ZSH_QUAD_NPARAMS];

/* Ψ, the elements of all parameters. */
size_t zsh_quad_psi(void);

typedef struct zsh_quad_run {
    double            loss[ZSH_QUAD_MAXSTEPS];
    int               applied[ZSH_QUAD_MAXSTEPS];
    float            *final[ZSH_QUAD_NPARAMS]; /* full parameters after the last step */
    zsh_optim_stats_t stats;                   /* after the last step */
    /* Optional: which parameter order the forward pass of step k uses
     * (NULL: registration order). */
    const size_t     *(*order)(int step);
    /* Optional: multiply rank @bad_rank's gradient by inf at step @bad_step (1-based). */
    int               bad_rank, bad_step;
} zsh_quad_run_t;

/* Train @steps steps with @cfg on @comm; false after a failed expectation. */
bool zsh_quad_train(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int steps,
                    zsh_quad_run_t *run);

/* The same on a communicator of this rank alone, at stage 0: the reference. */
bool zsh_quad_reference(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int steps,
                        zsh_quad_run_t *run);

/* Compare losses and final parameters of @run with @ref within @tol
 * (absolute plus relative); reports the first mismatch. */
bool zsh_quad_expect_near(const zsh_quad_run_t *run, const zsh_quad_run_t *ref, int steps,
                          double tol, const char *what);

void zsh_quad_free(zsh_quad_run_t *run);

#endif
