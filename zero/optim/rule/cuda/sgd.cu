/*
 * SGD on the device: zsh_sgd_update() of sgd.c, element for element and
 * operation for operation (momentum, nesterov, L2 weight decay; dampening
 * 0; torch.optim's order with the same fused multiply-adds), on fp32, bf16
 * or fp16 gradients, with the updated weights rounded into a model copy in
 * the same pass. Without momentum the buffer is neither read nor written,
 * as on the host.
 */
#include "optim/rule/cuda/common.cuh"

template <class G, class O, bool MOMENTUM>
__global__ void zsh_sgd_kernel(zsh_cuda_update_t u, float *__restrict__ p,
                               const typename G::elem_t *__restrict__ g,
                               float *__restrict__ buf, typename O::elem_t *__restrict__ out,
                               size_t n)
{
    const bool l2 = (u.weight_decay != 0.0f);
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float pi = p[i];
        float d  = __fmul_rn(G::load(g, i), u.grad_mul);

        if (l2) { /* d = fma(p, wd, g) */
            d = __fmaf_rn(pi, u.weight_decay, d);
        }
        if (MOMENTUM) {
            /* bi = buf mu + d;  d = nesterov ? fma(bi, mu, d) : bi */
            float bi = __fadd_rn(__fmul_rn(buf[i], u.momentum), d);

            buf[i] = bi;
            d      = u.nesterov ? __fmaf_rn(bi, u.momentum, d) : bi;
        }
        pi   = __fmaf_rn(d, u.neg_step, pi); /* p = fma(d, -lr, p) */
        p[i] = pi;
        O::store(out, i, pi);
    }
}

template <class G, class O>
static void zsh_sgd_launch(const zsh_cuda_step_args_t *a, cudaStream_t s)
{
    const typename G::elem_t *g = (const typename G::elem_t *)a->g;
    typename O::elem_t *out     = (typename O::elem_t *)a->out;

    if (a->u.momentum == 0.0f) {
        zsh_sgd_kernel<G, O, false><<<zsh_cuda_blocks(a->n), ZSH_CUDA_THREADS, 0, s>>>(
            a->u, a->p, g, a->m, out, a->n);
    } else {
        zsh_sgd_kernel<G, O, true><<<zsh_cuda_blocks(a->n), ZSH_CUDA_THREADS, 0, s>>>(
            a->u, a->p, g, a->m, out, a->n);
    }
}

template <class G>
static void zsh_sgd_launch_out(const zsh_cuda_step_args_t *a, cudaStream_t s)
{
    if (a->out == NULL) {
        zsh_sgd_launch<G, zsh_d_none>(a, s);
    } else if (a->out_dtype == ZSH_BFLOAT16) {
        zsh_sgd_launch<G, zsh_d_bf16>(a, s);
    } else if (a->out_dtype == ZSH_FLOAT16) {
        zsh_sgd_launch<G, zsh_d_fp16>(a, s);
    } else {
        zsh_sgd_launch<G, zsh_d_f32>(a, s);
    }
}

extern "C" zsh_status_t zsh_cuda_sgd_step(const zsh_cuda_step_args_t *a, void *stream)
{
    static const char what[] = "zsh_cuda_sgd_step";
    cudaStream_t s = (cudaStream_t)stream;
    zsh_status_t status;

    if ((a != NULL) && (a->u.kind != ZSH_OPTIM_SGD)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: kind %d is not SGD", what, (int)a->u.kind);
    }
    status = zsh_cuda_step_check(a, what, (a != NULL) && (a->u.momentum != 0.0f), false);
    if ((status != ZSH_OK) || (a->n == 0)) {
        return status;
    }
    if (a->grad_dtype == ZSH_BFLOAT16) {
        zsh_sgd_launch_out<zsh_d_bf16>(a, s);
    } else if (a->grad_dtype == ZSH_FLOAT16) {
        zsh_sgd_launch_out<zsh_d_fp16>(a, s);
    } else {
        zsh_sgd_launch_out<zsh_d_f32>(a, s);
    }
    return zsh_cuda_launched(what);
}

extern "C" zsh_status_t zsh_cuda_step(const zsh_cuda_step_args_t *a, void *stream)
{
    if (a == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_cuda_step: args is NULL");
    }
    return (a->u.kind == ZSH_OPTIM_SGD) ? zsh_cuda_sgd_step(a, stream)
                                        : zsh_cuda_adam_step(a, stream);
}
