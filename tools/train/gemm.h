/*
 * The matrix products of zsh_train's model: C = alpha op(A) op(B) + beta C,
 * row-major, through a BLAS when the build found one (cblas_sgemm) and
 * through plain loops otherwise, or when asked: the loops stay as the
 * reference the BLAS path is checked against.
 */
#ifndef ZSH_TRAIN_GEMM_H_
#define ZSH_TRAIN_GEMM_H_

#include <stddef.h>

typedef enum { ZSH_TRAIN_GEMM_BLAS, ZSH_TRAIN_GEMM_LOOPS } zsh_train_gemm_t;

/* Whether this build has the BLAS path. */
int zsh_train_gemm_has_blas(void);

/* Select the path for the process; the BLAS one only where built. Also keeps
 * the BLAS to one thread: the ranks of a node share its cores. */
void zsh_train_gemm_select(zsh_train_gemm_t path);

/* "openblas" or "loops": the path in use, for the run's report. */
const char *zsh_train_gemm_name(void);

/* C (m x n, rows ldc apart) = alpha op(A) op(B) + beta C, where op(A) is
 * m x k (A itself, lda apart, or the transpose of a k x m A when @ta) and
 * op(B) is k x n (likewise with @tb). */
void zsh_train_gemm(int ta, int tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                    size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

#endif
