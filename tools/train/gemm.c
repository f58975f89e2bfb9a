#include "train/gemm.h"

#include <config.h>

#ifdef ZSH_HAVE_CBLAS
#include <cblas.h>
#endif

static zsh_train_gemm_t zsh_train_gemm_path =
#ifdef ZSH_HAVE_CBLAS
    ZSH_TRAIN_GEMM_BLAS;
#else
    ZSH_TRAIN_GEMM_LOOPS;
#endif

int zsh_train_gemm_has_blas(void)
{
#ifdef ZSH_HAVE_CBLAS
    return 1;
#else
    return 0;
#endif
}

void zsh_train_gemm_select(zsh_train_gemm_t path)
{
    zsh_train_gemm_path = zsh_train_gemm_has_blas() ? path : ZSH_TRAIN_GEMM_LOOPS;
#ifdef ZSH_HAVE_OPENBLAS_THREADS
    openblas_set_num_threads(1);
#endif
}

const char *zsh_train_gemm_name(void)
{
    return (zsh_train_gemm_path == ZSH_TRAIN_GEMM_BLAS) ? "openblas" : "loops";
}

/* The loops: each element of C is one dot product over k, summed in order. */
static void zsh_train_gemm_loops(int ta, int tb, size_t m, size_t n, size_t k, float alpha,
                                 const float *a, size_t lda, const float *b, size_t ldb,
                                 float beta, float *c, size_t ldc)
{
    size_t i, j, p;

    for (i = 0; i < m; i++) {
        for (j = 0; j < n; j++) {
            float s = 0.0f;

            for (p = 0; p < k; p++) {
                s += (ta ? a[p * lda + i] : a[i * lda + p]) * (tb ? b[j * ldb + p] : b[p * ldb + j]);
            }
            c[i * ldc + j] = alpha * s + ((beta == 0.0f) ? 0.0f : beta * c[i * ldc + j]);
        }
    }
}

void zsh_train_gemm(int ta, int tb, size_t m, size_t n, size_t k, float alpha, const float *a,
                    size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    if ((m == 0) || (n == 0)) {
        return;
    }
#ifdef ZSH_HAVE_CBLAS
    if (zsh_train_gemm_path == ZSH_TRAIN_GEMM_BLAS) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (int)m, (int)n, (int)k, alpha, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
        return;
    }
#endif
    zsh_train_gemm_loops(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
