/*
 * zsh_train: a real training run through the ZeRO optimizer layer.
 *
 * A character-level MLP language model (train/model.h) learns to predict the
 * next character of a text. The global batch of each step is a function of
 * (seed, step); each rank takes a contiguous slice, scales its gradients by
 * 1 / (global batch) and the layer sums them, so the loss trajectory is the
 * same at any rank count and any stage, up to float rounding.
 *
 * Each step, as a framework does it: forward fetches each layer's parameters
 * just before use and releases them after; backward, once the layer knows it
 * has begun, fetches them again,
 * computes the gradients and hands each over with grad-ready, which starts
 * its bucket's reduction at once; then the step.
 *
 * Checkpoints hold the whole optimizer (weights, states, step counters, loss
 * scaler); the program's own state is the step number alone, because the
 * batch is a function of it and nothing else draws random numbers once the
 * weights are initialised. So a run resumed from step N, which trains steps
 * N + 1 on, takes the same steps, bit for bit, as one that never stopped.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include "core/half.h"
#include "train/boot.h"
#include "train/gemm.h"
#include "train/train.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static int zsh_train_fail(const char *what, zsh_status_t status)
{
    fprintf(stderr, "zsh_train: %s: %s: %s\n", what, zsh_status_string(status), zsh_last_error());
    return 1;
}

/* The fetched parameter as fp32: the buffer itself, or widened into @tmp. */
static const float *zsh_train_widen(const zsh_train_t *t, const void *p, size_t n, float *tmp)
{
    const uint16_t *h = p;
    size_t i;

    if (t->o.precision == ZSH_FLOAT32) {
        return p;
    }
    for (i = 0; i < n; i++) {
        tmp[i] = (t->o.precision == ZSH_BFLOAT16) ? zsh_bf16_to_float(h[i])
                                                  : zsh_fp16_to_float(h[i]);
    }
    return tmp;
}

/* The layer's calls, timed: what they block for is communication (or I/O,
 * which the split takes out again from the stats). */
static zsh_status_t zsh_train_fetch(zsh_train_t *t, zsh_param_t *param, void **data_p)
{
    double t0 = zsh_train_now();
    zsh_status_t s = zsh_optim_fetch(t->opt, param, data_p);

    t->split.blocked += zsh_train_now() - t0;
    return s;
}

static zsh_status_t zsh_train_release(zsh_train_t *t, zsh_param_t *param)
{
    double t0 = zsh_train_now();
    zsh_status_t s = zsh_optim_release(t->opt, param);

    t->split.blocked += zsh_train_now() - t0;
    return s;
}

static zsh_status_t zsh_train_grad_ready(zsh_train_t *t, zsh_param_t *param, const void *g)
{
    double t0 = zsh_train_now();
    zsh_status_t s = zsh_optim_grad_ready(t->opt, param, g);

    t->split.blocked += zsh_train_now() - t0;
    return s;
}

/* Hand over the gradient @g of @n elements for @param. */
static zsh_status_t zsh_train_grad(zsh_train_t *t, zsh_param_t *param, const float *g, size_t n)
{
    size_t k;

    if (t->o.precision == ZSH_FLOAT32) {
        return zsh_train_grad_ready(t, param, g);
    }
    for (k = 0; k < n; k++) {
        t->g16[k] = (t->o.precision == ZSH_BFLOAT16) ? zsh_float_to_bf16(g[k])
                                                     : zsh_float_to_fp16(g[k]);
    }
    return zsh_train_grad_ready(t, param, t->g16);
}

/* Output rows [r0, r0 + *cnt_p) of layer weight @wi that tile @k holds. */
static size_t zsh_train_tile_rows(const zsh_train_t *t, size_t wi, size_t k, size_t out,
                                  size_t *cnt_p)
{
    size_t r0 = k * t->rpt[wi];

    *cnt_p = (r0 + t->rpt[wi] < out) ? t->rpt[wi] : out - r0;
    return r0;
}

/* Layer @l forward, one weight tile at a time. */
static zsh_status_t zsh_train_layer_forward(zsh_train_t *t, size_t l)
{
    size_t wi = 1 + 2 * l, in = zsh_train_layer_in(&t->d, l), out = zsh_train_layer_out(&t->d, l);
    size_t k, r0, cnt;
    const float *bias;
    zsh_status_t s;
    void *w, *b;

    if ((s = zsh_train_fetch(t, zsh_train_param(t, wi + 1, 0), &b)) != ZSH_OK) {
        return s;
    }
    bias = zsh_train_widen(t, b, out, t->b32);
    for (k = 0; k < t->ntiles[wi]; k++) {
        r0 = zsh_train_tile_rows(t, wi, k, out, &cnt);
        if ((s = zsh_train_fetch(t, zsh_train_param(t, wi, k), &w)) != ZSH_OK) {
            return s;
        }
        zsh_train_linear(zsh_train_widen(t, w, cnt * in, t->w32), bias + r0, t->acts[l], t->rows,
                         in, cnt, out, l < t->d.layers, t->acts[l + 1] + r0);
        if ((s = zsh_train_release(t, zsh_train_param(t, wi, k))) != ZSH_OK) {
            return s;
        }
    }
    return zsh_train_release(t, zsh_train_param(t, wi + 1, 0));
}

static zsh_status_t zsh_train_forward(zsh_train_t *t)
{
    zsh_param_t *emb = zsh_train_param(t, 0, 0);
    zsh_status_t s;
    size_t l;
    void *w;

    if ((s = zsh_train_fetch(t, emb, &w)) != ZSH_OK) {
        return s;
    }
    zsh_train_embed(&t->d, zsh_train_widen(t, w, zsh_train_param_numel(&t->d, 0), t->w32),
                    t->tokens, t->rows, t->acts[0]);
    if ((s = zsh_train_release(t, emb)) != ZSH_OK) {
        return s;
    }
    for (l = 0; (s == ZSH_OK) && (l <= t->d.layers); l++) {
        s = zsh_train_layer_forward(t, l);
    }
    return s;
}

/* Layer @l backward, one weight tile at a time (last first): each tile's
 * gradient is handed over as soon as it is computed. */
static zsh_status_t zsh_train_layer_backward(zsh_train_t *t, size_t l, float *dy, float *dx)
{
    size_t wi = 1 + 2 * l, in = zsh_train_layer_in(&t->d, l), out = zsh_train_layer_out(&t->d, l);
    zsh_param_t *tile;
    size_t k, r0, cnt;
    zsh_status_t s;
    void *w;

    memset(dx, 0, t->rows * in * sizeof(*dx));
    for (k = t->ntiles[wi]; k-- > 0;) {
        r0   = zsh_train_tile_rows(t, wi, k, out, &cnt);
        tile = zsh_train_param(t, wi, k);
        if ((s = zsh_train_fetch(t, tile, &w)) != ZSH_OK) {
            return s;
        }
        zsh_train_linear_back(zsh_train_widen(t, w, cnt * in, t->w32), t->acts[l],
                              t->acts[l + 1] + r0, dy + r0, t->rows, in, cnt, out,
                              l < t->d.layers, t->g32, t->b32 + r0, dx);
        if (((s = zsh_train_release(t, tile)) != ZSH_OK) ||
            ((s = zsh_train_grad(t, tile, t->g32, cnt * in)) != ZSH_OK)) {
            return s;
        }
    }
    return zsh_train_grad(t, zsh_train_param(t, wi + 1, 0), t->b32, out);
}

/* dy (the loss gradient of the logits) starts in acts[layers + 1]. The
 * last layer's backward fetches its tiles before any gradient exists: the
 * layer is told first that backward begins, so that under qwZ those fetches
 * get the exact weights, not the forward's int8 copy still cached. */
static zsh_status_t zsh_train_backward(zsh_train_t *t)
{
    float *dy = t->acts[t->d.layers + 1], *dx;
    double t0 = zsh_train_now();
    zsh_status_t s = zsh_optim_backward_begin(t->opt);
    size_t l;

    t->split.blocked += zsh_train_now() - t0;
    if (s != ZSH_OK) {
        return s;
    }
    for (l = t->d.layers + 1; l-- > 0; dy = dx) {
        dx = t->dbuf[l % 2];
        if ((s = zsh_train_layer_backward(t, l, dy, dx)) != ZSH_OK) {
            return s;
        }
    }
    zsh_train_embed_back(&t->d, dy, t->tokens, t->rows, t->g32);
    return zsh_train_grad(t, zsh_train_param(t, 0, 0), t->g32, zsh_train_param_numel(&t->d, 0));
}

/* Whether a failed save or load failed every rank alike: a missing,
 * unwritable or mismatched checkpoint is agreed among the ranks before the
 * call returns, a communication failure is not. After an agreed failure no
 * rank is left waiting, so none aborts: an abort would only race a peer
 * still leaving the agreement, and that peer's message would then name the
 * abort instead of its own reason. */
static int zsh_train_agreed(zsh_status_t s)
{
    return (s == ZSH_ERR_IO) || (s == ZSH_ERR_INVALID_ARG) || (s == ZSH_ERR_NO_MEMORY) ||
           (s == ZSH_ERR_UNSUPPORTED);
}

/* The bytes of the files nftw() walks; one walk at a time. */
static unsigned long long zsh_train_du_sum;

static int zsh_train_du_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)path;
    (void)ftw;
    if (flag == FTW_F) {
        zsh_train_du_sum += (unsigned long long)st->st_size;
    }
    return 0;
}

/* Bytes of the files under @path, 0 where it cannot be read. */
static unsigned long long zsh_train_du(const char *path)
{
    zsh_train_du_sum = 0;
    if ((path == NULL) || (nftw(path, zsh_train_du_one, 16, FTW_PHYS) != 0)) {
        return 0;
    }
    return zsh_train_du_sum;
}

/* --resume: load the latest checkpoint of --ckpt-dir (collective) and give
 * the step it holds, which every rank reads from its own optimizer alike.
 * With --snapshot-every, the snapshot in node memory comes first: it is
 * never older than the disk's (--ckpt-every is a multiple of its cadence,
 * and it is taken before the save of the same step), and it reads no disk.
 * *alike_p is set when the load failed on every rank alike. */
static int zsh_train_resume(zsh_train_t *t, unsigned long *done_p, int *alike_p)
{
    const char *from = t->o.ckpt_dir, *snap = "the snapshot in memory";
    zsh_optim_stats_t st;
    zsh_status_t s = ZSH_ERR_IO;

    if (t->o.snap_every > 0) {
        s    = zsh_optim_restore(t->opt);
        from = snap;
        /* Only a failure every rank shares may fall back to the disk. */
        if ((s != ZSH_OK) && !zsh_train_agreed(s)) {
            return zsh_train_fail("--resume: zsh_optim_restore", s);
        }
        if ((s != ZSH_OK) && (t->o.ckpt_dir != NULL) && (t->rank == 0)) {
            printf("no snapshot restored (%s); resuming from %s\n", zsh_last_error(),
                   t->o.ckpt_dir);
        }
    }
    /* No checkpoint is an error, not a fresh start: a run meant to continue
     * must never quietly train from the initial weights. The load's message
     * names what it did not find, or what differs from this model. */
    if ((s != ZSH_OK) && (t->o.ckpt_dir != NULL)) {
        s    = zsh_optim_load(t->opt, t->o.ckpt_dir);
        from = t->o.ckpt_dir;
    }
    if (s != ZSH_OK) {
        fprintf(stderr, "zsh_train: --resume: %s: %s\n", zsh_status_string(s), zsh_last_error());
        *alike_p = zsh_train_agreed(s);
        return 1;
    }
    if ((s = zsh_optim_get_stats(t->opt, &st)) != ZSH_OK) {
        return zsh_train_fail("zsh_optim_get_stats", s);
    }
    *done_p = st.steps;
    if (t->rank == 0) {
        printf("resumed from %s at step %lu (loss scale %g)\n", from, st.steps,
               (double)st.loss_scale);
        /* What the node's memory holds now: the restored step, with the
         * parts a restore across nodes fetched, until the next snapshot. */
        if (from == snap) {
            printf("snapshot in node memory after the restore: %.1f MiB\n",
                   (double)zsh_train_du(getenv("ZSH_SNAPSHOT_DIR")) / (1 << 20));
        }
        fflush(stdout);
    }
    return 0;
}

/* Save after step @k if the options ask for it (collective); *alike_p is
 * set when the save failed on every rank alike. The cadence counts the
 * run's step numbers, which a resumed run continues, so a run cut short and
 * resumed saves after the same steps as one that was not. */
static int zsh_train_save(zsh_train_t *t, unsigned long k, int *alike_p)
{
    int every = (t->o.ckpt_every > 0) && (k % t->o.ckpt_every == 0);
    int last  = t->o.ckpt_last && (k == t->o.steps);
    double t0 = zsh_train_now();
    zsh_optim_stats_t st;
    zsh_status_t s;

    if ((t->o.ckpt_dir == NULL) || (!every && !last)) {
        return 0;
    }
    if ((s = zsh_optim_save(t->opt, t->o.ckpt_dir)) != ZSH_OK) {
        *alike_p = zsh_train_agreed(s);
        return zsh_train_fail("zsh_optim_save", s);
    }
    if ((s = zsh_optim_get_stats(t->opt, &st)) != ZSH_OK) {
        return zsh_train_fail("zsh_optim_get_stats", s);
    }
    /* The layer names the checkpoint by its own step count. */
    if (t->rank == 0) {
        printf("checkpoint %lu: %s/step-%08lu in %.3f s\n", k, t->o.ckpt_dir, st.steps,
               zsh_train_now() - t0);
        fflush(stdout);
    }
    return 0;
}

/* Snapshot after step @k if --snapshot-every asks for it (collective), and
 * say how much node memory the snapshot takes. */
static int zsh_train_snapshot(zsh_train_t *t, unsigned long k, int *alike_p)
{
    double t0 = zsh_train_now();
    zsh_status_t s;

    if ((t->o.snap_every == 0) || (k % t->o.snap_every != 0)) {
        return 0;
    }
    if ((s = zsh_optim_snapshot(t->opt)) != ZSH_OK) {
        *alike_p = zsh_train_agreed(s);
        return zsh_train_fail("zsh_optim_snapshot", s);
    }
    if (t->rank == 0) {
        printf("snapshot %lu: %.1f MiB in node memory in %.3f s\n", k,
               (double)zsh_train_du(getenv("ZSH_SNAPSHOT_DIR")) / (1 << 20),
               zsh_train_now() - t0);
        fflush(stdout);
    }
    return 0;
}

/* One step; the global mean loss in *loss_p. */
static zsh_status_t zsh_train_step(zsh_train_t *t, unsigned long step, double *loss_p,
                                   int *applied_p)
{
    size_t starts[t->rows + 1], r, c;
    float gscale = zsh_optim_loss_scale(t->opt) / (float)t->o.batch;
    double loss, t0;
    zsh_status_t s;

    zsh_train_batch(&t->text, t->o.seed, step, t->d.context, t->first, t->rows, starts);
    for (r = 0; r < t->rows; r++) {
        for (c = 0; c < t->d.context; c++) {
            t->tokens[r * t->d.context + c] = t->text.ids[starts[r] + c];
        }
        t->targets[r] = t->text.ids[starts[r] + t->d.context];
    }
    zsh_train_split_start(&t->split, t->opt);
    if ((s = zsh_train_forward(t)) != ZSH_OK) {
        return s;
    }
    loss = zsh_train_xent(t->acts[t->d.layers + 1], t->targets, t->rows, t->d.vocab, gscale);
    if ((s = zsh_train_backward(t)) != ZSH_OK) {
        return s;
    }
    zsh_train_split_step_begin(&t->split, t->opt);
    s = zsh_optim_step(t->opt, applied_p);
    zsh_train_split_step_end(&t->split, t->opt);
    if (s != ZSH_OK) {
        return s;
    }
    /* The framework's own metric: the mean over the global batch. */
    t0      = zsh_train_now();
    s       = zsh_allreduce(&loss, &loss, 1, ZSH_FLOAT64, ZSH_SUM, t->comm);
    *loss_p = loss / (double)t->o.batch;
    t->split.blocked += zsh_train_now() - t0;
    return s;
}

int main(int argc, char **argv)
{
    zsh_train_t t = {0};
    unsigned long k, done = 0;
    int alike = 0;
    zsh_status_t s;
    double loss = 0.0;
    int rc, applied, tty;

    rc = zsh_train_parse(argc, argv, &t.o);
    if (rc != 0) {
        return (rc == 1) ? 0 : 2;
    }
    zsh_train_gemm_select(t.o.loops ? ZSH_TRAIN_GEMM_LOOPS : ZSH_TRAIN_GEMM_BLAS);
    if (zsh_train_text_load(t.o.data, t.o.context, &t.text) != 0) {
        return 1;
    }
    if ((s = zsh_train_comm_init(&t.comm)) != ZSH_OK) {
        return zsh_train_fail("zsh_comm_init", s);
    }
    if ((s = zsh_train_setup(&t)) != ZSH_OK) {
        rc = zsh_train_fail("setup", s);
        goto out;
    }
    if (t.o.resume && ((rc = zsh_train_resume(&t, &done, &alike)) != 0)) {
        goto out;
    }
    if ((done >= t.o.steps) && (t.rank == 0)) {
        printf("nothing to train: the checkpoint holds step %lu, --steps is %lu\n", done,
               t.o.steps);
    }
    tty = (t.rank == 0) && isatty(STDERR_FILENO);
    for (k = done + 1; k <= t.o.steps; k++) {
        if ((s = zsh_train_step(&t, k, &loss, &applied)) != ZSH_OK) {
            rc = zsh_train_fail("step", s);
            goto out;
        }
        if (t.rank == 0) {
            printf("step %lu loss %.6f%s", k, loss, applied ? "" : " (skipped: overflow)");
            if (t.o.loss_bits) {
                printf(" bits %a", loss);
            }
            printf("\n");
            fflush(stdout);
        }
        if (zsh_train_split_end(&t.split, t.comm, k) != 0) {
            rc = 1;
            goto out;
        }
        /* After the split's line: the save is not the step's time. The
         * snapshot first, so that it is never older than the disk's. */
        if (((rc = zsh_train_snapshot(&t, k, &alike)) != 0) ||
            ((rc = zsh_train_save(&t, k, &alike)) != 0)) {
            goto out;
        }
        if (tty) {
            fprintf(stderr, "\r[%-30.*s] %lu/%lu loss %.4f", (int)(30 * k / t.o.steps),
                    "##############################", k, t.o.steps, loss);
        }
    }
    if (tty) {
        fputc('\n', stderr);
    }
    rc = zsh_train_report(&t);
    /* Every rank's own word that it finished, with the loss it holds (none
     * when a resumed run had no step left to train). */
    if (done < t.o.steps) {
        printf("rank %d: last loss %.9g, peak rss %llu KiB\n", t.rank, loss,
               zsh_train_peak_rss_kib());
    } else {
        printf("rank %d: no step trained, peak rss %llu KiB\n", t.rank,
               zsh_train_peak_rss_kib());
    }
out:
    /* A rank that stops on an error aborts, so that its peers stop too
     * instead of waiting for it (here in the teardown's fence) until
     * ZSH_TIMEOUT; then it tears down like any other: the optimizer's destroy
     * removes its NVMe files. Only what a killed process leaves is for the
     * next job of the same id to sweep. */
    if ((rc != 0) && !alike) {
        (void)zsh_comm_abort(t.comm);
    }
    zsh_train_teardown(&t);
    return rc;
}
