/*
 * The device rows of zsh_optim_bench. Each cell times zsh_cuda_step() on
 * one stream with CUDA events (median of the steps after an untimed one);
 * the bound is the best of several cudaMemcpy device-to-device copies that
 * read and write as many bytes as the step does, so the ratio is the
 * fraction of the copy's bandwidth the update reaches.
 */
#include <config.h>

#include "optim_bench_cuda.h"

#include "optim/rule/cuda/kernels.h"

#include <stdio.h>
#include <stdlib.h>

#ifdef ZSH_HAVE_NVCC
#include <cuda_runtime_api.h>

static int zsh_obc_ok(cudaError_t err, const char *what)
{
    if (err != cudaSuccess) {
        fprintf(stderr, "zsh_optim_bench: %s: %s (%s)\n", what, cudaGetErrorName(err),
                cudaGetErrorString(err));
        return 0;
    }
    return 1;
}

static int zsh_obc_cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;

    return (x > y) - (x < y);
}

/* Best bytes/s of a device copy reading and writing @bytes in all. */
static double zsh_obc_copy(size_t bytes, cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1)
{
    size_t half = bytes / 2;
    void *a = NULL, *b = NULL;
    double best = 0.0;
    float ms;
    int r;

    if (zsh_obc_ok(cudaMalloc(&a, half), "cudaMalloc") &&
        zsh_obc_ok(cudaMalloc(&b, half), "cudaMalloc") &&
        zsh_obc_ok(cudaMemsetAsync(a, 0, half, s), "cudaMemsetAsync")) {
        for (r = -1; r < 20; r++) {
            if (!zsh_obc_ok(cudaEventRecord(e0, s), "cudaEventRecord") ||
                !zsh_obc_ok(cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice, s),
                            "cudaMemcpyAsync") ||
                !zsh_obc_ok(cudaEventRecord(e1, s), "cudaEventRecord") ||
                !zsh_obc_ok(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
                !zsh_obc_ok(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime")) {
                best = 0.0;
                break;
            }
            if ((r >= 0) && (ms > 0.0f) && (2.0 * (double)half / (ms * 1e-3) > best)) {
                best = 2.0 * (double)half / (ms * 1e-3);
            }
        }
    }
    cudaFree(b);
    cudaFree(a);
    return best;
}

/* Median seconds of a device step, or a negative value after a message. */
static double zsh_obc_step(zsh_optim_kind_t kind, zsh_dtype_t prec, size_t n, int iters,
                           cudaStream_t s, cudaEvent_t e0, cudaEvent_t e1)
{
    size_t es = (prec == ZSH_FLOAT32) ? 4 : 2;
    float *times = calloc((size_t)iters, sizeof(float)), ms;
    void *p = NULL, *g = NULL, *m = NULL, *v = NULL, *out = NULL;
    /* step 1 of lr 1e-3, betas (0.9, 0.999), eps 1e-8, weight decay 0.01 */
    zsh_cuda_step_args_t a = {{kind, 0.9f, 0.999f, 0.1f, 0.001f, 1e-8f, 0.0f, 0.0f, 0, 1.0f,
                               -1e-2f, 0.0316227766f, 31.6227766f, 1.0f}, NULL, NULL, prec, NULL, NULL, NULL,
                              prec, n};
    double median = -1.0;
    int it;

    a.u.momentum = (kind == ZSH_OPTIM_SGD) ? 0.9f : 0.0f;
    a.u.decay    = (kind == ZSH_OPTIM_ADAMW) ? 0.99999f : 1.0f;
    if ((times == NULL) || !zsh_obc_ok(cudaMalloc(&p, n * 4), "cudaMalloc") ||
        !zsh_obc_ok(cudaMalloc(&g, n * es), "cudaMalloc") ||
        !zsh_obc_ok(cudaMalloc(&m, n * 4), "cudaMalloc") ||
        ((kind != ZSH_OPTIM_SGD) && !zsh_obc_ok(cudaMalloc(&v, n * 4), "cudaMalloc")) ||
        ((prec != ZSH_FLOAT32) && !zsh_obc_ok(cudaMalloc(&out, n * es), "cudaMalloc")) ||
        !zsh_obc_ok(cudaMemsetAsync(p, 0x3c, n * 4, s), "cudaMemsetAsync") ||
        !zsh_obc_ok(cudaMemsetAsync(g, 0x1c, n * es, s), "cudaMemsetAsync") ||
        !zsh_obc_ok(cudaMemsetAsync(m, 0, n * 4, s), "cudaMemsetAsync") ||
        ((v != NULL) && !zsh_obc_ok(cudaMemsetAsync(v, 0, n * 4, s), "cudaMemsetAsync"))) {
        goto out;
    }
    a.p   = p;
    a.g   = g;
    a.m   = m;
    a.v   = v;
    a.out = out; /* mixed precision writes the model copy, as the layer does */
    for (it = -1; it < iters; it++) {
        if (!zsh_obc_ok(cudaEventRecord(e0, s), "cudaEventRecord")) {
            goto out;
        }
        if (zsh_cuda_step(&a, s) != ZSH_OK) {
            fprintf(stderr, "zsh_optim_bench: %s\n", zsh_last_error());
            goto out;
        }
        if (!zsh_obc_ok(cudaEventRecord(e1, s), "cudaEventRecord") ||
            !zsh_obc_ok(cudaEventSynchronize(e1), "cudaEventSynchronize") ||
            !zsh_obc_ok(cudaEventElapsedTime(&ms, e0, e1), "cudaEventElapsedTime")) {
            goto out;
        }
        if (it >= 0) {
            times[it] = ms;
        }
    }
    qsort(times, (size_t)iters, sizeof(float), zsh_obc_cmp);
    median = 1e-3 * ((iters % 2) ? times[iters / 2]
                                 : 0.5 * (times[iters / 2 - 1] + times[iters / 2]));
out:
    cudaFree(out);
    cudaFree(v);
    cudaFree(m);
    cudaFree(g);
    cudaFree(p);
    free(times);
    return median;
}

int zsh_ob_cuda_run(const size_t *sizes, int nsizes, const zsh_optim_kind_t *rules, int nrules,
                    const zsh_dtype_t *precs, int nprecs, int iters, int json)
{
    cudaStream_t s  = NULL;
    cudaEvent_t  e0 = NULL, e1 = NULL;
    double sec, bytes, copy, rate, bound;
    int count = 0, i, r, p, rows = 0, rc = 1;

    if (zsh_cuda_devices(&count) != ZSH_OK) {
        fprintf(stderr, "zsh_optim_bench: --device cuda: %s\n", zsh_last_error());
        return 1;
    }
    if (count == 0) {
        fprintf(stderr, "zsh_optim_bench: --device cuda: no CUDA device visible\n");
        return 1;
    }
    if (!zsh_obc_ok(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate") ||
        !zsh_obc_ok(cudaEventCreate(&e0), "cudaEventCreate") ||
        !zsh_obc_ok(cudaEventCreate(&e1), "cudaEventCreate")) {
        goto out;
    }
    if (json) {
        printf("[");
    } else {
        printf("# ZeroShard optimizer kernels on CUDA device memory, median of %d steps\n",
               iters);
        printf("# bound = device-to-device cudaMemcpy GB/s (same bytes) / bytes per element; "
               "ratio = Gparam/s / bound\n");
        printf("%-6s %-5s %11s %10s %9s %7s %9s %9s %6s\n", "# rule", "prec", "elements",
               "step_us", "Gparam/s", "B/elem", "d2dGB/s", "bound", "ratio");
    }
    for (i = 0; i < nsizes; i++) {
        for (r = 0; r < nrules; r++) {
            for (p = 0; p < nprecs; p++) {
                bytes = zsh_ob_bytes(rules[r], precs[p]);
                copy  = zsh_obc_copy((size_t)(bytes * (double)sizes[i]), s, e0, e1);
                sec   = zsh_obc_step(rules[r], precs[p], sizes[i], iters, s, e0, e1);
                if ((copy <= 0.0) || (sec <= 0.0)) {
                    goto out;
                }
                rate  = (double)sizes[i] / sec * 1e-9;
                bound = copy / bytes * 1e-9;
                if (json) {
                    printf("%s\n {\"device\": \"cuda\", \"rule\": \"%s\", \"precision\": \"%s\", "
                           "\"elements\": %zu, \"step_s\": %.9f, \"gparams\": %.6f, "
                           "\"bytes_per_elem\": %.0f, \"d2d_gbs\": %.6f, \"bound_gparams\": "
                           "%.6f, \"ratio\": %.4f}", rows ? "," : "",
                           (rules[r] == ZSH_OPTIM_SGD) ? "sgd" :
                           (rules[r] == ZSH_OPTIM_ADAM) ? "adam" : "adamw",
                           (precs[p] == ZSH_FLOAT32) ? "fp32" : "bf16", sizes[i], sec, rate,
                           bytes, copy * 1e-9, bound, rate / bound);
                } else {
                    printf("%-6s %-5s %11zu %10.3f %9.4f %7.0f %9.2f %9.4f %6.3f\n",
                           (rules[r] == ZSH_OPTIM_SGD) ? "sgd" :
                           (rules[r] == ZSH_OPTIM_ADAM) ? "adam" : "adamw",
                           (precs[p] == ZSH_FLOAT32) ? "fp32" : "bf16", sizes[i], sec * 1e6,
                           rate, bytes, copy * 1e-9, bound, rate / bound);
                }
                fflush(stdout);
                rows++;
            }
        }
    }
    if (json) {
        printf("\n]\n");
    }
    rc = 0;
out:
    if (e1 != NULL) {
        cudaEventDestroy(e1);
    }
    if (e0 != NULL) {
        cudaEventDestroy(e0);
    }
    if (s != NULL) {
        cudaStreamDestroy(s);
    }
    return rc;
}

#else

int zsh_ob_cuda_run(const size_t *sizes, int nsizes, const zsh_optim_kind_t *rules, int nrules,
                    const zsh_dtype_t *precs, int nprecs, int iters, int json)
{
    (void)sizes, (void)nsizes, (void)rules, (void)nrules, (void)precs, (void)nprecs;
    (void)iters, (void)json;
    fprintf(stderr, "zsh_optim_bench: --device cuda: built without nvcc\n");
    return 1;
}

#endif
