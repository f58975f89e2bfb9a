/*
 * The device kernels' entry points in a build without nvcc: each refuses
 * with ZSH_ERR_UNSUPPORTED, so callers link and learn why at run time.
 */
#include "optim/rule/cuda/kernels.h"

#include "core/status.h"

static zsh_status_t zsh_cuda_absent(const char *what)
{
    return zsh_error(ZSH_ERR_UNSUPPORTED, "%s: ZeroShard was built without nvcc "
                     "(configure found no CUDA compiler)", what);
}

zsh_status_t zsh_cuda_adam_step(const zsh_cuda_step_args_t *a, void *stream)
{
    (void)a;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_adam_step");
}

zsh_status_t zsh_cuda_sgd_step(const zsh_cuda_step_args_t *a, void *stream)
{
    (void)a;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_sgd_step");
}

zsh_status_t zsh_cuda_step(const zsh_cuda_step_args_t *a, void *stream)
{
    (void)a;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_step");
}

zsh_status_t zsh_cuda_sumsq(const void *x, zsh_dtype_t dtype, size_t n, double *sum,
                            int accumulate, double *scratch, void *stream)
{
    (void)x;
    (void)dtype;
    (void)n;
    (void)sum;
    (void)accumulate;
    (void)scratch;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_sumsq");
}

zsh_status_t zsh_cuda_nonfinite(const void *x, zsh_dtype_t dtype, size_t n, int *flag,
                                int accumulate, void *stream)
{
    (void)x;
    (void)dtype;
    (void)n;
    (void)flag;
    (void)accumulate;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_nonfinite");
}

zsh_status_t zsh_cuda_scale(void *x, zsh_dtype_t dtype, size_t n, float mul, void *stream)
{
    (void)x;
    (void)dtype;
    (void)n;
    (void)mul;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_scale");
}

zsh_status_t zsh_cuda_from_float(const float *src, void *dst, zsh_dtype_t dtype, size_t n,
                                 void *stream)
{
    (void)src;
    (void)dst;
    (void)dtype;
    (void)n;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_from_float");
}

zsh_status_t zsh_cuda_to_float(const void *src, zsh_dtype_t dtype, float *dst, size_t n,
                               void *stream)
{
    (void)src;
    (void)dtype;
    (void)dst;
    (void)n;
    (void)stream;
    return zsh_cuda_absent("zsh_cuda_to_float");
}

zsh_status_t zsh_cuda_devices(int *count_p)
{
    (void)count_p;
    return zsh_cuda_absent("zsh_cuda_devices");
}
