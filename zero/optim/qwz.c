/*
 * qwZ (ZeRO++'s quantized weights): at stage 3, a bucket's first gather
 * after each update, the forward pass's, travels as int8 levels with an
 * fp32 scale per block (shard/qgather.h) and is dequantized into the
 * gathered buffer; the gathers after it, backward's or a re-gather after an
 * eviction, travel in full precision, or come from hpZ's secondary
 * partition, which holds what the first gather gave. So the forward pass
 * computes with the quantized weights and backward with the exact ones (or
 * with the same quantized ones through hpZ, as in the paper), and the
 * shards, master weights and the update never see a quantized value.
 *
 * The rule is the one hpZ uses to tell a first gather from a later one: a
 * mark per bucket set by the gather, cleared by an update (a step that
 * applies, or a value set), so it holds on every rank alike and the
 * collectives match.
 */
#include "optim/optim_impl.h"

#include "core/status.h"
#include "optim/config.h"
#include "quant/quant.h"

#include <stdlib.h>

/* ZSH_QUANTIZE_WEIGHTS' indices (config.c's zsh_quantize_names) as the field's values. */
static const int zsh_qwz_modes[] = {ZSH_QUANTIZE_OFF, ZSH_QUANTIZE_ON, ZSH_QUANTIZE_AUTO};

/* A mode field: 0 takes the variable's; ZSH_QUANTIZE_AUTO is on across nodes
 * where @applies, else off. ZSH_ERR_INVALID_ARG for an unknown value. */
static zsh_status_t zsh_qwz_mode(const zsh_optim_t *opt, int *mode, int env_index, bool applies,
                                 const char *field)
{
    if (*mode == 0) {
        *mode = zsh_qwz_modes[env_index];
    }
    if ((*mode != ZSH_QUANTIZE_OFF) && (*mode != ZSH_QUANTIZE_ON) &&
        (*mode != ZSH_QUANTIZE_AUTO)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_create: %s is %d, expected 0 (the variable), "
                         "ZSH_QUANTIZE_AUTO (-1), ZSH_QUANTIZE_OFF (1) or ZSH_QUANTIZE_ON (2)",
                         field, *mode);
    }
    if (*mode == ZSH_QUANTIZE_AUTO) {
        /* One node: no link to spare, only the quantizing to pay. */
        *mode = ((opt->nnodes > 1) && applies) ? ZSH_QUANTIZE_ON : ZSH_QUANTIZE_OFF;
    }
    return ZSH_OK;
}

/* What both need: the model's state in memory. Every precision quantizes
 * (fp32, bf16, fp16: a half-precision block as its fp32 conversion). */
static zsh_status_t zsh_qwz_needs(const zsh_optim_config_t *cfg, const char *field,
                                  const char *from)
{
    const char *fn = "zsh_optim_create";

    if (cfg->offload_params != ZSH_OFFLOAD_NONE) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: %s%s quantizes what is in memory, and offload_params=%s keeps the "
                         "shards elsewhere", fn, field, from,
                         zsh_offload_names[cfg->offload_params]);
    }
    return ZSH_OK;
}

zsh_status_t zsh_optim_qwz_resolve(zsh_optim_t *opt, const zsh_zero_config_t *env)
{
    const char *fn = "zsh_optim_create";
    zsh_optim_config_t *cfg = &opt->cfg;
    const char *wfrom = (cfg->quantize_weights == 0) ? " (ZSH_QUANTIZE_WEIGHTS)" : "";
    const char *gfrom = (cfg->quantize_grads == 0) ? " (ZSH_QUANTIZE_GRADS)" : "";
    /* The deterministic mode's bits may not depend on the node layout or the
     * bucket size; quantized values do (their blocks' scales, the node's
     * partial sums): auto leaves both off there, on is refused. */
    bool exact = cfg->deterministic || zsh_comm_get_deterministic(opt->comm);
    bool fits  = (cfg->offload_params == ZSH_OFFLOAD_NONE) && !exact;
    zsh_status_t status;

    cfg->quantize_block = (cfg->quantize_block != 0) ? cfg->quantize_block : env->quantize_block;
    cfg->quantize_grad_bits = (cfg->quantize_grad_bits != 0) ? cfg->quantize_grad_bits
                                                              : (int)env->quantize_grad_bits;
    cfg->quantize_weight_bits = (cfg->quantize_weight_bits != 0) ? cfg->quantize_weight_bits : 8;
    /* Job-wide defaults, as ZSH_HPZ: ignored where nothing is gathered or
     * reduce-scattered. */
    if ((cfg->quantize_weights == 0) && !opt->stage_ops->shards_params) {
        cfg->quantize_weights = ZSH_QUANTIZE_OFF;
    }
    if ((cfg->quantize_grads == 0) && !opt->stage_ops->shards_grads) {
        cfg->quantize_grads = ZSH_QUANTIZE_OFF;
    }
    status = zsh_qwz_mode(opt, &cfg->quantize_weights, env->quantize_weights,
                          fits && opt->stage_ops->shards_params, "quantize_weights");
    if (status == ZSH_OK) {
        status = zsh_qwz_mode(opt, &cfg->quantize_grads, env->quantize_grads,
                              fits && opt->stage_ops->shards_grads &&
                                  (cfg->offload_optimizer == ZSH_OFFLOAD_NONE),
                              "quantize_grads");
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (exact && ((cfg->quantize_weights == ZSH_QUANTIZE_ON) ||
                  (cfg->quantize_grads == ZSH_QUANTIZE_ON))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: %s%s with the deterministic mode: quantized values depend on the "
                         "node layout and the bucket size, which the mode's bits may not",
                         fn, (cfg->quantize_weights == ZSH_QUANTIZE_ON) ? "quantize_weights"
                                                                        : "quantize_grads",
                         (cfg->quantize_weights == ZSH_QUANTIZE_ON) ? wfrom : gfrom);
    }
    status = zsh_quant_check(cfg->quantize_block, 8);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: quantize_block: ", fn);
        return status;
    }
    if (cfg->quantize_weights == ZSH_QUANTIZE_ON) {
        if (!opt->stage_ops->shards_params) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: quantize_weights needs stage 3, and the stage is %d: below "
                             "stage 3 the parameters are never gathered", fn, cfg->stage);
        }
        if (cfg->quantize_weight_bits != 8) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: quantize_weight_bits=%d: qwZ sends int8 weights only (int4 "
                             "weights are too coarse for the forward pass)", fn,
                             cfg->quantize_weight_bits);
        }
        status = zsh_qwz_needs(cfg, "quantize_weights", wfrom);
    }
    if ((status == ZSH_OK) && (cfg->quantize_grads == ZSH_QUANTIZE_ON)) {
        if (!opt->stage_ops->shards_grads) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: quantize_grads needs stage 2 or 3, and the stage is %d: below "
                             "stage 2 the gradients are not reduce-scattered", fn, cfg->stage);
        }
        if (opt->nnodes < 2) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: quantize_grads%s on one node: qgZ quantizes only the sums "
                             "that cross nodes, and none do (auto leaves it off here)", fn,
                             gfrom);
        }
        if ((cfg->quantize_grad_bits != 8) && (cfg->quantize_grad_bits != 4)) {
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s: quantize_grad_bits=%d: expected 8 or 4",
                             fn, cfg->quantize_grad_bits);
        }
        if (cfg->offload_optimizer != ZSH_OFFLOAD_NONE) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: quantize_grads%s reduces into shards in memory, and "
                             "offload_optimizer=%s moves them", fn, gfrom,
                             zsh_offload_names[cfg->offload_optimizer]);
        }
        status = zsh_qwz_needs(cfg, "quantize_grads", gfrom);
    }
    return status;
}

void zsh_optim_qwz_src(const zsh_optim_t *opt, const zsh_obucket_t *b, zsh_shard_src_t *src)
{
    if ((opt->cfg.quantize_weights == ZSH_QUANTIZE_ON) && !b->qwz.sent && (src->comm == NULL) &&
        !src->staged) {
        src->quant_block = opt->cfg.quantize_block;
        src->quant_cuts  = &b->qwz.cuts;
    }
}

zsh_status_t zsh_optim_qwz_setup(zsh_optim_t *opt)
{
    zsh_obucket_t *b;
    size_t i, j;

    if ((opt->cfg.quantize_weights != ZSH_QUANTIZE_ON) &&
        (opt->cfg.quantize_grads != ZSH_QUANTIZE_ON)) {
        return ZSH_OK;
    }
    for (i = 0; i < opt->nbuckets; i++) {
        b = &opt->buckets[i];
        b->qwz.cut_at = malloc(b->nparams * sizeof(size_t));
        if (b->qwz.cut_at == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_setup: qwz: no memory for %zu cuts",
                             b->nparams);
        }
        /* In bucket order, so ascending. */
        for (j = 0; j < b->nparams; j++) {
            b->qwz.cut_at[j] = b->params[j]->offset;
        }
        b->qwz.cuts = (zsh_quant_cuts_t){b->qwz.cut_at, b->nparams};
    }
    return ZSH_OK;
}

void zsh_optim_qwz_free(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        free(opt->buckets[i].qwz.cut_at);
        opt->buckets[i].qwz.cut_at = NULL;
        opt->buckets[i].qwz.cuts   = (zsh_quant_cuts_t){NULL, 0};
    }
}

/* ZeRO++ gathers the weights as int8 for the forward only: backward's
 * gathers are full precision, or hpZ's secondary within the node. A bucket
 * still gathered from the forward would otherwise serve backward too, and
 * every gradient would go through the rounded weights; with the whole
 * model in a few buckets that is all of them (docs/DECISIONS.md,
 * "Quantization blocks and the loss"). */
bool zsh_optim_qwz_forward_only(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return opt->grads_begun && b->qwz.live && !b->hpz.sec_valid;
}

bool zsh_optim_qwz_rounded_sec(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    /* The slice is kept from a step's first gather, which qwZ makes int8
     * (a read's exact gather keeps none). */
    return (opt->cfg.quantize_weights == ZSH_QUANTIZE_ON) && b->hpz.sec_valid;
}

bool zsh_optim_qwz_regather(const zsh_optim_t *opt, const zsh_obucket_t *b, bool exact)
{
    if (opt->cfg.quantize_weights != ZSH_QUANTIZE_ON) {
        return false;
    }
    /* A read wants no int8; a step's first fetch wants the int8 gather it
     * would have made, not the exact copy a read left before it. */
    return exact ? b->qwz.live : (!b->qwz.sent && !b->qwz.live && (b->fetch.refs == 0));
}

zsh_status_t zsh_optim_qwz_backward_begins(zsh_optim_t *opt)
{
    zsh_status_t status, first = ZSH_OK;
    zsh_obucket_t *b;
    size_t i;

    opt->grads_begun = true;
    for (i = 0; i < opt->nbuckets; i++) {
        b = &opt->buckets[i];
        if (zsh_bstate_gathered(b->fetch.state) && (b->fetch.refs == 0) &&
            zsh_optim_qwz_forward_only(opt, b)) {
            status = zsh_optim_drop_gather(opt, b);
            first  = (first == ZSH_OK) ? status : first;
        }
    }
    return first;
}

void zsh_optim_qwz_invalidate(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        opt->buckets[i].qwz.sent = false;
    }
}
