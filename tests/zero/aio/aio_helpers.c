#define _GNU_SOURCE
#include "zero/aio/aio_helpers.h"

#include "aio/backend.h"

#include <dirent.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *zsh_aio_test_tmpdir(const char *base)
{
    char *path;

    if (asprintf(&path, "%s/zsh-aio-test-XXXXXX", base) < 0) {
        return NULL;
    }
    if (mkdtemp(path) == NULL) {
        free(path);
        return NULL;
    }
    return path;
}

static int zsh_aio_test_rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

void zsh_aio_test_rmtree(const char *path)
{
    if (path != NULL) {
        (void)nftw(path, zsh_aio_test_rm, 16, FTW_DEPTH | FTW_PHYS);
    }
}

int zsh_aio_test_entries(const char *path)
{
    struct dirent *e;
    int n = 0;
    DIR *d;

    d = opendir(path);
    if (d == NULL) {
        return -1;
    }
    while ((e = readdir(d)) != NULL) {
        n += (strcmp(e->d_name, ".") != 0) && (strcmp(e->d_name, "..") != 0);
    }
    closedir(d);
    return n;
}

void zsh_aio_test_fill(void *buf, size_t len, unsigned seed)
{
    uint64_t x = 0x9e3779b97f4a7c15ull * (seed + 1);
    unsigned char *p = buf;
    size_t i;

    for (i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        p[i] = (unsigned char)x;
    }
}

bool zsh_aio_test_kind_ok(zsh_aio_kind_t kind, char *why, size_t len)
{
    return zsh_aio_probe(kind, why, len) == 0;
}

zsh_aio_params_t zsh_aio_test_params(const char *dir, const char *job, zsh_aio_kind_t kind,
                                     unsigned depth, size_t block)
{
    zsh_aio_params_t p = {dir, job, 0, kind, depth, block};

    return p;
}
