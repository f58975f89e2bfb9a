/*
 * The ZeRO stages as tables: what differs between stage 0, 1, 2 and 3 is one
 * table of typed functions per stage, chosen at create (opt->stage_ops), so
 * the rest of the layer asks the table instead of testing the stage number.
 *
 *            parameters         gradients                 states      after the update
 *   stage 0  the framework's    full, all-reduced         full        nothing: a replica
 *   stage 1  the framework's    full, reduce-scattered    shard       all-gather into them
 *   stage 2  the framework's    staged, into a shard      shard       all-gather into them
 *   stage 3  a shard, gathered  staged, into a shard      shard       nothing: the next fetch
 *            on fetch
 *
 * Each stage's table and what is its own live in one file of stage/
 * (stage0.c .. stage3.c); what two or three stages share lives beside them
 * (stage/replicas.c: the full gradients of stages 0-1, the framework's
 * parameters of stages 0-2; stage/shards.c: the owned shard as the state
 * region, stages 1-3, and gradients staged and reduce-scattered into a
 * shard, stages 2-3). Stage 3's
 * gathers are fetch.c's machinery, which its table points to.
 *
 * This header is the interface: the files of the optimizer's root reach a
 * stage through it only, and nothing here includes stage/.
 */
#ifndef ZSH_OPTIM_STAGE_H_
#define ZSH_OPTIM_STAGE_H_

#include "optim/norm.h"
#include "optim/rule/rule.h"

#include <zeroshard/optim.h>

#include <stdbool.h>
#include <stddef.h>

typedef struct zsh_obucket   zsh_obucket_t;
typedef struct zsh_swap_view zsh_swap_view_t;

typedef struct zsh_stage_ops {
    int         stage;
    const char *name;
    /* What the stage partitions besides the optimizer states, as the
     * settings that need it (offload of a kind, hpZ) and the tiers read it. */
    bool        shards_grads;  /* gradients live in a shard of the layer's (2-3) */
    bool        shards_params; /* parameters live in a shard of the layer's (3) */

    /* The state region (master weights, m, v) of a bucket: its first flat
     * element, its elements, and the end of the flat range this rank
     * updates (the whole bucket at stage 0, the owned shard after). */
    size_t (*state_base)(const zsh_optim_t *opt, const zsh_obucket_t *b);
    size_t (*state_count)(const zsh_optim_t *opt, const zsh_obucket_t *b);
    size_t (*owned_end)(const zsh_optim_t *opt, const zsh_obucket_t *b);

    /* Layout (layout.c): the bucket's gradient buffer (false: no memory;
     * the caller names the bucket), its release (@comm: through the
     * communicator after a failed reduction), and where the parameters are
     * kept: the stage 3 shard sealed and filled, or the framework's buffers
     * counted as held. */
    bool         (*grads_alloc)(zsh_optim_t *opt, zsh_obucket_t *b);
    void         (*grads_free)(zsh_optim_t *opt, zsh_obucket_t *b, zsh_comm_t *comm);
    zsh_status_t (*params_place)(zsh_optim_t *opt, zsh_obucket_t *b);

    /* Gradients (grads.c): where grad-ready copies @param's gradient
     * (staging allocated within max_live_bytes where the stage stages),
     * and the bucket's reduction, started once every gradient is in. */
    zsh_status_t (*grad_dst)(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_param_t *param,
                             char **dst_p);
    zsh_status_t (*reduce_start)(zsh_optim_t *opt, zsh_obucket_t *b);

    /* The norm (norm.c): the reduced gradients this rank sums, in memory
     * (*@n_p elements), and the ranks' sums added into @sum where each
     * summed a part. */
    const void  *(*grads_owned)(const zsh_optim_t *opt, const zsh_obucket_t *b, size_t *n_p);
    zsh_status_t (*norm_sum)(zsh_optim_t *opt, zsh_norm_sum_t *sum);

    /* Fetch and release of a parameter, checked by the caller (fetch.c),
     * and the fetch of a read (load.c's zsh_optim_get_param): the exact
     * values, never qwZ's int8 ones, outside the step's recorded order. */
    zsh_status_t (*fetch)(zsh_optim_t *opt, zsh_param_t *param, void **data_p);
    zsh_status_t (*read)(zsh_optim_t *opt, zsh_param_t *param, void **data_p);
    zsh_status_t (*release)(zsh_optim_t *opt, zsh_param_t *param);

    /* The step (step.c, update.c): before the update (stage 3 drops what
     * it gathered, which the update makes stale); the rule's walk of the
     * owned flat elements [s0, e0) of a bucket in runs (update.c's
     * zsh_optim_update_run() applies one); after the update, the
     * parameters published; and the step's close. */
    zsh_status_t (*step_begin)(zsh_optim_t *opt);
    zsh_status_t (*update_walk)(zsh_optim_t *opt, zsh_obucket_t *b, const zsh_update_t *u,
                                size_t s0, size_t e0, const zsh_swap_view_t *view, void *out);
    zsh_status_t (*publish)(zsh_optim_t *opt, zsh_obucket_t *b);
    void         (*step_end)(zsh_optim_t *opt);

    /* Offload from the device (offload/offload_device.c): before a
     * bucket's update on the host, the buffer its parameters go up into
     * when the stage publishes them; and the copies of its updated
     * parameters [s0, e0) from @src (indexed from b->lo) to where the
     * device keeps them, on the copy stream @stream. */
    zsh_status_t (*up_prepare)(zsh_optim_t *opt, zsh_obucket_t *b);
    zsh_status_t (*params_up)(zsh_optim_t *opt, zsh_obucket_t *b, size_t s0, size_t e0,
                              const char *src, void *stream);

    /* The parameters: where flat element @s of @param lives; its values
     * set from @values in every copy but the master weights (load.c); and
     * [s, e) in the precision between @vals (indexed from s) and where they
     * live, in the direction @write, on the host (state.c). */
    void        *(*param_at)(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param, size_t s);
    zsh_status_t (*set_param)(zsh_optim_t *opt, zsh_obucket_t *b, zsh_param_t *param,
                              const void *values);
    zsh_status_t (*params_rw)(zsh_optim_t *opt, zsh_obucket_t *b, size_t s, size_t e,
                              void *vals, bool write);
} zsh_stage_ops_t;

extern const zsh_stage_ops_t zsh_stage0_ops; /* stage/stage0.c */
extern const zsh_stage_ops_t zsh_stage1_ops; /* stage/stage1.c */
extern const zsh_stage_ops_t zsh_stage2_ops; /* stage/stage2.c */
extern const zsh_stage_ops_t zsh_stage3_ops; /* stage/stage3.c */

/* The table of @stage (0 to 3, checked at create). */
const zsh_stage_ops_t *zsh_stage_ops(int stage);

#endif
