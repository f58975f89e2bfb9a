/*
 * zsh_optim_load(): rank 0 finds the checkpoint (the directory itself, or
 * the one `latest` names) and every rank reads its manifest and checks it
 * against the model. Each rank then reads what it now owns (its part of
 * every bucket's state; all of it at stage 0), whatever the world size and
 * stage that saved it, in two passes: the first only checks every byte it
 * will use against its checksum, and only when every rank's check passed
 * does the second read again and write the optimizer's state. A bad
 * checkpoint thus leaves every rank's optimizer as it was.
 */
#include "ckpt/ckpt_impl.h"
#include "ckpt/dir.h"
#include "ckpt/reader.h"

#include "core/dtype.h"
#include "core/escape.h"
#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The checkpoint must describe this model and optimizer. */
static zsh_status_t zsh_ckpt_match(const zsh_optim_t *opt, const zsh_ckpt_t *ck,
                                   const char *path)
{
    char saved[ZSH_ESCAPED_MAX], mine[ZSH_ESCAPED_MAX];
    size_t i;

    if ((ck->kind != opt->cfg.kind) || (ck->nkinds != zsh_optim_state_count(opt))) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: saved by %s with %d state(s) per element; this optimizer is %s "
                         "with %d", path, zsh_ckpt_optim_name(ck->kind), ck->nkinds - 1,
                         zsh_ckpt_optim_name(opt->cfg.kind), zsh_optim_state_count(opt) - 1);
    }
    if (ck->precision != opt->cfg.precision) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameters of dtype %s; this model's are %s",
                         path, zsh_dtype_name(ck->precision),
                         zsh_dtype_name(opt->cfg.precision));
    }
    if (ck->nparams != opt->nparams) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %zu parameters; this model has %zu", path,
                         ck->nparams, opt->nparams);
    }
    for (i = 0; i < ck->nparams; i++) {
        if (strcmp(ck->params[i].name, opt->params[i]->name) != 0) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: parameter %zu is '%s'; this model's is '%s'", path, i,
                             zsh_escape_str(ck->params[i].name, saved, sizeof(saved)),
                             zsh_escape_str(opt->params[i]->name, mine, sizeof(mine)));
        }
        if (ck->params[i].numel != opt->params[i]->numel) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: parameter '%s' has shape [%llu]; this model's is [%zu]", path,
                             zsh_escape_str(ck->params[i].name, saved, sizeof(saved)),
                             (unsigned long long)ck->params[i].numel, opt->params[i]->numel);
        }
    }
    return ZSH_OK;
}

/* Every span this rank owns, of every kind: read (checked) and, if
 * @apply, written into the optimizer. */
static zsh_status_t zsh_ckpt_load_pass(zsh_optim_t *opt, const zsh_ckpt_t *ck,
                                       zsh_ckpt_reader_t *rd, bool apply, float *vals,
                                       void *scratch)
{
    size_t span = zsh_optim_state_span(opt), b, i, base, hi, s, e, n, idx = 0;

    span = (span < ZSH_CKPT_SPAN) ? span : ZSH_CKPT_SPAN;
    zsh_status_t status = ZSH_OK;
    zsh_param_t *p;
    int k;

    for (b = 0; (status == ZSH_OK) && (b < opt->nbuckets); b++) {
        zsh_obucket_t *bk = &opt->buckets[b];

        base = zsh_obucket_base(opt, bk);
        hi   = (opt->cfg.stage == 0) ? bk->numel : bk->hi;
        for (i = 0; (status == ZSH_OK) && (i < bk->nparams); i++, idx++) {
            p = bk->params[i];
            if (!zsh_param_overlap(p, base, hi, &s, &e)) {
                continue;
            }
            for (; (status == ZSH_OK) && (s < e); s += n) {
                n = (e - s < span) ? e - s : span;
                for (k = 0; (status == ZSH_OK) && (k < ck->nkinds); k++) {
                    status = zsh_ckpt_reader_read(rd, k, idx, s - p->offset, n, vals);
                    if ((status == ZSH_OK) && apply) {
                        status = zsh_optim_state_set(opt, (zsh_ostate_t)k, bk, s, s + n, vals,
                                                     scratch);
                    }
                }
            }
        }
    }
    return status;
}

/* After the state is in: the parameters everywhere, the counters. */
static zsh_status_t zsh_ckpt_load_finish(zsh_optim_t *opt, const zsh_ckpt_t *ck)
{
    zsh_status_t status = ZSH_OK;
    size_t b;

    if ((opt->cfg.stage == 1) || (opt->cfg.stage == 2)) {
        /* Each rank wrote its part of the framework's buffers; gather the rest. */
        for (b = 0; (status == ZSH_OK) && (b < opt->nbuckets); b++) {
            status = zsh_optim_publish_bucket(opt, &opt->buckets[b]);
        }
    }
    opt->updates             = ck->step;
    opt->stats.steps         = ck->steps;
    opt->stats.skipped_steps = ck->skipped_steps;
    opt->scaler.scale        = ck->scaler.scale;
    opt->scaler.min_scale    = ck->scaler.min_scale;
    opt->scaler.window       = (ck->scaler.window == 0) ? 1 : ck->scaler.window;
    opt->scaler.clean        = ck->scaler.clean;
    opt->scaler.dynamic      = ck->scaler.dynamic != 0;
    opt->cfg.lr              = ck->hyper.lr;
    opt->cfg.beta1           = ck->hyper.beta1;
    opt->cfg.beta2           = ck->hyper.beta2;
    opt->cfg.eps             = ck->hyper.eps;
    opt->cfg.weight_decay    = ck->hyper.weight_decay;
    opt->cfg.max_grad_norm   = ck->hyper.max_grad_norm;
    opt->cfg.loss_scale      = ck->scaler.scale;
    opt->cfg.dynamic_loss_scale = ck->scaler.dynamic;
    opt->cfg.loss_scale_window  = opt->scaler.window;
    opt->cfg.min_loss_scale     = ck->scaler.min_scale;
    opt->cfg.momentum        = ck->hyper.momentum; /* zero or not as here: the states match */
    opt->cfg.nesterov        = ck->hyper.nesterov;
    return status;
}

static zsh_status_t zsh_ckpt_find(zsh_optim_t *opt, const char *dir, char *path, size_t len)
{
    zsh_status_t status, mine = ZSH_OK;

    memset(path, 0, len);
    if (opt->rank == 0) {
        mine = zsh_ckpt_dir_prepare(dir, 0);
        if (mine == ZSH_OK) {
            mine = zsh_ckpt_resolve(dir, path, len);
        }
    }
    status = zsh_ckpt_agree(opt, mine);
    if (status == ZSH_OK) {
        status = zsh_optim_comm_status(opt, zsh_broadcast(path, len, ZSH_UINT8, 0, opt->comm));
    }
    return status;
}

zsh_status_t zsh_optim_load(zsh_optim_t *opt, const char *dir)
{
    const char *fn = "zsh_optim_load";
    char path[ZSH_CKPT_PATH_MAX], mpath[ZSH_CKPT_PATH_MAX + 32];
    zsh_status_t status, mine;
    zsh_ckpt_reader_t rd;
    void *scratch = NULL;
    float *vals   = NULL;
    zsh_ckpt_t ck;

    memset(&rd, 0, sizeof(rd));
    memset(&ck, 0, sizeof(ck));
    status = zsh_ckpt_check(opt, dir, fn, true);
    if (status == ZSH_OK) {
        status = zsh_ckpt_find(opt, dir, path, sizeof(path));
    }
    if (status != ZSH_OK) {
        return status;
    }
    snprintf(mpath, sizeof(mpath), "%s/%s", path, ZSH_CKPT_MANIFEST);
    mine = zsh_ckpt_manifest_read(mpath, &ck);
    if (mine == ZSH_OK) {
        mine = zsh_ckpt_match(opt, &ck, mpath);
    }
    if (mine == ZSH_OK) {
        mine = zsh_ckpt_reader_open(&rd, &ck, path);
        if (mine == ZSH_OK) {
            vals    = malloc(ZSH_CKPT_SPAN * sizeof(float));
            scratch = malloc(ZSH_CKPT_SPAN * opt->esize);
            mine    = ((vals == NULL) || (scratch == NULL))
                          ? zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", fn)
                          : zsh_ckpt_load_pass(opt, &ck, &rd, false, vals, scratch);
        }
    }
    status = zsh_ckpt_agree(opt, mine);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: nothing was loaded, and the optimizer is as it was: ", fn);
    } else {
        if (opt->cfg.stage == 3) {
            zsh_optim_param_reads_drop(opt);
            status = zsh_optim_drop_gathers(opt);
            zsh_optim_hpz_invalidate(opt);
        }
        if (status == ZSH_OK) {
            status = zsh_ckpt_load_pass(opt, &ck, &rd, true, vals, scratch);
        }
        status = zsh_ckpt_agree(opt, status);
        if (status == ZSH_OK) {
            status = zsh_ckpt_agree(opt, zsh_ckpt_load_finish(opt, &ck));
        }
        if (status != ZSH_OK) {
            zsh_error_prefix("%s: the checkpoint %s changed or failed to read after it was "
                             "checked, and the optimizer's state is partly loaded: ", fn, path);
        }
    }
    if (rd.fds != NULL) {
        zsh_ckpt_reader_close(&rd);
    }
    free(vals);
    free(scratch);
    if (status == ZSH_OK) {
        zsh_log(ZSH_LOG_INFO, "%s: %s loaded (saved at step %lu by %d ranks at stage %d)", fn,
                path, ck.steps, ck.world_size, ck.stage);
    }
    zsh_ckpt_free(&ck);
    return status;
}
