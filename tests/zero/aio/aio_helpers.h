/*
 * What the I/O engine's tests share: scratch directories, a fill pattern,
 * and whether a backend works here.
 */
#ifndef ZSH_TESTS_ZERO_AIO_HELPERS_H_
#define ZSH_TESTS_ZERO_AIO_HELPERS_H_

#include "aio/aio.h"

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A fresh directory under @base (mkdtemp), or NULL; the caller frees it. */
char *zsh_aio_test_tmpdir(const char *base);

/* Remove @path and everything under it. */
void zsh_aio_test_rmtree(const char *path);

/* Entries in the directory @path, "." and ".." not counted; -1 if it is absent. */
int zsh_aio_test_entries(const char *path);

/* Fill @buf with bytes that depend on @seed and the position. */
void zsh_aio_test_fill(void *buf, size_t len, unsigned seed);

/* Whether the backend @kind works here; if not, @why says why. */
bool zsh_aio_test_kind_ok(zsh_aio_kind_t kind, char *why, size_t len);

/* Parameters for @dir with the job id @job, rank 0, @depth pieces of @block bytes. */
zsh_aio_params_t zsh_aio_test_params(const char *dir, const char *job, zsh_aio_kind_t kind,
                                     unsigned depth, size_t block);

#ifdef __cplusplus
}
#endif

#endif
