/*
 * Checkpoints for run_ckpt_tool.sh, made and loaded through the public API
 * as a framework would. One process runs on a communicator of its own;
 * under zshrun (RANK set) every rank of the job takes part.
 *
 *   ckpt_make save DIR RAW [--stage S] [--big N] [--rule sgd|adamw]
 *       a model of awkward sizes (and names a safetensors header must
 *       escape), with --big a parameter of N more elements, trained three
 *       AdamW steps and saved to DIR; RAW gets every parameter's fp32
 *       weights back to back in registration order, as saved
 *   ckpt_make resume DIR RAW [--stage S] [--big N]
 *       the same model loaded from DIR and trained one more step; RAW gets
 *       the weights as loaded, then as that step left them: the same bytes
 *       for any checkpoint of the same state, at any world size and stage
 *       (--rule sgd: SGD without momentum instead of AdamW)
 *   ckpt_make sign MANIFEST
 *       the manifest's own checksum written again after an edit, as a
 *       hostile writer would (XXH3 has no key)
 *
 * Exits 0 on success, 1 after a failure it names on stderr.
 */
#include <zeroshard.h>
#include <zeroshard/optim.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP_MAX 6

typedef struct model {
    const char *name[NP_MAX];
    size_t      numel[NP_MAX];
    size_t      np;
    float      *buf[NP_MAX];
    zsh_param_t *param[NP_MAX];
} model_t;

/* One process alone: the out-of-band exchange of one rank is a copy. */
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

static zsh_status_t comm_open(zsh_comm_t **comm_p)
{
    zsh_oob_t oob = {0, 1, NULL, oob_allgather, oob_test, oob_free};

    if ((getenv("RANK") != NULL) || (getenv("ZSH_RANK") != NULL)) {
        return zsh_comm_init(comm_p);
    }
    return zsh_comm_init_oob(&oob, comm_p);
}

static void model_define(model_t *m, size_t big)
{
    static const char *const names[] = {"embed.weight", "layer.0.weight", "layer.0.bias",
                                        "layer.1.weight", "head \"q\"\\x"};
    static const size_t sizes[]      = {70000, 4099, 5, 300001, 7};
    size_t i;

    memset(m, 0, sizeof(*m));
    for (i = 0; i < 5; i++) {
        m->name[i]  = names[i];
        m->numel[i] = sizes[i];
    }
    m->np = 5;
    if (big > 0) {
        m->name[m->np]    = "big.weight";
        m->numel[m->np++] = big;
    }
}

static float grad_value(int step, size_t p, size_t j)
{
    return 0.1f * cosf(0.37f * (float)(j % 4096) + (float)step + 0.5f * (float)p);
}

static int fail(const char *what)
{
    fprintf(stderr, "ckpt_make: %s: %s\n", what, zsh_last_error());
    return 1;
}

/* Every parameter's values, fetched, into @f on rank 0 (collective). */
static int dump(zsh_optim_t *opt, model_t *m, int rank, FILE *f)
{
    void *data;
    size_t p;

    for (p = 0; p < m->np; p++) {
        if (zsh_optim_fetch(opt, m->param[p], &data) != ZSH_OK) {
            return fail("fetch");
        }
        if ((rank == 0) && (fwrite(data, sizeof(float), m->numel[p], f) != m->numel[p])) {
            fprintf(stderr, "ckpt_make: cannot write the weights\n");
            return 1;
        }
        if (zsh_optim_release(opt, m->param[p]) != ZSH_OK) {
            return fail("release");
        }
    }
    return 0;
}

/* One step: every gradient made up from (@step, parameter, element). The
 * layer sums the ranks' gradients, so each hands over its share; halves
 * (and the whole) add up exactly, so 1 and 2 ranks take the same step. */
static int train_step(zsh_optim_t *opt, model_t *m, int step, int size, float *grad)
{
    size_t p, j;

    for (p = m->np; p-- > 0;) {
        for (j = 0; j < m->numel[p]; j++) {
            grad[j] = grad_value(step, p, j) / (float)size;
        }
        if (zsh_optim_grad_ready(opt, m->param[p], grad) != ZSH_OK) {
            return fail("grad_ready");
        }
    }
    return (zsh_optim_step(opt, NULL) == ZSH_OK) ? 0 : fail("step");
}

static int run(zsh_comm_t *comm, int save, const char *dir, const char *raw, int stage,
               size_t big, int sgd)
{
    int rank = zsh_comm_rank(comm), rc = 1, s;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    float *grad = NULL;
    size_t p, j, most = 0;
    FILE *f = NULL;
    model_t m;

    model_define(&m, big);
    zsh_optim_config_init(&cfg);
    cfg.stage        = stage;
    cfg.kind         = sgd ? ZSH_OPTIM_SGD : ZSH_OPTIM_ADAMW;
    cfg.lr           = 0.01;
    cfg.weight_decay = 0.01;
    cfg.bucket_size  = 1 << 18; /* several buckets: pieces from each */
    if (zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) {
        return fail("create");
    }
    for (p = 0; p < m.np; p++) {
        most     = (m.numel[p] > most) ? m.numel[p] : most;
        m.buf[p] = malloc(m.numel[p] * sizeof(float));
        if (m.buf[p] == NULL) {
            fprintf(stderr, "ckpt_make: no memory\n");
            goto out;
        }
        for (j = 0; j < m.numel[p]; j++) {
            m.buf[p][j] = save ? sinf(0.001f * (float)(j % 100000) + (float)p) : 0.0f;
        }
        if (zsh_optim_register(opt, m.name[p], m.numel[p], ZSH_FLOAT32, m.buf[p],
                               &m.param[p]) != ZSH_OK) {
            rc = fail("register");
            goto out;
        }
    }
    grad = malloc(most * sizeof(float));
    f    = (rank == 0) ? fopen(raw, "wb") : NULL;
    if ((grad == NULL) || ((rank == 0) && (f == NULL))) {
        fprintf(stderr, "ckpt_make: cannot open %s or no memory\n", raw);
        goto out;
    }
    if (save) {
        for (s = 0; s < 3; s++) {
            if (train_step(opt, &m, s, zsh_comm_size(comm), grad) != 0) {
                goto out;
            }
        }
        if (zsh_optim_save(opt, dir) != ZSH_OK) {
            rc = fail("save");
            goto out;
        }
        rc = dump(opt, &m, rank, f);
    } else {
        if (zsh_optim_load(opt, dir) != ZSH_OK) {
            rc = fail("load");
            goto out;
        }
        rc = dump(opt, &m, rank, f);
        rc = (rc == 0) ? train_step(opt, &m, 100, zsh_comm_size(comm), grad) : rc;
        rc = (rc == 0) ? dump(opt, &m, rank, f) : rc;
    }
out:
    if ((f != NULL) && (fclose(f) != 0)) {
        rc = 1;
    }
    free(grad);
    zsh_optim_destroy(opt);
    for (p = 0; p < m.np; p++) {
        free(m.buf[p]);
    }
    return rc;
}

/* The last key's 16 digits: the XXH3-64 of the text with them as zeros. */
static int sign(const char *path)
{
    static char text[1 << 22];
    char *at = NULL, *next, hex[17];
    FILE *f = fopen(path, "r+b");
    size_t len;

    if (f == NULL) {
        perror(path);
        return 1;
    }
    len = fread(text, 1, sizeof(text) - 1, f);
    text[len] = '\0';
    for (next = strstr(text, "\"manifest_xxh3\""); next != NULL;
         next = strstr(next + 1, "\"manifest_xxh3\"")) {
        at = next;
    }
    at = (at != NULL) ? strchr(at + 15, '"') : NULL;
    if ((at == NULL) || (strlen(at) < 17)) {
        fprintf(stderr, "ckpt_make sign: %s has no manifest_xxh3\n", path);
        fclose(f);
        return 1;
    }
    memset(at + 1, '0', 16);
    snprintf(hex, sizeof(hex), "%016" PRIx64, (uint64_t)XXH3_64bits(text, len));
    memcpy(at + 1, hex, 16);
    rewind(f);
    return ((fwrite(text, 1, len, f) == len) && (fclose(f) == 0)) ? 0 : 1;
}

int main(int argc, char **argv)
{
    size_t big = 0;
    int stage = 0, sgd = 0, i, rc;
    zsh_comm_t *comm;

    if ((argc == 3) && (strcmp(argv[1], "sign") == 0)) {
        return sign(argv[2]);
    }
    if ((argc < 4) || ((strcmp(argv[1], "save") != 0) && (strcmp(argv[1], "resume") != 0))) {
        fprintf(stderr, "usage: ckpt_make save|resume DIR RAW [--stage S] [--big N] "
                "[--rule sgd|adamw]\n       ckpt_make sign MANIFEST\n");
        return 2;
    }
    for (i = 4; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--stage") == 0) {
            stage = atoi(argv[i + 1]);
        } else if (strcmp(argv[i], "--rule") == 0) {
            sgd = strcmp(argv[i + 1], "sgd") == 0;
        } else if (strcmp(argv[i], "--big") == 0) {
            big = strtoull(argv[i + 1], NULL, 10);
        } else {
            fprintf(stderr, "ckpt_make: unknown option %s\n", argv[i]);
            return 2;
        }
    }
    if (comm_open(&comm) != ZSH_OK) {
        return fail("communicator");
    }
    rc = run(comm, strcmp(argv[1], "save") == 0, argv[2], argv[3], stage, big, sgd);
    zsh_comm_destroy(comm);
    return rc;
}
