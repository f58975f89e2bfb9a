/*
 * What the device optimizer tests share: the quad model (quad.h) trained
 * with its parameters and gradients in CUDA device memory and in host
 * memory on one communicator, and the comparison of the two runs; skipping
 * where the optimizer cannot run on a device; the settings of a case.
 */
#ifndef ZSH_TESTS_OPTIM_DEVICE_QUAD_H_
#define ZSH_TESTS_OPTIM_DEVICE_QUAD_H_

#include "quad.h"

#include <stdbool.h>

/* Steps of every device training. */
#define ZSH_DV_STEPS 4

/* cudaMalloc'd buffers, put and got with cudaMemcpy (cuda_helpers.h). */
extern const zsh_quad_mem_t zsh_dv_mem;

extern const zsh_dtype_t zsh_dv_precs[3];      /* fp32, bf16, fp16 */
extern const char *const zsh_dv_prec_names[3];
extern const char *const zsh_dv_rule_names[3]; /* the rules of zsh_dv_config() */

/* NULL where the optimizer can run on a device here, else why not. */
const char *zsh_dv_no_device(void);

/* Skips the running test where the optimizer cannot run on a device. */
#define ZSH_DV_NEED_DEVICE() \
    do { \
        const char *zsh_why_ = zsh_dv_no_device(); \
        if (zsh_why_ != NULL) { \
            ZSH_SKIP(zsh_why_); \
        } \
    } while (0)

/* A one-rank communicator of this rank's own (collective over @comm), or
 * NULL after a test failure. */
zsh_comm_t *zsh_dv_self(zsh_comm_t *comm);

/* The settings of a case; @rule: 0 adamw with weight decay, 1 adam, 2 sgd
 * with Nesterov momentum. Every tier and hpZ are set, so the ZSH_*
 * variables of the environment change nothing. */
void zsh_dv_config(zsh_optim_config_t *cfg, int stage, zsh_dtype_t prec, int rule);

/* Losses, applied flags and final parameters are the same bits. */
bool zsh_dv_expect_bits(const zsh_quad_run_t *run, const zsh_quad_run_t *ref, int steps,
                        const char *what);

/* A device run @dev against the host run @host of the same settings: the
 * same bits when @bits, else within 1e-6; the step counters and the loss
 * scale equal, the gradient norm within 1e-6; device memory counted in the
 * device run's stats and none in the host run's. */
void zsh_dv_compare(const zsh_quad_run_t *dev, const zsh_quad_run_t *host, bool bits,
                    const char *what);

/* Train @cfg on @self with the parameters in host memory into @host and in
 * device memory into @dev, both from @tmpl (which step overflows, if any);
 * false after a test failure. */
bool zsh_dv_pair(zsh_comm_t *self, const zsh_optim_config_t *cfg, const zsh_quad_run_t *tmpl,
                 zsh_quad_run_t *dev, zsh_quad_run_t *host);

/* Whether @msg mentions @word, ignoring case. */
bool zsh_dv_mentions(const char *msg, const char *word);

#define ZSH_DV_EXPECT_MENTIONS(_word) \
    do { \
        if (!zsh_dv_mentions(zsh_last_error(), (_word))) { \
            zsh_test_fail(__FILE__, __LINE__, "expected the error to mention \"%s\": %s", \
                          (_word), zsh_last_error()); \
        } \
    } while (0)

#endif
