/*
 * Set-up and reporting of a zsh_train run: the optimizer and its
 * parameters, the activation buffers of this rank's slice of the batch, and
 * the closing bytes lines.
 */
#include "core/half.h"
#include "train/train.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static zsh_status_t zsh_train_nomem(void)
{
    fprintf(stderr, "zsh_train: out of memory\n");
    return ZSH_ERR_NO_MEMORY;
}

/* Initial values of parameter @i in the run's precision, in a new buffer. */
static void *zsh_train_initial(const zsh_train_t *t, size_t i, float *tmp)
{
    size_t n = zsh_train_param_numel(&t->d, i), k;
    uint16_t *h;

    zsh_train_param_init(&t->d, i, t->o.seed, tmp);
    if (t->o.precision == ZSH_FLOAT32) {
        float *f = malloc(n * sizeof(*f));

        if (f != NULL) {
            memcpy(f, tmp, n * sizeof(*f));
        }
        return f;
    }
    h = malloc(n * sizeof(*h));
    for (k = 0; (h != NULL) && (k < n); k++) {
        h[k] = (t->o.precision == ZSH_BFLOAT16) ? zsh_float_to_bf16(tmp[k])
                                                : zsh_float_to_fp16(tmp[k]);
    }
    return h;
}

/* Whether parameter @i is a layer's weight, and that layer. */
static int zsh_train_is_weight(size_t i, size_t *layer_p)
{
    *layer_p = (i - 1) / 2;
    return (i > 0) && ((i - 1) % 2 == 0);
}

/* Register parameter @i, a weight as row blocks of rpt rows each. */
static zsh_status_t zsh_train_register_one(zsh_train_t *t, size_t i, size_t *next)
{
    size_t n = zsh_train_param_numel(&t->d, i), l, out, k;
    zsh_status_t s;
    char name[64];

    zsh_train_param_name(&t->d, i, name, sizeof(name));
    t->first_handle[i] = *next;
    t->ntiles[i] = 1;
    if (zsh_train_is_weight(i, &l) && (t->o.tiles > 1)) {
        out          = zsh_train_layer_out(&t->d, l);
        t->rpt[i]    = (out + t->o.tiles - 1) / t->o.tiles;
        t->ntiles[i] = (out + t->rpt[i] - 1) / t->rpt[i];
        s = zsh_optim_register_tiled(t->opt, name, n, t->o.precision, t->init[i],
                                     t->rpt[i] * zsh_train_layer_in(&t->d, l), &t->handles[*next]);
    } else {
        t->rpt[i] = (i > 0) ? zsh_train_layer_out(&t->d, (i - 1) / 2) : 0;
        s = zsh_optim_register(t->opt, name, n, t->o.precision, t->init[i], &t->handles[*next]);
    }
    for (k = 0; (s == ZSH_OK) && (k < t->ntiles[i]); k++) {
        (*next)++;
    }
    return s;
}

static zsh_status_t zsh_train_register(zsh_train_t *t)
{
    zsh_optim_config_t cfg;
    size_t i, next = 0;
    zsh_status_t s;

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
    if ((s = zsh_optim_create(t->comm, &cfg, &t->opt)) != ZSH_OK) {
        return s;
    }
    for (i = 0; i < t->np; i++) {
        t->init[i] = zsh_train_initial(t, i, t->w32);
        if (t->init[i] == NULL) {
            return zsh_train_nomem();
        }
        if ((s = zsh_train_register_one(t, i, &next)) != ZSH_OK) {
            return s;
        }
    }
    if ((s = zsh_optim_setup(t->opt)) != ZSH_OK) {
        return s;
    }
    /* At stage 3 the layer owns the (sharded) parameters: the full copies go. */
    for (i = 0; (t->o.stage == 3) && (i < t->np); i++) {
        free(t->init[i]);
        t->init[i] = NULL;
    }
    return ZSH_OK;
}

zsh_status_t zsh_train_setup(zsh_train_t *t)
{
    size_t maxn = 0, width = t->d.context, i;

    t->d    = (zsh_train_dims_t){ZSH_TRAIN_VOCAB, t->o.context, t->o.embed, t->o.hidden,
                                  t->o.layers};
    t->rank  = zsh_comm_rank(t->comm);
    t->size  = zsh_comm_size(t->comm);
    t->first = t->o.batch * (size_t)t->rank / (size_t)t->size;
    t->rows  = t->o.batch * (size_t)(t->rank + 1) / (size_t)t->size - t->first;
    t->np    = zsh_train_nparams(&t->d);
    width    = t->d.context * t->d.embed;
    width    = (t->d.hidden > width) ? t->d.hidden : width;
    width    = (t->d.vocab > width) ? t->d.vocab : width;
    for (i = 0; i < t->np; i++) {
        maxn = (zsh_train_param_numel(&t->d, i) > maxn) ? zsh_train_param_numel(&t->d, i) : maxn;
    }
    /* At most one handle per output row of a weight, one per other parameter. */
    t->handles = calloc(t->np * (width + 1), sizeof(*t->handles));
    t->first_handle = calloc(t->np, sizeof(*t->first_handle));
    t->ntiles  = calloc(t->np, sizeof(*t->ntiles));
    t->rpt     = calloc(t->np, sizeof(*t->rpt));
    t->init    = calloc(t->np, sizeof(*t->init));
    t->acts    = calloc(t->d.layers + 2, sizeof(*t->acts));
    t->tokens  = malloc(t->rows * t->d.context + 1);
    t->targets = malloc(t->rows + 1);
    t->w32     = malloc(maxn * sizeof(float));
    t->b32     = malloc(maxn * sizeof(float));
    t->g32     = malloc(maxn * sizeof(float));
    t->g16     = malloc(maxn * sizeof(uint16_t));
    t->dbuf[0] = malloc((t->rows + 1) * width * sizeof(float));
    t->dbuf[1] = malloc((t->rows + 1) * width * sizeof(float));
    if (!t->handles || !t->first_handle || !t->ntiles || !t->rpt || !t->init || !t->acts ||
        !t->tokens || !t->targets || !t->w32 || !t->b32 || !t->g32 || !t->g16 || !t->dbuf[0] ||
        !t->dbuf[1]) {
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
    uint64_t v[6];
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
    if (zsh_allreduce(v, v, 6, ZSH_UINT64, ZSH_MAX, t->comm) != ZSH_OK) {
        fprintf(stderr, "zsh_train: report: %s\n", zsh_last_error());
        return 1;
    }
    if (t->rank == 0) {
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
