/*
 * The ZeRO paper's memory model, per rank, for Adam: parameters, gradients
 * and K bytes of optimizer state per parameter (fp32: 4 + 4 + 8; mixed
 * precision: 2 + 2 + 12, the master weights counted with the states), each
 * divided by N from the stage that shards it. Offload (ZeRO-Offload) moves
 * gradients and states to host memory. The layer's own accounting follows
 * the same model up to padding, and the tests hold it to that.
 */
#include "core/status.h"

#include <zeroshard/optim.h>

#include <stdbool.h>

zsh_status_t zsh_optim_estimate(const zsh_optim_estimate_in_t *in, zsh_optim_estimate_out_t *out)
{
    double psi, n, pbytes, gbytes, sbytes;
    bool mixed;

    if ((in == NULL) || (out == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_estimate: %s is NULL",
                         (in == NULL) ? "in" : "out");
    }
    if (!(in->params >= 0) || (in->ranks < 1) || (in->stage < 0) || (in->stage > 3) ||
        ((in->precision != ZSH_FLOAT32) && (in->precision != ZSH_BFLOAT16) &&
         (in->precision != ZSH_FLOAT16))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_estimate: params=%g ranks=%d stage=%d precision=%d: need "
                         "params >= 0, ranks >= 1, stage 0-3, precision fp32, bf16 or fp16",
                         in->params, in->ranks, in->stage, (int)in->precision);
    }
    psi    = in->params;
    n      = in->ranks;
    mixed  = in->precision != ZSH_FLOAT32;
    pbytes = (mixed ? 2.0 : 4.0) * psi;
    gbytes = pbytes;
    sbytes = (mixed ? 12.0 : 8.0) * psi;
    out->param_bytes = pbytes / ((in->stage >= 3) ? n : 1.0);
    out->grad_bytes  = gbytes / ((in->stage >= 2) ? n : 1.0);
    out->state_bytes = sbytes / ((in->stage >= 1) ? n : 1.0);
    out->host_bytes  = in->offload ? out->grad_bytes + out->state_bytes : 0.0;
    out->device_bytes =
        out->param_bytes + out->grad_bytes + out->state_bytes - out->host_bytes;
    out->comm_bytes = ((in->stage == 3) ? 3.0 : 2.0) * pbytes;
    return ZSH_OK;
}
