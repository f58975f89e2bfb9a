/*
 * The walk of the optimizer's state (state.h): the pieces of each bucket's
 * flat range, as a rank's part or this rank's state region cuts them, with
 * the parameters and counters a checkpoint's manifest records beside them.
 */
#include "optim/state.h"
#include "optim/optim_impl.h"

#include <string.h>

const zsh_param_t *zsh_optim_state_param(const zsh_optim_t *opt, size_t i)
{
    return (i < opt->nparams) ? opt->params[i] : NULL;
}

unsigned long zsh_optim_state_param_updates(const zsh_optim_t *opt, size_t i)
{
    return opt->params[i]->updates;
}

void zsh_optim_state_param_updates_set(zsh_optim_t *opt, size_t i, unsigned long updates)
{
    opt->params[i]->updates = updates;
}

void zsh_optim_state_counters_get(const zsh_optim_t *opt, zsh_ostate_counters_t *c)
{
    memset(c, 0, sizeof(*c));
    c->updates             = opt->updates;
    c->steps               = opt->stats.steps;
    c->skipped_steps       = opt->stats.skipped_steps;
    c->scaler.scale        = opt->scaler.scale;
    c->scaler.min_scale    = opt->scaler.min_scale;
    c->scaler.window       = opt->scaler.window;
    c->scaler.clean        = opt->scaler.clean;
    c->scaler.dynamic      = opt->scaler.dynamic;
    c->hyper.lr            = opt->cfg.lr;
    c->hyper.beta1         = opt->cfg.beta1;
    c->hyper.beta2         = opt->cfg.beta2;
    c->hyper.eps           = opt->cfg.eps;
    c->hyper.weight_decay  = opt->cfg.weight_decay;
    c->hyper.momentum      = opt->cfg.momentum;
    c->hyper.nesterov      = opt->cfg.nesterov;
    c->hyper.max_grad_norm = opt->cfg.max_grad_norm;
}

void zsh_optim_state_counters_set(zsh_optim_t *opt, const zsh_ostate_counters_t *c)
{
    size_t i;

    for (i = 0; i < opt->nparams; i++) {
        opt->params[i]->updates = c->updates;
    }
    opt->updates                = c->updates;
    opt->stats.steps            = c->steps;
    opt->stats.skipped_steps    = c->skipped_steps;
    opt->scaler.scale           = c->scaler.scale;
    opt->scaler.min_scale       = c->scaler.min_scale;
    opt->scaler.window          = (c->scaler.window == 0) ? 1 : c->scaler.window;
    opt->scaler.clean           = c->scaler.clean;
    opt->scaler.dynamic         = c->scaler.dynamic;
    opt->cfg.lr                 = c->hyper.lr;
    opt->cfg.beta1              = c->hyper.beta1;
    opt->cfg.beta2              = c->hyper.beta2;
    opt->cfg.eps                = c->hyper.eps;
    opt->cfg.weight_decay       = c->hyper.weight_decay;
    opt->cfg.max_grad_norm      = c->hyper.max_grad_norm;
    opt->cfg.loss_scale         = c->scaler.scale;
    opt->cfg.dynamic_loss_scale = c->scaler.dynamic;
    opt->cfg.loss_scale_window  = opt->scaler.window;
    opt->cfg.min_loss_scale     = c->scaler.min_scale;
    opt->cfg.momentum           = c->hyper.momentum; /* zero or not as here: the states match */
    opt->cfg.nesterov           = c->hyper.nesterov;
}

void zsh_optim_state_iter_init(zsh_ostate_iter_t *it, const zsh_optim_t *opt,
                               zsh_ostate_walk_t walk, int rank)
{
    memset(it, 0, sizeof(*it));
    it->opt  = opt;
    it->walk = walk;
    it->rank = (walk == ZSH_OSTATE_WALK_REGION) ? opt->rank : rank;
    if ((it->rank < 0) || (it->rank >= opt->size)) {
        it->bucket = opt->nbuckets; /* no such rank owns anything */
    }
}

/* The flat range of bucket @b the walk @it covers. */
static void zsh_optim_state_iter_range(const zsh_ostate_iter_t *it, const zsh_obucket_t *b,
                                       size_t *lo_p, size_t *hi_p)
{
    if (it->walk == ZSH_OSTATE_WALK_REGION) {
        *lo_p = it->opt->stage_ops->state_base(it->opt, b);
        *hi_p = it->opt->stage_ops->owned_end(it->opt, b);
    } else {
        zsh_shard_part_range(b->numel, it->opt->size, it->rank, lo_p, hi_p);
    }
}

bool zsh_optim_state_iter_next(zsh_ostate_iter_t *it, zsh_ostate_piece_t *piece_p)
{
    const zsh_optim_t *opt = it->opt;
    const zsh_obucket_t *b;
    const zsh_param_t *p;
    size_t lo, hi, s, e;

    for (; it->bucket < opt->nbuckets; it->bucket++, it->index = 0) {
        b = &opt->buckets[it->bucket];
        zsh_optim_state_iter_range(it, b, &lo, &hi);
        /* Buckets take the parameters in registration order. */
        while (it->index < b->nparams) {
            p = b->params[it->index++];
            it->param++;
            if (zsh_param_overlap(p, lo, hi, &s, &e)) {
                piece_p->param  = it->param - 1;
                piece_p->bucket = it->bucket;
                piece_p->start  = s - p->offset;
                piece_p->count  = e - s;
                piece_p->flat   = s;
                return true;
            }
        }
    }
    return false;
}
