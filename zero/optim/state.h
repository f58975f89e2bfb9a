/*
 * The optimizer's state as a checkpoint walks it: all that zero/ckpt sees
 * of the optimizer beyond the public API, so that the optimizer's structs
 * (optim_impl.h) stay inside zero/optim.
 *
 * A checkpoint holds, per element, the fp32 weights (the master weights in
 * mixed precision, else the parameters) and each optimizer state. The
 * layout is the optimizer's: parameters in registration order fill flat
 * buckets, and rank r owns part r of every bucket. A walk hands out pieces:
 * the elements of one parameter that fall in one rank's part of its bucket
 * (or, for this rank's own state, in its state region). Get and set move a
 * bounded span of a piece of one kind wherever it lives (the framework's
 * buffers, the stage 3 shard, memory, the NVMe tier's files).
 *
 * Before a walk the caller checks the state is at rest
 * (zsh_optim_state_check()), and the ranks agree on every local outcome
 * (zsh_optim_state_agree()) so that none is left waiting in a collective.
 */
#ifndef ZSH_OPTIM_STATE_H_
#define ZSH_OPTIM_STATE_H_

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stddef.h>

/* The kinds, in the order of a checkpoint's files. */
typedef enum {
    ZSH_OSTATE_WEIGHTS,
    ZSH_OSTATE_EXP_AVG,    /* Adam's m, SGD's momentum */
    ZSH_OSTATE_EXP_AVG_SQ, /* Adam's v */
    ZSH_OSTATE_KINDS
} zsh_ostate_t;

/* What a walk depends on: fixed once the optimizer is set up. */
typedef struct zsh_ostate_info {
    int              rank, size;
    int              stage;
    zsh_dtype_t      precision;
    size_t           esize;      /* bytes of one parameter element */
    zsh_optim_kind_t kind;
    int              nkinds;     /* the weights and the rule's states: 1 + 0, 1 or 2 */
    size_t           nparams;
    size_t           span;       /* the most elements one get or set moves */
} zsh_ostate_info_t;

/* What a resumed run continues from: the counters, the loss scaler and the
 * rule's settings. */
typedef struct zsh_ostate_counters {
    unsigned long updates;       /* steps applied (Adam's t) */
    unsigned long steps, skipped_steps;
    struct {
        float    scale, min_scale;
        unsigned window, clean;
        bool     dynamic;
    } scaler;
    struct {
        double lr, beta1, beta2, eps, weight_decay, momentum;
        float  max_grad_norm;
        bool   nesterov;
    } hyper;
} zsh_ostate_counters_t;

/* Which elements a walk hands out. */
typedef enum {
    ZSH_OSTATE_WALK_PART,   /* rank r's part of every bucket: what a checkpoint's shard r holds */
    ZSH_OSTATE_WALK_REGION  /* this rank's state region: its part, every bucket whole at stage 0 */
} zsh_ostate_walk_t;

/* The elements [start, start + count) of parameter @param (in registration
 * order), which lie at flat positions [flat, flat + count) of bucket @bucket. */
typedef struct zsh_ostate_piece {
    size_t param;
    size_t bucket;
    size_t start, count;
    size_t flat;
} zsh_ostate_piece_t;

/* A walk in progress; its fields are the walk's own. */
typedef struct zsh_ostate_iter {
    const zsh_optim_t *opt;
    int                rank;
    zsh_ostate_walk_t  walk;
    size_t             bucket, index, param; /* the next parameter to look at */
} zsh_ostate_iter_t;

void zsh_optim_state_info(const zsh_optim_t *opt, zsh_ostate_info_t *info);

/* Parameter @i in registration order (i < nparams); zsh_param_name() and
 * zsh_param_numel() read it. */
const zsh_param_t *zsh_optim_state_param(const zsh_optim_t *opt, size_t i);

void zsh_optim_state_counters_get(const zsh_optim_t *opt, zsh_ostate_counters_t *c);
/* Parameter @i's own count of updates (Adam's t), behind the counters'
 * where steps left it out (zsh_optim_grad_none); set after the counters. */
unsigned long zsh_optim_state_param_updates(const zsh_optim_t *opt, size_t i);
void          zsh_optim_state_param_updates_set(zsh_optim_t *opt, size_t i, unsigned long updates);
/* Adopt @c (a window of 0 is taken as 1), with the configuration's copies
 * of the scaler and rule settings. */
void zsh_optim_state_counters_set(zsh_optim_t *opt, const zsh_ostate_counters_t *c);

/* Start a walk of @walk's pieces: of rank @rank's part (0 <= rank < size),
 * or of this rank's region (@rank is ignored). The pieces come in bucket
 * order, within a bucket in flat order, so in registration order too. */
void zsh_optim_state_iter_init(zsh_ostate_iter_t *it, const zsh_optim_t *opt,
                               zsh_ostate_walk_t walk, int rank);
/* The next piece into @piece_p, or false when the walk is over. */
bool zsh_optim_state_iter_next(zsh_ostate_iter_t *it, zsh_ostate_piece_t *piece_p);

/* Elements [off, off + n) of @piece, which must lie in this rank's state
 * region, as fp32: read into @dst, or written from @src with every copy the
 * layer keeps (the weights' parameters rounded through @scratch, n elements
 * of the precision). n is at most the info's span. A span outside the piece
 * or the region is ZSH_ERR_INVALID_ARG, and nothing moves. Host parameters
 * only. */
zsh_status_t zsh_optim_state_get(zsh_optim_t *opt, zsh_ostate_t kind,
                                 const zsh_ostate_piece_t *piece, size_t off, size_t n,
                                 float *dst);
zsh_status_t zsh_optim_state_set(zsh_optim_t *opt, zsh_ostate_t kind,
                                 const zsh_ostate_piece_t *piece, size_t off, size_t n,
                                 const float *src, void *scratch);

/* As zsh_optim_state_set() of the weights in mixed precision, but only the
 * fp32 master weights are written: the parameters keep their values. */
zsh_status_t zsh_optim_state_set_master(zsh_optim_t *opt, const zsh_ostate_piece_t *piece,
                                        size_t off, size_t n, const float *src);

/* Around the sets of a load: before, the copies of the state a set would
 * leave stale are dropped (stage 3 gathers and shard reads, hpZ's
 * partition); after, each rank's part of the parameters is sent to every
 * rank (stages 1 and 2: collective). */
zsh_status_t zsh_optim_state_set_begin(zsh_optim_t *opt);
zsh_status_t zsh_optim_state_set_end(zsh_optim_t *opt);

/* Collective, before a walk (on a set-up optimizer): ZSH_OK, or a failed
 * collective of the optimizer raised again for @fn, which no agreement
 * could survive. Shard reads a stage 3 forward left in flight are dropped:
 * they hold the NVMe tier's buffers a walk needs, and the next fetch reads
 * again. */
zsh_status_t zsh_optim_state_prepare(zsh_optim_t *opt, const char *fn);

/* What this rank alone finds wrong before a walk, as an error for @fn: a
 * failed tier, device parameters, a gradient pending, and if @load a
 * parameter fetched, naming the parameter. */
zsh_status_t zsh_optim_state_check(zsh_optim_t *opt, const char *fn, bool load);

/* Collective: ZSH_OK when every rank's @mine is; else the failure, with the
 * rank's own message where it failed and, elsewhere, the message of the
 * highest rank that did, naming it. */
zsh_status_t zsh_optim_state_agree(zsh_optim_t *opt, zsh_status_t mine);

/* The optimizer's communicator, for a checkpoint's own collectives, and the
 * record of their outcome: the first failure is kept, and the optimizer
 * raises it from then on (as for its own). Returns @status. */
zsh_comm_t  *zsh_optim_state_comm(const zsh_optim_t *opt);
zsh_status_t zsh_optim_state_comm_status(zsh_optim_t *opt, zsh_status_t status);

#endif
