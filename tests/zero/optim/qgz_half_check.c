/*
 * qwZ and qgZ in mixed precision, one rank of a job launched torchrun-style
 * whose ZSH_NODE_NAME places the ranks on made-up nodes (run_hpz.sh): for
 * bf16 and fp16, stage 3 trains a few steps without and with both
 * quantizations (int8 gradients, then int4), and the losses must stay
 * within the stated distance (fp16: fp32's 1%; bf16: the same) while the
 * stats say qgZ reduced every step's buckets and fewer bytes crossed the
 * nodes. Then fp16 with qgZ on and one rank's gradient infinite at a step
 * the run without it applies: that step must be skipped as an overflow
 * (not quantized away) and the loss scale lowered, the others as before.
 *
 * Prints "ok <setting>" per setting, or "FAIL <setting>: why"; exits 1 after
 * any failure.
 */
#include <zeroshard.h>
#include <zeroshard/optim.h>

#include "core/half.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP    3
#define STEPS 5

static const size_t sizes[NP] = {300, 1000, 513};

typedef struct run {
    double loss[STEPS];
    int    applied[STEPS];
    float  scale[STEPS];
    zsh_optim_stats_t stats;
} run_t;

static float widen(zsh_dtype_t dt, const void *p, size_t i)
{
    uint16_t h = ((const uint16_t *)p)[i];

    return (dt == ZSH_BFLOAT16) ? zsh_bf16_to_float(h) : zsh_fp16_to_float(h);
}

static void narrow(zsh_dtype_t dt, float f, void *p, size_t i)
{
    ((uint16_t *)p)[i] = (dt == ZSH_BFLOAT16) ? zsh_float_to_bf16(f) : zsh_float_to_fp16(f);
}

static float target(int step, int rank, size_t p, size_t j)
{
    return sinf(0.01f * (float)(j + 1) * (float)(step + 1) + (float)rank + (float)p);
}

/* Train STEPS steps, the gradients scaled by the loss scale; where
 * @bad_step (1-based), rank 1's gradient of w0 is infinite there. */
static int train(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int bad_step, run_t *run,
                 char *why, size_t whylen)
{
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), s, ok = 0;
    zsh_dtype_t dt = cfg->precision;
    zsh_param_t *param[NP];
    zsh_optim_t *opt = NULL;
    void *buf[NP] = {NULL}, *data, *grad = malloc(1000 * 2);
    size_t p, j;
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
    TRY(zsh_optim_create(comm, cfg, &opt));
    for (p = 0; p < NP; p++) {
        char name[16];

        buf[p] = malloc(sizes[p] * 2);
        for (j = 0; j < sizes[p]; j++) {
            narrow(dt, cosf((float)(j * 7 + p)), buf[p], j);
        }
        snprintf(name, sizeof(name), "w%zu", p);
        TRY(zsh_optim_register(opt, name, sizes[p], dt, buf[p], &param[p]));
    }
    for (s = 0; s < STEPS; s++) {
        float scale = zsh_optim_loss_scale(opt);

        for (p = 0; p < NP; p++) {
            TRY(zsh_optim_fetch(opt, param[p], &data));
            for (j = 0; j < sizes[p]; j++) {
                w = widen(dt, data, j) - target(s, rank, p, j);
                run->loss[s] += 0.5 * (double)w * (double)w;
            }
            TRY(zsh_optim_release(opt, param[p]));
        }
        for (p = NP; p-- > 0;) {
            TRY(zsh_optim_fetch(opt, param[p], &data));
            for (j = 0; j < sizes[p]; j++) {
                w = widen(dt, data, j) - target(s, rank, p, j);
                narrow(dt, w * scale / (float)n, grad, j);
            }
            if ((s + 1 == bad_step) && (rank == 1) && (p == 0)) {
                narrow(dt, INFINITY, grad, 17);
            }
            TRY(zsh_optim_release(opt, param[p]));
            TRY(zsh_optim_grad_ready(opt, param[p], grad));
        }
        TRY(zsh_optim_step(opt, &run->applied[s]));
        run->scale[s] = zsh_optim_loss_scale(opt);
    }
    TRY(zsh_optim_get_stats(opt, &run->stats));
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

static void config(zsh_optim_config_t *cfg, zsh_dtype_t dt, int quantize, int bits)
{
    zsh_optim_config_init(cfg);
    cfg->stage              = 3;
    cfg->precision          = dt;
    cfg->lr                 = 0.01f;
    cfg->bucket_size        = 1024;
    cfg->max_live_bytes     = 1;
    cfg->prefetch           = 0;
    cfg->quantize_weights   = quantize;
    cfg->quantize_grads     = quantize;
    cfg->quantize_grad_bits = bits;
    cfg->quantize_block     = 64;
}

/* Without and with qwZ + qgZ (@bits gradients); "" in @why when close. */
static void compare(zsh_comm_t *comm, zsh_dtype_t dt, int bits, char *why, size_t len)
{
    zsh_optim_config_t cfg;
    run_t off, on;
    int s;

    why[0] = '\0';
    config(&cfg, dt, ZSH_QUANTIZE_OFF, bits);
    if (!train(comm, &cfg, 0, &off, why, len)) {
        return;
    }
    config(&cfg, dt, ZSH_QUANTIZE_ON, bits);
    if (!train(comm, &cfg, 0, &on, why, len)) {
        return;
    }
    for (s = 0; (s < STEPS) && (why[0] == '\0'); s++) {
        if (!(fabs(on.loss[s] - off.loss[s]) <= 0.01 * fabs(off.loss[s])) ||
            (on.applied[s] != off.applied[s])) {
            snprintf(why, len, "step %d: loss %.9g with qwZ and qgZ, %.9g without (applied "
                     "%d, %d)", s + 1, on.loss[s], off.loss[s], on.applied[s], off.applied[s]);
        }
    }
    if ((why[0] == '\0') &&
        ((on.stats.quantize_grads != 1) || (on.stats.quantize_weights != 1) ||
         (on.stats.qgz_reductions == 0) || (on.stats.qwz_gathers == 0) ||
         (on.stats.comm_bytes_quantized_last_step == 0) ||
         (on.stats.comm_bytes_cross_node_last_step >= off.stats.comm_bytes_cross_node_last_step))) {
        snprintf(why, len, "stats: quantize %d/%d, %lu qgZ reductions, %lu qwZ gathers, cross "
                 "bytes %zu with, %zu without, %zu quantized", on.stats.quantize_weights,
                 on.stats.quantize_grads, on.stats.qgz_reductions, on.stats.qwz_gathers,
                 on.stats.comm_bytes_cross_node_last_step,
                 off.stats.comm_bytes_cross_node_last_step,
                 on.stats.comm_bytes_quantized_last_step);
    }
}

/* fp16 with qgZ on, an infinity at the last step the run without it
 * applies: that step skipped and the scale lowered, the others as there. */
static void overflow(zsh_comm_t *comm, char *why, size_t len)
{
    zsh_optim_config_t cfg;
    run_t ref, run;
    int s, bad = 0;

    why[0] = '\0';
    config(&cfg, ZSH_FLOAT16, ZSH_QUANTIZE_ON, 8);
    if (!train(comm, &cfg, 0, &ref, why, len)) {
        return;
    }
    for (s = 1; s < STEPS; s++) {
        bad = ref.applied[s] ? s + 1 : bad;
    }
    if (bad == 0) {
        snprintf(why, len, "the run without an infinity applied no step after the first");
        return;
    }
    if (!train(comm, &cfg, bad, &run, why, len)) {
        return;
    }
    for (s = 0; (s < bad) && (why[0] == '\0'); s++) {
        if (run.applied[s] != ((s + 1 == bad) ? 0 : ref.applied[s])) {
            snprintf(why, len, "step %d %s (the infinity at step %d)", s + 1,
                     run.applied[s] ? "applied" : "skipped", bad);
        }
    }
    if ((why[0] == '\0') && !(run.scale[bad - 1] < ref.scale[bad - 1])) {
        snprintf(why, len, "the loss scale after the overflow is %g, %g without it",
                 (double)run.scale[bad - 1], (double)ref.scale[bad - 1]);
    }
    if ((why[0] == '\0') && (zsh_comm_rank(comm) == 1) &&
        (run.stats.qgz_nonfinite_blocks == ref.stats.qgz_nonfinite_blocks)) {
        snprintf(why, len, "rank 1 sent its infinite block uncounted");
    }
}

int main(void)
{
    static const zsh_dtype_t dts[2] = {ZSH_BFLOAT16, ZSH_FLOAT16};
    zsh_comm_t *comm;
    char why[512];
    int d, bits, failed = 0;

    if (zsh_comm_init(&comm) != ZSH_OK) {
        fprintf(stderr, "zsh_comm_init: %s\n", zsh_last_error());
        return 2;
    }
    for (d = 0; d < 2; d++) {
        for (bits = 8; bits >= 4; bits -= 4) {
            compare(comm, dts[d], bits, why, sizeof(why));
            printf("%s %s/int%d%s%s\n", (why[0] == '\0') ? "ok" : "FAIL",
                   (d == 0) ? "bf16" : "fp16", bits, (why[0] == '\0') ? "" : ": ", why);
            failed += why[0] != '\0';
        }
    }
    overflow(comm, why, sizeof(why));
    printf("%s fp16/overflow%s%s\n", (why[0] == '\0') ? "ok" : "FAIL",
           (why[0] == '\0') ? "" : ": ", why);
    failed += why[0] != '\0';
    fflush(stdout);
    zsh_comm_destroy(comm);
    return failed ? 1 : 0;
}
