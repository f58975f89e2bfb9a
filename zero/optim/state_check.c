/*
 * Before a walk of the optimizer's state (state.h): what must be at rest,
 * and the ranks' agreement on each local outcome, so that a rank that
 * stops never leaves the others waiting in a collective.
 */
#include "optim/state.h"
#include "optim/optim_impl.h"

#include "core/status.h"

#include <stdint.h>
#include <stdio.h>

zsh_status_t zsh_optim_state_prepare(zsh_optim_t *opt, const char *fn)
{
    zsh_status_t status = zsh_optim_comm_check(opt, fn);

    if (status == ZSH_OK) {
        zsh_optim_param_reads_drop(opt);
    }
    return status;
}

zsh_status_t zsh_optim_state_check(zsh_optim_t *opt, const char *fn, bool load)
{
    zsh_status_t status = zsh_tier_check(opt, fn);
    size_t i;

    if (status != ZSH_OK) {
        return status;
    }
    if (opt->dev_ops->device) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "%s: checkpoints of device parameters are not "
                         "supported yet", fn);
    }
    for (i = 0; i < opt->nparams; i++) {
        if (opt->params[i]->has_grad) {
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s' has a gradient pending; "
                             "step or zero_grad first", fn, opt->params[i]->name);
        }
        if (load && opt->params[i]->fetched) {
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s' is fetched; release it "
                             "first", fn, opt->params[i]->name);
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_state_agree(zsh_optim_t *opt, zsh_status_t mine)
{
    int32_t me = (mine != ZSH_OK) ? opt->rank + 1 : 0, any = 0;
    struct {
        int32_t status;
        char    text[1020];
    } why = {0, ""};
    char own[sizeof(why.text)] = "";
    zsh_status_t status;
    int root;

    if (mine != ZSH_OK) {
        snprintf(own, sizeof(own), "%s", zsh_last_error());
    }
    status = zsh_optim_comm_status(opt, zsh_allreduce(&me, &any, 1, ZSH_INT32, ZSH_MAX,
                                                      opt->comm));
    if ((status == ZSH_OK) && (any != 0)) {
        /* Every rank reports what the highest failing rank found. */
        root = any - 1;
        if (opt->rank == root) {
            why.status = (int32_t)mine;
            snprintf(why.text, sizeof(why.text), "%s", own);
        }
        status = zsh_optim_comm_status(opt, zsh_broadcast(&why, sizeof(why), ZSH_UINT8, root,
                                                          opt->comm));
        why.text[sizeof(why.text) - 1] = '\0';
        if ((status == ZSH_OK) && (mine == ZSH_OK)) {
            return zsh_error((zsh_status_t)why.status, "rank %d: %s", root, why.text);
        }
    }
    if (mine != ZSH_OK) { /* its own failure, whatever became of the agreement */
        return zsh_error(mine, "%s", own);
    }
    return status;
}

zsh_comm_t *zsh_optim_state_comm(const zsh_optim_t *opt)
{
    return opt->comm;
}

zsh_status_t zsh_optim_state_comm_status(zsh_optim_t *opt, zsh_status_t status)
{
    return zsh_optim_comm_status(opt, status);
}
