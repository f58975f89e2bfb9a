/*
 * The optimizer layer's internals, shared by its files: the parameter and
 * bucket records, and the entry points one file offers another.
 *
 * Layout: parameters are appended, in registration order, to flat buckets
 * (src/shard/bucket.c). Bucket b has T elements, a per-rank shard of
 * count = ceil(T / N), and this rank owns the flat range [lo, hi). Every
 * per-element array of the layer is indexed by flat position: from 0 when it
 * is full (stage 0 states, stage 0-1 gradients), from lo when it is a shard.
 */
#ifndef ZSH_OPTIM_OPTIM_IMPL_H_
#define ZSH_OPTIM_OPTIM_IMPL_H_

#include "core/sticky.h"
#include "mem/account.h"
#include "mem/pool.h"
#include "optim/bstate.h"
#include "optim/device_ops.h"
#include "optim/norm.h"
#include "optim/prefetch.h"
#include "optim/rule/rule.h"
#include "optim/scaler.h"
#include "optim/stage.h"
#include "optim/tier.h"
#include "optim/tier_ops.h"
#include "optim/workers.h"
#include "shard/qreduce.h"
#include "shard/shard_impl.h"

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stddef.h>

/* A gradient the caller lent (zsh_optim_grad_lend), reduced from where it
 * lies in place of a staging buffer. */
typedef struct {
    const void       *grad; /* N * count elements; NULL: none is lent */
    zsh_op_t          op;   /* ZSH_SUM, or ZSH_AVG for a factor of 1/N */
    zsh_optim_lent_fn done; /* told once the reduction no longer reads it */
    void             *arg;
} zsh_obucket_lent_t;

/* A bucket: its layout and the buffers of every stage first, then one
 * sub-struct per feature, untouched (zero) when the feature is off. */
typedef struct zsh_obucket {
    zsh_bucket_t   *layout;      /* the views */
    zsh_param_t   **params;      /* in view order */
    size_t          nparams;
    size_t          numel;       /* T */
    size_t          count;       /* ceil(T / N) */
    size_t          lo, hi;      /* owned flat range */
    size_t          pending;     /* parameters still without a gradient this step */
    void           *grad_full;   /* stages 0-1: T (stage 0) or N * count elements */
    void           *grad_shard;  /* stages 2-3: count elements */
    void           *staging;     /* stages 2-3: N * count elements while collecting */
    size_t          staging_block; /* staging's block in opt->bufs; 0: a buffer of its own */
    zsh_obucket_lent_t lent;     /* stages 2-3: in place of staging, the caller's gradient */
    zsh_request_t  *req;         /* the gradient reduction in flight */
    float          *master;      /* mixed precision: fp32 weights of the state region */
    float          *m, *v;       /* optimizer states of the state region (v: Adam only) */
    void           *storage;     /* stages 0-2: the framework's buffer its parameters lie in,
                                    at their offsets (zsh_optim_set_bucket_storage); else NULL */
    struct {                      /* stage 3: the parameters, sharded and gathered */
        zsh_shard_t   *pshard;    /* the parameter shard */
        zsh_bstate_t   state;     /* what is gathered (bstate.h), moved by zsh_obucket_move() */
        int            refs;      /* parameters fetched and not released */
        unsigned long  last_use;  /* tick of the last fetch, for eviction */
    } fetch;
    struct {                      /* the NVMe tier */
        size_t         foff;      /* the region's first element in every file */
        zsh_norm_sum_t gsumsq;    /* gradients: sum of squares of the owned shard */
        void          *gtransit;  /* gradients: the reduced shard on its way to disk */
        zsh_aio_req_t *gwrite;    /* its write */
        bool           gdown;     /* device gradients: it is still coming down */
        void          *pbounce;   /* parameters: this rank's shard read for a gather */
        zsh_aio_req_t *pread;     /* its read */
    } nvme;
    struct {                      /* device parameters */
        void          *publish;   /* offload, stage 2: the step's all-gather buffer */
    } dev;
    struct {                      /* hpZ */
        void          *sec;       /* this rank's slice of the secondary partition */
        bool           sec_valid; /* filled by a gather since the last update (not a state:
                                     bstate.h says why) */
    } hpz;
    struct {                      /* qwZ */
        bool           sent;      /* gathered quantized since the last update: the next
                                     gathers are full precision (or hpZ's) */
        bool           live;      /* the gathered copy held now came as int8 */
        size_t        *cut_at;    /* qwZ and qgZ: each parameter's first element, */
        zsh_quant_cuts_t cuts;    /* where their blocks restart (quant/cuts.h) */
    } qwz;
    struct {                      /* qgZ */
        zsh_qreduce_t *q;         /* the reduction in flight (shard/qreduce.h), else NULL */
        zsh_status_t   status;    /* how its crossing failed, if it did */
    } qgz;
} zsh_obucket_t;

struct zsh_param {
    char   *name;
    size_t  numel;
    void   *buf;       /* the framework's buffer */
    size_t  bucket;    /* index into opt->buckets */
    size_t  offset;    /* first flat element in the bucket */
    bool    fetched;
    bool    has_grad;
    bool    no_grad;   /* its gradient this step is none on every rank (zsh_optim_grad_none):
                          the step leaves it, its states and its count as they are */
    unsigned long updates; /* updates applied to it: Adam's t for its bias correction,
                              behind the optimizer's where steps left it out */
    bool    own_decay; /* weight_decay is its own (zsh_optim_set_weight_decay), not cfg's */
    double  weight_decay;
};

/* The sizes of zsh_optim_config_t and zsh_optim_stats_t before the offload
 * tiers: a caller built then passes the first and reads the second. */
#define ZSH_OPTIM_CONFIG_SIZE_0 offsetof(zsh_optim_config_t, offload_optimizer)
#define ZSH_OPTIM_CONFIG_SIZE_1 offsetof(zsh_optim_config_t, update_threads)
#define ZSH_OPTIM_MAX_THREADS   256 /* ZSH_OPTIM_THREADS' range */
#define ZSH_OPTIM_STATS_SIZE_0  offsetof(zsh_optim_stats_t, compute_bytes)
/* Before hpZ: the config ends before hpz, the stats before the node counts. */
#define ZSH_OPTIM_CONFIG_SIZE_2 offsetof(zsh_optim_config_t, hpz)
#define ZSH_OPTIM_STATS_SIZE_1  offsetof(zsh_optim_stats_t, comm_bytes_cross_node_last_step)
#define ZSH_OPTIM_MAX_HPZ       65536 /* group sizes ZSH_HPZ and hpz take */
/* Before the device: the config ends before stream, the stats before device. */
#define ZSH_OPTIM_CONFIG_SIZE_3 offsetof(zsh_optim_config_t, stream)
#define ZSH_OPTIM_STATS_SIZE_2  offsetof(zsh_optim_stats_t, device)
/* Before the deterministic mode: the config ends before deterministic. */
#define ZSH_OPTIM_CONFIG_SIZE_4 offsetof(zsh_optim_config_t, deterministic)
/* Before qwZ: the config ends before quantize_weights, the stats before it. */
#define ZSH_OPTIM_CONFIG_SIZE_5 offsetof(zsh_optim_config_t, quantize_weights)
#define ZSH_OPTIM_STATS_SIZE_3  offsetof(zsh_optim_stats_t, quantize_weights)

/* The optimizer on device memory (device.c). */
typedef struct zsh_devopt {
    zsh_comm_t        *ucomm;        /* the caller's communicator; opt->comm is split from it */
    double            *sum;          /* the norm's device sum, then its scratch */
    void              *cstream;      /* offload: the copy stream */
    void              *sev;          /* offload: where the optimizer's stream is, for it */
    void             **events;       /* offload: per bucket, around its copies down and up */
    bool              *timed;        /* offload: per bucket, whether this step copied down, up */
    void              *up[2];        /* offload: pinned buffers of updated parameters */
    size_t             up_bytes;
    void              *up_done[2];   /* recorded after each one's last copy up */
    bool               up_busy[2];   /* holds parameters that may not have gone up yet */
    int                next_up;
    unsigned long long copy_bytes;
    double             copy_s, copy_wait_s;
} zsh_devopt_t;

struct zsh_optim {
    zsh_comm_t        *comm;
    size_t             caller_cfg_size; /* the config size the caller was built with */
    char              *nvme_dir;  /* owned copies of the resolved directory and job id */
    char              *job_id;
    int                rank, size;
    zsh_optim_config_t cfg;       /* defaults resolved */
    const zsh_stage_ops_t *stage_ops; /* cfg.stage's table */
    size_t             esize;     /* bytes per parameter element */
    bool               mixed;     /* bf16/fp16 parameters with fp32 master weights */
    int                nstates;   /* fp32 states per element: 2 Adam, 1 SGD with momentum, 0 */
    zsh_param_t      **params;
    size_t             nparams, maxparams;
    size_t             total_numel;     /* elements of every registered parameter */
    zsh_obucket_t     *buckets;
    size_t             nbuckets;
    bool               ready;     /* layout built */
    zsh_account_t      acct;
    size_t             comm_bytes;      /* since the last step */
    size_t             live_bytes;      /* stage 3: gathered bucket bytes */
    size_t             staging_bytes;   /* stages 2-3: gradient staging bytes */
    zsh_pool_t         bufs;            /* host bucket buffers kept between uses (bufs.c) */
    zsh_pool_t         gathers;         /* stage 3: host gathered buckets' buffers, likewise */
    unsigned long      tick;
    zsh_scaler_t       scaler;
    zsh_prefetch_t     prefetch;
    unsigned long      updates;         /* steps applied (Adam's t) */
    zsh_optim_stats_t  stats;           /* counters; bytes are filled in on request */
    zsh_tiers_t        tiers;           /* the offload tiers */
    zsh_workers_t     *workers;         /* update threads; NULL for the caller's alone */
    int                nnodes;          /* nodes the communicator spans */
    int                local_size;      /* its ranks on this rank's node */
    zsh_comm_t        *hpzcomm;         /* hpZ: this rank's node group; NULL when off */
    bool               hpz_check;       /* hpZ asked for across nodes: setup checks them */
    size_t             node_bytes;      /* of comm_bytes, on hpzcomm */
    size_t             quant_bytes;     /* of comm_bytes, sent quantized (qwZ, qgZ) */
    bool               grads_begun;     /* backward has begun this step: the caller said so
                                           (zsh_optim_backward_begin) or a gradient came */
    struct {                            /* zsh_optim_clip_grad_norm() this step */
        bool           known;           /* sumsq holds this step's sum of squares */
        double         sumsq;           /* scaled by the loss scale, as the step's own */
        double         max_norm;        /* the smallest asked for; 0: none */
    } clip;
    struct {                            /* qgZ, set up where cfg.quantize_grads is on */
        zsh_comm_t    *node, *rail;     /* this rank's node group and rail group */
        int           *owner;           /* owner[node * L + local]: the rank there */
        zsh_obucket_t **queue;          /* reductions started, in order; from crossed on, */
        size_t         started, crossed; /* those whose all-to-all is still to post */
    } qgz;
    const zsh_dev_ops_t *dev_ops;       /* where the model is: host, CUDA, CUDA offloaded */
    bool               has_master;      /* fp32 master weights: mixed precision, or the device's
                                           states offloaded to the host */
    zsh_devopt_t       dev;
    zsh_sticky_t       comm_failed;     /* the first failed collective */
};

/* Record the status of one of the optimizer's collectives and return it:
 * the first failure is kept (bad arguments aside, which post nothing), and
 * zsh_optim_comm_check() raises it from then on. The ranks' states no
 * longer agree after one, and a transfer it left under way may still write
 * the buffers it used, which are never reused but freed through
 * zsh_comm_free_buffer(). */
zsh_status_t zsh_optim_comm_status(zsh_optim_t *opt, zsh_status_t status);

/* ZSH_OK, or the recorded failure raised again for @fn. */
zsh_status_t zsh_optim_comm_check(const zsh_optim_t *opt, const char *fn);

/* What an entry point that moves data checks first: the layout built
 * (zsh_optim_setup()), and no recorded failure (zsh_optim_comm_check()). */
zsh_status_t zsh_optim_enter(zsh_optim_t *opt, const char *fn);
/* zsh_optim_enter() for a call on @param, refusing NULL for either first. */
zsh_status_t zsh_optim_enter_param(zsh_optim_t *opt, const zsh_param_t *param, const char *fn);

/* The part of @param's view that falls in the flat range [lo, hi), as
 * [*s_p, *e_p); false if none. */
static inline bool zsh_param_overlap(const zsh_param_t *param, size_t lo, size_t hi,
                                     size_t *s_p, size_t *e_p)
{
    size_t s = (param->offset > lo) ? param->offset : lo;
    size_t e = (param->offset + param->numel < hi) ? param->offset + param->numel : hi;

    *s_p = s;
    *e_p = e;
    return s < e;
}

/* Offset of state-region arrays: full at stage 0, the owned shard after. */
static inline size_t zsh_obucket_base(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return opt->stage_ops->state_base(opt, b);
}

/* Elements of the state region (master, m, v). */
static inline size_t zsh_obucket_region(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return opt->stage_ops->state_count(opt, b);
}

/* The end of the owned flat range: the whole bucket at stage 0. */
static inline size_t zsh_obucket_owned_end(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return opt->stage_ops->owned_end(opt, b);
}

/* Bytes of one full (gathered or staged) copy of a bucket. */
static inline size_t zsh_obucket_full_bytes(const zsh_optim_t *opt, const zsh_obucket_t *b)
{
    return b->count * (size_t)opt->size * opt->esize;
}

/* The most bytes one element can cost across kinds: parameter and gradient
 * in the precision, and the fp32 states (with the master weight if mixed).
 * Registration keeps the total elements times this within a size_t, so no
 * byte count of the layout or its accounting can wrap. */
static inline size_t zsh_optim_elem_bytes(const zsh_optim_t *opt)
{
    return 2 * opt->esize + sizeof(float) * (size_t)(opt->nstates + (opt->has_master ? 1 : 0));
}

/* offload/tier.c: the offload tiers. */
size_t         zsh_tier_esize(const zsh_optim_t *opt, zsh_tkind_t kind);
zsh_account_t *zsh_tier_acct(zsh_optim_t *opt, zsh_tkind_t kind); /* memory kinds only */
zsh_status_t   zsh_tier_setup(zsh_optim_t *opt);   /* after the buckets, before their buffers */
void           zsh_tier_teardown(zsh_optim_t *opt);
/* Record @status (with zsh_last_error()) as the tier's failure, unless it failed before. */
void           zsh_tier_fail(zsh_optim_t *opt, zsh_status_t status);
/* Start a read or write of @nelem elements of @kind's file from element @felem. */
zsh_status_t   zsh_tier_io(zsh_optim_t *opt, zsh_tkind_t kind, bool write, size_t felem,
                           void *buf, size_t nelem, zsh_aio_req_t **req_p);
/* Wait for @*req_p, free it and set it to NULL; a failure is recorded as the
 * tier's (sticky) failure. */
zsh_status_t   zsh_tier_wait(zsh_optim_t *opt, zsh_aio_req_t **req_p);
/* The sticky failure, re-raised with its message: ZSH_OK if none. */
zsh_status_t   zsh_tier_check(zsh_optim_t *opt, const char *fn);
/* Collective when an NVMe tier exists: whether any rank's tier failed, so
 * that every rank stops at the same step instead of waiting on the one that
 * stopped. The failure is raised on every rank (sticky). */
zsh_status_t   zsh_tier_agree(zsh_optim_t *opt, const char *fn);
/* Write elements [s, e) of bucket @b's region (flat positions) of @kind from
 * @src, reading the edge blocks first where they are partial. */
zsh_status_t   zsh_tier_patch(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                              size_t e, const void *src);
/* Read elements [s, e) of bucket @b's region of @kind from its file into
 * @dst (states never written read as zeros). */
zsh_status_t   zsh_tier_peek(zsh_optim_t *opt, zsh_tkind_t kind, zsh_obucket_t *b, size_t s,
                             size_t e, void *dst);
void           zsh_optim_tier_stats(const zsh_optim_t *opt, zsh_optim_stats_t *stats);

/* grads.c: keep staging within max_live_bytes: reductions in flight are
 * waited for (the oldest bucket first) until @bytes more fit, in a kept
 * buffer or a new one within the bound, or none is left to wait for. */
zsh_status_t zsh_optim_staging_room(zsh_optim_t *opt, size_t bytes);
/* bufs.c: the pools of bucket buffers, set up with the layout once its
 * place is known, given to the stage 3 buckets' shards once they are
 * sealed, and freed after the buckets. */
void         zsh_optim_bufs_init(zsh_optim_t *opt);
void         zsh_optim_bufs_attach(zsh_optim_t *opt);
void         zsh_optim_bufs_fini(zsh_optim_t *opt);
/* @bytes or more of buffer at the account's place (zeroed when new), from
 * the pool where it fits (*@block_p: the block's bytes), else of its own
 * (*@block_p: 0); NULL: no memory. */
void        *zsh_optim_buf_get(zsh_optim_t *opt, size_t bytes, size_t *block_p);
/* Give back what zsh_optim_buf_get() returned for @bytes as @block; @comm:
 * a failed collective on it may still write the buffer
 * (zsh_account_free_buffer()). */
void         zsh_optim_buf_put(zsh_optim_t *opt, void *ptr, size_t bytes, size_t block,
                               zsh_comm_t *comm);
/* bufs.c: a staging buffer for @b (the first of its gradients, @param's, names a
 * failure), within max_live_bytes; staging_bytes counts it. */
zsh_status_t zsh_optim_staging_get(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_param_t *param);
/* bufs.c: @b's staging buffer back, to the pool or the system; @comm: a failed
 * collective on it may still write the buffer (zsh_account_free_buffer()).
 * staging_bytes is the caller's to lower. */
void         zsh_optim_staging_put(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm);
/* grads.c: NVMe gradients: writes still in flight are completed. */
zsh_status_t zsh_optim_grad_writes_wait(zsh_optim_t *opt);
/* Room in the host budget: the reductions in flight are waited for (their
 * shards then go to disk), then every gradient write. */
zsh_status_t zsh_optim_grad_room(zsh_optim_t *opt);

/* offload/swap.c: the step over sub-groups when any state lives in files. */
zsh_status_t zsh_optim_swap_step(zsh_optim_t *opt, const zsh_update_t *u);
/* After a step that failed on any rank: the parameters in memory that the
 * swapped step changed, put back from the undo file. */
zsh_status_t zsh_optim_swap_undo(zsh_optim_t *opt);

/* fetch.c: NVMe parameters: reads in flight are completed and dropped (a
 * failure is the tier's). */
void zsh_optim_param_reads_drop(zsh_optim_t *opt);

/* hpz.c: the secondary partition. zsh_optim_hpz_resolve() settles the
 * group size at create (cfg.hpz: 1 off, else the size); setup splits the
 * node groups and allocates the slices (collective), free undoes it. */
zsh_status_t zsh_optim_hpz_resolve(zsh_optim_t *opt, const char *env);
zsh_status_t zsh_optim_hpz_setup(zsh_optim_t *opt);
void         zsh_optim_hpz_free(zsh_optim_t *opt);
/* Elements of a bucket's slice, and whether a gather of @b can be served
 * by the node group; after a gather from the primary shards completed into
 * @full, keep the slice. */
size_t       zsh_optim_hpz_count(const zsh_optim_t *opt, const zsh_obucket_t *b);
void         zsh_optim_hpz_keep(zsh_optim_t *opt, zsh_obucket_t *b, const void *full);
void         zsh_optim_hpz_invalidate(zsh_optim_t *opt);

/* qwz.c: quantized weights. zsh_optim_qwz_resolve() settles
 * cfg.quantize_weights (ZSH_QUANTIZE_ON or OFF) and the block at create,
 * after hpZ (it needs the nodes); zsh_optim_qwz_src() marks a gather from
 * the primary shards quantized where it is a bucket's first since the last
 * update; zsh_optim_qwz_invalidate() makes every bucket's next gather the
 * first again. Once backward has begun, zsh_optim_qwz_forward_only() says
 * whether @b's gathered copy is one that serves the forward alone (it came
 * as int8 and no hpZ secondary holds the bucket), to be dropped once no one
 * uses it, and zsh_optim_qwz_backward_begins() drops those no one uses
 * when backward begins (zsh_optim_backward_begin() or the step's first
 * gradient). */
struct zsh_zero_config;
zsh_status_t zsh_optim_qwz_resolve(zsh_optim_t *opt, const struct zsh_zero_config *env);
void         zsh_optim_qwz_src(const zsh_optim_t *opt, const zsh_obucket_t *b,
                               zsh_shard_src_t *src);
void         zsh_optim_qwz_invalidate(zsh_optim_t *opt);
bool         zsh_optim_qwz_forward_only(const zsh_optim_t *opt, const zsh_obucket_t *b);
zsh_status_t zsh_optim_qwz_backward_begins(zsh_optim_t *opt);
/* Reads (zsh_optim_get_param) are exact under qwZ: whether @b's hpZ slice
 * holds int8 values, which a read may not gather from; and whether @b's
 * gathered copy must go before a fetch (@exact: a read's) gathers it
 * again: int8 for a read, or the exact copy of a read where the fetch is
 * the step's first, which qwZ makes int8. */
bool         zsh_optim_qwz_rounded_sec(const zsh_optim_t *opt, const zsh_obucket_t *b);
bool         zsh_optim_qwz_regather(const zsh_optim_t *opt, const zsh_obucket_t *b, bool exact);
/* Where either quantization is on, each bucket's cuts, its parameters'
 * offsets, so that no quantization block spans two parameters; freed by
 * zsh_optim_qwz_free(). */
zsh_status_t zsh_optim_qwz_setup(zsh_optim_t *opt);
void         zsh_optim_qwz_free(zsh_optim_t *opt);

/* qgz.c: quantized gradients. Settled with qwZ at create (cfg.quantize_grads
 * ZSH_QUANTIZE_ON or OFF); setup makes the node and rail groups and the map
 * of the ranks (every rank checks the nodes together); reduce starts a
 * bucket's staged gradients through shard/qreduce.h into its shard, and
 * poll tests (@wait: waits for) it: ZSH_INPROGRESS, or how it ended. */
zsh_status_t zsh_optim_qgz_setup(zsh_optim_t *opt);
void         zsh_optim_qgz_free(zsh_optim_t *opt);
zsh_status_t zsh_optim_qgz_reduce(zsh_optim_t *opt, zsh_obucket_t *b);
zsh_status_t zsh_optim_qgz_poll(zsh_optim_t *opt, zsh_obucket_t *b, bool wait);

/* layout.c: buckets, shards and states. */
zsh_status_t zsh_optim_layout_build(zsh_optim_t *opt);
void         zsh_optim_layout_free(zsh_optim_t *opt);
/* Copy (and widen, if @to_float) the parameters' initial values over the
 * flat range [lo, hi) into @dst, indexed from @base, wherever they live. */
zsh_status_t zsh_optim_layout_copy_in(zsh_optim_t *opt, const zsh_obucket_t *b, size_t lo,
                                      size_t hi, size_t base, void *dst, bool to_float);
/* Allocate the master weights (@kind MASTER, into *@mem_p) or the stage 3
 * shard (PARAMS) of @b's @region elements from @base in their tier, and
 * fill them with the initial values. */
zsh_status_t zsh_optim_layout_place(zsh_optim_t *opt, zsh_obucket_t *b, zsh_tkind_t kind,
                                    size_t base, size_t region, void **mem_p);

/* grads.c: gradient collection and reduction. */
zsh_status_t zsh_optim_grads_wait(zsh_optim_t *opt);
void         zsh_optim_grads_reset(zsh_optim_t *opt);

/* fetch.c: stage 3's fetch and release of a parameter the caller checked:
 * its bucket gathered (cached, prefetching the next ones), and let go. */
zsh_status_t zsh_optim_fetch_gathered(zsh_optim_t *opt, zsh_param_t *param, void **data_p);
zsh_status_t zsh_optim_release_gathered(zsh_optim_t *opt, zsh_param_t *param);
/* fetch.c: stage 3's fetch for a read (zsh_optim_get_param): full
 * precision under qwZ, outside the recorded order, no prefetch. */
zsh_status_t zsh_optim_fetch_exact(zsh_optim_t *opt, zsh_param_t *param, void **data_p);
/* fetch.c: stage 3 gathers: drop one bucket's gathered copy (cached or
 * prefetched, not fetched), or every bucket's. */
zsh_status_t zsh_optim_drop_gather(zsh_optim_t *opt, zsh_obucket_t *b);
zsh_status_t zsh_optim_drop_gathers(zsh_optim_t *opt);

/* norm.c: the global gradient norm and overflow check; the squares of @n
 * gradient elements in the layer's precision added into @acc. */
void         zsh_optim_sumsq(const zsh_optim_t *opt, const void *g, size_t n,
                             zsh_norm_sum_t *acc);
zsh_status_t zsh_optim_grad_sumsq(zsh_optim_t *opt, double *sumsq_p);

/* Whether the norm is summed exactly: in the deterministic mode of the
 * optimizer's communicator (zsh_optim_config_t::deterministic). */
static inline bool zsh_optim_exact_norm(const zsh_optim_t *opt)
{
    return zsh_comm_get_deterministic(opt->comm) == 1;
}

/* Where one sub-group's swapped kinds sit in host buffers: element e of
 * the files' space [lo, hi) is at buf[kind] + (e - lo) * element size. */
typedef struct zsh_swap_view {
    size_t  lo, hi;
    char   *buf[ZSH_TK_KINDS];
} zsh_swap_view_t;

/* update.c: apply the rule to the owned region and publish the parameters.
 * zsh_optim_update_bucket() updates the whole owned region in memory;
 * zsh_optim_update_view() the part of it in a swapped sub-group. */
zsh_status_t zsh_optim_update_bucket(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u);
zsh_status_t zsh_optim_update_view(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                   const zsh_swap_view_t *view);
zsh_status_t zsh_optim_publish_bucket(zsh_optim_t *opt, zsh_obucket_t *b);

/* The parameters in memory of @view's sub-group: copied into its
 * ZSH_TK_UNDO buffer (@save), or back from it. */
void zsh_optim_params_swap(zsh_optim_t *opt, const zsh_swap_view_t *view, bool save);

/* The rule over the owned flat elements [s0, e0) of @b, in memory or in
 * @view; the updated parameters of a master-weight optimizer go to @out
 * (indexed from b->lo) when given, else to their place. The stage walks
 * the range (its update_walk); zsh_optim_update_run() applies the rule to
 * one run [s, e) of it, within @param's view or, where every array is
 * contiguous, across the bucket; zsh_optim_update_params() is the walk of
 * one run per parameter. */
zsh_status_t zsh_optim_update_range(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                    size_t s0, size_t e0, const zsh_swap_view_t *view, void *out);
zsh_status_t zsh_optim_update_run(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                                  const zsh_update_t *u, size_t s, size_t e,
                                  const zsh_swap_view_t *view, void *out);
zsh_status_t zsh_optim_update_params(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                     size_t s0, size_t e0, const zsh_swap_view_t *view,
                                     void *out);
/* Whether every parameter of @b takes the step's update as it is: none
 * without a gradient (zsh_optim_grad_none), none with a count of updates
 * behind the optimizer's. Else the update splits at each parameter. */
bool zsh_obucket_uniform(const zsh_optim_t *opt, const zsh_obucket_t *b);

/* device.c: device parameters. Register notes where the parameters are
 * (refusing a mix, and what the device cannot honour); setup splits the
 * stream's communicator and places the accounts (before the buckets), then
 * what offload needs (after them); teardown undoes both. */
zsh_status_t zsh_optim_dev_register(zsh_optim_t *opt, const char *name, const void *buf);
/* Device parameters whose stage 3 shards are offloaded (host or file). */
bool         zsh_optim_dev_params_away(const zsh_optim_t *opt);
zsh_status_t zsh_optim_dev_check_ptr(const zsh_optim_t *opt, const char *fn, const char *what,
                                     const zsh_param_t *param, const void *ptr);
/* The rest of what differs by where the model is: its table
 * (device_ops.h, opt->dev_ops). */

#endif
