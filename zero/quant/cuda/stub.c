/*
 * The device quantization kernels in a build without nvcc: each refuses
 * with ZSH_ERR_UNSUPPORTED, so callers link and learn why at run time.
 */
#include "quant/cuda/quant_cuda.h"

#include "core/status.h"

static zsh_status_t zsh_qcuda_absent(const char *what)
{
    return zsh_error(ZSH_ERR_UNSUPPORTED, "%s: ZeroShard was built without nvcc "
                     "(configure found no CUDA compiler)", what);
}

zsh_status_t zsh_cuda_quantize(const float *x, size_t n, size_t block, int bits, void *q,
                               float *scales, unsigned int *nonfinite, void *stream)
{
    (void)x; (void)n; (void)block; (void)bits; (void)q; (void)scales; (void)nonfinite;
    (void)stream;
    return zsh_qcuda_absent("zsh_cuda_quantize");
}

zsh_status_t zsh_cuda_dequantize(const void *q, const float *scales, size_t n, size_t block,
                                 int bits, float *out, int add, void *stream)
{
    (void)q; (void)scales; (void)n; (void)block; (void)bits; (void)out; (void)add;
    (void)stream;
    return zsh_qcuda_absent("zsh_cuda_dequantize");
}

zsh_status_t zsh_cuda_quantize_as(zsh_dtype_t dtype, const void *x, size_t n, size_t block,
                                  int bits, void *q, float *scales, unsigned int *nonfinite,
                                  void *stream)
{
    (void)dtype; (void)x; (void)n; (void)block; (void)bits; (void)q; (void)scales;
    (void)nonfinite; (void)stream;
    return zsh_qcuda_absent("zsh_cuda_quantize");
}

zsh_status_t zsh_cuda_dequantize_as(const void *q, const float *scales, size_t n, size_t block,
                                    int bits, zsh_dtype_t dtype, void *out, void *stream)
{
    (void)q; (void)scales; (void)n; (void)block; (void)bits; (void)dtype; (void)out;
    (void)stream;
    return zsh_qcuda_absent("zsh_cuda_dequantize");
}
