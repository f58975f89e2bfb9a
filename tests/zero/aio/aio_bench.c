/*
 * The I/O engine's bandwidth on a directory, to compare with fio there:
 *   tests/zero/aio/aio_bench DIR [SIZE_MIB [uring|aio|threads [DEPTH [BLOCK_KIB]]]]
 * reserves (fallocate) and writes SIZE_MIB (default 1024) to one file in requests of 64 MiB, four in
 * flight, then reads it back, and prints GB/s of each. The file is removed
 * at the end (the engine's destroy).
 */
#include "aio/aio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ZSH_BENCH_REQ   (64ull << 20)
#define ZSH_BENCH_SLOTS 4

static double zsh_bench_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int zsh_bench_pass(zsh_aio_t *aio, zsh_aio_file_t *file, char *buf, uint64_t size,
                          int write, double *gbps)
{
    zsh_aio_req_t *slot[ZSH_BENCH_SLOTS] = {NULL};
    uint64_t off;
    double t0 = zsh_bench_now();
    unsigned i = 0;
    int s;

    for (off = 0; off < size; off += ZSH_BENCH_REQ, i++) {
        s = i % ZSH_BENCH_SLOTS;
        if (slot[s] != NULL) {
            if (zsh_aio_wait(slot[s]) != ZSH_OK) {
                return -1;
            }
            zsh_aio_req_free(slot[s]);
        }
        if ((write ? zsh_aio_write(aio, file, off, buf + s * ZSH_BENCH_REQ, ZSH_BENCH_REQ,
                                   &slot[s])
                   : zsh_aio_read(aio, file, off, buf + s * ZSH_BENCH_REQ, ZSH_BENCH_REQ,
                                  &slot[s])) != ZSH_OK) {
            return -1;
        }
    }
    for (s = 0; s < ZSH_BENCH_SLOTS; s++) {
        if ((slot[s] != NULL) && (zsh_aio_wait(slot[s]) != ZSH_OK)) {
            return -1;
        }
        zsh_aio_req_free(slot[s]);
    }
    *gbps = (double)size / (zsh_bench_now() - t0) * 1e-9;
    return 0;
}

int main(int argc, char **argv)
{
    zsh_aio_params_t params = {NULL, "bench", 0, ZSH_AIO_AUTO, 0, 0};
    uint64_t size = 1024ull << 20;
    zsh_aio_file_t *file;
    zsh_aio_stats_t st;
    double wr, rd;
    zsh_aio_t *aio;
    char *buf;

    if (argc < 2) {
        fprintf(stderr, "usage: %s DIR [SIZE_MIB [uring|aio|threads [DEPTH [BLOCK_KIB]]]]\n",
                argv[0]);
        return 2;
    }
    params.dir = argv[1];
    if (argc > 2) {
        size = strtoull(argv[2], NULL, 10) << 20;
        size = (size + ZSH_BENCH_REQ - 1) / ZSH_BENCH_REQ * ZSH_BENCH_REQ;
    }
    if (argc > 3) {
        params.kind = (strcmp(argv[3], "uring") == 0) ? ZSH_AIO_URING :
                      (strcmp(argv[3], "aio") == 0)   ? ZSH_AIO_LIBAIO : ZSH_AIO_THREADS;
    }
    if (argc > 4) {
        params.queue_depth = (unsigned)strtoul(argv[4], NULL, 10);
    }
    if (argc > 5) {
        params.block_size = strtoull(argv[5], NULL, 10) << 10;
    }
    buf = zsh_aio_buf_alloc(ZSH_BENCH_SLOTS * ZSH_BENCH_REQ);
    if ((buf == NULL) || (zsh_aio_create(&params, &aio) != ZSH_OK)) {
        fprintf(stderr, "%s\n", zsh_last_error());
        return 1;
    }
    memset(buf, 0x5a, ZSH_BENCH_SLOTS * ZSH_BENCH_REQ);
    if ((zsh_aio_open(aio, "bench", &file) != ZSH_OK) ||
        (zsh_aio_reserve(file, size) != ZSH_OK) || /* as the NVMe tier does at setup */
        (zsh_bench_pass(aio, file, buf, size, 1, &wr) != 0) ||
        (zsh_bench_pass(aio, file, buf, size, 0, &rd) != 0)) {
        fprintf(stderr, "%s\n", zsh_last_error());
        zsh_aio_destroy(aio);
        return 1;
    }
    zsh_aio_get_stats(aio, &st);
    printf("%s: write %.3f GB/s, read %.3f GB/s (%llu MiB, busy %.2f s, waited %.2f s)\n",
           zsh_aio_backend(aio), wr, rd, (unsigned long long)(size >> 20), st.busy_s,
           st.wait_s);
    zsh_aio_destroy(aio);
    free(buf);
    return 0;
}
