/*
 * The entry points' checks and CUDA's errors in ZeroShard's terms.
 *
 * Arguments are checked before anything is enqueued, pointers last since
 * that asks CUDA: a host pointer in a kernel would fault the context, which
 * CUDA keeps failing every later call on, so it is refused here instead.
 * CUDA's failures keep CUDA's own text (cudaGetErrorString) in the error.
 */
#include "optim/rule/cuda/common.cuh"

zsh_status_t zsh_cuda_error(cudaError_t err, const char *what)
{
    /* Errors about the arguments CUDA was given; the rest are the device's,
     * the driver's or the runtime's. */
    bool arg = (err == cudaErrorInvalidValue) || (err == cudaErrorInvalidConfiguration) ||
               (err == cudaErrorInvalidDevicePointer) || (err == cudaErrorInvalidResourceHandle) ||
               (err == cudaErrorInvalidPitchValue) || (err == cudaErrorInvalidSymbol);

    return zsh_error(arg ? ZSH_ERR_INVALID_ARG : ZSH_ERR_TRANSPORT, "%s: CUDA error %d (%s): %s",
                     what, (int)err, cudaGetErrorName(err), cudaGetErrorString(err));
}

zsh_status_t zsh_cuda_launched(const char *what)
{
    cudaError_t err = cudaGetLastError();

    return (err == cudaSuccess) ? ZSH_OK : zsh_cuda_error(err, what);
}

zsh_status_t zsh_cuda_check_ptr(const void *ptr, const char *what, const char *name)
{
    cudaPointerAttributes attr;
    cudaError_t err = cudaPointerGetAttributes(&attr, ptr);

    if (err != cudaSuccess) {
        (void)cudaGetLastError(); /* not left for the next launch's check */
        return zsh_cuda_error(err, what);
    }
    if ((attr.type == cudaMemoryTypeUnregistered) ||
        ((attr.type == cudaMemoryTypeHost) && (attr.devicePointer == NULL))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s=%p is host memory the device cannot "
                         "reach (not cudaMalloc'd, pinned or managed)", what, name, ptr);
    }
    return ZSH_OK;
}

zsh_status_t zsh_cuda_step_check(const zsh_cuda_step_args_t *a, const char *what, bool need_m,
                                 bool need_v)
{
    zsh_status_t status = ZSH_OK;

    if (a == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: args is NULL", what);
    }
    if (!zsh_cuda_dtype_ok(a->grad_dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: gradient dtype %d is not fp32, bf16 or fp16",
                         what, (int)a->grad_dtype);
    }
    if ((a->out != NULL) && !zsh_cuda_dtype_ok(a->out_dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: model copy dtype %d is not fp32, bf16 or "
                         "fp16", what, (int)a->out_dtype);
    }
    if (a->n == 0) {
        return ZSH_OK;
    }
    if ((a->p == NULL) || (a->g == NULL) || (need_m && (a->m == NULL)) ||
        (need_v && (a->v == NULL))) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %zu elements need p, g%s%s, got p=%p g=%p "
                         "m=%p v=%p", what, a->n, need_m ? ", m" : "", need_v ? ", v" : "",
                         (void *)a->p, a->g, (void *)a->m, (void *)a->v);
    }
    if (((status = zsh_cuda_check_ptr(a->p, what, "p")) == ZSH_OK) &&
        ((status = zsh_cuda_check_ptr(a->g, what, "g")) == ZSH_OK) && need_m) {
        status = zsh_cuda_check_ptr(a->m, what, "m");
    }
    if ((status == ZSH_OK) && need_v) {
        status = zsh_cuda_check_ptr(a->v, what, "v");
    }
    if ((status == ZSH_OK) && (a->out != NULL)) {
        status = zsh_cuda_check_ptr(a->out, what, "out");
    }
    return status;
}

extern "C" zsh_status_t zsh_cuda_devices(int *count_p)
{
    int count = 0;
    cudaError_t err;

    if (count_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_cuda_devices: count_p is NULL");
    }
    err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        (void)cudaGetLastError();
        return zsh_cuda_error(err, "zsh_cuda_devices: cudaGetDeviceCount");
    }
    *count_p = count;
    return ZSH_OK;
}
