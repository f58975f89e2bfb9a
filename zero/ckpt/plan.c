/*
 * The checkpoint's layout from the optimizer's: shard r is rank r's part of
 * every bucket. Every rank computes every shard's pieces the same way, so
 * a save exchanges only checksums.
 */
#include "ckpt/ckpt_impl.h"

#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pieces of @opt's rank @r, in file order, handed to @fn. */
typedef void (*zsh_ckpt_piece_fn)(void *arg, const zsh_param_t *p, size_t param, int r,
                                  uint64_t offset, size_t s, size_t e);

static size_t zsh_ckpt_param_index(const zsh_optim_t *opt, const zsh_param_t *p)
{
    size_t i;

    for (i = 0; i < opt->nparams; i++) {
        if (opt->params[i] == p) {
            return i;
        }
    }
    return 0;
}

static void zsh_ckpt_walk(const zsh_optim_t *opt, int r, size_t *index, zsh_ckpt_piece_fn fn,
                          void *arg)
{
    uint64_t offset = 0;
    size_t b, i, lo, hi, s, e;

    for (b = 0; b < opt->nbuckets; b++) {
        const zsh_obucket_t *bk = &opt->buckets[b];

        zsh_shard_part_range(bk->numel, opt->size, r, &lo, &hi);
        for (i = 0; i < bk->nparams; i++) {
            if (zsh_param_overlap(bk->params[i], lo, hi, &s, &e)) {
                fn(arg, bk->params[i], index[bk->params[i]->bucket] + i, r, offset, s, e);
                offset += e - s;
            }
        }
    }
}

static void zsh_ckpt_count(void *arg, const zsh_param_t *p, size_t param, int r, uint64_t offset,
                           size_t s, size_t e)
{
    zsh_ckpt_t *ck = arg;

    (void)p, (void)r, (void)offset, (void)s, (void)e;
    ck->params[param].npieces++;
}

static void zsh_ckpt_fill(void *arg, const zsh_param_t *p, size_t param, int r, uint64_t offset,
                          size_t s, size_t e)
{
    zsh_ckpt_param_t *cp = &((zsh_ckpt_t *)arg)->params[param];
    zsh_ckpt_piece_t *pc = &cp->pieces[cp->npieces++];

    pc->shard  = (uint32_t)r;
    pc->offset = offset;
    pc->start  = s - p->offset;
    pc->count  = e - s;
}

zsh_status_t zsh_ckpt_plan(const zsh_optim_t *opt, zsh_ckpt_t *ck)
{
    size_t *index, i, b;
    int r;

    memset(ck, 0, sizeof(*ck));
    ck->version            = ZSH_CKPT_VERSION;
    ck->world_size         = opt->size;
    ck->stage              = opt->cfg.stage;
    ck->precision          = opt->cfg.precision;
    ck->kind               = opt->cfg.kind;
    ck->nkinds             = zsh_optim_state_count(opt);
    ck->nshards            = (uint32_t)opt->size;
    ck->step               = opt->updates;
    ck->steps              = opt->stats.steps;
    ck->skipped_steps      = opt->stats.skipped_steps;
    ck->scaler.scale       = opt->scaler.scale;
    ck->scaler.min_scale   = opt->scaler.min_scale;
    ck->scaler.window      = opt->scaler.window;
    ck->scaler.clean       = opt->scaler.clean;
    ck->scaler.dynamic     = opt->scaler.dynamic;
    ck->hyper.lr           = opt->cfg.lr;
    ck->hyper.beta1        = opt->cfg.beta1;
    ck->hyper.beta2        = opt->cfg.beta2;
    ck->hyper.eps          = opt->cfg.eps;
    ck->hyper.weight_decay = opt->cfg.weight_decay;
    ck->hyper.momentum     = opt->cfg.momentum;
    ck->hyper.nesterov     = opt->cfg.nesterov;
    ck->hyper.max_grad_norm = opt->cfg.max_grad_norm;
    ck->nparams            = opt->nparams;
    ck->params             = calloc(opt->nparams + 1, sizeof(*ck->params));
    ck->files              = calloc((size_t)ck->nshards * ck->nkinds, sizeof(*ck->files));
    /* The index of a bucket's first parameter in registration order: buckets
     * take the parameters in that order. */
    index = calloc(opt->nbuckets + 1, sizeof(*index));
    if ((ck->params == NULL) || (ck->files == NULL) || (index == NULL)) {
        free(index);
        zsh_ckpt_free(ck);
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the checkpoint's layout");
    }
    for (b = 0; b < opt->nbuckets; b++) {
        index[b] = zsh_ckpt_param_index(opt, opt->buckets[b].params[0]);
    }
    for (i = 0; i < opt->nparams; i++) {
        ck->params[i].name  = strdup(opt->params[i]->name);
        ck->params[i].numel = opt->params[i]->numel;
    }
    for (r = 0; r < opt->size; r++) {
        zsh_ckpt_walk(opt, r, index, zsh_ckpt_count, ck);
    }
    for (i = 0; i < opt->nparams; i++) {
        ck->params[i].pieces  = calloc(ck->params[i].npieces + 1, sizeof(zsh_ckpt_piece_t));
        ck->params[i].npieces = 0;
        if ((ck->params[i].pieces == NULL) || (ck->params[i].name == NULL)) {
            free(index);
            zsh_ckpt_free(ck);
            return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the checkpoint's layout");
        }
    }
    for (r = 0; r < opt->size; r++) {
        zsh_ckpt_walk(opt, r, index, zsh_ckpt_fill, ck);
    }
    free(index);
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_agree(zsh_optim_t *opt, zsh_status_t mine)
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

/* What this rank alone can find wrong before a save or load. */
static zsh_status_t zsh_ckpt_check_local(zsh_optim_t *opt, const char *fn, bool load)
{
    zsh_status_t status = zsh_tier_check(opt, fn);
    size_t i;

    if (status != ZSH_OK) {
        return status;
    }
    if (opt->device) {
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
        status = zsh_optim_comm_check(opt, fn);
    }
    if (status != ZSH_OK) {
        return status;
    }
    /* Shard reads a stage 3 forward left in flight hold the NVMe tier's
     * buffers; the save or load needs them, and the next fetch reads again. */
    zsh_optim_param_reads_drop(opt);
    /* A rank that stopped here would leave the others in the agreements. */
    return zsh_ckpt_agree(opt, zsh_ckpt_check_local(opt, fn, load));
}
