/*
 * Adam and AdamW on the device: zsh_adam_update() of adam.c, element for
 * element and operation for operation, on fp32, bf16 or fp16 gradients,
 * with the updated weights rounded into a model copy in the same pass.
 * The per-step scalars are folded in the kernel with the same fp32
 * operations adam.c's zsh_adam_k() uses, so the host compiler's flags play
 * no part in them.
 */
#include "optim/rule/cuda/common.cuh"

template <class G, class O>
__global__ void zsh_adam_kernel(zsh_cuda_update_t u, float *__restrict__ p,
                                const typename G::elem_t *__restrict__ g, float *__restrict__ m,
                                float *__restrict__ v, typename O::elem_t *__restrict__ out,
                                size_t n)
{
    const float step    = __fdiv_rn(u.lr, u.bc1);
    const float inv_bc2 = __fdiv_rn(1.0f, u.bc2);
    const float l2      = (u.kind == ZSH_OPTIM_ADAM) ? u.weight_decay : 0.0f;
    const float decay   = (u.kind == ZSH_OPTIM_ADAMW) ?
                          __fsub_rn(1.0f, __fmul_rn(u.lr, u.weight_decay)) : 1.0f;
    const float omb1 = __fsub_rn(1.0f, u.beta1), omb2 = __fsub_rn(1.0f, u.beta2);
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float pi = p[i];
        /* gi = g * gm + l2 * p;  mi = b1 m + (1 - b1) gi;  vi = b2 v + ((1 - b2) gi) gi */
        float gi = __fadd_rn(__fmul_rn(G::load(g, i), u.grad_mul), __fmul_rn(l2, pi));
        float mi = __fadd_rn(__fmul_rn(u.beta1, m[i]), __fmul_rn(omb1, gi));
        float vi = __fadd_rn(__fmul_rn(u.beta2, v[i]), __fmul_rn(__fmul_rn(omb2, gi), gi));
        /* p * decay - (step * mi) / (sqrt(vi * inv_bc2) + eps) */
        float den = __fadd_rn(__fsqrt_rn(__fmul_rn(vi, inv_bc2)), u.eps);

        pi   = __fsub_rn(__fmul_rn(pi, decay), __fdiv_rn(__fmul_rn(step, mi), den));
        m[i] = mi;
        v[i] = vi;
        p[i] = pi;
        O::store(out, i, pi);
    }
}

template <class G, class O>
static void zsh_adam_launch(const zsh_cuda_step_args_t *a, cudaStream_t s)
{
    zsh_adam_kernel<G, O><<<zsh_cuda_blocks(a->n), ZSH_CUDA_THREADS, 0, s>>>(
        a->u, a->p, (const typename G::elem_t *)a->g, a->m, a->v,
        (typename O::elem_t *)a->out, a->n);
}

template <class G>
static void zsh_adam_launch_out(const zsh_cuda_step_args_t *a, cudaStream_t s)
{
    if (a->out == NULL) {
        zsh_adam_launch<G, zsh_d_none>(a, s);
    } else if (a->out_dtype == ZSH_BFLOAT16) {
        zsh_adam_launch<G, zsh_d_bf16>(a, s);
    } else if (a->out_dtype == ZSH_FLOAT16) {
        zsh_adam_launch<G, zsh_d_fp16>(a, s);
    } else {
        zsh_adam_launch<G, zsh_d_f32>(a, s);
    }
}

extern "C" zsh_status_t zsh_cuda_adam_step(const zsh_cuda_step_args_t *a, void *stream)
{
    static const char what[] = "zsh_cuda_adam_step";
    cudaStream_t s = (cudaStream_t)stream;
    zsh_status_t status;

    if ((a != NULL) && (a->u.kind != ZSH_OPTIM_ADAM) && (a->u.kind != ZSH_OPTIM_ADAMW)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: kind %d is not Adam or AdamW", what,
                         (int)a->u.kind);
    }
    status = zsh_cuda_step_check(a, what, true, true);
    if ((status != ZSH_OK) || (a->n == 0)) {
        return status;
    }
    if (a->grad_dtype == ZSH_BFLOAT16) {
        zsh_adam_launch_out<zsh_d_bf16>(a, s);
    } else if (a->grad_dtype == ZSH_FLOAT16) {
        zsh_adam_launch_out<zsh_d_fp16>(a, s);
    } else {
        zsh_adam_launch_out<zsh_d_f32>(a, s);
    }
    return zsh_cuda_launched(what);
}
