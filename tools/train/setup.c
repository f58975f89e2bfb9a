/*
 * Set-up and reporting of a zsh_train run: the optimizer and its
 * parameters, the activation buffers of this rank's slice of the batch, and
 * the closing bytes lines.
 */
#include "core/half.h"
#include "train/gemm.h"
#include "train/size.h"
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static zsh_status_t zsh_train_nomem(void)
{
    fprintf(stderr, "zsh_train: out of memory\n");
    return ZSH_ERR_NO_MEMORY;
}

static size_t zsh_train_esize(const zsh_train_t *t)
{
    return (t->o.precision == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
}

/* Initial values of elements [first, first + n) of parameter @i, in the
 * run's precision, into @dst; half precision is narrowed a tile at a time
 * through w32. */
static void zsh_train_fill(const zsh_train_t *t, size_t i, size_t first, size_t n, void *dst)
{
    size_t done, c, k;
    uint16_t *h = dst;

    if (t->o.precision == ZSH_FLOAT32) {
        zsh_train_param_init(&t->d, i, t->o.seed, first, n, dst);
        return;
    }
    for (done = 0; done < n; done += c) {
        c = (n - done < t->maxtile) ? n - done : t->maxtile;
        zsh_train_param_init(&t->d, i, t->o.seed, first + done, c, t->w32);
        for (k = 0; k < c; k++) {
            h[done + k] = (t->o.precision == ZSH_BFLOAT16) ? zsh_float_to_bf16(t->w32[k])
                                                           : zsh_float_to_fp16(t->w32[k]);
        }
    }
}

/* Whether parameter @i is a layer's weight, and that layer. */
static int zsh_train_is_weight(size_t i, size_t *layer_p)
{
    *layer_p = (i - 1) / 2;
    return (i > 0) && ((i - 1) % 2 == 0);
}

/* Elements of tile @k of parameter @i (its whole numel when untiled). */
static size_t zsh_train_tile_numel(const zsh_train_t *t, size_t i, size_t k, size_t *first_p)
{
    size_t n = zsh_train_param_numel(&t->d, i), l, per;

    if (t->ntiles[i] == 1) {
        *first_p = 0;
        return n;
    }
    (void)zsh_train_is_weight(i, &l);
    per      = t->rpt[i] * zsh_train_layer_in(&t->d, l);
    *first_p = k * per;
    return (*first_p + per < n) ? per : n - *first_p;
}

/* The model's sizes, and how each weight is tiled: --tiles row blocks, or
 * (tiles 0) blocks of at most a quarter of the live budget. */
static void zsh_train_plan(zsh_train_t *t)
{
    size_t i, k, l, out, first;

    t->d = (zsh_train_dims_t){ZSH_TRAIN_VOCAB, t->o.context, t->o.embed, t->o.hidden,
                              t->o.layers};
    if (t->o.params > 0) {
        zsh_train_size_for(t->o.params, &t->d);
    }
    t->np = zsh_train_nparams(&t->d);
    for (i = 0; i < t->np; i++) {
        t->ntiles[i] = 1;
        t->rpt[i]    = (i > 0) ? zsh_train_layer_out(&t->d, (i - 1) / 2) : 0;
        if (zsh_train_is_weight(i, &l)) {
            out = zsh_train_layer_out(&t->d, l);
            t->rpt[i] = (t->o.tiles == 0)
                            ? zsh_train_tile_rows_for(&t->d, l, zsh_train_esize(t), t->o.max_live)
                            : (out + t->o.tiles - 1) / t->o.tiles;
            t->ntiles[i] = (out + t->rpt[i] - 1) / t->rpt[i];
            t->maxout    = (out > t->maxout) ? out : t->maxout;
        }
        t->first_handle[i] = t->nhandles;
        t->nhandles += t->ntiles[i];
        for (k = 0; k < t->ntiles[i]; k++) {
            size_t n = zsh_train_tile_numel(t, i, k, &first);

            t->maxtile = (n > t->maxtile) ? n : t->maxtile;
        }
    }
}

/* Register parameter @i. At stages 0-2 its buffer is the framework's copy
 * of the parameter, tiled as row blocks by zsh_optim_register_tiled(). At
 * stage 3 the layer keeps only its shard and reads the buffer once, at
 * setup: every tile is registered alone (as register_tiled does, under the
 * same names) over the one zeroed @scratch tile, and gets its values with
 * zsh_optim_set_param() after setup, so no full copy of a weight is ever
 * allocated. */
static zsh_status_t zsh_train_register_one(zsh_train_t *t, size_t i, void *scratch)
{
    size_t n = zsh_train_param_numel(&t->d, i), l, k, first;
    zsh_param_t **at = &t->handles[t->first_handle[i]];
    zsh_status_t s = ZSH_OK;
    char name[64], tile[96];

    zsh_train_param_name(&t->d, i, name, sizeof(name));
    if (scratch != NULL) {
        for (k = 0; (s == ZSH_OK) && (k < t->ntiles[i]); k++) {
            if (t->ntiles[i] > 1) {
                snprintf(tile, sizeof(tile), "%s[%zu]", name, k);
            }
            s = zsh_optim_register(t->opt, (t->ntiles[i] > 1) ? tile : name,
                                   zsh_train_tile_numel(t, i, k, &first), t->o.precision, scratch,
                                   &at[k]);
        }
        return s;
    }
    if ((t->init[i] = malloc(n * zsh_train_esize(t))) == NULL) {
        return zsh_train_nomem();
    }
    zsh_train_fill(t, i, 0, n, t->init[i]);
    if (t->ntiles[i] > 1) {
        (void)zsh_train_is_weight(i, &l);
        return zsh_optim_register_tiled(t->opt, name, n, t->o.precision, t->init[i],
                                        t->rpt[i] * zsh_train_layer_in(&t->d, l), at);
    }
    return zsh_optim_register(t->opt, name, n, t->o.precision, t->init[i], at);
}

/* Stage 3: each tile's initial values, generated alone into @scratch, the
 * same on every rank; set_param keeps this rank's part. */
static zsh_status_t zsh_train_init_shards(zsh_train_t *t, void *scratch)
{
    size_t i, k, n, first;
    zsh_status_t s;

    for (i = 0; i < t->np; i++) {
        for (k = 0; k < t->ntiles[i]; k++) {
            n = zsh_train_tile_numel(t, i, k, &first);
            zsh_train_fill(t, i, first, n, scratch);
            if ((s = zsh_optim_set_param(t->opt, zsh_train_param(t, i, k), scratch)) != ZSH_OK) {
                return s;
            }
        }
    }
    return ZSH_OK;
}

static zsh_status_t zsh_train_create(zsh_train_t *t)
{
    zsh_optim_config_t cfg;

    zsh_optim_config_init(&cfg);
    cfg.stage          = t->o.stage;
    cfg.kind           = t->o.kind;
    cfg.precision      = t->o.precision;
    cfg.lr             = t->o.lr;
    cfg.momentum       = (t->o.kind == ZSH_OPTIM_SGD) ? 0.9f : 0.0f;
    cfg.weight_decay   = (t->o.kind == ZSH_OPTIM_ADAMW) ? 0.01f : 0.0f;
    cfg.max_grad_norm  = t->o.clip;
    cfg.bucket_size    = t->o.bucket_size;
    cfg.max_live_bytes = t->o.max_live;
    cfg.hpz            = t->o.hpz;
    cfg.deterministic  = t->o.deterministic;
    /* The tiers: what was not given stays at the config's default. */
    if (t->o.offload_optimizer != ZSH_OFFLOAD_DEFAULT) {
        cfg.offload_optimizer = t->o.offload_optimizer;
    }
    if (t->o.offload_params != ZSH_OFFLOAD_DEFAULT) {
        cfg.offload_params = t->o.offload_params;
    }
    if (t->o.nvme_dir != NULL) {
        cfg.nvme_dir = t->o.nvme_dir;
    }
    if (t->o.host_mem_limit != 0) {
        cfg.host_mem_limit = t->o.host_mem_limit;
    }
    return zsh_optim_create(t->comm, &cfg, &t->opt);
}

static zsh_status_t zsh_train_register(zsh_train_t *t)
{
    void *scratch = NULL;
    zsh_status_t s;
    size_t i;

    if ((s = zsh_train_create(t)) != ZSH_OK) {
        return s;
    }
    if ((t->o.stage == 3) && ((scratch = calloc(t->maxtile, zsh_train_esize(t))) == NULL)) {
        return zsh_train_nomem();
    }
    for (i = 0; (s == ZSH_OK) && (i < t->np); i++) {
        s = zsh_train_register_one(t, i, scratch);
    }
    if ((s == ZSH_OK) && ((s = zsh_optim_setup(t->opt)) == ZSH_OK) && (scratch != NULL)) {
        s = zsh_train_init_shards(t, scratch);
    }
    free(scratch);
    return s;
}

zsh_status_t zsh_train_setup(zsh_train_t *t)
{
    size_t width, i, most;

    t->rank  = zsh_comm_rank(t->comm);
    t->size  = zsh_comm_size(t->comm);
    t->first = t->o.batch * (size_t)t->rank / (size_t)t->size;
    t->rows  = t->o.batch * (size_t)(t->rank + 1) / (size_t)t->size - t->first;
    /* Per parameter; at most 1 + 2 * (64 + 1) of them (--layers, or --params's rule). */
    most            = 1 + 2 * (64 + 1);
    t->first_handle = calloc(most, sizeof(*t->first_handle));
    t->ntiles       = calloc(most, sizeof(*t->ntiles));
    t->rpt          = calloc(most, sizeof(*t->rpt));
    t->init         = calloc(most, sizeof(*t->init));
    if (!t->first_handle || !t->ntiles || !t->rpt || !t->init) {
        return zsh_train_nomem();
    }
    zsh_train_plan(t);
    width = t->d.context * t->d.embed;
    width = (t->d.hidden > width) ? t->d.hidden : width;
    width = (t->d.vocab > width) ? t->d.vocab : width;
    t->handles = calloc(t->nhandles, sizeof(*t->handles));
    t->acts    = calloc(t->d.layers + 2, sizeof(*t->acts));
    t->tokens  = malloc(t->rows * t->d.context + 1);
    t->targets = malloc(t->rows + 1);
    t->w32     = malloc(t->maxtile * sizeof(float));
    t->b32     = malloc(t->maxout * sizeof(float));
    t->g32     = malloc(t->maxtile * sizeof(float));
    t->g16     = malloc(t->maxtile * sizeof(uint16_t));
    t->dbuf[0] = malloc((t->rows + 1) * width * sizeof(float));
    t->dbuf[1] = malloc((t->rows + 1) * width * sizeof(float));
    if (!t->handles || !t->acts || !t->tokens || !t->targets || !t->w32 || !t->b32 || !t->g32 ||
        !t->g16 || !t->dbuf[0] || !t->dbuf[1]) {
        return zsh_train_nomem();
    }
    for (i = 0; i < t->d.layers + 2; i++) {
        t->acts[i] = malloc((t->rows + 1) * width * sizeof(float));
        if (t->acts[i] == NULL) {
            return zsh_train_nomem();
        }
    }
    return zsh_train_register(t);
}

int zsh_train_report(zsh_train_t *t)
{
    zsh_optim_stats_t st;
    uint64_t v[9];
    size_t psi = 0, i;

    if (zsh_optim_get_stats(t->opt, &st) != ZSH_OK) {
        return 1;
    }
    for (i = 0; i < t->np; i++) {
        psi += zsh_train_param_numel(&t->d, i);
    }
    v[0] = st.param_bytes + st.grad_bytes + st.state_bytes;
    v[1] = st.comm_bytes_last_step;
    v[2] = st.param_bytes;
    v[3] = st.grad_bytes;
    v[4] = st.state_bytes;
    v[5] = st.buffer_peak_bytes;
    v[6] = st.comm_bytes_cross_node_last_step;
    v[7] = st.comm_bytes_node_last_step;
    v[8] = st.comm_bytes_quantized_last_step;
    if (zsh_allreduce(v, v, 9, ZSH_UINT64, ZSH_MAX, t->comm) != ZSH_OK) {
        fprintf(stderr, "zsh_train: report: %s\n", zsh_last_error());
        return 1;
    }
    if (t->rank == 0) {
        printf("model: %zu hidden layers of %zu units, %zu weight tiles, matmul %s\n",
               t->d.layers, t->d.hidden, t->nhandles - (t->np - t->d.layers - 1),
               zsh_train_gemm_name());
        printf("parameters: %zu in %zu buckets; stage %d, %d ranks, %s\n", psi, st.nbuckets,
               t->o.stage, t->size,
               (t->o.precision == ZSH_FLOAT32)    ? "fp32"
               : (t->o.precision == ZSH_BFLOAT16) ? "bf16"
                                                  : "fp16");
        printf("per rank: params %llu, grads %llu, optimizer states %llu, buffers (peak) %llu "
               "bytes\n", (unsigned long long)v[2], (unsigned long long)v[3],
               (unsigned long long)v[4], (unsigned long long)v[5]);
        if (t->o.stage == 3) {
            printf("stage 3 (rank 0): gathered parameters peak %zu bytes; %lu fetches served by "
                   "prefetched buckets, %lu order rebuilds\n", st.gathered_peak_bytes,
                   st.prefetch_hits, st.order_rebuilds);
        }
        printf("model-state bytes per rank: %llu\n", (unsigned long long)v[0]);
        printf("comm bytes per rank per step: %llu\n", (unsigned long long)v[1]);
        printf("nodes: %d; hpz: ", st.nnodes);
        if (st.hpz > 1) {
            printf("groups of %d, secondary partition %zu bytes (rank 0)", st.hpz, st.hpz_bytes);
        } else {
            printf("off");
        }
        printf("; cross-node comm bytes per rank per step: %llu (%llu within the node group)\n",
               (unsigned long long)v[6], (unsigned long long)v[7]);
        printf("quantized: weights (qwZ) %s, gradients (qgZ) %s; comm bytes per rank per step "
               "sent quantized: %llu (%llu sent in full precision)\n",
               st.quantize_weights ? "on" : "off", st.quantize_grads ? "on" : "off",
               (unsigned long long)v[8], (unsigned long long)(v[1] - v[8]));
    }
    return 0;
}

void zsh_train_teardown(zsh_train_t *t)
{
    size_t i;

    zsh_optim_destroy(t->opt);
    for (i = 0; (t->init != NULL) && (i < t->np); i++) {
        free(t->init[i]);
    }
    for (i = 0; (t->acts != NULL) && (i < t->d.layers + 2); i++) {
        free(t->acts[i]);
    }
    free(t->init);
    free(t->acts);
    free(t->handles);
    free(t->first_handle);
    free(t->ntiles);
    free(t->rpt);
    free(t->tokens);
    free(t->targets);
    free(t->w32);
    free(t->b32);
    free(t->g32);
    free(t->g16);
    free(t->dbuf[0]);
    free(t->dbuf[1]);
    zsh_comm_destroy(t->comm);
    zsh_train_text_free(&t->text);
}
