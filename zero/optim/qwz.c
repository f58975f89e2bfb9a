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

#include "core/dtype.h"
#include "core/status.h"
#include "optim/config.h"
#include "quant/quant.h"

/* ZSH_QUANTIZE_WEIGHTS' indices (config.c's zsh_quantize_names) as the field's values. */
static const int zsh_qwz_modes[] = {ZSH_QUANTIZE_OFF, ZSH_QUANTIZE_ON, ZSH_QUANTIZE_AUTO};

zsh_status_t zsh_optim_qwz_resolve(zsh_optim_t *opt, int env_mode, size_t env_block)
{
    const char *fn = "zsh_optim_create";
    zsh_optim_config_t *cfg = &opt->cfg;
    const char *from = (cfg->quantize_weights == 0) ? " (ZSH_QUANTIZE_WEIGHTS)" : "";
    zsh_status_t status;

    if (cfg->quantize_block == 0) {
        cfg->quantize_block = env_block;
    }
    if (cfg->quantize_weights == 0) {
        /* A job-wide default, as ZSH_HPZ: below stage 3 nothing is gathered. */
        cfg->quantize_weights = opt->stage_ops->shards_params ? zsh_qwz_modes[env_mode]
                                                              : ZSH_QUANTIZE_OFF;
    }
    if ((cfg->quantize_weights != ZSH_QUANTIZE_OFF) && (cfg->quantize_weights != ZSH_QUANTIZE_ON) &&
        (cfg->quantize_weights != ZSH_QUANTIZE_AUTO)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: quantize_weights is %d, expected 0 (ZSH_QUANTIZE_WEIGHTS), "
                         "ZSH_QUANTIZE_AUTO (-1), ZSH_QUANTIZE_OFF (1) or ZSH_QUANTIZE_ON (2)",
                         fn, cfg->quantize_weights);
    }
    status = zsh_quant_check(cfg->quantize_block, 8);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: quantize_block: ", fn);
        return status;
    }
    if (cfg->quantize_weights == ZSH_QUANTIZE_AUTO) {
        /* One node: no link to spare, only the quantizing to pay. */
        cfg->quantize_weights = (opt->nnodes > 1) ? ZSH_QUANTIZE_ON : ZSH_QUANTIZE_OFF;
        if ((cfg->quantize_weights == ZSH_QUANTIZE_ON) &&
            (!opt->stage_ops->shards_params || (cfg->precision != ZSH_FLOAT32) ||
             (cfg->offload_params != ZSH_OFFLOAD_NONE))) {
            cfg->quantize_weights = ZSH_QUANTIZE_OFF; /* auto takes it where it applies */
        }
    }
    if (cfg->quantize_weights == ZSH_QUANTIZE_OFF) {
        return ZSH_OK;
    }
    if (!opt->stage_ops->shards_params) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: quantize_weights needs stage 3, and the stage is %d: below stage 3 "
                         "the parameters are never gathered", fn, cfg->stage);
    }
    if (cfg->precision != ZSH_FLOAT32) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: quantize_weights%s quantizes fp32 parameters, and the precision "
                         "is %s", fn, from, zsh_dtype_name(cfg->precision));
    }
    if (cfg->offload_params != ZSH_OFFLOAD_NONE) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: quantize_weights%s quantizes shards in memory, and "
                         "offload_params=%s keeps them elsewhere", fn, from,
                         zsh_offload_names[cfg->offload_params]);
    }
    return ZSH_OK;
}

void zsh_optim_qwz_src(const zsh_optim_t *opt, const zsh_obucket_t *b, zsh_shard_src_t *src)
{
    if ((opt->cfg.quantize_weights == ZSH_QUANTIZE_ON) && !b->qwz.sent && (src->comm == NULL) &&
        !src->staged) {
        src->quant_block = opt->cfg.quantize_block;
    }
}

void zsh_optim_qwz_invalidate(zsh_optim_t *opt)
{
    size_t i;

    for (i = 0; i < opt->nbuckets; i++) {
        opt->buckets[i].qwz.sent = false;
    }
}
