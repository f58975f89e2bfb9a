#include "quad.h"

#include "rule_ref.h"
#include "src/core/half_ref.h"

#include "core/half.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_QUAD_BATCH 12

const size_t zsh_quad_sizes[ZSH_QUAD_NPARAMS] = {5, 1, 37, 300, 1024, 13};

size_t zsh_quad_psi(void)
{
    size_t i, n = 0;

    for (i = 0; i < ZSH_QUAD_NPARAMS; i++) {
        n += zsh_quad_sizes[i];
    }
    return n;
}

static float zsh_quad_target(size_t p, size_t e, int j, int step)
{
    return (float)sin(0.37 * (double)e + 1.3 * (double)p + 0.7 * j + 0.5 * step);
}

static float zsh_quad_weight(size_t e)
{
    return (float)(1 + e % 3);
}

static float zsh_quad_get(zsh_dtype_t dt, const void *buf, size_t i)
{
    const uint16_t *h = buf;

    switch (dt) {
    case ZSH_BFLOAT16: return zsh_bf16_to_float(h[i]);
    case ZSH_FLOAT16:  return zsh_fp16_to_float(h[i]);
    default:           return ((const float *)buf)[i];
    }
}

static void zsh_quad_put(zsh_dtype_t dt, void *buf, size_t i, float v)
{
    uint16_t *h = buf;

    switch (dt) {
    case ZSH_BFLOAT16: h[i] = zsh_float_to_bf16(v); break;
    case ZSH_FLOAT16:  h[i] = zsh_float_to_fp16(v); break;
    default:           ((float *)buf)[i] = v; break;
    }
}

/* This rank's loss share and gradient of parameter @p (values @w). */
static double zsh_quad_grad(zsh_dtype_t dt, const void *w, size_t p, int first, int rows, int step,
                            float scale, void *grad)
{
    double loss = 0.0;
    size_t e;
    int j;

    for (e = 0; e < zsh_quad_sizes[p]; e++) {
        float g = 0.0f, x = zsh_quad_get(dt, w, e);

        for (j = first; j < first + rows; j++) {
            float d = x - zsh_quad_target(p, e, j, step);

            loss += 0.5 * zsh_quad_weight(e) * d * d / ZSH_QUAD_BATCH;
            g += zsh_quad_weight(e) * d / ZSH_QUAD_BATCH;
        }
        zsh_quad_put(dt, grad, e, g * scale);
    }
    return loss;
}

/* Buffers of one training: the model's gradient and, with run->mem, a host
 * copy of the fetched values and one gradient buffer per parameter there
 * (a gradient handed over is never rewritten before the step). */
typedef struct zsh_quad_bufs {
    void *grad, *host;
    void *init[ZSH_QUAD_NPARAMS], *there[ZSH_QUAD_NPARAMS], *grads[ZSH_QUAD_NPARAMS];
} zsh_quad_bufs_t;

static size_t zsh_quad_bytes(zsh_dtype_t dt, size_t p)
{
    return zsh_quad_sizes[p] * ((dt == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t));
}

/* The values a fetch of parameter @p returned at @w, readable here. */
static const void *zsh_quad_view(const zsh_quad_run_t *run, zsh_quad_bufs_t *b, zsh_dtype_t dt,
                                 size_t p, const void *w)
{
    if (run->mem == NULL) {
        return w;
    }
    if (!run->mem->get(b->host, w, zsh_quad_bytes(dt, p))) {
        memset(b->host, 0, zsh_quad_bytes(dt, p));
    }
    return b->host;
}

/* The gradient of parameter @p, computed into b->grad, where it is handed over. */
static const void *zsh_quad_hand(const zsh_quad_run_t *run, zsh_quad_bufs_t *b, zsh_dtype_t dt,
                                 size_t p)
{
    if (run->mem == NULL) {
        return b->grad;
    }
    (void)run->mem->put(b->grads[p], b->grad, zsh_quad_bytes(dt, p));
    return b->grads[p];
}

static bool zsh_quad_step(zsh_comm_t *comm, zsh_optim_t *opt, zsh_param_t **params,
                          zsh_dtype_t dt, int step, zsh_quad_run_t *run, zsh_quad_bufs_t *b)
{
    int n = zsh_comm_size(comm), r = zsh_comm_rank(comm);
    int first = ZSH_QUAD_BATCH * r / n, rows = ZSH_QUAD_BATCH * (r + 1) / n - first;
    const size_t *order = (run->order != NULL) ? run->order(step) : NULL;
    float scale = zsh_optim_loss_scale(opt);
    double loss = 0.0;
    size_t k, p, e;
    void *w;

    for (k = 0; k < ZSH_QUAD_NPARAMS; k++) {  /* forward */
        p = (order != NULL) ? order[k] : k;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], &w));
        loss += zsh_quad_grad(dt, zsh_quad_view(run, b, dt, p, w), p, first, rows, step, scale,
                              b->grad);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
    }
    for (k = ZSH_QUAD_NPARAMS; k-- > 0;) {   /* backward */
        p = (order != NULL) ? order[k] : k;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], &w));
        zsh_quad_grad(dt, zsh_quad_view(run, b, dt, p, w), p, first, rows, step, scale, b->grad);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
        if ((r == run->bad_rank) && (step == run->bad_step)) {
            for (e = 0; e < zsh_quad_sizes[p]; e++) {
                zsh_quad_put(dt, b->grad, e, zsh_quad_get(dt, b->grad, e) * INFINITY);
            }
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, params[p],
                                                       zsh_quad_hand(run, b, dt, p)));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &run->applied[step - 1]));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_allreduce(&loss, &run->loss[step - 1], 1, ZSH_FLOAT64, ZSH_SUM,
                                            comm));
    return zsh_test_failures() == 0;
}

/* Copy the full parameters out as fp32. */
static void zsh_quad_collect(zsh_optim_t *opt, zsh_param_t **params, zsh_dtype_t dt,
                             zsh_quad_run_t *run, zsh_quad_bufs_t *b)
{
    const void *v;
    size_t p, e;
    void *w;

    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        run->final[p] = calloc(zsh_quad_sizes[p], sizeof(float));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[p], &w));
        v = zsh_quad_view(run, b, dt, p, w);
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            run->final[p][e] = zsh_quad_get(dt, v, e);
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[p]));
    }
}

/* The initial values, and with run->mem their copies and the gradient
 * buffers there; false after a test failure. */
static bool zsh_quad_bufs_make(const zsh_quad_run_t *run, zsh_dtype_t dt, zsh_quad_bufs_t *b)
{
    size_t p, e;

    b->grad = calloc(1024, sizeof(float));
    b->host = calloc(1024, sizeof(float));
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        b->init[p] = calloc(zsh_quad_sizes[p], sizeof(float));
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            zsh_quad_put(dt, b->init[p], e, (float)cos(0.11 * (double)e + (double)p));
        }
        if (run->mem != NULL) {
            b->there[p] = run->mem->alloc(zsh_quad_bytes(dt, p));
            b->grads[p] = run->mem->alloc(zsh_quad_bytes(dt, p));
            if ((b->there[p] == NULL) || (b->grads[p] == NULL) ||
                !run->mem->put(b->there[p], b->init[p], zsh_quad_bytes(dt, p))) {
                return false;
            }
        }
    }
    return true;
}

static void zsh_quad_bufs_free(const zsh_quad_run_t *run, zsh_quad_bufs_t *b)
{
    size_t p;

    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        if (run->mem != NULL) {
            run->mem->release(b->grads[p]);
            run->mem->release(b->there[p]);
        }
        free(b->init[p]);
    }
    free(b->host);
    free(b->grad);
}

bool zsh_quad_train_ckpt(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int first, int last,
                         const char *load_dir, const char *save_dir, zsh_quad_run_t *run)
{
    zsh_param_t *params[ZSH_QUAD_NPARAMS];
    zsh_quad_bufs_t b = {0};
    zsh_dtype_t dt = cfg->precision;
    zsh_optim_t *opt;
    char name[32];
    size_t p;
    int k;

    if (!zsh_quad_bufs_make(run, dt, &b)) {
        zsh_quad_bufs_free(run, &b);
        return false;
    }
    if (zsh_optim_create(comm, cfg, &opt) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_optim_create: %s", zsh_last_error());
        zsh_quad_bufs_free(run, &b);
        return false;
    }
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        snprintf(name, sizeof(name), "quad%zu", p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, name, zsh_quad_sizes[p], dt,
                                                     (run->mem != NULL) ? b.there[p] : b.init[p],
                                                     &params[p]));
    }
    if (load_dir != NULL) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_load(opt, load_dir));
    }
    for (k = first; (k <= last) && (zsh_test_failures() == 0); k++) {
        zsh_quad_step(comm, opt, params, dt, k, run, &b);
        if ((run->hook != NULL) && (k == run->hook_step)) {
            run->hook(comm, opt, run->hook_arg);
        }
    }
    if ((save_dir != NULL) && (zsh_test_failures() == 0)) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_save(opt, save_dir));
    }
    zsh_quad_collect(opt, params, dt, run, &b);
    zsh_optim_get_stats(opt, &run->stats);
    zsh_optim_destroy(opt);
    zsh_quad_bufs_free(run, &b);
    return zsh_test_failures() == 0;
}

bool zsh_quad_train(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int steps,
                    zsh_quad_run_t *run)
{
    return zsh_quad_train_ckpt(comm, cfg, 1, steps, NULL, NULL, run);
}

bool zsh_quad_reference(zsh_comm_t *comm, const zsh_optim_config_t *cfg, int steps,
                        zsh_quad_run_t *run)
{
    zsh_optim_config_t ref = *cfg;
    zsh_comm_t *self;
    bool ok;

    ref.stage = 0;
    if (zsh_comm_split(comm, zsh_comm_rank(comm), 0, &self) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_comm_split: %s", zsh_last_error());
        return false;
    }
    ok = zsh_quad_train(self, &ref, steps, run);
    zsh_comm_destroy(self);
    return ok;
}

/* @v as the training's precision holds it (fp32: the reference keeps double). */
static double zsh_quad_round(zsh_dtype_t dt, double v)
{
    return (dt == ZSH_FLOAT32) ? v : ref_half_decode(ref_half_encode(v, dt), dt);
}

/* The full-batch loss of parameter @p at step @step, and its gradient into
 * @g, from the master weights @w as the passes see them (in precision @dt). */
static double zsh_quad_exact_grad(zsh_dtype_t dt, size_t p, const double *w, int step,
                                  double *g)
{
    double loss = 0.0, x, d;
    size_t e;
    int j;

    for (e = 0; e < zsh_quad_sizes[p]; e++) {
        x    = zsh_quad_round(dt, w[e]);
        g[e] = 0.0;
        for (j = 0; j < ZSH_QUAD_BATCH; j++) {
            d = x - zsh_quad_target(p, e, j, step);
            loss += 0.5 * zsh_quad_weight(e) * d * d / ZSH_QUAD_BATCH;
            g[e] += zsh_quad_weight(e) * d / ZSH_QUAD_BATCH;
        }
    }
    return loss;
}

/* One step of the definition on the master weights @w; returns the loss. */
static double zsh_quad_exact_step(const zsh_optim_config_t *cfg, int step, double scale,
                                  double *w[], double *m[], double *v[], double *g[],
                                  zsh_quad_run_t *run)
{
    zsh_dtype_t dt = cfg->precision;
    double loss = 0.0, sumsq = 0.0, mul = 1.0, norm;
    size_t p, e;

    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        loss += zsh_quad_exact_grad(dt, p, w[p], step, g[p]);
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            g[p][e] = zsh_quad_round(dt, g[p][e] * scale) / scale;
            sumsq += g[p][e] * g[p][e];
        }
    }
    norm                      = sqrt(sumsq);
    run->stats.last_grad_norm = norm;
    if ((cfg->max_grad_norm > 0.0f) && (cfg->max_grad_norm / (norm + 1e-6) < 1.0)) {
        mul = cfg->max_grad_norm / (norm + 1e-6);
    }
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        if (cfg->kind == ZSH_OPTIM_SGD) {
            zsh_rule_sgd_ref(w[p], g[p], m[p], zsh_quad_sizes[p], cfg, step, mul);
        } else {
            zsh_rule_adam_ref(w[p], g[p], m[p], v[p], zsh_quad_sizes[p], cfg, step, mul);
        }
    }
    return loss;
}

void zsh_quad_by_definition(const zsh_optim_config_t *cfg, int steps, zsh_quad_run_t *run)
{
    double *w[ZSH_QUAD_NPARAMS], *m[ZSH_QUAD_NPARAMS], *v[ZSH_QUAD_NPARAMS];
    double *g[ZSH_QUAD_NPARAMS];
    double scale = (cfg->loss_scale > 0.0f) ? cfg->loss_scale
                   : (cfg->precision == ZSH_FLOAT16) ? 65536.0 : 1.0;
    size_t p, e;
    int k;

    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        w[p] = calloc(zsh_quad_sizes[p], sizeof(double));
        m[p] = calloc(zsh_quad_sizes[p], sizeof(double));
        v[p] = calloc(zsh_quad_sizes[p], sizeof(double));
        g[p] = calloc(zsh_quad_sizes[p], sizeof(double));
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            w[p][e] = zsh_quad_round(cfg->precision, (float)cos(0.11 * (double)e + (double)p));
        }
    }
    for (k = 1; k <= steps; k++) {
        run->loss[k - 1]    = zsh_quad_exact_step(cfg, k, scale, w, m, v, g, run);
        run->applied[k - 1] = 1;
    }
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        run->final[p] = calloc(zsh_quad_sizes[p], sizeof(float));
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            run->final[p][e] = (float)zsh_quad_round(cfg->precision, w[p][e]);
        }
        free(g[p]);
        free(v[p]);
        free(m[p]);
        free(w[p]);
    }
}

bool zsh_quad_expect_near(const zsh_quad_run_t *run, const zsh_quad_run_t *ref, int steps,
                          double tol, const char *what)
{
    size_t p, e;
    int k;

    for (k = 0; k < steps; k++) {
        if (!(fabs(run->loss[k] - ref->loss[k]) <= tol * (1.0 + fabs(ref->loss[k])))) {
            zsh_test_fail(__FILE__, __LINE__, "%s: loss of step %d is %.9g, reference %.9g", what,
                          k + 1, run->loss[k], ref->loss[k]);
            return false;
        }
    }
    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        for (e = 0; e < zsh_quad_sizes[p]; e++) {
            double a = run->final[p][e], b = ref->final[p][e];

            if (!(fabs(a - b) <= tol * (1.0 + fabs(b)))) {
                zsh_test_fail(__FILE__, __LINE__,
                              "%s: final quad%zu[%zu] is %.9g, reference %.9g", what, p, e, a, b);
                return false;
            }
        }
    }
    return true;
}

void zsh_quad_free(zsh_quad_run_t *run)
{
    size_t p;

    for (p = 0; p < ZSH_QUAD_NPARAMS; p++) {
        free(run->final[p]);
        run->final[p] = NULL;
    }
}
