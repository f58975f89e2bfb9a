/*
 * Vector helpers of the device step: the sum of squares for the gradient
 * norm (norm.c's zsh_optim_sumsq), the non-finite check of fp16 overflow,
 * scaling, and the conversions between fp32 master weights and the model's
 * half precision (core/half.c's zsh_half_narrow and zsh_half_widen).
 */
#include "optim/rule/cuda/common.cuh"

/* Blocks of the sum of squares' first pass: a function of n alone, so the
 * tree, and with it the rounding, is the same on every device and run. */
static unsigned zsh_sumsq_blocks(size_t n)
{
    size_t b = (n + ZSH_CUDA_THREADS - 1) / ZSH_CUDA_THREADS;

    return (unsigned)((b < ZSH_CUDA_SUMSQ_SCRATCH) ? b : ZSH_CUDA_SUMSQ_SCRATCH);
}

/* Sums the shared doubles sh[0, width) into sh[0] in a fixed tree (width a
 * power of two, the block's thread count). */
static __device__ void zsh_tree_sum(double *sh, unsigned width)
{
    unsigned k;

    for (k = width / 2; k > 0; k /= 2) {
        if (threadIdx.x < k) {
            sh[threadIdx.x] = __dadd_rn(sh[threadIdx.x], sh[threadIdx.x + k]);
        }
        __syncthreads();
    }
}

template <class T>
__global__ void zsh_sumsq_part(const typename T::elem_t *__restrict__ x, size_t n,
                               double *__restrict__ scratch)
{
    __shared__ double sh[ZSH_CUDA_THREADS];
    double s = 0.0, f;
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        f = (double)T::load(x, i);
        s = __dadd_rn(s, __dmul_rn(f, f)); /* the square of a float is exact in double */
    }
    sh[threadIdx.x] = s;
    __syncthreads();
    zsh_tree_sum(sh, ZSH_CUDA_THREADS);
    if (threadIdx.x == 0) {
        scratch[blockIdx.x] = sh[0];
    }
}

__global__ void zsh_sumsq_final(const double *__restrict__ scratch, unsigned parts,
                                double *__restrict__ sum, int accumulate)
{
    __shared__ double sh[ZSH_CUDA_SUMSQ_SCRATCH];

    sh[threadIdx.x] = (threadIdx.x < parts) ? scratch[threadIdx.x] : 0.0;
    __syncthreads();
    zsh_tree_sum(sh, ZSH_CUDA_SUMSQ_SCRATCH);
    if (threadIdx.x == 0) {
        *sum = accumulate ? __dadd_rn(*sum, sh[0]) : sh[0];
    }
}

template <class T>
__global__ void zsh_nonfinite_kernel(const void *xv, size_t n, int *flag)
{
    const typename T::elem_t *x = (const typename T::elem_t *)xv;
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        /* Widening keeps inf and NaN, so one test serves every dtype. */
        if ((__float_as_uint(T::load(x, i)) & 0x7f800000u) == 0x7f800000u) {
            *flag = 1; /* every writer stores the same value */
        }
    }
}

template <class T>
__global__ void zsh_scale_kernel(void *xv, size_t n, float mul)
{
    typename T::elem_t *x = (typename T::elem_t *)xv;
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        T::store(x, i, __fmul_rn(T::load(x, i), mul));
    }
}

template <class T>
__global__ void zsh_from_float_kernel(const float *__restrict__ src, void *dstv, size_t n)
{
    typename T::elem_t *__restrict__ dst = (typename T::elem_t *)dstv;
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        T::store(dst, i, src[i]);
    }
}

template <class T>
__global__ void zsh_to_float_kernel(const void *srcv, float *__restrict__ dst, size_t n)
{
    const typename T::elem_t *__restrict__ src = (const typename T::elem_t *)srcv;
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        dst[i] = T::load(src, i);
    }
}

/* The checks of a helper over @n elements of @dtype at @x (@name) that
 * need not ask CUDA; the pointers' kind is checked after all of them. */
static zsh_status_t zsh_cuda_vec_check(const char *what, const void *x, const char *name,
                                       zsh_dtype_t dtype, size_t n)
{
    if (!zsh_cuda_dtype_ok(dtype)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: dtype %d is not fp32, bf16 or fp16", what,
                         (int)dtype);
    }
    if ((n > 0) && (x == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is NULL with %zu elements", what, name, n);
    }
    return ZSH_OK;
}

/* zsh_cuda_check_ptr() on @a and, unless NULL, @b. */
static zsh_status_t zsh_cuda_check_ptrs(const char *what, const void *a, const char *aname,
                                        const void *b, const char *bname)
{
    zsh_status_t status = zsh_cuda_check_ptr(a, what, aname);

    return ((status == ZSH_OK) && (b != NULL)) ? zsh_cuda_check_ptr(b, what, bname) : status;
}

/* Launches kernel template _k over _n elements for the zsh_d_* type of
 * dtype _dt, with the arguments that follow (the kernel casts its void
 * pointers to the type's elements). */
#define ZSH_CUDA_LAUNCH(_k, _dt, _n, _s, ...) \
    do { \
        if ((_dt) == ZSH_BFLOAT16) { \
            _k<zsh_d_bf16><<<zsh_cuda_blocks(_n), ZSH_CUDA_THREADS, 0, (_s)>>>(__VA_ARGS__); \
        } else if ((_dt) == ZSH_FLOAT16) { \
            _k<zsh_d_fp16><<<zsh_cuda_blocks(_n), ZSH_CUDA_THREADS, 0, (_s)>>>(__VA_ARGS__); \
        } else { \
            _k<zsh_d_f32><<<zsh_cuda_blocks(_n), ZSH_CUDA_THREADS, 0, (_s)>>>(__VA_ARGS__); \
        } \
    } while (0)

extern "C" zsh_status_t zsh_cuda_sumsq(const void *x, zsh_dtype_t dtype, size_t n, double *sum,
                                       int accumulate, double *scratch, void *stream)
{
    static const char what[] = "zsh_cuda_sumsq";
    cudaStream_t s = (cudaStream_t)stream;
    unsigned parts = zsh_sumsq_blocks(n);
    zsh_status_t status;
    cudaError_t err;

    status = zsh_cuda_vec_check(what, x, "x", dtype, n);
    if ((status == ZSH_OK) && ((sum == NULL) || ((n > 0) && (scratch == NULL)))) {
        status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: sum=%p scratch=%p: both are needed", what,
                           (void *)sum, (void *)scratch);
    }
    if ((status == ZSH_OK) && (n > 0)) {
        status = zsh_cuda_check_ptrs(what, x, "x", scratch, "scratch");
    }
    if (status == ZSH_OK) {
        status = zsh_cuda_check_ptr(sum, what, "sum");
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (n == 0) {
        if (accumulate) {
            return ZSH_OK;
        }
        err = cudaMemsetAsync(sum, 0, sizeof(*sum), s); /* +0.0 is all zero bits */
        return (err == cudaSuccess) ? ZSH_OK : zsh_cuda_error(err, what);
    }
    if (dtype == ZSH_BFLOAT16) {
        zsh_sumsq_part<zsh_d_bf16><<<parts, ZSH_CUDA_THREADS, 0, s>>>(
            (const uint16_t *)x, n, scratch);
    } else if (dtype == ZSH_FLOAT16) {
        zsh_sumsq_part<zsh_d_fp16><<<parts, ZSH_CUDA_THREADS, 0, s>>>(
            (const uint16_t *)x, n, scratch);
    } else {
        zsh_sumsq_part<zsh_d_f32><<<parts, ZSH_CUDA_THREADS, 0, s>>>((const float *)x, n,
                                                                     scratch);
    }
    status = zsh_cuda_launched(what);
    if (status != ZSH_OK) {
        return status;
    }
    zsh_sumsq_final<<<1, ZSH_CUDA_SUMSQ_SCRATCH, 0, s>>>(scratch, parts, sum, accumulate);
    return zsh_cuda_launched(what);
}

extern "C" zsh_status_t zsh_cuda_nonfinite(const void *x, zsh_dtype_t dtype, size_t n, int *flag,
                                           int accumulate, void *stream)
{
    static const char what[] = "zsh_cuda_nonfinite";
    cudaStream_t s = (cudaStream_t)stream;
    zsh_status_t status;
    cudaError_t err;

    status = zsh_cuda_vec_check(what, x, "x", dtype, n);
    if ((status == ZSH_OK) && (flag == NULL)) {
        status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: flag is NULL", what);
    }
    if (status == ZSH_OK) {
        status = zsh_cuda_check_ptrs(what, flag, "flag", (n > 0) ? x : NULL, "x");
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (!accumulate) {
        err = cudaMemsetAsync(flag, 0, sizeof(*flag), s);
        if (err != cudaSuccess) {
            return zsh_cuda_error(err, what);
        }
    }
    if (n == 0) {
        return ZSH_OK;
    }
    ZSH_CUDA_LAUNCH(zsh_nonfinite_kernel, dtype, n, s, x, n, flag);
    return zsh_cuda_launched(what);
}

extern "C" zsh_status_t zsh_cuda_scale(void *x, zsh_dtype_t dtype, size_t n, float mul,
                                       void *stream)
{
    static const char what[] = "zsh_cuda_scale";
    zsh_status_t status = zsh_cuda_vec_check(what, x, "x", dtype, n);

    if ((status == ZSH_OK) && (n > 0)) {
        status = zsh_cuda_check_ptr(x, what, "x");
    }
    if ((status != ZSH_OK) || (n == 0)) {
        return status;
    }
    ZSH_CUDA_LAUNCH(zsh_scale_kernel, dtype, n, (cudaStream_t)stream, x, n, mul);
    return zsh_cuda_launched(what);
}

extern "C" zsh_status_t zsh_cuda_from_float(const float *src, void *dst, zsh_dtype_t dtype,
                                            size_t n, void *stream)
{
    static const char what[] = "zsh_cuda_from_float";
    zsh_status_t status = zsh_cuda_vec_check(what, dst, "dst", dtype, n);

    if ((status == ZSH_OK) && (n > 0)) {
        status = (src == NULL) ? zsh_error(ZSH_ERR_INVALID_ARG, "%s: src is NULL", what)
                               : zsh_cuda_check_ptrs(what, src, "src", dst, "dst");
    }
    if ((status != ZSH_OK) || (n == 0)) {
        return status;
    }
    ZSH_CUDA_LAUNCH(zsh_from_float_kernel, dtype, n, (cudaStream_t)stream, src, dst, n);
    return zsh_cuda_launched(what);
}

extern "C" zsh_status_t zsh_cuda_to_float(const void *src, zsh_dtype_t dtype, float *dst,
                                          size_t n, void *stream)
{
    static const char what[] = "zsh_cuda_to_float";
    zsh_status_t status = zsh_cuda_vec_check(what, src, "src", dtype, n);

    if ((status == ZSH_OK) && (n > 0)) {
        status = (dst == NULL) ? zsh_error(ZSH_ERR_INVALID_ARG, "%s: dst is NULL", what)
                               : zsh_cuda_check_ptrs(what, src, "src", dst, "dst");
    }
    if ((status != ZSH_OK) || (n == 0)) {
        return status;
    }
    ZSH_CUDA_LAUNCH(zsh_to_float_kernel, dtype, n, (cudaStream_t)stream, src, dst, n);
    return zsh_cuda_launched(what);
}
