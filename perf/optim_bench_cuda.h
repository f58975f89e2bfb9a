/*
 * zsh_optim_bench --device cuda: the optimizer's device kernels
 * (zero/optim/rule/cuda) against a device-to-device cudaMemcpy moving the same
 * bytes, in the same run.
 */
#ifndef ZSH_PERF_OPTIM_BENCH_CUDA_H_
#define ZSH_PERF_OPTIM_BENCH_CUDA_H_

#include <zeroshard.h>
#include <zeroshard/optim.h>

#include <stddef.h>

/* Bytes per element a step of @k in @prec must move (zsh_optim_bench.c). */
double zsh_ob_bytes(zsh_optim_kind_t k, zsh_dtype_t prec);

/* One row per size x rule x precision: the median of @iters device steps
 * in Gparam/s, and the bound the copy gives. 0, or 1 after a message on
 * stderr (no device, or built without nvcc). */
int zsh_ob_cuda_run(const size_t *sizes, int nsizes, const zsh_optim_kind_t *rules, int nrules,
                    const zsh_dtype_t *precs, int nprecs, int iters, int json);

#endif
