/*
 * zsh_ckpt_bench: the time of zsh_optim_save and zsh_optim_load of a model
 * of N fp32 parameters on one rank, for perf/ckpt_run.sh, which holds them
 * to the disk's bound measured beside them.
 *
 *   zsh_ckpt_bench DIR N [sgd|adamw]
 *
 * The model is registered as parameters of at most 256M elements with
 * made-up values; SGD without momentum saves the weights alone (4 bytes per
 * parameter), AdamW the weights and both moments (12). Prints one line per
 * call: bytes, seconds, GB/s.
 */
#include <zeroshard.h>
#include <zeroshard/optim.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define PIECE ((size_t)1 << 28)

static zsh_status_t oob_allgather(const void *send, void *recv, size_t len, void *ctx,
                                  void **req_p)
{
    (void)ctx;
    memcpy(recv, send, len);
    *req_p = NULL;
    return ZSH_OK;
}

static zsh_status_t oob_test(void *req)
{
    (void)req;
    return ZSH_OK;
}

static void oob_free(void *req)
{
    (void)req;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int fail(const char *what)
{
    fprintf(stderr, "zsh_ckpt_bench: %s: %s\n", what, zsh_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    zsh_oob_t oob = {0, 1, NULL, oob_allgather, oob_test, oob_free};
    zsh_optim_config_t cfg;
    size_t n, left, k, np, i, bytes;
    zsh_comm_t *comm;
    zsh_optim_t *opt;
    zsh_param_t *p;
    float **bufs;
    char name[32];
    double t;
    int adam;

    if (argc < 3) {
        fprintf(stderr, "usage: zsh_ckpt_bench DIR N [sgd|adamw]\n");
        return 2;
    }
    n    = (size_t)strtod(argv[2], NULL);
    adam = (argc > 3) && (strcmp(argv[3], "adamw") == 0);
    if ((n == 0) || (zsh_comm_init_oob(&oob, &comm) != ZSH_OK)) {
        return fail("init");
    }
    zsh_optim_config_init(&cfg);
    cfg.stage       = 0; /* one rank owns everything at any stage; 0 gathers nothing after a load */
    cfg.kind        = adam ? ZSH_OPTIM_ADAMW : ZSH_OPTIM_SGD;
    cfg.bucket_size = (size_t)1 << 30;
    if (zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) {
        return fail("zsh_optim_create");
    }
    np   = (n + PIECE - 1) / PIECE;
    bufs = calloc(np, sizeof(*bufs));
    for (i = 0, left = n; i < np; i++, left -= k) {
        k       = (left < PIECE) ? left : PIECE;
        bufs[i] = malloc(k * sizeof(float));
        if (bufs[i] == NULL) {
            fprintf(stderr, "zsh_ckpt_bench: no memory\n");
            return 1;
        }
        for (size_t j = 0; j < k; j++) {
            bufs[i][j] = (float)((i * 7 + j) % 1000) * 0.001f;
        }
        snprintf(name, sizeof(name), "w%zu", i);
        if (zsh_optim_register(opt, name, k, ZSH_FLOAT32, bufs[i], &p) != ZSH_OK) {
            return fail("zsh_optim_register");
        }
    }
    if (zsh_optim_setup(opt) != ZSH_OK) {
        return fail("zsh_optim_setup");
    }
    bytes = n * sizeof(float) * (adam ? 3 : 1);
    t     = now();
    if (zsh_optim_save(opt, argv[1]) != ZSH_OK) {
        return fail("zsh_optim_save");
    }
    t = now() - t;
    printf("save %zu bytes %.3f s %.3f GB/s\n", bytes, t, (double)bytes / t / 1e9);
    t = now();
    if (zsh_optim_load(opt, argv[1]) != ZSH_OK) {
        return fail("zsh_optim_load");
    }
    t = now() - t;
    printf("load %zu bytes %.3f s %.3f GB/s (each byte read twice: checked, then used)\n", bytes,
           t, (double)bytes / t / 1e9);
    zsh_optim_destroy(opt);
    for (i = 0; i < np; i++) {
        free(bufs[i]);
    }
    free(bufs);
    zsh_comm_destroy(comm);
    return 0;
}
