/*
 * The checkpoint's layout from the optimizer's: shard r is rank r's part of
 * every bucket, as the optimizer's walk of its state hands it out. Every
 * rank computes every shard's pieces the same way, so a save exchanges only
 * checksums.
 */
#include "ckpt/ckpt_impl.h"

#include "core/status.h"

#include <stdlib.h>
#include <string.h>

/* Rank @r's pieces, in file order: counted (@fill false), or recorded. */
static void zsh_ckpt_walk(const zsh_optim_t *opt, int r, zsh_ckpt_t *ck, bool fill)
{
    zsh_ostate_piece_t piece;
    zsh_ostate_iter_t it;
    zsh_ckpt_param_t *cp;
    zsh_ckpt_piece_t *pc;
    uint64_t offset = 0;

    zsh_optim_state_iter_init(&it, opt, ZSH_OSTATE_WALK_PART, r);
    while (zsh_optim_state_iter_next(&it, &piece)) {
        cp = &ck->params[piece.param];
        pc = fill ? &cp->pieces[cp->npieces] : NULL;
        cp->npieces++;
        if (pc != NULL) {
            pc->shard  = (uint32_t)r;
            pc->offset = offset;
            pc->start  = piece.start;
            pc->count  = piece.count;
        }
        offset += piece.count;
    }
}

/* The manifest's settings and counters. */
static void zsh_ckpt_plan_head(const zsh_ostate_info_t *info, const zsh_ostate_counters_t *c,
                               zsh_ckpt_t *ck)
{
    ck->version             = ZSH_CKPT_VERSION;
    ck->world_size          = info->size;
    ck->stage               = info->stage;
    ck->precision           = info->precision;
    ck->kind                = info->kind;
    ck->nkinds              = info->nkinds;
    ck->nshards             = (uint32_t)info->size;
    ck->step                = c->updates;
    ck->steps               = c->steps;
    ck->skipped_steps       = c->skipped_steps;
    ck->scaler.scale        = c->scaler.scale;
    ck->scaler.min_scale    = c->scaler.min_scale;
    ck->scaler.window       = c->scaler.window;
    ck->scaler.clean        = c->scaler.clean;
    ck->scaler.dynamic      = c->scaler.dynamic;
    ck->hyper.lr            = c->hyper.lr;
    ck->hyper.beta1         = c->hyper.beta1;
    ck->hyper.beta2         = c->hyper.beta2;
    ck->hyper.eps           = c->hyper.eps;
    ck->hyper.weight_decay  = c->hyper.weight_decay;
    ck->hyper.momentum      = c->hyper.momentum;
    ck->hyper.nesterov      = c->hyper.nesterov;
    ck->hyper.max_grad_norm = c->hyper.max_grad_norm;
    ck->nparams             = info->nparams;
}

zsh_status_t zsh_ckpt_plan(const zsh_optim_t *opt, zsh_ckpt_t *ck)
{
    zsh_ostate_counters_t counters;
    zsh_ostate_info_t info;
    const zsh_param_t *p;
    size_t i;
    int r;

    memset(ck, 0, sizeof(*ck));
    zsh_optim_state_info(opt, &info);
    zsh_optim_state_counters_get(opt, &counters);
    zsh_ckpt_plan_head(&info, &counters, ck);
    ck->params = calloc(info.nparams + 1, sizeof(*ck->params));
    ck->files  = calloc((size_t)ck->nshards * ck->nkinds, sizeof(*ck->files));
    if ((ck->params == NULL) || (ck->files == NULL)) {
        zsh_ckpt_free(ck);
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the checkpoint's layout");
    }
    for (i = 0; i < info.nparams; i++) {
        p                   = zsh_optim_state_param(opt, i);
        ck->params[i].name  = strdup(zsh_param_name(p));
        ck->params[i].numel = zsh_param_numel(p);
        ck->params[i].updates = zsh_optim_state_param_updates(opt, i);
    }
    for (r = 0; r < info.size; r++) {
        zsh_ckpt_walk(opt, r, ck, false);
    }
    for (i = 0; i < info.nparams; i++) {
        ck->params[i].pieces  = calloc(ck->params[i].npieces + 1, sizeof(zsh_ckpt_piece_t));
        ck->params[i].npieces = 0;
        if ((ck->params[i].pieces == NULL) || (ck->params[i].name == NULL)) {
            zsh_ckpt_free(ck);
            return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the checkpoint's layout");
        }
    }
    for (r = 0; r < info.size; r++) {
        zsh_ckpt_walk(opt, r, ck, true);
    }
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_check(zsh_optim_t *opt, const char *dir, const char *fn, bool load)
{
    zsh_status_t status;

    if ((opt == NULL) || (dir == NULL) || (dir[0] == '\0')) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL or empty", fn,
                         (opt == NULL) ? "opt" : "dir");
    }
    if (strlen(dir) > ZSH_CKPT_PATH_MAX - 128) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: the directory's path is longer than %d bytes",
                         fn, ZSH_CKPT_PATH_MAX - 128);
    }
    status = zsh_optim_setup(opt);
    if (status == ZSH_OK) {
        status = zsh_optim_state_prepare(opt, fn);
    }
    if (status != ZSH_OK) {
        return status;
    }
    /* A rank that stopped here would leave the others in the agreements. */
    return zsh_optim_state_agree(opt, zsh_optim_state_check(opt, fn, load));
}
