/*
 * A small synthetic model for optimizer tests: six parameters of awkward
 * sizes and a weighted quadratic loss over a global batch of 12 examples
 * whose targets change every step. Each rank computes the gradient of its
 * contiguous slice of the batch, scaled by 1 / 12, through the same
 * fetch / release / grad-ready / step calls a framework makes, so any stage
 * at any rank count can be compared with one rank at stage 0, and with the
 * same training computed without the optimizer (zsh_quad_by_definition).
 */
#ifndef ZSH_TESTS_OPTIM_QUAD_H_
#define ZSH_TESTS_OPTIM_QUAD_H_

#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <stdbool.h>

#define ZSH_QUAD_NPARAMS  6
#define ZSH_QUAD_MAXSTEPS 20

extern const size_t zsh_quad_sizes[ZSH_QUAD_NPARAMS];

/*
 * Where the buffers handed to the optimizer live, for a framework whose
 * parameters and gradients are not host memory (CUDA device memory, say):
 * the initial values and each gradient are put there, and what a fetch
 * returns is got back to the host, where the model computes. NULL in
 * zsh_quad_run_t::mem: host memory, handed over as computed.
 */
typedef struct zsh_quad_mem {
    void *(*alloc)(size_t bytes);                            /* NULL after a test failure */
    void  (*release)(void *buf);
    bool  (*put)(void *dst, const void *src, size_t bytes);  /* host to there */
    bool  (*get)(void *dst, const void *src, size_t bytes);  /* there to host */
} zsh_quad_mem_t;

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
    /* Optional: where parameters and gradients live (NULL: host memory). */
    const zsh_quad_mem_t *mem;
    /* Optional: called with the optimizer after step @hook_step. */
    void            (*hook)(zsh_comm_t *comm, zsh_optim_t *opt, void *arg);
    void             *hook_arg;
    int               hook_step;
} zsh_quad_run_t;

/* Train @steps steps with @cfg on @comm; false after a failed expectation. */
bool zsh_quad_train(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int steps,
                    zsh_quad_run_t *run);

/* Steps @first to @last (1-based, as in a run from step 1), loading the
 * optimizer from @load_dir before them and saving it to @save_dir after
 * them where these are not NULL: a run cut in two by a checkpoint. */
bool zsh_quad_train_ckpt(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int first, int last,
                         const char *load_dir, const char *save_dir, zsh_quad_run_t *run);

/* The same on a communicator of this rank alone, at stage 0: the reference. */
bool zsh_quad_reference(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int steps,
                        zsh_quad_run_t *run);

/*
 * The same training computed here, with neither the optimizer nor a
 * communicator: full-batch losses and gradients in double, the update rules
 * of rule_ref.c, clipping as torch.nn.utils.clip_grad_norm_ does it, and for
 * bf16 and fp16 what mixed precision defines: the forward and backward
 * passes see the fp32 master weights rounded to the precision, and the
 * gradient is rounded there at the loss scale (cfg->loss_scale, or
 * optim.h's default for the precision; it stays put: nothing here overflows,
 * and no run is as long as its window). Fills losses, applied flags, final
 * parameters and stats.last_grad_norm.
 */
void zsh_quad_by_definition(const zsh_optim_config_t *cfg, int steps, zsh_quad_run_t *run);

/* Compare losses and final parameters of @run with @ref within @tol
 * (absolute plus relative); reports the first mismatch. */
bool zsh_quad_expect_near(const zsh_quad_run_t *run, const zsh_quad_run_t *ref, int steps,
                          double tol, const char *what);

void zsh_quad_free(zsh_quad_run_t *run);

#endif
