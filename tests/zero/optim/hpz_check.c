/*
 * hpZ against no hpZ, one rank of a job launched torchrun-style whose
 * ZSH_NODE_NAME places the ranks on made-up nodes (run_hpz.sh): each
 * setting trains a few stage 3 steps twice, without and with the secondary
 * partition, and every loss and every final parameter must be the same bit
 * for bit. The budget of gathered buckets is one byte, or a few buckets
 * with prefetching, so backward gathers every bucket again: with hpZ those
 * gathers run on the node group (the stats say so), and the bytes across
 * nodes fall from three gathers' worth of every bucket to two.
 *
 * Prints "ok <setting>" per setting, or "FAIL <setting>: why"; exits 1 after
 * any failure.
 */
#include <zeroshard.h>
#include <zeroshard/optim.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP    5
#define STEPS 4

static const size_t sizes[NP] = {37, 300, 1000, 64, 513};

typedef struct run {
    double loss[STEPS];
    void  *final[NP];
    zsh_optim_stats_t stats;
} run_t;

static float to_float(zsh_dtype_t dt, const void *p, size_t i)
{
    uint32_t bits;
    float f;

    if (dt == ZSH_FLOAT32) {
        return ((const float *)p)[i];
    }
    bits = (uint32_t)((const uint16_t *)p)[i] << 16;
    memcpy(&f, &bits, sizeof(f));
    return f;
}

static void from_float(zsh_dtype_t dt, float f, void *p, size_t i)
{
    uint32_t bits;

    if (dt == ZSH_FLOAT32) {
        ((float *)p)[i] = f;
        return;
    }
    memcpy(&bits, &f, sizeof(bits));
    bits += 0x7fffu + ((bits >> 16) & 1u); /* round to nearest even */
    ((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
}

static float target(int step, int rank, size_t p, size_t j)
{
    return sinf(0.01f * (float)(j + 1) * (float)(step + 1) + (float)rank + (float)p);
}

/* Train STEPS steps: forward fetches in order and sums the loss, backward
 * fetches in reverse and hands over the gradient computed from the values
 * it fetched. */
static int train(zsh_comm_t *comm, const zsh_optim_config_t *cfg, run_t *run, char *why,
                 size_t whylen)
{
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), s, ok = 0;
    size_t es = (cfg->precision == ZSH_FLOAT32) ? 4 : 2, p, j;
    zsh_param_t *param[NP];
    zsh_optim_t *opt = NULL;
    void *buf[NP] = {NULL}, *data, *grad = NULL;
    float w;

#define TRY(_call)                                                                          \
    do {                                                                                    \
        zsh_status_t _st = (_call);                                                         \
        if (_st != ZSH_OK) {                                                                \
            snprintf(why, whylen, "%s: %s", #_call, zsh_last_error());                      \
            goto out;                                                                       \
        }                                                                                   \
    } while (0)
    memset(run, 0, sizeof(*run));
    grad = malloc(1000 * 4);
    TRY(zsh_optim_create(comm, cfg, &opt));
    for (p = 0; p < NP; p++) {
        char name[16];

        buf[p] = malloc(sizes[p] * es);
        for (j = 0; j < sizes[p]; j++) {
            from_float(cfg->precision, cosf((float)(j * 7 + p)), buf[p], j);
        }
        snprintf(name, sizeof(name), "w%zu", p);
        TRY(zsh_optim_register(opt, name, sizes[p], cfg->precision, buf[p], &param[p]));
    }
    for (s = 0; s < STEPS; s++) {
        for (p = 0; p < NP; p++) {
            TRY(zsh_optim_fetch(opt, param[p], &data));
            for (j = 0; j < sizes[p]; j++) {
                w = to_float(cfg->precision, data, j) - target(s, rank, p, j);
                run->loss[s] += 0.5 * (double)w * (double)w;
            }
            TRY(zsh_optim_release(opt, param[p]));
        }
        for (p = NP; p-- > 0;) {
            TRY(zsh_optim_fetch(opt, param[p], &data));
            for (j = 0; j < sizes[p]; j++) {
                w = to_float(cfg->precision, data, j) - target(s, rank, p, j);
                from_float(cfg->precision, w / (float)n, grad, j);
            }
            TRY(zsh_optim_release(opt, param[p]));
            TRY(zsh_optim_grad_ready(opt, param[p], grad));
        }
        TRY(zsh_optim_step(opt, NULL));
    }
    TRY(zsh_optim_get_stats(opt, &run->stats));
    for (p = 0; p < NP; p++) {
        TRY(zsh_optim_fetch(opt, param[p], &data));
        run->final[p] = malloc(sizes[p] * es);
        memcpy(run->final[p], data, sizes[p] * es);
        TRY(zsh_optim_release(opt, param[p]));
    }
    ok = 1;
out:
#undef TRY
    zsh_optim_destroy(opt);
    for (p = 0; p < NP; p++) {
        free(buf[p]);
    }
    free(grad);
    return ok;
}

static void run_free(run_t *run)
{
    size_t p;

    for (p = 0; p < NP; p++) {
        free(run->final[p]);
    }
}

/* One setting: without and with hpZ; "" in @why when they agree. */
static void compare(zsh_comm_t *comm, zsh_optim_config_t *cfg, int hpz, char *why, size_t len)
{
    size_t es = (cfg->precision == ZSH_FLOAT32) ? 4 : 2, p, f;
    const zsh_optim_stats_t *a, *b;
    run_t off, on;
    int s, exact = cfg->max_live_bytes == 1; /* nothing cached: every bucket gathered twice */

    why[0]   = '\0';
    cfg->hpz = ZSH_HPZ_OFF;
    if (!train(comm, cfg, &off, why, len)) {
        return;
    }
    cfg->hpz = hpz;
    if (!train(comm, cfg, &on, why, len)) {
        run_free(&off);
        return;
    }
    a = &off.stats;
    b = &on.stats;
    f = a->comm_bytes_last_step / 3; /* one gather's worth of every bucket */
    for (s = 0; (s < STEPS) && (why[0] == '\0'); s++) {
        if (memcmp(&off.loss[s], &on.loss[s], sizeof(double)) != 0) {
            snprintf(why, len, "step %d: loss %.17g without hpZ, %.17g with", s + 1, off.loss[s],
                     on.loss[s]);
        }
    }
    for (p = 0; (p < NP) && (why[0] == '\0'); p++) {
        if (memcmp(off.final[p], on.final[p], sizes[p] * es) != 0) {
            snprintf(why, len, "final w%zu differs", p);
        }
    }
    if (why[0] != '\0') {
        /* reported above */
    } else if ((a->hpz != 1) || (b->hpz != 2) || (a->nnodes != 2) || (b->hpz_bytes == 0)) {
        snprintf(why, len, "stats: hpz %d/%d nnodes %d hpz_bytes %zu", a->hpz, b->hpz, a->nnodes,
                 b->hpz_bytes);
    } else if ((a->comm_bytes_node_last_step != 0) ||
               (a->comm_bytes_cross_node_last_step != a->comm_bytes_last_step) ||
               (b->comm_bytes_last_step != a->comm_bytes_last_step) ||
               (b->comm_bytes_cross_node_last_step + b->comm_bytes_node_last_step !=
                b->comm_bytes_last_step) ||
               (b->comm_bytes_node_last_step == 0) || (b->hpz_gathers == 0) ||
               (exact && ((a->comm_bytes_last_step != 3 * f) ||
                          (b->comm_bytes_node_last_step != f)))) {
        snprintf(why, len,
                 "bytes per step: without hpZ %zu (cross %zu, node %zu), with %zu (cross %zu, "
                 "node %zu), %lu node gathers",
                 a->comm_bytes_last_step, a->comm_bytes_cross_node_last_step,
                 a->comm_bytes_node_last_step, b->comm_bytes_last_step,
                 b->comm_bytes_cross_node_last_step, b->comm_bytes_node_last_step,
                 b->hpz_gathers);
    }
    run_free(&off);
    run_free(&on);
}

int main(void)
{
    static const zsh_dtype_t dts[2]        = {ZSH_FLOAT32, ZSH_BFLOAT16};
    static const zsh_optim_kind_t kinds[2] = {ZSH_OPTIM_ADAMW, ZSH_OPTIM_SGD};
    zsh_optim_config_t cfg;
    zsh_comm_t *comm;
    char why[512];
    int d, k, budget, failed = 0, rank;

    if (zsh_comm_init(&comm) != ZSH_OK) {
        fprintf(stderr, "zsh_comm_init: %s\n", zsh_last_error());
        return 2;
    }
    rank = zsh_comm_rank(comm);
    for (d = 0; d < 2; d++) {
        for (k = 0; k < 2; k++) {
            for (budget = 0; budget < 2; budget++) {
                zsh_optim_config_init(&cfg);
                cfg.stage          = 3;
                cfg.precision      = dts[d];
                cfg.kind           = kinds[k];
                cfg.momentum       = (kinds[k] == ZSH_OPTIM_SGD) ? 0.9f : 0.0f;
                cfg.weight_decay   = 0.01f;
                cfg.lr             = 0.05f;
                cfg.bucket_size    = 512;
                cfg.max_live_bytes = budget ? 1500 : 1; /* some buckets stay cached */
                cfg.prefetch       = budget ? 2 : 0;
                /* auto is the node's 2 ranks, as the explicit 2 */
                compare(comm, &cfg, budget ? ZSH_HPZ_AUTO : 2, why, sizeof(why));
                printf("%s %s/%s/%s%s%s\n", (why[0] == '\0') ? "ok" : "FAIL",
                       (d == 0) ? "fp32" : "bf16", (k == 0) ? "adamw" : "sgd",
                       budget ? "prefetch" : "no-cache", (why[0] == '\0') ? "" : ": ", why);
                failed += why[0] != '\0';
            }
        }
    }
    fflush(stdout);
    zsh_comm_destroy(comm);
    (void)rank;
    return failed ? 1 : 0;
}
