/*
 * Adam and AdamW on the device: zsh_adam_update() of adam.c, element for
 * element and operation for operation (torch.optim's order on ATen's CPU
 * kernels, with the same fused multiply-adds), on fp32, bf16 or fp16
 * gradients, with the updated weights rounded into a model copy in the
 * same pass. The per-step scalars come folded from zsh_update_make().
 */
#include "optim/rule/cuda/common.cuh"

template <class G, class O>
__global__ void zsh_adam_kernel(zsh_cuda_update_t u, float *__restrict__ p,
                                const typename G::elem_t *__restrict__ g, float *__restrict__ m,
                                float *__restrict__ v, typename O::elem_t *__restrict__ out,
                                size_t n)
{
    const bool l2 = (u.weight_decay != 0.0f);
    size_t i;

    for (i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float pi = p[i];
        float gi = __fmul_rn(G::load(g, i), u.grad_mul);

        if (l2) { /* g' = fma(p, wd, g) */
            gi = __fmaf_rn(pi, u.weight_decay, gi);
        }
        /* mi = fma(gi, 1 - b1, m b1);  vi = fma((1 - b2) gi, gi, v b2) */
        float mi = __fmaf_rn(gi, u.omb1, __fmul_rn(m[i], u.beta1));
        float vi = __fmaf_rn(__fmul_rn(u.omb2, gi), gi, __fmul_rn(v[i], u.beta2));
        /* p decay + (-step mi) / (sqrt(vi) / sqrt(bc2) + eps) */
        /* the host gets the same RN quotient without a divide (zsh_rule_div) */
        float den = __fadd_rn(__fdiv_rn(__fsqrt_rn(vi), u.bc2_sqrt), u.eps);

        pi   = __fadd_rn(__fmul_rn(pi, u.decay), __fdiv_rn(__fmul_rn(u.neg_step, mi), den));
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
