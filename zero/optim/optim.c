/*
 * The optimizer object: settings, parameter registration, and the counters
 * it reports. The layout, gradients, fetches and the step live in their own
 * files (layout.c, grads.c, fetch.c, step.c).
 */
#include "optim/optim_impl.h"

#include "core/dtype.h"
#include "core/status.h"
#include "mem/checked.h"
#include "mem/huge.h"
#include "optim/config.h"
#include "optim/rule/hyper.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void zsh_optim_config_init(zsh_optim_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->size               = sizeof(*cfg);
    cfg->stage              = 0;
    cfg->kind               = ZSH_OPTIM_ADAMW;
    cfg->precision          = ZSH_FLOAT32;
    cfg->lr                 = 1e-3;
    cfg->beta1              = 0.9;
    cfg->beta2              = 0.999;
    cfg->eps                = 1e-8;
    cfg->loss_scale         = 0.0f;  /* resolved by precision at create */
    cfg->dynamic_loss_scale = -1;    /* resolved by precision at create */
    cfg->loss_scale_window  = 1000;
    cfg->min_loss_scale     = 1.0f;
    cfg->prefetch           = -1;
    cfg->offload_optimizer  = ZSH_OFFLOAD_DEFAULT;
    cfg->offload_params     = ZSH_OFFLOAD_DEFAULT;
}

/* Reject settings that cannot work, naming the field. */
static zsh_status_t zsh_optim_check_config(const zsh_optim_config_t *cfg)
{
    const char *fn = "zsh_optim_create";
    zsh_status_t status;

    if ((cfg->size != sizeof(*cfg)) && (cfg->size != ZSH_OPTIM_CONFIG_SIZE_0) &&
        (cfg->size != ZSH_OPTIM_CONFIG_SIZE_1) && (cfg->size != ZSH_OPTIM_CONFIG_SIZE_2) &&
        (cfg->size != ZSH_OPTIM_CONFIG_SIZE_3) && (cfg->size != ZSH_OPTIM_CONFIG_SIZE_4) &&
        (cfg->size != ZSH_OPTIM_CONFIG_SIZE_5)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: config.size is %zu, expected %zu: fill it with "
                         "zsh_optim_config_init()", fn, cfg->size, sizeof(*cfg));
    }
    if ((cfg->stage < 0) || (cfg->stage > 3)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: stage %d is not 0, 1, 2 or 3", fn, cfg->stage);
    }
    if ((cfg->kind != ZSH_OPTIM_SGD) && (cfg->kind != ZSH_OPTIM_ADAM) &&
        (cfg->kind != ZSH_OPTIM_ADAMW)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: unknown optimizer kind %d", fn, (int)cfg->kind);
    }
    if ((cfg->precision != ZSH_FLOAT32) && (cfg->precision != ZSH_BFLOAT16) &&
        (cfg->precision != ZSH_FLOAT16)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: precision %s is not fp32, bf16 or fp16", fn,
                         zsh_dtype_name(cfg->precision));
    }
    status = zsh_optim_check_hyper(fn, cfg);
    if (status != ZSH_OK) {
        return status;
    }
    if ((cfg->size > ZSH_OPTIM_CONFIG_SIZE_1) &&
        ((cfg->update_threads < 0) || (cfg->update_threads > ZSH_OPTIM_MAX_THREADS))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: update_threads is %d, expected 0 (ZSH_OPTIM_THREADS) to %d", fn,
                         cfg->update_threads, ZSH_OPTIM_MAX_THREADS);
    }
    if ((cfg->size > ZSH_OPTIM_CONFIG_SIZE_2) &&
        ((cfg->hpz < ZSH_HPZ_AUTO) || (cfg->hpz > ZSH_OPTIM_MAX_HPZ))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: hpz is %d, expected 0 (ZSH_HPZ), ZSH_HPZ_AUTO (-1), ZSH_HPZ_OFF (1) "
                         "or a group size up to %d", fn, cfg->hpz, ZSH_OPTIM_MAX_HPZ);
    }
    if ((cfg->size > ZSH_OPTIM_CONFIG_SIZE_4) && (cfg->deterministic != 0) &&
        (cfg->deterministic != 1)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: deterministic is %d, expected 0 (as the "
                         "communicator is) or 1", fn, cfg->deterministic);
    }
    return ZSH_OK;
}

/* Give a caller built before the tiers, the update threads, hpZ or the stream existed
 * their defaults. */
static void zsh_optim_config_upgrade(zsh_optim_config_t *cfg)
{
    if (cfg->size <= ZSH_OPTIM_CONFIG_SIZE_5) {
        cfg->quantize_weights     = 0;
        cfg->quantize_block       = 0;
        cfg->quantize_grads       = 0;
        cfg->quantize_grad_bits   = 0;
        cfg->quantize_weight_bits = 0;
    }
    if (cfg->size <= ZSH_OPTIM_CONFIG_SIZE_4) {
        cfg->deterministic = 0;
    }
    if (cfg->size <= ZSH_OPTIM_CONFIG_SIZE_3) {
        cfg->stream = NULL;
    }
    if (cfg->size <= ZSH_OPTIM_CONFIG_SIZE_2) {
        cfg->hpz = 0;
    }
    if (cfg->size <= ZSH_OPTIM_CONFIG_SIZE_1) {
        cfg->update_threads = 0;
    }
    if (cfg->size == ZSH_OPTIM_CONFIG_SIZE_0) {
        cfg->offload_optimizer = ZSH_OFFLOAD_DEFAULT;
        cfg->offload_params    = ZSH_OFFLOAD_DEFAULT;
        cfg->nvme_dir          = NULL;
        cfg->host_mem_limit    = 0;
        cfg->sub_group_size    = 0;
    }
}

/* The tiers this build and stage can honour, named when not. */
static zsh_status_t zsh_optim_check_tiers(const zsh_optim_t *opt)
{
    const zsh_optim_config_t *cfg = &opt->cfg;
    const char *fn = "zsh_optim_create";

    if ((cfg->offload_optimizer < ZSH_OFFLOAD_NONE) || (cfg->offload_optimizer > ZSH_OFFLOAD_NVME) ||
        (cfg->offload_params < ZSH_OFFLOAD_NONE) || (cfg->offload_params > ZSH_OFFLOAD_NVME)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: offload_optimizer %d or offload_params %d is not none (0), cpu (1) "
                         "or nvme (2)", fn, (int)cfg->offload_optimizer, (int)cfg->offload_params);
    }
    if ((cfg->offload_params != ZSH_OFFLOAD_NONE) && !opt->stage_ops->shards_params) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: offload_params=%s (ZSH_OFFLOAD_PARAMS) needs stage 3, and the stage "
                         "is %d: below stage 3 the parameters are the framework's own buffers",
                         fn, zsh_offload_names[cfg->offload_params], cfg->stage);
    }
    if (((cfg->offload_optimizer == ZSH_OFFLOAD_NVME) ||
         (cfg->offload_params == ZSH_OFFLOAD_NVME)) &&
        ((cfg->nvme_dir == NULL) || (cfg->nvme_dir[0] == '\0'))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: offload_%s=nvme needs a directory: set nvme_dir or ZSH_NVME_DIR", fn,
                         (cfg->offload_optimizer == ZSH_OFFLOAD_NVME) ? "optimizer" : "params");
    }
    return ZSH_OK;
}

/* Fill the settings left to the environment or to the precision. The
 * directory and the job id are copied into @opt, which owns them. */
static zsh_status_t zsh_optim_resolve(zsh_optim_t *opt)
{
    zsh_optim_config_t *cfg = &opt->cfg;
    zsh_zero_config_t env;
    zsh_status_t status;
    bool fp16 = cfg->precision == ZSH_FLOAT16;

    status = zsh_zero_config_read(&env);
    if (status == ZSH_OK) {
        status = zsh_huge_config_check();
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (cfg->offload_optimizer == ZSH_OFFLOAD_DEFAULT) {
        cfg->offload_optimizer = (zsh_offload_t)env.offload_optimizer;
    }
    if (cfg->offload_params == ZSH_OFFLOAD_DEFAULT) {
        cfg->offload_params = (zsh_offload_t)env.offload_params;
    }
    if (cfg->host_mem_limit == 0) {
        cfg->host_mem_limit = env.host_mem_limit;
    }
    if (cfg->sub_group_size == 0) {
        cfg->sub_group_size = env.sub_group_size;
    }
    if (cfg->update_threads == 0) {
        cfg->update_threads = (int)env.update_threads;
    }
    opt->nvme_dir = strdup((cfg->nvme_dir != NULL) ? cfg->nvme_dir : env.nvme_dir);
    opt->job_id   = strdup(env.job_id);
    if ((opt->nvme_dir == NULL) || (opt->job_id == NULL)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_create: out of memory");
    }
    cfg->nvme_dir = opt->nvme_dir;
    if (cfg->bucket_size == 0) {
        cfg->bucket_size = env.bucket_size;
    }
    if (cfg->max_live_bytes == 0) {
        cfg->max_live_bytes = env.max_live_bytes;
    }
    if (cfg->prefetch < 0) {
        cfg->prefetch = (int)env.prefetch;
    }
    if (cfg->dynamic_loss_scale < 0) {
        cfg->dynamic_loss_scale = fp16;
    }
    if (cfg->loss_scale <= 0.0f) {
        cfg->loss_scale = fp16 ? 65536.0f : 1.0f;
    }
    status = zsh_optim_check_tiers(opt);
    if (status == ZSH_OK) {
        status = zsh_optim_hpz_resolve(opt, env.hpz);
    }
    return (status == ZSH_OK)
               ? zsh_optim_qwz_resolve(opt, &env)
               : status;
}

zsh_status_t zsh_optim_create(zsh_comm_t *comm, const zsh_optim_config_t *cfg,
                              zsh_optim_t **opt_p)
{
    zsh_optim_t *opt;
    zsh_status_t status;

    if ((comm == NULL) || (opt_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_create: %s is NULL",
                         (comm == NULL) ? "comm" : "opt_p");
    }
    if (zsh_comm_size(comm) < 1) {
        /* The communicator was destroyed or is not one: zsh_comm_size() said which. */
        zsh_error_prefix("zsh_optim_create: ");
        return ZSH_ERR_INVALID_ARG;
    }
    opt = calloc(1, sizeof(*opt));
    if (opt == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_create: out of memory");
    }
    zsh_optim_config_init(&opt->cfg);
    if (cfg != NULL) {
        /* Only the caller's own bytes are read: an older caller's struct is shorter. */
        memcpy(&opt->cfg, cfg, (cfg->size < sizeof(*cfg)) ? cfg->size : sizeof(*cfg));
    }
    opt->comm   = comm; /* hpZ reads the rank map while resolving */
    status      = zsh_optim_check_config(&opt->cfg);
    if (status == ZSH_OK) {
        opt->caller_cfg_size = opt->cfg.size;
        zsh_optim_config_upgrade(&opt->cfg);
        opt->cfg.size = sizeof(opt->cfg);
        opt->stage_ops = zsh_stage_ops(opt->cfg.stage);
        opt->dev_ops   = &zsh_dev_host_ops; /* until a registration says where the model is */
        zsh_tier_ops_reset(opt);            /* every kind in memory until the tiers' setup */
        status = zsh_optim_resolve(opt);
    }
    if ((status == ZSH_OK) && opt->cfg.deterministic) {
        status = zsh_comm_set_deterministic(comm, 1); /* every rank passes the same config */
    }
    if ((status == ZSH_OK) && (opt->cfg.update_threads > 1)) {
        status = zsh_workers_create(opt->cfg.update_threads, &opt->workers);
    }
    if (status != ZSH_OK) {
        free(opt->nvme_dir);
        free(opt->job_id);
        free(opt);
        return status;
    }
    opt->comm    = comm;
    opt->rank    = zsh_comm_rank(comm);
    opt->size    = zsh_comm_size(comm);
    opt->esize   = zsh_dtype_size(opt->cfg.precision);
    opt->mixed   = opt->cfg.precision != ZSH_FLOAT32;
    opt->has_master = opt->mixed;
    opt->nstates = zsh_optim_rule_states(opt->cfg.kind, opt->cfg.momentum);
    zsh_scaler_init(&opt->scaler, opt->cfg.loss_scale, opt->cfg.dynamic_loss_scale != 0,
                    opt->cfg.loss_scale_window, opt->cfg.min_loss_scale);
    *opt_p = opt;
    return ZSH_OK;
}

zsh_status_t zsh_optim_comm_status(zsh_optim_t *opt, zsh_status_t status)
{
    if ((status != ZSH_INPROGRESS) && (status != ZSH_ERR_INVALID_ARG)) {
        zsh_sticky_set(&opt->comm_failed, status);
    }
    return status;
}

zsh_status_t zsh_optim_comm_check(const zsh_optim_t *opt, const char *fn)
{
    if (!zsh_sticky_failed(&opt->comm_failed)) {
        return ZSH_OK;
    }
    return zsh_error(opt->comm_failed.status,
                     "%s: a collective of this optimizer failed (%s), so the ranks' parameters "
                     "and states no longer agree: destroy the optimizer and its communicator, "
                     "and resume from a checkpoint", fn, opt->comm_failed.msg);
}

zsh_status_t zsh_optim_enter(zsh_optim_t *opt, const char *fn)
{
    zsh_status_t status = zsh_optim_setup(opt);

    return (status == ZSH_OK) ? zsh_optim_comm_check(opt, fn) : status;
}

zsh_status_t zsh_optim_enter_param(zsh_optim_t *opt, const zsh_param_t *param, const char *fn)
{
    if ((opt == NULL) || (param == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                         (opt == NULL) ? "opt" : "param");
    }
    return zsh_optim_enter(opt, fn);
}

void zsh_optim_destroy(zsh_optim_t *opt)
{
    size_t i;

    if (opt == NULL) {
        return;
    }
    zsh_optim_layout_free(opt);
    for (i = 0; i < opt->nparams; i++) {
        free(opt->params[i]->name);
        free(opt->params[i]);
    }
    free(opt->params);
    zsh_prefetch_free(&opt->prefetch);
    zsh_workers_destroy(opt->workers);
    free(opt->nvme_dir);
    free(opt->job_id);
    free(opt);
}

/* Refuse a @numel whose bytes, alone or added to the parameters already
 * registered, do not fit a size_t: every size of the layout derives from
 * these, and a wrapped one allocates too little. */
static zsh_status_t zsh_optim_check_numel(const zsh_optim_t *opt, const char *fn,
                                          const char *name, size_t numel)
{
    size_t per = zsh_optim_elem_bytes(opt), total, bytes;

    if (!zsh_size_mul(numel, per, &bytes)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' (index %zu): numel %zu x %zu bytes per element "
                         "(%s parameter, gradient and optimizer states) is more than %zu bytes",
                         fn, name, opt->nparams, numel, per,
                         zsh_dtype_name(opt->cfg.precision), SIZE_MAX);
    }
    if (!zsh_size_add(opt->total_numel, numel, &total) || !zsh_size_mul(total, per, &bytes)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' (index %zu) of numel %zu brings the %zu elements "
                         "registered before it past %zu bytes at %zu bytes per element",
                         fn, name, opt->nparams, numel, opt->total_numel, SIZE_MAX, per);
    }
    return ZSH_OK;
}

static zsh_status_t zsh_optim_check_register(const zsh_optim_t *opt, const char *name,
                                             size_t numel, zsh_dtype_t dtype, const void *buf)
{
    const char *fn = "zsh_optim_register";

    if (name == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: name is NULL", fn);
    }
    if (opt->ready) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' registered after the layout was built "
                         "(by setup, the first fetch, grad-ready or step)", fn, name);
    }
    if (dtype != opt->cfg.precision) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: parameter '%s' has dtype %s but the optimizer's precision is %s",
                         fn, name, zsh_dtype_name(dtype), zsh_dtype_name(opt->cfg.precision));
    }
    if (numel == 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s' has numel 0", fn, name);
    }
    if (buf == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s' has a NULL buffer", fn, name);
    }
    return zsh_optim_check_numel(opt, fn, name, numel);
}

zsh_status_t zsh_optim_register(zsh_optim_t *opt, const char *name, size_t numel,
                                zsh_dtype_t dtype, void *buf, zsh_param_t **param_p)
{
    zsh_param_t *param, **params;
    zsh_status_t status;
    size_t max;

    status = zsh_optim_check_register(opt, name, numel, dtype, buf);
    if (status == ZSH_OK) {
        status = zsh_optim_dev_register(opt, name, buf);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (opt->nparams == opt->maxparams) {
        max    = (opt->maxparams == 0) ? 16 : 2 * opt->maxparams;
        params = realloc(opt->params, max * sizeof(*params));
        if (params == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_register: out of memory");
        }
        opt->params    = params;
        opt->maxparams = max;
    }
    param = calloc(1, sizeof(*param));
    if ((param == NULL) || ((param->name = strdup(name)) == NULL)) {
        free(param);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_register: out of memory");
    }
    param->numel                 = numel;
    param->buf                   = buf;
    opt->params[opt->nparams++]  = param;
    opt->total_numel            += numel;
    *param_p                     = param;
    return ZSH_OK;
}

zsh_status_t zsh_optim_register_tiled(zsh_optim_t *opt, const char *name, size_t numel,
                                      zsh_dtype_t dtype, void *buf, size_t tile_numel,
                                      zsh_param_t **tiles)
{
    size_t before = opt->nparams, ntiles, k, len;
    zsh_param_t **made;
    zsh_status_t status;
    char *tile_name;

    status = zsh_optim_check_register(opt, name, numel, dtype, buf);
    if ((status == ZSH_OK) && ((tile_numel == 0) || (tiles == NULL))) {
        status = zsh_error(ZSH_ERR_INVALID_ARG,
                           "zsh_optim_register_tiled: parameter '%s': %s", name,
                           (tiles == NULL) ? "tiles is NULL" : "tile_numel is 0");
    }
    if (status != ZSH_OK) {
        return status;
    }
    ntiles    = numel / tile_numel + ((numel % tile_numel) != 0); /* ceil, without wrapping */
    len       = strlen(name) + 24;
    tile_name = malloc(len);
    made      = calloc(ntiles, sizeof(*made));
    if ((tile_name == NULL) || (made == NULL)) {
        free(tile_name);
        free(made);
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_register_tiled: out of memory");
    }
    for (k = 0; (status == ZSH_OK) && (k < ntiles); k++) {
        snprintf(tile_name, len, "%s[%zu]", name, k);
        status = zsh_optim_register(opt, tile_name,
                                    (k + 1 < ntiles) ? tile_numel : numel - k * tile_numel, dtype,
                                    (char *)buf + k * tile_numel * opt->esize, &made[k]);
    }
    free(tile_name);
    if (status == ZSH_OK) {
        memcpy(tiles, made, ntiles * sizeof(*made));
    }
    free(made);
    /* Undo the tiles already in: the parameter is registered whole or not at all. */
    while ((status != ZSH_OK) && (opt->nparams > before)) {
        opt->nparams--;
        opt->total_numel -= opt->params[opt->nparams]->numel;
        free(opt->params[opt->nparams]->name);
        free(opt->params[opt->nparams]);
    }
    return status;
}

zsh_status_t zsh_optim_setup(zsh_optim_t *opt)
{
    return opt->ready ? ZSH_OK : zsh_optim_layout_build(opt);
}

float zsh_optim_loss_scale(const zsh_optim_t *opt)
{
    return opt->scaler.scale;
}

zsh_status_t zsh_optim_get_loss_scaler(const zsh_optim_t *opt, float *scale_p,
                                       unsigned *clean_p)
{
    if ((opt == NULL) || (scale_p == NULL) || (clean_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_get_loss_scaler: %s is NULL",
                         (opt == NULL) ? "opt" : (scale_p == NULL) ? "scale_p" : "clean_p");
    }
    *scale_p = opt->scaler.scale;
    *clean_p = opt->scaler.dynamic ? opt->scaler.clean : 0;
    return ZSH_OK;
}

zsh_status_t zsh_optim_set_loss_scaler(zsh_optim_t *opt, float scale, unsigned clean)
{
    const char *fn = "zsh_optim_set_loss_scaler";
    size_t i;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: opt is NULL", fn);
    }
    /* NaN fails the comparisons. */
    if (!(scale > 0.0f) || !isfinite(scale) ||
        (opt->scaler.dynamic && !(scale >= opt->scaler.min_scale))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: a loss scale of %g; it is finite and positive%s",
                         fn, (double)scale, opt->scaler.dynamic ? ", and at least the minimum" : "");
    }
    if (opt->scaler.dynamic ? (clean >= opt->scaler.window) : (clean != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %u clean steps; %s", fn, clean,
                         opt->scaler.dynamic ? "the scale doubles after the window's, so fewer"
                                             : "a static scale counts none");
    }
    for (i = 0; i < opt->nparams; i++) {
        if (opt->params[i]->has_grad) {
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameter '%s' has a gradient pending, "
                             "scaled by the scale in force; step or zero_grad first", fn,
                             opt->params[i]->name);
        }
    }
    opt->scaler.scale = scale;
    opt->scaler.clean = clean;
    return ZSH_OK;
}

zsh_status_t zsh_optim_set_lr(zsh_optim_t *opt, double lr)
{
    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_set_lr: opt is NULL");
    }
    /* NaN fails the comparison. */
    if (!(lr >= 0.0) || !isfinite(lr)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_set_lr: lr=%g is out of range (finite and >= 0)", lr);
    }
    opt->cfg.lr = lr;
    return ZSH_OK;
}

zsh_status_t zsh_optim_set_weight_decay(zsh_optim_t *opt, zsh_param_t *param,
                                        double weight_decay)
{
    if ((opt == NULL) || (param == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_set_weight_decay: %s is NULL",
                         (opt == NULL) ? "opt" : "param");
    }
    if (!(weight_decay >= 0.0) || !isfinite(weight_decay)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_optim_set_weight_decay: parameter '%s': weight_decay=%g is out of "
                         "range (finite and >= 0)", param->name, weight_decay);
    }
    param->own_decay    = true;
    param->weight_decay = weight_decay;
    return ZSH_OK;
}

zsh_status_t zsh_optim_get_lr(const zsh_optim_t *opt, double *lr_p)
{
    if ((opt == NULL) || (lr_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_get_lr: %s is NULL",
                         (opt == NULL) ? "opt" : "lr_p");
    }
    *lr_p = opt->cfg.lr;
    return ZSH_OK;
}

static void zsh_optim_fill_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    size_t i;

    *stats                   = opt->stats;
    stats->param_bytes       = opt->acct.cur[ZSH_MEM_PARAMS];
    stats->grad_bytes        = opt->acct.cur[ZSH_MEM_GRADS];
    stats->state_bytes       = opt->acct.cur[ZSH_MEM_STATES];
    stats->buffer_bytes      = opt->acct.cur[ZSH_MEM_BUFFERS];
    stats->buffer_peak_bytes = opt->acct.peak[ZSH_MEM_BUFFERS];
    stats->loss_scale        = opt->scaler.scale;
    stats->nbuckets          = opt->nbuckets;
    zsh_optim_tier_stats(opt, stats);
    stats->hpz    = opt->cfg.hpz;
    stats->nnodes = opt->nnodes;
    stats->quantize_weights = opt->cfg.quantize_weights == ZSH_QUANTIZE_ON;
    stats->quantize_grads   = opt->cfg.quantize_grads == ZSH_QUANTIZE_ON;
    opt->dev_ops->stats(opt, stats);
    for (i = 0; i < opt->nbuckets; i++) {
        stats->hpz_bytes += (opt->buckets[i].hpz.sec != NULL)
                                ? zsh_optim_hpz_count(opt, &opt->buckets[i]) * opt->esize
                                : 0;
        stats->qwz_nonfinite_blocks +=
            (opt->buckets[i].fetch.pshard != NULL)
                ? zsh_shard_nonfinite_blocks(opt->buckets[i].fetch.pshard)
                : 0;
    }
}

zsh_status_t zsh_optim_get_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats)
{
    zsh_optim_stats_t full;

    if ((opt == NULL) || (stats == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_get_stats: %s is NULL",
                         (opt == NULL) ? "opt" : "stats");
    }
    zsh_optim_fill_stats(opt, &full);
    /* A caller built against the headers before the tiers has a struct that
     * ends before them. */
    memcpy(stats, &full,
           (opt->caller_cfg_size == ZSH_OPTIM_CONFIG_SIZE_0)   ? ZSH_OPTIM_STATS_SIZE_0
           : (opt->caller_cfg_size <= ZSH_OPTIM_CONFIG_SIZE_2) ? ZSH_OPTIM_STATS_SIZE_1
           : (opt->caller_cfg_size <= ZSH_OPTIM_CONFIG_SIZE_3) ? ZSH_OPTIM_STATS_SIZE_2
           : (opt->caller_cfg_size <= ZSH_OPTIM_CONFIG_SIZE_5) ? ZSH_OPTIM_STATS_SIZE_3
                                                               : sizeof(full));
    return ZSH_OK;
}

const char *zsh_param_name(const zsh_param_t *param)
{
    return param->name;
}

size_t zsh_param_numel(const zsh_param_t *param)
{
    return param->numel;
}
