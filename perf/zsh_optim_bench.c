/*
 * zsh_optim_bench: how fast the optimizer step updates parameters, against
 * the memory bound measured in the same run.
 *
 *   zsh_optim_bench [-n 1m,16m,64m] [-r sgd,adam,adamw] [-p fp32,bf16] [-i ITERS]
 *                   [-t THREADS] [--json] [--device host|cuda]
 *
 * One rank (a communicator of one process), stage 0, one parameter of N
 * elements. Each repetition hands a gradient over (zsh_optim_grad_ready
 * copies it, which is not timed) and times zsh_optim_step alone; the median
 * gives Gparam/s. The bound: a STREAM triad (a[i] = b[i] + s * c[i]) on three
 * fp32 arrays of N elements on as many threads as the step's update
 * (optim_bench_triad.c), best of several runs, gives bytes/s; the bytes the
 * update must read and write per element, divided into that, give the
 * Gparam/s no step over memory on those threads can beat. The ratio is the
 * fraction of that bound the step reaches. --device cuda times the
 * optimizer's device kernels instead (optim_bench_cuda.c).
 */
#include "optim_bench_cuda.h"
#include "optim_bench_triad.h"

#include <zeroshard.h>
#include <zeroshard/optim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_OB_MAX 16

typedef struct {
    size_t sizes[ZSH_OB_MAX];
    int    nsizes;
    zsh_optim_kind_t rules[3];
    int    nrules;
    zsh_dtype_t precs[2];
    int    nprecs;
    int    iters;
    int    threads;
    int    json;
    int    cuda;
} zsh_ob_opts_t;

static int zsh_ob_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static const char *zsh_ob_rule_name(zsh_optim_kind_t k)
{
    return (k == ZSH_OPTIM_SGD) ? "sgd" : (k == ZSH_OPTIM_ADAM) ? "adam" : "adamw";
}

/*
 * Bytes per element the step must move, as the layer's code does it. fp32:
 * Adam reads p, g, m, v and writes p, m, v; SGD with momentum reads p, g, buf
 * and writes p, buf. Mixed precision reads the half gradient and the fp32
 * master weights and states, writes them back, and writes the half parameter
 * rounded from the master weights.
 */
double zsh_ob_bytes(zsh_optim_kind_t k, zsh_dtype_t prec)
{
    double states = (k == ZSH_OPTIM_SGD) ? 1.0 : 2.0;

    if (prec == ZSH_FLOAT32) {
        return 4.0 * (2.0 + states) + 4.0 * (1.0 + states);
    }
    return 2.0 + 4.0 * (1.0 + states) + 4.0 * (1.0 + states) + 2.0;
}

static uint16_t zsh_ob_bf16(float f)
{
    uint32_t u;

    memcpy(&u, &f, sizeof(u));
    return (uint16_t)(u >> 16);
}

/* Median seconds of zsh_optim_step over @iters steps, or a negative value. */
static double zsh_ob_step(zsh_comm_t *comm, zsh_optim_kind_t kind, zsh_dtype_t prec, size_t n,
                          int iters, int threads)
{
    size_t es = (prec == ZSH_FLOAT32) ? 4 : 2, i;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param;
    void *buf = malloc(n * es), *grad = malloc(n * es);
    double *times = calloc((size_t)iters, sizeof(double)), t, median = -1.0;
    float x;
    int it;

    if ((buf == NULL) || (grad == NULL) || (times == NULL)) {
        fprintf(stderr, "zsh_optim_bench: no memory for %zu elements\n", n);
        goto out;
    }
    for (i = 0; i < n; i++) {
        x = 0.01f * (float)((i * 2654435761u) % 201) - 1.0f; /* in [-1, 1] */
        if (prec == ZSH_FLOAT32) {
            ((float *)buf)[i]  = x;
            ((float *)grad)[i] = 1e-3f * x;
        } else {
            ((uint16_t *)buf)[i]  = zsh_ob_bf16(x);
            ((uint16_t *)grad)[i] = zsh_ob_bf16(1e-3f * x);
        }
    }
    zsh_optim_config_init(&cfg);
    cfg.stage        = 0;
    cfg.kind         = kind;
    cfg.precision    = prec;
    cfg.momentum     = (kind == ZSH_OPTIM_SGD) ? 0.9f : 0.0f;
    cfg.weight_decay = 0.01f;
    cfg.bucket_size  = n * es; /* the parameter alone in one bucket */
    cfg.update_threads = threads;
    if ((zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) ||
        (zsh_optim_register(opt, "w", n, prec, buf, &param) != ZSH_OK) ||
        (zsh_optim_setup(opt) != ZSH_OK)) {
        fprintf(stderr, "zsh_optim_bench: %s\n", zsh_last_error());
        goto out;
    }
    /* One untimed step first: the states' pages are touched then. */
    for (it = -1; it < iters; it++) {
        if (zsh_optim_grad_ready(opt, param, grad) != ZSH_OK) {
            fprintf(stderr, "zsh_optim_bench: %s\n", zsh_last_error());
            goto out;
        }
        t = zsh_ob_now();
        if (zsh_optim_step(opt, NULL) != ZSH_OK) {
            fprintf(stderr, "zsh_optim_bench: %s\n", zsh_last_error());
            goto out;
        }
        if (it >= 0) {
            times[it] = zsh_ob_now() - t;
        }
    }
    qsort(times, (size_t)iters, sizeof(double), zsh_ob_cmp);
    median = (iters % 2) ? times[iters / 2] : 0.5 * (times[iters / 2 - 1] + times[iters / 2]);
out:
    zsh_optim_destroy(opt);
    free(times);
    free(grad);
    free(buf);
    return median;
}

static int zsh_ob_parse_size(const char *s, size_t *n_p)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);

    if ((end == s) || (s[0] == '-')) {
        return -1;
    }
    if ((*end == 'k') || (*end == 'K')) {
        v <<= 10, end++;
    } else if ((*end == 'm') || (*end == 'M')) {
        v <<= 20, end++;
    } else if ((*end == 'g') || (*end == 'G')) {
        v <<= 30, end++;
    }
    if ((*end != '\0') || (v == 0) || (v > ((size_t)1 << 34))) {
        return -1;
    }
    *n_p = (size_t)v;
    return 0;
}

/* A comma-separated list; each item through @item, at most @max of them. */
static int zsh_ob_list(const char *arg, int max, int (*item)(const char *, zsh_ob_opts_t *),
                       zsh_ob_opts_t *o)
{
    char copy[256], *tok, *save = NULL;
    int count = 0;

    if (strlen(arg) >= sizeof(copy)) {
        return -1;
    }
    strcpy(copy, arg);
    for (tok = strtok_r(copy, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
        if ((++count > max) || (item(tok, o) != 0)) {
            return -1;
        }
    }
    return (count == 0) ? -1 : 0;
}

static int zsh_ob_size_item(const char *s, zsh_ob_opts_t *o)
{
    return zsh_ob_parse_size(s, &o->sizes[o->nsizes++]);
}

static int zsh_ob_rule_item(const char *s, zsh_ob_opts_t *o)
{
    zsh_optim_kind_t k;

    if (strcmp(s, "sgd") == 0) {
        k = ZSH_OPTIM_SGD;
    } else if (strcmp(s, "adam") == 0) {
        k = ZSH_OPTIM_ADAM;
    } else if (strcmp(s, "adamw") == 0) {
        k = ZSH_OPTIM_ADAMW;
    } else {
        return -1;
    }
    o->rules[o->nrules++] = k;
    return 0;
}

static int zsh_ob_prec_item(const char *s, zsh_ob_opts_t *o)
{
    if (strcmp(s, "fp32") == 0) {
        o->precs[o->nprecs++] = ZSH_FLOAT32;
    } else if (strcmp(s, "bf16") == 0) {
        o->precs[o->nprecs++] = ZSH_BFLOAT16;
    } else {
        return -1;
    }
    return 0;
}

static void zsh_ob_usage(FILE *f)
{
    fprintf(f, "usage: zsh_optim_bench [-n SIZES] [-r RULES] [-p PRECISIONS] [-i ITERS] "
               "[-t THREADS] [--json] [--device host|cuda]\n"
               "  -n SIZES       elements, comma-separated, k/m/g = 2^10/2^20/2^30 "
               "(default 1m,16m,64m)\n"
               "  -r RULES       sgd (momentum 0.9), adam, adamw (default all)\n"
               "  -p PRECISIONS  fp32, bf16 (default both)\n"
               "  -i ITERS       timed steps per cell, median reported (default 10)\n"
               "  -t THREADS     update threads of the step, and threads of the triad that\n"
               "                 bounds it (default 1)\n"
               "  --json         one JSON array instead of the table\n"
               "  --device cuda  the CUDA kernels on device memory, against a device copy\n");
}

static int zsh_ob_parse(int argc, char **argv, zsh_ob_opts_t *o)
{
    const char *val;
    char *end;
    long v;
    int i;

    memset(o, 0, sizeof(*o));
    o->iters   = 10;
    o->threads = 1;
    for (i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            o->json = 1;
            continue;
        }
        if (strcmp(argv[i], "--device") == 0) {
            if ((i + 1 >= argc) ||
                ((strcmp(argv[i + 1], "host") != 0) && (strcmp(argv[i + 1], "cuda") != 0))) {
                fprintf(stderr, "zsh_optim_bench: --device needs host or cuda\n");
                return -1;
            }
            o->cuda = (strcmp(argv[++i], "cuda") == 0);
            continue;
        }
        if ((strcmp(argv[i], "-h") == 0) || (strcmp(argv[i], "--help") == 0)) {
            zsh_ob_usage(stdout);
            exit(0);
        }
        if ((strlen(argv[i]) != 2) || (argv[i][0] != '-') || (strchr("nrpit", argv[i][1]) == NULL)) {
            fprintf(stderr, "zsh_optim_bench: unknown option '%s'\n", argv[i]);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "zsh_optim_bench: %s needs a value\n", argv[i]);
            return -1;
        }
        val = argv[++i];
        switch (argv[i - 1][1]) {
        case 'n':
            o->nsizes = 0;
            if (zsh_ob_list(val, ZSH_OB_MAX, zsh_ob_size_item, o) != 0) {
                fprintf(stderr, "zsh_optim_bench: -n '%s': need up to %d sizes of 1 to 16g "
                                "elements, comma-separated\n", val, ZSH_OB_MAX);
                return -1;
            }
            break;
        case 'r':
            o->nrules = 0;
            if (zsh_ob_list(val, 3, zsh_ob_rule_item, o) != 0) {
                fprintf(stderr, "zsh_optim_bench: -r '%s': need sgd, adam or adamw, "
                                "comma-separated\n", val);
                return -1;
            }
            break;
        case 'p':
            o->nprecs = 0;
            if (zsh_ob_list(val, 2, zsh_ob_prec_item, o) != 0) {
                fprintf(stderr, "zsh_optim_bench: -p '%s': need fp32 or bf16, "
                                "comma-separated\n", val);
                return -1;
            }
            break;
        case 't':
            v = strtol(val, &end, 10);
            if ((*end != '\0') || (end == val) || (v < 1) || (v > 256)) {
                fprintf(stderr, "zsh_optim_bench: -t '%s': need 1 to 256\n", val);
                return -1;
            }
            o->threads = (int)v;
            break;
        default:
            v = strtol(val, &end, 10);
            if ((*end != '\0') || (end == val) || (v < 1) || (v > 100000)) {
                fprintf(stderr, "zsh_optim_bench: -i '%s': need 1 to 100000\n", val);
                return -1;
            }
            o->iters = (int)v;
        }
    }
    if (o->nsizes == 0) {
        o->sizes[0] = (size_t)1 << 20, o->sizes[1] = (size_t)16 << 20;
        o->sizes[2] = (size_t)64 << 20, o->nsizes = 3;
    }
    if (o->nrules == 0) {
        o->rules[0] = ZSH_OPTIM_SGD, o->rules[1] = ZSH_OPTIM_ADAM;
        o->rules[2] = ZSH_OPTIM_ADAMW, o->nrules = 3;
    }
    if (o->nprecs == 0) {
        o->precs[0] = ZSH_FLOAT32, o->precs[1] = ZSH_BFLOAT16, o->nprecs = 2;
    }
    return 0;
}

/* A job of one process: the out-of-band exchange copies. */
static zsh_status_t zsh_ob_oob_allgather(const void *send, void *recv, size_t len, void *ctx,
                                         void **req_p)
{
    (void)ctx;
    memcpy(recv, send, len);
    *req_p = recv;
    return ZSH_OK;
}

static zsh_status_t zsh_ob_oob_test(void *req)
{
    (void)req;
    return ZSH_OK;
}

static void zsh_ob_oob_free(void *req)
{
    (void)req;
}

int main(int argc, char **argv)
{
    zsh_oob_t lone = {0, 1, NULL, zsh_ob_oob_allgather, zsh_ob_oob_test, zsh_ob_oob_free};
    zsh_comm_t *comm = NULL;
    zsh_ob_opts_t o;
    double triad, sec, bytes, rate, bound;
    int s, r, p, rows = 0;

    if (zsh_ob_parse(argc, argv, &o) != 0) {
        zsh_ob_usage(stderr);
        return 2;
    }
    if (o.cuda) {
        return zsh_ob_cuda_run(o.sizes, o.nsizes, o.rules, o.nrules, o.precs, o.nprecs, o.iters,
                               o.json);
    }
    if (zsh_comm_init_oob(&lone, &comm) != ZSH_OK) {
        fprintf(stderr, "zsh_optim_bench: %s\n", zsh_last_error());
        return 1;
    }
    if (o.json) {
        printf("[");
    } else {
        printf("# ZeroShard optimizer step: 1 rank, stage 0, one parameter, median of %d steps, "
               "%d update thread(s); the triad on as many\n", o.iters, o.threads);
        printf("# bound = triad GB/s / bytes per element; ratio = Gparam/s / bound\n");
        printf("%-6s %-5s %11s %10s %9s %7s %9s %9s %6s\n", "# rule", "prec", "elements",
               "step_us", "Gparam/s", "B/elem", "triadGB/s", "bound", "ratio");
    }
    for (s = 0; s < o.nsizes; s++) {
        triad = zsh_ob_triad(o.sizes[s], (o.sizes[s] < ((size_t)1 << 22)) ? 50 : 10, o.threads);
        if (triad <= 0.0) {
            fprintf(stderr, "zsh_optim_bench: no memory for the triad on %zu elements\n",
                    o.sizes[s]);
            zsh_comm_destroy(comm);
            return 1;
        }
        for (r = 0; r < o.nrules; r++) {
            for (p = 0; p < o.nprecs; p++) {
                sec = zsh_ob_step(comm, o.rules[r], o.precs[p], o.sizes[s], o.iters, o.threads);
                if (sec <= 0.0) {
                    zsh_comm_destroy(comm);
                    return 1;
                }
                bytes = zsh_ob_bytes(o.rules[r], o.precs[p]);
                rate  = (double)o.sizes[s] / sec * 1e-9;
                bound = triad / bytes * 1e-9;
                if (o.json) {
                    printf("%s\n {\"rule\": \"%s\", \"precision\": \"%s\", \"elements\": %zu, "
                           "\"threads\": %d, \"step_s\": %.9f, \"gparams\": %.6f, "
                           "\"bytes_per_elem\": %.0f, \"triad_gbs\": %.6f, "
                           "\"bound_gparams\": %.6f, \"ratio\": %.4f}",
                           rows ? "," : "", zsh_ob_rule_name(o.rules[r]),
                           (o.precs[p] == ZSH_FLOAT32) ? "fp32" : "bf16", o.sizes[s], o.threads,
                           sec, rate, bytes, triad * 1e-9, bound, rate / bound);
                } else {
                    printf("%-6s %-5s %11zu %10.3f %9.4f %7.0f %9.2f %9.4f %6.3f\n",
                           zsh_ob_rule_name(o.rules[r]),
                           (o.precs[p] == ZSH_FLOAT32) ? "fp32" : "bf16", o.sizes[s], sec * 1e6,
                           rate, bytes, triad * 1e-9, bound, rate / bound);
                }
                fflush(stdout);
                rows++;
            }
        }
    }
    if (o.json) {
        printf("\n]\n");
    }
    zsh_comm_destroy(comm);
    return 0;
}
