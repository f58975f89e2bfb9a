#include "cuda_helpers.h"

#include "optim/rule/cuda/kernels.h"

#include <math.h>
#include <stdio.h>

#ifdef ZSH_HAVE_NVCC
#include <cuda_runtime_api.h>
#endif

const char *zsh_ck_no_device(void)
{
#ifdef ZSH_HAVE_NVCC
    static char why[512];
    int count = 0;

    if (zsh_cuda_devices(&count) != ZSH_OK) {
        snprintf(why, sizeof(why), "no CUDA device visible: %s", zsh_last_error());
        return why;
    }
    if (count == 0) {
        return "no CUDA device visible: cudaGetDeviceCount found none";
    }
    return NULL;
#else
    return "built without nvcc: the CUDA kernels are stubs";
#endif
}

#ifdef ZSH_HAVE_NVCC
static bool zsh_ck_ok(cudaError_t err, const char *what, size_t bytes)
{
    if (err != cudaSuccess) {
        zsh_test_fail(__FILE__, __LINE__, "%s of %zu bytes failed: %s (%s)", what, bytes,
                      cudaGetErrorName(err), cudaGetErrorString(err));
        return false;
    }
    return true;
}
#endif

void *zsh_ck_dev_alloc(size_t bytes)
{
#ifdef ZSH_HAVE_NVCC
    void *d = NULL;

    return zsh_ck_ok(cudaMalloc(&d, bytes), "cudaMalloc", bytes) ? d : NULL;
#else
    zsh_test_fail(__FILE__, __LINE__, "no device memory without nvcc (%zu bytes)", bytes);
    return NULL;
#endif
}

void zsh_ck_dev_free(void *d)
{
#ifdef ZSH_HAVE_NVCC
    if (d != NULL) {
        (void)zsh_ck_ok(cudaFree(d), "cudaFree", 0);
    }
#else
    (void)d;
#endif
}

bool zsh_ck_put(void *d, const void *h, size_t bytes)
{
#ifdef ZSH_HAVE_NVCC
    return zsh_ck_ok(cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice), "cudaMemcpy to device",
                     bytes);
#else
    (void)d;
    (void)h;
    (void)bytes;
    return false;
#endif
}

bool zsh_ck_get(void *h, const void *d, size_t bytes)
{
#ifdef ZSH_HAVE_NVCC
    return zsh_ck_ok(cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost), "cudaMemcpy to host",
                     bytes);
#else
    (void)d;
    (void)h;
    (void)bytes;
    return false;
#endif
}

bool zsh_ck_sync(void)
{
#ifdef ZSH_HAVE_NVCC
    return zsh_ck_ok(cudaDeviceSynchronize(), "cudaDeviceSynchronize", 0);
#else
    return false;
#endif
}

bool zsh_ck_status_ok(const char *file, int line, zsh_status_t status, const char *ctx)
{
    if (status != ZSH_OK) {
        zsh_test_fail(file, line, "%s: status %d: %s", ctx, (int)status, zsh_last_error());
        return false;
    }
    return true;
}

uint64_t zsh_ck_next(uint64_t *state)
{
    uint64_t x = *state;

    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

float zsh_ck_float(uint64_t *state, int lo, int hi)
{
    uint64_t r = zsh_ck_next(state);
    double mant = (double)(r >> 11) * 0x1p-53; /* [0, 1) */
    int e = lo + (int)((r >> 3) % (uint64_t)(hi - lo + 1));
    float f;

    if ((r & 0x3f0) == 0) {
        return 0.0f;
    }
    if ((r & 0x3f0) == 0x10) {
        f = (float)(mant * 0x1p-130); /* fp32 subnormal */
    } else {
        f = (float)ldexp(1.0 + mant, e);
    }
    return (r & 1) ? -f : f;
}
