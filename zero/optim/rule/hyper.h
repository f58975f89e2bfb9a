/*
 * The ranges of the update rule's settings, written once: zsh_optim_create
 * holds a caller's configuration to them, and a checkpoint's manifest is
 * held to the same ranges, with the same words, before a load adopts its
 * hyperparameters (a manifest is data a hostile writer may have signed
 * again). Kept apart from optim.c so the manifest's reader (and its fuzzer)
 * needs nothing else of the optimizer.
 */
#ifndef ZSH_OPTIM_HYPER_H_
#define ZSH_OPTIM_HYPER_H_

#include <zeroshard/optim.h>

/* ZSH_OK when @cfg's rule settings are in range: lr, weight_decay,
 * momentum, max_grad_norm >= 0, eps > 0, betas in [0, 1), all finite; a
 * loss scale finite and >= 0 (0: the default), min_loss_scale finite and
 * > 0; nesterov only with momentum. Else ZSH_ERR_INVALID_ARG, "@fn: ..."
 * naming the values. */
zsh_status_t zsh_optim_check_hyper(const char *fn, const zsh_optim_config_t *cfg);

/* fp32 states per element that rule @kind with @momentum keeps: 2 for Adam
 * and AdamW, 1 for SGD with momentum, 0 for plain SGD. */
int zsh_optim_rule_states(zsh_optim_kind_t kind, float momentum);

#endif
