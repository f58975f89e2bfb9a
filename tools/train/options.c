#include "train/options.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zsh_train_usage(FILE *out)
{
    fprintf(out,
            "Usage: mpirun -np N zsh_train --stage {0,1,2,3} [options]\n"
            "Train a character-level MLP language model through the ZeRO optimizer layer.\n\n"
            "  --stage S          ZeRO stage 0-3 (default 3)\n"
            "  --steps K          optimizer steps (default 30)\n"
            "  --precision P      fp32, bf16 or fp16 (default fp32)\n"
            "  --optimizer O      adamw, adam or sgd (default adamw)\n"
            "  --seed S           initial weights and batch order (default 1)\n"
            "  --hidden H         units per hidden layer (default 128)\n"
            "  --layers L         hidden layers (default 2)\n"
            "  --batch B          global batch in sequences, split across ranks (default 64)\n"
            "  --lr X             learning rate (default 3e-3 for Adam, 0.1 for SGD)\n"
            "  --clip X           clip gradients to this global norm, 0: off (default 1)\n"
            "  --bucket-size N    bytes per flat bucket (default 32768)\n"
            "  --max-live N       stage 3: bytes of gathered buckets kept live (default 163840)\n"
            "  --tiles K          register each layer's weight as K row blocks, computed one at a\n"
            "                     time, so one block is gathered at a time (default 1)\n"
            "  --data FILE        training text (default /usr/share/common-licenses/GPL-3)\n"
            "  --help             this text\n");
}

/* A whole number in [min, max]; 0 on success. */
static int zsh_train_number(const char *name, const char *text, double min, double max,
                            double *out)
{
    char *end;
    double v = strtod(text, &end);

    if ((end == text) || (*end != '\0') || !(v >= min) || !(v <= max)) {
        fprintf(stderr, "zsh_train: --%s '%s' must be a number in [%g, %g]\n", name, text, min,
                max);
        return -1;
    }
    *out = v;
    return 0;
}

static int zsh_train_choice(const char *name, const char *text, const char *const *choices,
                            int *out)
{
    int i;

    for (i = 0; choices[i] != NULL; i++) {
        if (strcmp(text, choices[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    fprintf(stderr, "zsh_train: --%s '%s' is not one of the choices (see --help)\n", name, text);
    return -1;
}

/* The numeric options: letter, name, range, and how to store the value. */
typedef struct zsh_train_numeric {
    int         opt;
    const char *name;
    double      min, max;
    void      (*store)(zsh_train_opts_t *o, double v);
} zsh_train_numeric_t;

static void zsh_train_stage(zsh_train_opts_t *o, double v) { o->stage = (int)v; }
static void zsh_train_steps(zsh_train_opts_t *o, double v) { o->steps = (unsigned long)v; }
static void zsh_train_seed(zsh_train_opts_t *o, double v) { o->seed = (uint64_t)v; }
static void zsh_train_hidden(zsh_train_opts_t *o, double v) { o->hidden = (size_t)v; }
static void zsh_train_layers(zsh_train_opts_t *o, double v) { o->layers = (size_t)v; }
static void zsh_train_batch_size(zsh_train_opts_t *o, double v) { o->batch = (size_t)v; }
static void zsh_train_lr(zsh_train_opts_t *o, double v) { o->lr = (float)v; }
static void zsh_train_clip(zsh_train_opts_t *o, double v) { o->clip = (float)v; }
static void zsh_train_bucket(zsh_train_opts_t *o, double v) { o->bucket_size = (size_t)v; }
static void zsh_train_live(zsh_train_opts_t *o, double v) { o->max_live = (size_t)v; }
static void zsh_train_tiles(zsh_train_opts_t *o, double v) { o->tiles = (size_t)v; }

static const zsh_train_numeric_t zsh_train_numerics[] = {
    {'s', "stage", 0, 3, zsh_train_stage},          {'k', "steps", 1, 1e9, zsh_train_steps},
    {'S', "seed", 0, 1e15, zsh_train_seed},         {'H', "hidden", 1, 1e5, zsh_train_hidden},
    {'L', "layers", 1, 64, zsh_train_layers},       {'B', "batch", 1, 1e6, zsh_train_batch_size},
    {'r', "lr", 0, 10, zsh_train_lr},               {'c', "clip", 0, 1e9, zsh_train_clip},
    {'b', "bucket-size", 4, 1e12, zsh_train_bucket}, {'m', "max-live", 0, 1e12, zsh_train_live},
    {'t', "tiles", 1, 1e5, zsh_train_tiles},
};

static int zsh_train_set(int opt, const char *arg, zsh_train_opts_t *o)
{
    static const char *const precisions[] = {"fp32", "bf16", "fp16", NULL};
    static const zsh_dtype_t dtypes[]     = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
    static const char *const kinds[]      = {"sgd", "adam", "adamw", NULL};
    const zsh_train_numeric_t *num;
    double v;
    size_t i;
    int c;

    for (i = 0; i < sizeof(zsh_train_numerics) / sizeof(zsh_train_numerics[0]); i++) {
        num = &zsh_train_numerics[i];
        if (num->opt == opt) {
            if (zsh_train_number(num->name, arg, num->min, num->max, &v) != 0) {
                return -1;
            }
            num->store(o, v);
            return 0;
        }
    }
    switch (opt) {
    case 'p':
        if (zsh_train_choice("precision", arg, precisions, &c) != 0) {
            return -1;
        }
        o->precision = dtypes[c];
        return 0;
    case 'o':
        if (zsh_train_choice("optimizer", arg, kinds, &c) != 0) {
            return -1;
        }
        o->kind = (zsh_optim_kind_t)c;
        return 0;
    case 'd':
        o->data = arg;
        return 0;
    default:
        return -1;
    }
}

int zsh_train_parse(int argc, char **argv, zsh_train_opts_t *o)
{
    static const struct option longopts[] = {
        {"stage", required_argument, NULL, 's'},  {"steps", required_argument, NULL, 'k'},
        {"precision", required_argument, NULL, 'p'}, {"optimizer", required_argument, NULL, 'o'},
        {"seed", required_argument, NULL, 'S'},   {"hidden", required_argument, NULL, 'H'},
        {"layers", required_argument, NULL, 'L'}, {"batch", required_argument, NULL, 'B'},
        {"lr", required_argument, NULL, 'r'},     {"clip", required_argument, NULL, 'c'},
        {"bucket-size", required_argument, NULL, 'b'}, {"max-live", required_argument, NULL, 'm'},
        {"data", required_argument, NULL, 'd'},   {"tiles", required_argument, NULL, 't'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    int opt;

    *o = (zsh_train_opts_t){.stage = 3, .steps = 30, .precision = ZSH_FLOAT32,
                            .kind = ZSH_OPTIM_ADAMW, .seed = 1, .hidden = 128, .layers = 2,
                            .embed = 16, .context = 8, .batch = 64, .tiles = 1, .clip = 1.0f,
                            .bucket_size = 32768, .max_live = 163840,
                            .data = "/usr/share/common-licenses/GPL-3"};
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            zsh_train_usage(stdout);
            return 1;
        }
        if (zsh_train_set(opt, optarg, o) != 0) {
            zsh_train_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "zsh_train: unexpected argument '%s'\n", argv[optind]);
        zsh_train_usage(stderr);
        return 2;
    }
    if (o->lr == 0.0f) {
        o->lr = (o->kind == ZSH_OPTIM_SGD) ? 0.1f : 3e-3f;
    }
    return 0;
}
