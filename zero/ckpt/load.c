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
#include "ckpt/buddy.h"
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
    zsh_ostate_info_t info;
    const zsh_param_t *p;
    size_t i;

    zsh_optim_state_info(opt, &info);
    if ((ck->kind != info.kind) || (ck->nkinds != info.nkinds)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "%s: saved by %s with %d state(s) per element; this optimizer is %s "
                         "with %d", path, zsh_ckpt_optim_name(ck->kind), ck->nkinds - 1,
                         zsh_ckpt_optim_name(info.kind), info.nkinds - 1);
    }
    if (ck->precision != info.precision) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: parameters of dtype %s; this model's are %s",
                         path, zsh_dtype_name(ck->precision), zsh_dtype_name(info.precision));
    }
    if (ck->nparams != info.nparams) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %zu parameters; this model has %zu", path,
                         ck->nparams, info.nparams);
    }
    for (i = 0; i < ck->nparams; i++) {
        p = zsh_optim_state_param(opt, i);
        if (strcmp(ck->params[i].name, zsh_param_name(p)) != 0) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: parameter %zu is '%s'; this model's is '%s'", path, i,
                             zsh_escape_str(ck->params[i].name, saved, sizeof(saved)),
                             zsh_escape_str(zsh_param_name(p), mine, sizeof(mine)));
        }
        if (ck->params[i].numel != zsh_param_numel(p)) {
            return zsh_error(ZSH_ERR_INVALID_ARG,
                             "%s: parameter '%s' has shape [%llu]; this model's is [%zu]", path,
                             zsh_escape_str(ck->params[i].name, saved, sizeof(saved)),
                             (unsigned long long)ck->params[i].numel, zsh_param_numel(p));
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
    zsh_status_t status = ZSH_OK;
    zsh_ostate_piece_t piece;
    zsh_ostate_info_t info;
    zsh_ostate_iter_t it;
    size_t span, off, n;
    int k;

    zsh_optim_state_info(opt, &info);
    span = zsh_ckpt_span(&info);
    zsh_optim_state_iter_init(&it, opt, ZSH_OSTATE_WALK_REGION, info.rank);
    while ((status == ZSH_OK) && zsh_optim_state_iter_next(&it, &piece)) {
        for (off = 0; (status == ZSH_OK) && (off < piece.count); off += n) {
            n = (piece.count - off < span) ? piece.count - off : span;
            for (k = 0; (status == ZSH_OK) && (k < ck->nkinds); k++) {
                status = zsh_ckpt_reader_read(rd, k, piece.param, piece.start + off, n, vals);
                if ((status == ZSH_OK) && apply) {
                    status = zsh_optim_state_set(opt, (zsh_ostate_t)k, &piece, off, n, vals,
                                                 scratch);
                }
            }
        }
    }
    return status;
}

/* After the state is in: the parameters everywhere, the counters. */
static zsh_status_t zsh_ckpt_load_finish(zsh_optim_t *opt, const zsh_ckpt_t *ck)
{
    zsh_status_t status = zsh_optim_state_set_end(opt);
    zsh_ostate_counters_t c;
    size_t i;

    memset(&c, 0, sizeof(c));
    c.updates              = ck->step;
    c.steps                = ck->steps;
    c.skipped_steps        = ck->skipped_steps;
    c.scaler.scale         = ck->scaler.scale;
    c.scaler.min_scale     = ck->scaler.min_scale;
    c.scaler.window        = ck->scaler.window;
    c.scaler.clean         = ck->scaler.clean;
    c.scaler.dynamic       = ck->scaler.dynamic != 0;
    c.hyper.lr             = ck->hyper.lr;
    c.hyper.beta1          = ck->hyper.beta1;
    c.hyper.beta2          = ck->hyper.beta2;
    c.hyper.eps            = ck->hyper.eps;
    c.hyper.weight_decay   = ck->hyper.weight_decay;
    c.hyper.momentum       = ck->hyper.momentum;
    c.hyper.nesterov       = ck->hyper.nesterov;
    c.hyper.max_grad_norm  = ck->hyper.max_grad_norm;
    zsh_optim_state_counters_set(opt, &c);
    for (i = 0; i < ck->nparams; i++) {
        zsh_optim_state_param_updates_set(opt, i, ck->params[i].updates);
    }
    return status;
}

static zsh_status_t zsh_ckpt_find(zsh_optim_t *opt, const char *dir, char *path, size_t len)
{
    zsh_status_t status, mine = ZSH_OK;

    memset(path, 0, len);
    if (zsh_ckpt_rank(opt) == 0) {
        mine = zsh_ckpt_dir_prepare(dir, 0);
        if (mine == ZSH_OK) {
            mine = zsh_ckpt_resolve(dir, path, len);
        }
    }
    status = zsh_optim_state_agree(opt, mine);
    if (status == ZSH_OK) {
        status = zsh_optim_state_comm_status(opt, zsh_broadcast(path, len, ZSH_UINT8, 0,
                                                                zsh_optim_state_comm(opt)));
    }
    return status;
}

zsh_status_t zsh_ckpt_load(zsh_optim_t *opt, const char *dir, const char *own, const char *fn)
{
    char path[ZSH_CKPT_PATH_MAX], mpath[ZSH_CKPT_PATH_MAX + 32];
    zsh_status_t status, mine;
    zsh_ckpt_reader_t rd;
    zsh_ostate_info_t info;
    void *scratch = NULL;
    float *vals   = NULL;
    zsh_ckpt_t ck;

    memset(&rd, 0, sizeof(rd));
    memset(&ck, 0, sizeof(ck));
    status = zsh_ckpt_check(opt, dir, fn, true);
    if ((status == ZSH_OK) && (own != NULL)) {
        snprintf(path, sizeof(path), "%s", own);
    } else if (status == ZSH_OK) {
        status = zsh_ckpt_find(opt, dir, path, sizeof(path));
    }
    if (status != ZSH_OK) {
        return status;
    }
    zsh_optim_state_info(opt, &info);
    snprintf(mpath, sizeof(mpath), "%s/%s", path, ZSH_CKPT_MANIFEST);
    mine = zsh_ckpt_manifest_read(mpath, &ck);
    if (mine == ZSH_OK) {
        mine = zsh_ckpt_match(opt, &ck, mpath);
    }
    if (mine == ZSH_OK) {
        mine = zsh_ckpt_reader_open(&rd, &ck, path);
        if (mine == ZSH_OK) {
            /* As much as one get or set moves, not the bound: most
             * optimizers' spans are far smaller (one more element: no
             * malloc of 0 for an optimizer with nothing to load). */
            vals    = malloc((zsh_ckpt_span(&info) + 1) * sizeof(float));
            scratch = malloc((zsh_ckpt_span(&info) + 1) * info.esize);
            mine    = ((vals == NULL) || (scratch == NULL))
                          ? zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", fn)
                          : zsh_ckpt_load_pass(opt, &ck, &rd, false, vals, scratch);
        }
    }
    status = zsh_optim_state_agree(opt, mine);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: nothing was loaded, and the optimizer is as it was: ", fn);
    } else {
        status = zsh_optim_state_set_begin(opt);
        if (status == ZSH_OK) {
            status = zsh_ckpt_load_pass(opt, &ck, &rd, true, vals, scratch);
        }
        status = zsh_optim_state_agree(opt, status);
        if (status == ZSH_OK) {
            status = zsh_optim_state_agree(opt, zsh_ckpt_load_finish(opt, &ck));
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

zsh_status_t zsh_optim_load(zsh_optim_t *opt, const char *dir)
{
    return zsh_ckpt_load(opt, dir, NULL, "zsh_optim_load");
}
