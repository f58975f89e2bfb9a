/*
 * The device kernels' entry points refuse bad input with a clear error and
 * fail loudly, never crash, when CUDA cannot run them. These need no
 * device, so they run wherever nvcc built the kernels (CI included); a
 * build without nvcc checks that every entry point says so instead.
 */
#include "cuda_helpers.h"

#include "optim/rule/cuda/kernels.h"

#include <stdlib.h>
#include <string.h>

/* Arguments that pass every check but the pointers' (filled by the test). */
static zsh_cuda_step_args_t zsh_ca_args(zsh_optim_kind_t kind, float *p, void *g, float *m,
                                        float *v, size_t n)
{
    zsh_cuda_step_args_t a;

    memset(&a, 0, sizeof(a));
    a.u.kind     = kind;
    a.u.beta1    = 0.9f;
    a.u.beta2    = 0.999f;
    a.u.omb1     = 0.1f;
    a.u.omb2     = 0.001f;
    a.u.eps      = 1e-8f;
    a.u.decay    = 1.0f;
    a.u.neg_step = -1e-2f;
    a.u.bc2_sqrt = 0.0316227766f;
    a.u.inv_bc2_sqrt = 31.6227766f;
    a.u.grad_mul = 1.0f;
    a.p          = p;
    a.g          = g;
    a.grad_dtype = ZSH_FLOAT32;
    a.m          = m;
    a.v          = v;
    a.out_dtype  = ZSH_FLOAT32;
    a.n          = n;
    return a;
}

/* @status is ZSH_ERR_INVALID_ARG and the last error contains @needle. */
#define ZSH_CA_REFUSED(_status, _needle) \
    do { \
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, (_status)); \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), (_needle)); \
    } while (0)

ZSH_TEST(cuda_kernels, bad_arguments_are_refused_before_anything_is_enqueued)
{
#ifdef ZSH_HAVE_NVCC
    /* Never dereferenced: every call below is refused before it looks. */
    float *p = (float *)(uintptr_t)0x1000, *m = p + 64, *v = p + 128;
    void *g = p + 192;
    zsh_cuda_step_args_t a;
    double *sum = (double *)(uintptr_t)0x2000;

    ZSH_CA_REFUSED(zsh_cuda_step(NULL, NULL), "args is NULL");
    ZSH_CA_REFUSED(zsh_cuda_adam_step(NULL, NULL), "args is NULL");
    a = zsh_ca_args(ZSH_OPTIM_SGD, p, g, m, v, 10);
    ZSH_CA_REFUSED(zsh_cuda_adam_step(&a, NULL), "not Adam or AdamW");
    a = zsh_ca_args(ZSH_OPTIM_ADAMW, p, g, m, v, 10);
    ZSH_CA_REFUSED(zsh_cuda_sgd_step(&a, NULL), "not SGD");
    a.grad_dtype = ZSH_FLOAT64;
    ZSH_CA_REFUSED(zsh_cuda_step(&a, NULL), "gradient dtype");
    a = zsh_ca_args(ZSH_OPTIM_ADAM, p, g, m, v, 10);
    a.out       = p + 256;
    a.out_dtype = ZSH_INT32;
    ZSH_CA_REFUSED(zsh_cuda_step(&a, NULL), "model copy dtype");
    a = zsh_ca_args(ZSH_OPTIM_ADAM, p, g, m, NULL, 10);
    ZSH_CA_REFUSED(zsh_cuda_step(&a, NULL), "zsh_cuda_adam_step: 10 elements need p, g, m, v");
    a = zsh_ca_args(ZSH_OPTIM_SGD, NULL, g, NULL, NULL, 10);
    ZSH_CA_REFUSED(zsh_cuda_step(&a, NULL), "zsh_cuda_sgd_step: 10 elements need p, g");
    a = zsh_ca_args(ZSH_OPTIM_SGD, p, g, NULL, NULL, 10);
    a.u.momentum = 0.9f;
    ZSH_CA_REFUSED(zsh_cuda_step(&a, NULL), "need p, g, m");
    /* Nothing to do is done without asking CUDA, whatever the pointers. */
    a = zsh_ca_args(ZSH_OPTIM_ADAMW, NULL, NULL, NULL, NULL, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_cuda_step(&a, NULL));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_cuda_scale(NULL, ZSH_BFLOAT16, 0, 2.0f, NULL));
    ZSH_CA_REFUSED(zsh_cuda_sumsq(g, ZSH_FLOAT64, 10, sum, 0, (double *)p, NULL), "dtype 9");
    ZSH_CA_REFUSED(zsh_cuda_sumsq(NULL, ZSH_FLOAT32, 10, sum, 0, (double *)p, NULL),
                   "x is NULL");
    ZSH_CA_REFUSED(zsh_cuda_sumsq(g, ZSH_FLOAT32, 10, sum, 0, NULL, NULL), "both are needed");
    ZSH_CA_REFUSED(zsh_cuda_nonfinite(g, ZSH_FLOAT16, 10, NULL, 0, NULL), "flag is NULL");
    ZSH_CA_REFUSED(zsh_cuda_scale(g, ZSH_INT8, 10, 2.0f, NULL), "zsh_cuda_scale: dtype");
    ZSH_CA_REFUSED(zsh_cuda_from_float(NULL, g, ZSH_BFLOAT16, 10, NULL), "src is NULL");
    ZSH_CA_REFUSED(zsh_cuda_to_float(g, ZSH_FLOAT16, NULL, 10, NULL), "dst is NULL");
    ZSH_CA_REFUSED(zsh_cuda_devices(NULL), "count_p is NULL");
#else
    ZSH_SKIP("built without nvcc: the CUDA kernels are stubs "
             "(cuda_kernels.without_nvcc_every_entry_point_is_unsupported covers them)");
#endif
}

ZSH_TEST(cuda_kernels, host_memory_is_refused_and_cuda_failures_carry_cudas_text)
{
#ifdef ZSH_HAVE_NVCC
    size_t n = 1000;
    float *p = calloc(n, sizeof(float)), *g = calloc(n, sizeof(float));
    float *m = calloc(n, sizeof(float)), *v = calloc(n, sizeof(float));
    zsh_cuda_step_args_t a = zsh_ca_args(ZSH_OPTIM_ADAMW, p, g, m, v, n);
    bool device = (zsh_ck_no_device() == NULL);
    zsh_status_t status;
    float p0;

    ZSH_ASSERT_TRUE((p != NULL) && (g != NULL) && (m != NULL) && (v != NULL));
    p[0]   = 1.0f;
    p0     = p[0];
    status = zsh_cuda_step(&a, NULL);
    if (device) {
        /* Pageable host memory would fault the device's context: refused. */
        ZSH_CA_REFUSED(status, "p=");
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "host memory the device cannot reach");
    } else {
        /* No driver or no device: CUDA's reason, never a crash. */
        ZSH_EXPECT_TRUE(status != ZSH_OK);
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "zsh_cuda_adam_step: CUDA error");
    }
    ZSH_EXPECT_TRUE(p[0] == p0);
    free(v);
    free(m);
    free(g);
    free(p);
#else
    ZSH_SKIP("built without nvcc: the CUDA kernels are stubs");
#endif
}

ZSH_TEST(cuda_kernels, without_nvcc_every_entry_point_is_unsupported)
{
#ifdef ZSH_HAVE_NVCC
    ZSH_SKIP("built with nvcc: the entry points are the kernels, not the stubs");
#else
    zsh_cuda_step_args_t a = zsh_ca_args(ZSH_OPTIM_ADAMW, NULL, NULL, NULL, NULL, 0);
    double sum;
    int count = 0, flag;

    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_step(&a, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "built without nvcc");
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_adam_step(&a, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_sgd_step(&a, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_sumsq(NULL, ZSH_FLOAT32, 0, &sum, 0, NULL,
                                                          NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_nonfinite(NULL, ZSH_FLOAT32, 0, &flag, 0,
                                                              NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_scale(NULL, ZSH_FLOAT32, 0, 1.0f, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_from_float(NULL, NULL, ZSH_FLOAT16, 0, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_to_float(NULL, ZSH_FLOAT16, NULL, 0, NULL));
    ZSH_EXPECT_STATUS(ZSH_ERR_UNSUPPORTED, zsh_cuda_devices(&count));
    ZSH_EXPECT_EQ(0, count);
#endif
}
