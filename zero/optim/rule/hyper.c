#include "optim/rule/hyper.h"

#include "core/status.h"

#include <math.h>

zsh_status_t zsh_optim_check_hyper(const char *fn, const zsh_optim_config_t *cfg)
{
    /* Written so that NaN fails every comparison, and an infinity the
     * isfinite() beside it. */
    if (!(cfg->lr >= 0.0f) || !(cfg->eps > 0.0f) || !(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f) ||
        !(cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f) || !(cfg->max_grad_norm >= 0.0f) ||
        !(cfg->momentum >= 0.0f) || !(cfg->weight_decay >= 0.0f) ||
        !(cfg->loss_scale >= 0.0f) || !(cfg->min_loss_scale > 0.0f) || !isfinite(cfg->lr) ||
        !isfinite(cfg->eps) || !isfinite(cfg->max_grad_norm) || !isfinite(cfg->momentum) ||
        !isfinite(cfg->weight_decay) || !isfinite(cfg->loss_scale) ||
        !isfinite(cfg->min_loss_scale)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: lr=%g eps=%g beta1=%g beta2=%g momentum=%g weight_decay=%g "
                         "max_grad_norm=%g loss_scale=%g min_loss_scale=%g: one is out of range "
                         "(lr, momentum, weight_decay, max_grad_norm and loss_scale finite and "
                         ">= 0, eps and min_loss_scale finite and > 0, betas in [0, 1))",
                         fn, cfg->lr, cfg->eps, cfg->beta1, cfg->beta2, cfg->momentum,
                         cfg->weight_decay, cfg->max_grad_norm, cfg->loss_scale,
                         cfg->min_loss_scale);
    }
    if (cfg->nesterov && (cfg->momentum <= 0.0f)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: nesterov needs momentum > 0", fn);
    }
    return ZSH_OK;
}

int zsh_optim_rule_states(zsh_optim_kind_t kind, float momentum)
{
    return (kind != ZSH_OPTIM_SGD) ? 2 : (momentum > 0.0f) ? 1 : 0;
}
