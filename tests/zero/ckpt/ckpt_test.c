/*
 * Checkpoints of the optimizer on the quad model: a run cut in two by a
 * save and a load gives the uncut run's losses and parameters bit for bit
 * at every stage, precision and tier; a checkpoint loads at another world
 * size and stage; every corrupted byte is caught with the optimizer left as
 * it was; a checkpoint of another model is refused naming what differs.
 */
#include "harness/zsh_test.h"
#include "../optim/quad.h"
#include "optim/tier.h"

#include <zeroshard/optim.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZSH_CK_STEPS 20
#define ZSH_CK_CUT   10

/* A directory every rank of @comm shares, made by rank 0; NULL on failure. */
static char *zsh_ck_dir(zsh_comm_t *comm, const char *what)
{
    char path[256] = "";
    char tmpl[128];

    if (zsh_comm_rank(comm) == 0) {
        snprintf(tmpl, sizeof(tmpl), "/var/tmp/zsh-ckpt-%s-XXXXXX", what);
        if (mkdtemp(tmpl) != NULL) {
            snprintf(path, sizeof(path), "%s", tmpl);
        }
    }
    if ((zsh_broadcast(path, sizeof(path), ZSH_UINT8, 0, comm) != ZSH_OK) || (path[0] == '\0')) {
        zsh_test_fail(__FILE__, __LINE__, "no shared directory: %s", zsh_last_error());
        return NULL;
    }
    return strdup(path);
}

/* A directory of this rank's own for the NVMe tier (the tier's files are
 * per rank, and the tests' ranks share a process). */
static char *zsh_ck_nvme(void)
{
    char tmpl[] = "/var/tmp/zsh-ckpt-nvme-XXXXXX";

    return (mkdtemp(tmpl) != NULL) ? strdup(tmpl) : NULL;
}

static void zsh_ck_rmdir(zsh_comm_t *comm, char *dir)
{
    char cmd[300];

    zsh_barrier(comm);
    if ((zsh_comm_rank(comm) == 0) && (dir != NULL)) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
        if (system(cmd) != 0) {
            zsh_test_fail(__FILE__, __LINE__, "cannot remove %s", dir);
        }
    }
    zsh_barrier(comm);
    free(dir);
}

typedef struct zsh_ck_case {
    int              stage;
    zsh_dtype_t      precision;
    zsh_optim_kind_t kind;
    zsh_offload_t    optimizer, params;
} zsh_ck_case_t;

static void zsh_ck_config(zsh_optim_config_t *cfg, const zsh_ck_case_t *c, const char *nvme)
{
    zsh_optim_config_init(cfg);
    cfg->stage             = c->stage;
    cfg->precision         = c->precision;
    cfg->kind              = c->kind;
    cfg->offload_optimizer = c->optimizer;
    cfg->offload_params    = c->params;
    cfg->momentum          = (c->kind == ZSH_OPTIM_SGD) ? 0.9f : 0.0f;
    cfg->lr                = (c->kind == ZSH_OPTIM_SGD) ? 0.05f : 0.01f;
    cfg->max_grad_norm     = 5.0f;
    cfg->bucket_size       = 1024;
    if ((c->optimizer == ZSH_OFFLOAD_NVME) || (c->params == ZSH_OFFLOAD_NVME)) {
        cfg->sub_group_size = ZSH_TIER_ALIGN_ELEMS;
        cfg->host_mem_limit = 2 * 6 * 4 * ZSH_TIER_ALIGN_ELEMS;
        cfg->nvme_dir       = nvme;
    }
}

static const char *const zsh_ck_tiers[] = {"none", "cpu", "nvme"};

static void zsh_ck_label(char *buf, size_t len, const zsh_ck_case_t *c)
{
    snprintf(buf, len, "stage %d %s %s optimizer %s params %s", c->stage,
             (c->precision == ZSH_FLOAT32) ? "fp32" : "bf16",
             (c->kind == ZSH_OPTIM_SGD) ? "sgd" : (c->kind == ZSH_OPTIM_ADAM) ? "adam" : "adamw",
             zsh_ck_tiers[c->optimizer], zsh_ck_tiers[c->params]);
}

/* Ranks [0, m) of @comm, or NULL on the others (and on failure). */
static zsh_comm_t *zsh_ck_first(zsh_comm_t *comm, int m)
{
    int r = zsh_comm_rank(comm);
    zsh_comm_t *sub = NULL;

    if (zsh_comm_split(comm, (r < m) ? 0 : 1, r, &sub) != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "zsh_comm_split: %s", zsh_last_error());
        return NULL;
    }
    if (r >= m) {
        zsh_comm_destroy(sub);
        return NULL;
    }
    return sub;
}

ZSH_RANK_TEST(ckpt, resume_gives_the_uncut_runs_losses_bit_for_bit_at_every_stage_and_tier)
{
    static const zsh_ck_case_t tiers[] = {
        {0, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE},
        {0, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE},
        {0, ZSH_BFLOAT16, ZSH_OPTIM_ADAM, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE},
        {0, ZSH_FLOAT32, ZSH_OPTIM_SGD, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE},
    };
    char *dir = zsh_ck_dir(comm, "resume"), *nvme = zsh_ck_nvme(), what[160];
    zsh_quad_run_t ref, run;
    zsh_optim_config_t cfg;
    zsh_ck_case_t c;
    size_t t;
    int stage, params;

    ZSH_ASSERT_TRUE((dir != NULL) && (nvme != NULL));
    for (stage = 0; stage <= 3; stage++) {
        for (t = 0; t < sizeof(tiers) / sizeof(tiers[0]); t++) {
            for (params = 0; params <= ((stage == 3) ? 2 : 0); params++) {
                c        = tiers[t];
                c.stage  = stage;
                c.params = (zsh_offload_t)params;
                zsh_ck_config(&cfg, &c, nvme);
                zsh_ck_label(what, sizeof(what), &c);
                memset(&ref, 0, sizeof(ref));
                memset(&run, 0, sizeof(run));
                ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, ZSH_CK_STEPS, &ref));
                ZSH_ASSERT_TRUE(zsh_quad_train_ckpt(comm, &cfg, 1, ZSH_CK_CUT, NULL, dir, &run));
                zsh_quad_free(&run);
                ZSH_ASSERT_TRUE(zsh_quad_train_ckpt(comm, &cfg, ZSH_CK_CUT + 1, ZSH_CK_STEPS, dir,
                                                    NULL, &run));
                memcpy(run.loss, ref.loss, ZSH_CK_CUT * sizeof(run.loss[0]));
                zsh_quad_expect_near(&run, &ref, ZSH_CK_STEPS, 0.0, what);
                ZSH_EXPECT_EQ(ref.stats.steps, run.stats.steps);
                zsh_quad_free(&ref);
                zsh_quad_free(&run);
                ZSH_ASSERT_TRUE(zsh_test_failures() == 0);
            }
        }
    }
    zsh_ck_rmdir(comm, dir);
    rmdir(nvme); /* the tier removes its files */
    free(nvme);
}

/* Save at the ranks of @from (NULL: not one of them) after step 10 at
 * @a, resume at those of @to at @b; compare with the uncut run of @from at
 * @a (rank 0 is in both: its losses are everyone's reference). */
static void zsh_ck_reshard(zsh_comm_t *comm, zsh_comm_t *from, zsh_comm_t *to,
                           const zsh_ck_case_t *a, const zsh_ck_case_t *b, const char *dir,
                           const char *nvme)
{
    zsh_quad_run_t run, uncut, *ref = &uncut;
    zsh_optim_config_t cfg;
    char what[200], la[80], lb[80];
    int k;

    zsh_ck_label(la, sizeof(la), a);
    zsh_ck_label(lb, sizeof(lb), b);
    snprintf(what, sizeof(what), "%d ranks %s -> %d ranks %s",
             (from != NULL) ? zsh_comm_size(from) : -1, la, (to != NULL) ? zsh_comm_size(to) : -1,
             lb);
    memset(&run, 0, sizeof(run));
    memset(&uncut, 0, sizeof(uncut));
    if (from != NULL) {
        zsh_ck_config(&cfg, a, nvme);
        zsh_quad_train(from, &cfg, ZSH_CK_STEPS, &uncut);
        zsh_quad_free(&uncut);
        zsh_quad_train_ckpt(from, &cfg, 1, ZSH_CK_CUT, NULL, dir, &run);
        zsh_quad_free(&run);
    }
    zsh_broadcast(uncut.loss, ZSH_CK_STEPS, ZSH_FLOAT64, 0, comm);
    zsh_barrier(comm);
    if (to != NULL) {
        memset(&run, 0, sizeof(run));
        zsh_ck_config(&cfg, b, nvme);
        zsh_quad_train_ckpt(to, &cfg, ZSH_CK_CUT + 1, ZSH_CK_STEPS, dir, NULL, &run);
        for (k = ZSH_CK_CUT; k < ZSH_CK_STEPS; k++) {
            double tol = (k == ZSH_CK_CUT) ? 1e-6 : 1e-4;

            if (!(fabs(run.loss[k] - ref->loss[k]) <= tol * fabs(ref->loss[k]))) {
                zsh_test_fail(__FILE__, __LINE__, "%s: loss of step %d is %.9g, uncut %.9g",
                              what, k + 1, run.loss[k], ref->loss[k]);
                break;
            }
        }
        zsh_quad_free(&run);
    }
    zsh_barrier(comm);
}

ZSH_RANK_TEST(ckpt, a_checkpoint_loads_at_another_world_size_and_stage)
{
    static const zsh_ck_case_t extra[][2] = {
        {{2, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE},
         {3, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME}},
        {{3, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NVME},
         {0, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE}},
        {{1, ZSH_BFLOAT16, ZSH_OPTIM_ADAM, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE},
         {3, ZSH_BFLOAT16, ZSH_OPTIM_ADAM, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_CPU}},
        {{0, ZSH_FLOAT32, ZSH_OPTIM_SGD, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE},
         {2, ZSH_FLOAT32, ZSH_OPTIM_SGD, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE}},
    };
    int n = zsh_comm_size(comm), m = (n > 1) ? n - 1 : 1, s, t, dir_i;
    char *dir = zsh_ck_dir(comm, "reshard"), *nvme = zsh_ck_nvme();
    zsh_ck_case_t a = {0, ZSH_FLOAT32, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE};
    zsh_ck_case_t b = a;
    zsh_comm_t *sub;
    size_t e;

    ZSH_ASSERT_TRUE((dir != NULL) && (nvme != NULL));
    sub = zsh_ck_first(comm, m);
    /* N -> M and M -> N for every pair of stages; N -> N across stages. At
     * one rank M is N and the three directions are one run done thrice
     * (under memcheck, 111 s of the valgrind stage): N -> N only. */
    for (s = 0; s <= 3; s++) {
        for (t = 0; t <= 3; t++) {
            a.stage = s;
            b.stage = t;
            for (dir_i = (n > 1) ? 0 : 2; dir_i < 3; dir_i++) {
                zsh_ck_reshard(comm, (dir_i == 1) ? sub : comm, (dir_i == 0) ? sub : comm, &a,
                               &b, dir, nvme);
                ZSH_ASSERT_TRUE(zsh_test_failures() == 0);
            }
        }
    }
    for (e = 0; e < sizeof(extra) / sizeof(extra[0]); e++) {
        for (dir_i = 0; dir_i < ((n > 1) ? 2 : 1); dir_i++) {
            zsh_ck_reshard(comm, (dir_i == 1) ? sub : comm, (dir_i == 0) ? sub : comm,
                           &extra[e][0], &extra[e][1], dir, nvme);
            ZSH_ASSERT_TRUE(zsh_test_failures() == 0);
        }
    }
    zsh_comm_destroy(sub);
    zsh_ck_rmdir(comm, dir);
    rmdir(nvme); /* the tier removes its files */
    free(nvme);
}

/* ---- corruption ---------------------------------------------------------- */

#define ZSH_CK_FLIPS 210

typedef struct zsh_ck_flip {
    const char *dir;
    int         tried, caught;
} zsh_ck_flip_t;

/* The files of the checkpoint @dir/latest names, with their sizes. */
static int zsh_ck_files(const char *root, char names[][640], off_t *sizes, int max)
{
    char latest[64] = "", path[300];
    struct dirent *e;
    struct stat st;
    FILE *f;
    DIR *d;
    int n = 0;

    snprintf(path, sizeof(path), "%s/latest", root);
    f = fopen(path, "r");
    if ((f == NULL) || (fscanf(f, "%63s", latest) != 1)) {
        if (f != NULL) {
            fclose(f);
        }
        return 0;
    }
    fclose(f);
    snprintf(path, sizeof(path), "%s/%s", root, latest);
    d = opendir(path);
    while ((d != NULL) && ((e = readdir(d)) != NULL) && (n < max)) {
        if (e->d_name[0] == '.') {
            continue;
        }
        snprintf(names[n], 640, "%s/%s", path, e->d_name);
        if ((stat(names[n], &st) == 0) && S_ISREG(st.st_mode)) {
            sizes[n++] = st.st_size;
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return n;
}

static int zsh_ck_xor(const char *path, off_t pos, unsigned char mask)
{
    int fd = open(path, O_RDWR), ok;
    unsigned char byte;

    if (fd < 0) {
        return 0;
    }
    ok = (pread(fd, &byte, 1, pos) == 1);
    byte ^= mask;
    ok = ok && (pwrite(fd, &byte, 1, pos) == 1);
    close(fd);
    return ok;
}

/* After step 10: save, then flip bytes one at a time across every file;
 * every load must fail and leave the optimizer as it was (the run's later
 * losses, compared with the uncut run's, show it). */
static void zsh_ck_corrupt(zsh_comm_t *comm, zsh_optim_t *opt, void *arg)
{
    zsh_ck_flip_t *fl = arg;
    char names[64][640];
    off_t sizes[64], pos = 0;
    int nfiles = 0, f, i, per, caught;
    unsigned char mask;
    zsh_status_t st;
    const char *why;

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_save(opt, fl->dir));
    if (zsh_comm_rank(comm) == 0) {
        nfiles = zsh_ck_files(fl->dir, names, sizes, 64);
    }
    zsh_broadcast(&nfiles, 1, ZSH_INT32, 0, comm);
    ZSH_EXPECT_TRUE(nfiles >= 2);
    per = (nfiles > 0) ? (ZSH_CK_FLIPS + nfiles - 1) / nfiles : 0;
    for (f = 0; f < nfiles; f++) {
        for (i = 0; i < per; i++) {
            mask = (unsigned char)(1u + (unsigned)((f * 131 + i * 71) % 255));
            if (zsh_comm_rank(comm) == 0) {
                /* The first and last byte, and the rest spread between. */
                pos = (i == 0) ? 0 : (i == per - 1) ? sizes[f] - 1
                                                     : (off_t)((double)sizes[f] * i / per);
                ZSH_EXPECT_TRUE(zsh_ck_xor(names[f], pos, mask));
            }
            zsh_barrier(comm);
            st     = zsh_optim_load(opt, fl->dir);
            why    = zsh_last_error();
            caught = (st == ZSH_ERR_IO) || (st == ZSH_ERR_INVALID_ARG);
            if (!caught) {
                zsh_test_fail(__FILE__, __LINE__, "a flipped byte %d of %s was not caught (%s)",
                              i, (zsh_comm_rank(comm) == 0) ? names[f] : "a file",
                              zsh_status_string(st));
            } else if ((zsh_comm_rank(comm) == 0) &&
                       (strstr(why, strrchr(names[f], '/') + 1) == NULL)) {
                zsh_test_fail(__FILE__, __LINE__, "the error does not name %s: %s", names[f],
                              why);
            }
            fl->tried++;
            fl->caught += caught;
            zsh_barrier(comm);
            if (zsh_comm_rank(comm) == 0) {
                ZSH_EXPECT_TRUE(zsh_ck_xor(names[f], pos, mask));
            }
            zsh_barrier(comm);
            if (zsh_test_failures() > 0) {
                return;
            }
        }
    }
}

ZSH_RANK_TEST(ckpt, every_flipped_byte_is_caught_and_the_optimizer_keeps_its_state)
{
    static const zsh_ck_case_t cases[] = {
        {2, ZSH_BFLOAT16, ZSH_OPTIM_ADAMW, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE},
        {3, ZSH_FLOAT32, ZSH_OPTIM_ADAM, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME},
    };
    char *dir = zsh_ck_dir(comm, "flip"), *nvme = zsh_ck_nvme(), what[160];
    zsh_ck_flip_t fl = {dir, 0, 0};
    zsh_quad_run_t ref, run;
    zsh_optim_config_t cfg;
    size_t c;

    ZSH_ASSERT_TRUE((dir != NULL) && (nvme != NULL));
    for (c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        zsh_ck_config(&cfg, &cases[c], nvme);
        zsh_ck_label(what, sizeof(what), &cases[c]);
        memset(&ref, 0, sizeof(ref));
        memset(&run, 0, sizeof(run));
        fl.tried = fl.caught = 0;
        run.hook      = zsh_ck_corrupt;
        run.hook_arg  = &fl;
        run.hook_step = ZSH_CK_CUT;
        ZSH_ASSERT_TRUE(zsh_quad_train(comm, &cfg, 12, &ref));
        zsh_quad_train(comm, &cfg, 12, &run);
        zsh_quad_expect_near(&run, &ref, 12, 0.0, what);
        ZSH_EXPECT_TRUE(fl.tried >= 200);
        ZSH_EXPECT_EQ(fl.tried, fl.caught);
        zsh_quad_free(&ref);
        zsh_quad_free(&run);
        ZSH_ASSERT_TRUE(zsh_test_failures() == 0);
    }
    zsh_ck_rmdir(comm, dir);
    rmdir(nvme); /* the tier removes its files */
    free(nvme);
}

/* ---- checkpoints of another model, missing and cut files ---------------- */

typedef struct zsh_ck_model {
    const char *names[3];
    size_t      numel[3];
    zsh_dtype_t dtype;
    zsh_optim_kind_t kind;
} zsh_ck_model_t;

/* An optimizer over @m's parameters (values i + 1), set up; NULL on failure. */
static zsh_optim_t *zsh_ck_model(zsh_comm_t *comm, const zsh_ck_model_t *m, int stage,
                                 float *bufs[3])
{
    zsh_optim_config_t cfg;
    zsh_param_t *p;
    zsh_optim_t *opt;
    size_t i, j;

    zsh_optim_config_init(&cfg);
    cfg.stage     = stage;
    cfg.kind      = m->kind;
    cfg.precision = m->dtype;
    if (zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) {
        return NULL;
    }
    for (i = 0; i < 3; i++) {
        bufs[i] = calloc(m->numel[i], sizeof(float));
        for (j = 0; (bufs[i] != NULL) && (j < m->numel[i]) && (m->dtype == ZSH_FLOAT32); j++) {
            bufs[i][j] = (float)(j + 1);
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, m->names[i], m->numel[i], m->dtype,
                                                     bufs[i], &p));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    return opt;
}

static void zsh_ck_model_free(zsh_optim_t *opt, float *bufs[3])
{
    zsh_optim_destroy(opt);
    free(bufs[0]);
    free(bufs[1]);
    free(bufs[2]);
}

/* Load @dir into @m: expect @want naming @needle, and the buffers as they were. */
static void zsh_ck_expect_refused(zsh_comm_t *comm, const zsh_ck_model_t *m, const char *dir,
                                  zsh_status_t want, const char *needle)
{
    float *bufs[3];
    zsh_optim_t *opt = zsh_ck_model(comm, m, 2, bufs);
    size_t i, j;

    ZSH_ASSERT_TRUE(opt != NULL);
    ZSH_EXPECT_STATUS(want, zsh_optim_load(opt, dir));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), needle);
    for (i = 0; (i < 3) && (m->dtype == ZSH_FLOAT32); i++) {
        for (j = 0; j < m->numel[i]; j++) {
            if (bufs[i][j] != (float)(j + 1)) {
                zsh_test_fail(__FILE__, __LINE__, "'%s'[%zu] changed by a refused load",
                              m->names[i], j);
                break;
            }
        }
    }
    zsh_ck_model_free(opt, bufs);
}

ZSH_RANK_TEST(ckpt, a_checkpoint_of_another_model_or_with_a_file_missing_or_cut_is_refused)
{
    const zsh_ck_model_t model = {{"embed", "layer.weight", "layer.bias"},
                                  {1000, 3000, 7},
                                  ZSH_FLOAT32,
                                  ZSH_OPTIM_ADAMW};
    zsh_ck_model_t other;
    char *dir = zsh_ck_dir(comm, "refuse"), path[512] = "", cmd[600];
    float *bufs[3];
    zsh_optim_t *opt;

    ZSH_ASSERT_TRUE(dir != NULL);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_load(NULL, dir));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_save(NULL, dir));
    zsh_ck_expect_refused(comm, &model, dir, ZSH_ERR_IO, "no checkpoint in");
    opt = zsh_ck_model(comm, &model, 3, bufs);
    ZSH_ASSERT_TRUE(opt != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_save(opt, dir));
    zsh_ck_model_free(opt, bufs);

    other          = model;
    other.names[1] = "layer.weight_renamed";
    zsh_ck_expect_refused(comm, &other, dir, ZSH_ERR_INVALID_ARG, "'layer.weight'");
    other          = model;
    other.numel[2] = 8;
    zsh_ck_expect_refused(comm, &other, dir, ZSH_ERR_INVALID_ARG, "'layer.bias' has shape [7]");
    other       = model;
    other.dtype = ZSH_BFLOAT16;
    zsh_ck_expect_refused(comm, &other, dir, ZSH_ERR_INVALID_ARG, "dtype fp32");
    other      = model;
    other.kind = ZSH_OPTIM_SGD;
    zsh_ck_expect_refused(comm, &other, dir, ZSH_ERR_INVALID_ARG, "saved by adamw");

    /* A save cut short is ignored (and swept); the one before stands. */
    if (zsh_comm_rank(comm) == 0) {
        snprintf(path, sizeof(path), "%s/.tmp-step-00000099", dir);
        ZSH_EXPECT_TRUE(mkdir(path, 0755) == 0);
    }
    zsh_barrier(comm);
    opt = zsh_ck_model(comm, &model, 1, bufs);
    ZSH_ASSERT_TRUE(opt != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_load(opt, dir));
    /* A load removes nothing (a save may be writing it); the next save sweeps
     * it, replacing the checkpoint of the same step. */
    ZSH_EXPECT_TRUE((zsh_comm_rank(comm) != 0) || (access(path, F_OK) == 0));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_save(opt, dir));
    zsh_ck_model_free(opt, bufs);
    ZSH_EXPECT_TRUE((zsh_comm_rank(comm) != 0) || (access(path, F_OK) != 0));

    /* Cut between moving the checkpoint of the same step aside and putting
     * its replacement in place: the one moved aside is the one loaded. */
    if (zsh_comm_rank(comm) == 0) {
        snprintf(path, sizeof(path), "%s/step-00000000", dir);
        snprintf(cmd, sizeof(cmd), "%s/.old-step-00000000", dir);
        ZSH_EXPECT_TRUE(rename(path, cmd) == 0);
    }
    zsh_barrier(comm);
    opt = zsh_ck_model(comm, &model, 0, bufs);
    ZSH_ASSERT_TRUE(opt != NULL);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_load(opt, dir));
    zsh_ck_model_free(opt, bufs);
    ZSH_EXPECT_TRUE((zsh_comm_rank(comm) != 0) || (access(path, F_OK) == 0));

    /* A shard file cut, then gone. */
    if (zsh_comm_rank(comm) == 0) {
        snprintf(path, sizeof(path), "%s/step-00000000/exp_avg-00000.bin", dir);
        ZSH_EXPECT_TRUE(truncate(path, 4096 - 1) == 0);
    }
    zsh_barrier(comm);
    zsh_ck_expect_refused(comm, &model, dir, ZSH_ERR_IO, "exp_avg-00000.bin is 4095 bytes");
    zsh_barrier(comm);
    if (zsh_comm_rank(comm) == 0) {
        snprintf(cmd, sizeof(cmd), "rm -f '%s'", path);
        ZSH_EXPECT_TRUE(system(cmd) == 0);
    }
    zsh_barrier(comm);
    zsh_ck_expect_refused(comm, &model, dir, ZSH_ERR_IO, "exp_avg-00000.bin: No such file");
    zsh_ck_rmdir(comm, dir);
}
