/*
 * The update rules written from their published definitions (PyTorch's
 * Adam, AdamW and SGD, dampening 0), in double and one element at a time,
 * independently of the vectorized kernels (optim/rule/rule.h): the reference the
 * kernels and whole training runs are checked against.
 */
#ifndef ZSH_TESTS_OPTIM_RULE_REF_H_
#define ZSH_TESTS_OPTIM_RULE_REF_H_

#include <zeroshard/optim.h>

#include <stddef.h>

/* Step @t (1-based) of Adam or AdamW (c->kind) on @n elements, with the
 * gradient @g multiplied by @gm first. */
void zsh_rule_adam_ref(double *p, const double *g, double *m, double *v, size_t n,
                       const zsh_optim_config_t *c, int t, double gm);

/* Step @t of SGD on @n elements; @buf is the momentum buffer. */
void zsh_rule_sgd_ref(double *p, const double *g, double *buf, size_t n,
                      const zsh_optim_config_t *c, int t, double gm);

/*
 * The same rules in fp32, in torch.optim's operations and roundings on
 * ATen's CPU kernels (torch 1.13, for-loop and foreach): scalars computed in
 * double and rounded once to fp32, a fused multiply-add for each add with
 * alpha and for addcmul, no other fusing. The kernels give these bits.
 */
void zsh_rule_adam_torch(float *p, const float *g, float *m, float *v, size_t n,
                         const zsh_optim_config_t *c, int t, float gm);
void zsh_rule_sgd_torch(float *p, const float *g, float *buf, size_t n,
                        const zsh_optim_config_t *c, int t, float gm);

#endif
