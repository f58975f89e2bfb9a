/*
 * What the device kernel tests share: skipping where no device is visible
 * (or nvcc did not build the kernels), device buffers whose CUDA failures
 * become test failures with CUDA's text, and a small deterministic RNG.
 */
#ifndef ZSH_TESTS_OPTIM_CUDA_HELPERS_H_
#define ZSH_TESTS_OPTIM_CUDA_HELPERS_H_

#include <config.h>

#include "harness/zsh_test.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* NULL where the kernels can run here, else why not (for ZSH_SKIP). */
const char *zsh_ck_no_device(void);

/* Skips the running test where the kernels cannot run. */
#define ZSH_CK_NEED_DEVICE() \
    do { \
        const char *zsh_why_ = zsh_ck_no_device(); \
        if (zsh_why_ != NULL) { \
            ZSH_SKIP(zsh_why_); \
        } \
    } while (0)

/* @bytes of device memory, or NULL after a test failure naming CUDA's error. */
void *zsh_ck_dev_alloc(size_t bytes);
void zsh_ck_dev_free(void *d);

/* Host to device and back, synchronously; false after a test failure. */
bool zsh_ck_put(void *d, const void *h, size_t bytes);
bool zsh_ck_get(void *h, const void *d, size_t bytes);

/* Waits for the device; false after a test failure naming CUDA's error. */
bool zsh_ck_sync(void);

/* Whether @status is ZSH_OK; if not, a failure at file:line naming @ctx
 * and the last error. */
bool zsh_ck_status_ok(const char *file, int line, zsh_status_t status, const char *ctx);
#define ZSH_CK_OK(_status, _ctx) zsh_ck_status_ok(__FILE__, __LINE__, (_status), (_ctx))

/* xorshift64*: the same sequence on every run. */
uint64_t zsh_ck_next(uint64_t *state);

/* A float of either sign and a magnitude spread over 2^lo .. 2^hi, with
 * zeros and fp32 subnormals among them. */
float zsh_ck_float(uint64_t *state, int lo, int hi);

#endif
