#include "train/options.h"

#include "train/size.h"

#include <ctype.h>
#include <getopt.h>
#include <stddef.h>
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
            "  --params N         about N parameters (2e9, 125m, 1.5g): chooses --layers and\n"
            "                     --hidden, and tiles the weights by the live budget\n"
            "  --hidden H         units per hidden layer (default 128)\n"
            "  --layers L         hidden layers (default 2)\n"
            "  --batch B          global batch in sequences, split across ranks (default 64)\n"
            "  --lr X             learning rate (default 3e-3 for Adam, 0.1 for SGD)\n"
            "  --clip X           clip gradients to this global norm, 0: off (default 1)\n"
            "  --bucket-size N    bytes per flat bucket, k/m/g suffixes (default 32768)\n"
            "  --max-live N       stage 3: bytes of gathered buckets kept live, k/m/g suffixes\n"
            "                     (default 163840; 256m with --params)\n"
            "  --tiles K          register each layer's weight as K row blocks, computed one at a\n"
            "                     time, so one block is gathered at a time (default 1; with\n"
            "                     --params, blocks of at most a quarter of --max-live)\n"
            "  --offload-optimizer T  tier of optimizer states and master weights: none, cpu\n"
            "                     or nvme (default: ZSH_OFFLOAD_OPTIMIZER)\n"
            "  --offload-params T stage 3: tier of the parameter shards: none, cpu or nvme\n"
            "                     (default: ZSH_OFFLOAD_PARAMS)\n"
            "  --nvme-dir DIR     directory of the nvme tier's files (default: ZSH_NVME_DIR)\n"
            "  --host-mem-limit N bytes of host buffers of the nvme tier, k/m/g suffixes\n"
            "                     (default: ZSH_HOST_MEM_LIMIT)\n"
            "  --hpz G            stage 3: hpZ's secondary partition within each node: off,\n"
            "                     auto (every rank of the node) or the group size\n"
            "                     (default: ZSH_HPZ)\n"
            "  --deterministic    the optimizer's deterministic mode: the same bits whatever the\n"
            "                     bucket size, sub-group size, hpZ, offload or node layout; each\n"
            "                     step's loss also in hexadecimal, every bit\n"
            "  --loss-bits        each step's loss also in hexadecimal without the mode\n"
            "  --matmul M         blas or loops: the model's matrix products (default blas\n"
            "                     where the build has one)\n"
            "  --data FILE        training text, a regular file of at most 1 GiB\n"
            "                     (default /usr/share/common-licenses/GPL-3)\n"
            "  --ckpt-dir DIR     checkpoint directory: save to DIR/step-<k> after the last step\n"
            "                     (or as --ckpt-every says); DIR/latest names the newest\n"
            "  --ckpt-every K     save after every step that is a multiple of K, 0: never\n"
            "                     (default: after the last step only)\n"
            "  --resume           load DIR's latest checkpoint first, then train from the step\n"
            "                     after the one it holds to --steps; an error if there is none\n"
            "                     (with --snapshot-every, the snapshot in memory if there is one)\n"
            "  --snapshot-every K snapshot into node memory (ZSH_SNAPSHOT_DIR, which zshrun\n"
            "                     sets) after every step that is a multiple of K, 0: never; a\n"
            "                     multiple of K for --ckpt-every\n"
            "  --help             this text\n");
}

/* A number in [min, max], with an optional suffix k, m, g or t scaling it by
 * powers of @base (0: no suffix); 0 on success. */
static int zsh_train_number(const char *name, const char *text, double min, double max,
                            double base, double *out)
{
    static const char suffixes[] = "kmgt";
    const char *at;
    char *end;
    double v = strtod(text, &end);
    ptrdiff_t i;

    if ((base > 0) && (end != text) && (*end != '\0') && (end[1] == '\0') &&
        ((at = strchr(suffixes, tolower((unsigned char)*end))) != NULL)) {
        for (i = 0; i <= at - suffixes; i++) {
            v *= base;
        }
        end++;
    }
    if ((end == text) || (*end != '\0') || !(v >= min) || !(v <= max)) {
        fprintf(stderr, "zsh_train: --%s '%s' must be a number in [%g, %g]%s\n", name, text, min,
                max, (base > 0) ? " (suffixes k, m, g, t)" : "");
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
    fprintf(stderr, "zsh_train: --%s '%s' is not one of", name, text);
    for (i = 0; choices[i] != NULL; i++) {
        fprintf(stderr, "%s %s", (i == 0) ? "" : ",", choices[i]);
    }
    fputc('\n', stderr);
    return -1;
}

/* The numeric options: letter, name, range, suffix base, and how to store
 * the value. */
typedef struct zsh_train_numeric {
    int         opt;
    const char *name;
    double      min, max, base;
    void      (*store)(zsh_train_opts_t *o, double v);
} zsh_train_numeric_t;

static void zsh_train_stage(zsh_train_opts_t *o, double v) { o->stage = (int)v; }
static void zsh_train_steps(zsh_train_opts_t *o, double v) { o->steps = (unsigned long)v; }
static void zsh_train_seed(zsh_train_opts_t *o, double v) { o->seed = (uint64_t)v; }
static void zsh_train_hidden(zsh_train_opts_t *o, double v) { o->hidden = (size_t)v; }
static void zsh_train_layers(zsh_train_opts_t *o, double v) { o->layers = (size_t)v; }
static void zsh_train_batch_size(zsh_train_opts_t *o, double v) { o->batch = (size_t)v; }
static void zsh_train_lr(zsh_train_opts_t *o, double v) { o->lr = v; }
static void zsh_train_clip(zsh_train_opts_t *o, double v) { o->clip = (float)v; }
static void zsh_train_bucket(zsh_train_opts_t *o, double v) { o->bucket_size = (size_t)v; }
static void zsh_train_live(zsh_train_opts_t *o, double v) { o->max_live = (size_t)v; }
static void zsh_train_tiles(zsh_train_opts_t *o, double v) { o->tiles = (size_t)v; }
static void zsh_train_params(zsh_train_opts_t *o, double v) { o->params = v; }
static void zsh_train_host(zsh_train_opts_t *o, double v) { o->host_mem_limit = (size_t)v; }
static void zsh_train_every(zsh_train_opts_t *o, double v) { o->ckpt_every = (unsigned long)v; }
static void zsh_train_snap(zsh_train_opts_t *o, double v) { o->snap_every = (unsigned long)v; }

static const zsh_train_numeric_t zsh_train_numerics[] = {
    {'s', "stage", 0, 3, 0, zsh_train_stage},
    {'k', "steps", 1, 1e9, 0, zsh_train_steps},
    {'S', "seed", 0, 1e15, 0, zsh_train_seed},
    {'H', "hidden", 1, 1e5, 0, zsh_train_hidden},
    {'L', "layers", 1, 64, 0, zsh_train_layers},
    {'B', "batch", 1, 1e6, 0, zsh_train_batch_size},
    {'r', "lr", 0, 10, 0, zsh_train_lr},
    {'c', "clip", 0, 1e9, 0, zsh_train_clip},
    {'b', "bucket-size", 4, 1e12, 1024, zsh_train_bucket},
    {'m', "max-live", 0, 1e12, 1024, zsh_train_live},
    {'t', "tiles", 1, 1e5, 0, zsh_train_tiles},
    {'P', "params", ZSH_TRAIN_PARAMS_MIN, ZSH_TRAIN_PARAMS_MAX, 1000, zsh_train_params},
    {'M', "host-mem-limit", 1, 1e15, 1024, zsh_train_host},
    {'E', "ckpt-every", 0, 1e9, 0, zsh_train_every},
    {'K', "snapshot-every", 0, 1e9, 0, zsh_train_snap},
};

/* Options given on the command line, by letter, for the checks between them. */
typedef struct zsh_train_given {
    int hidden, layers, live, tiles, every;
} zsh_train_given_t;

static int zsh_train_set(int opt, const char *arg, zsh_train_opts_t *o)
{
    static const char *const precisions[] = {"fp32", "bf16", "fp16", NULL};
    static const zsh_dtype_t dtypes[]     = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
    static const char *const kinds[]      = {"sgd", "adam", "adamw", NULL};
    /* In zsh_offload_t's order. */
    static const char *const tiers[]      = {"none", "cpu", "nvme", NULL};
    static const char *const matmuls[]    = {"blas", "loops", NULL};
    const zsh_train_numeric_t *num;
    double v;
    size_t i;
    int c;

    for (i = 0; i < sizeof(zsh_train_numerics) / sizeof(zsh_train_numerics[0]); i++) {
        num = &zsh_train_numerics[i];
        if (num->opt == opt) {
            if (zsh_train_number(num->name, arg, num->min, num->max, num->base, &v) != 0) {
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
    case 'O':
    case 'A':
        if (zsh_train_choice((opt == 'O') ? "offload-optimizer" : "offload-params", arg, tiers,
                             &c) != 0) {
            return -1;
        }
        *((opt == 'O') ? &o->offload_optimizer : &o->offload_params) = (zsh_offload_t)c;
        return 0;
    case 'N':
        if (*arg == '\0') {
            fprintf(stderr, "zsh_train: --nvme-dir needs a directory\n");
            return -1;
        }
        o->nvme_dir = arg;
        return 0;
    case 'x':
        if (zsh_train_choice("matmul", arg, matmuls, &c) != 0) {
            return -1;
        }
        o->loops = c;
        return 0;
    case 'd':
        o->data = arg;
        return 0;
    case 'C':
        if (*arg == '\0') {
            fprintf(stderr, "zsh_train: --ckpt-dir needs a directory\n");
            return -1;
        }
        o->ckpt_dir = arg;
        return 0;
    case 'R':
        o->resume = 1;
        return 0;
    case 'D':
        o->deterministic = 1;
        o->loss_bits     = 1;
        return 0;
    case 'y':
        o->loss_bits = 1;
        return 0;
    case 'Z':
        if ((strcmp(arg, "off") == 0) || (strcmp(arg, "auto") == 0)) {
            o->hpz = (arg[0] == 'o') ? ZSH_HPZ_OFF : ZSH_HPZ_AUTO;
            return 0;
        }
        if (zsh_train_number("hpz", arg, 1, 65536, 0, &v) != 0) {
            fprintf(stderr, "zsh_train: --hpz takes off, auto or a group size\n");
            return -1;
        }
        o->hpz = (int)v;
        return 0;
    default:
        return -1;
    }
}

/* What the options say together: --params chooses the sizes it conflicts
 * with, and sets the defaults of the budget and the tiles. */
static int zsh_train_combine(zsh_train_opts_t *o, const zsh_train_given_t *given)
{
    if ((o->params > 0) && (given->hidden || given->layers)) {
        fprintf(stderr, "zsh_train: --params chooses --hidden and --layers; give --params or "
                        "them, not both\n");
        return -1;
    }
    if (o->params > 0) {
        o->max_live = given->live ? o->max_live : ZSH_TRAIN_PARAMS_MAX_LIVE;
        o->tiles    = given->tiles ? o->tiles : 0;
    }
    if (o->lr == 0.0) {
        o->lr = (o->kind == ZSH_OPTIM_SGD) ? 0.1 : 3e-3;
    }
    /* A disk checkpoint is then never newer than the snapshot a resume takes. */
    if ((o->snap_every > 0) && (o->ckpt_every % o->snap_every != 0)) {
        fprintf(stderr, "zsh_train: --ckpt-every %lu is not a multiple of --snapshot-every %lu\n",
                o->ckpt_every, o->snap_every);
        return -1;
    }
    if ((o->ckpt_dir == NULL) && (given->every || (o->resume && (o->snap_every == 0)))) {
        fprintf(stderr, "zsh_train: --%s needs --ckpt-dir\n",
                given->every ? "ckpt-every" : "resume");
        return -1;
    }
    /* A run that names a directory and no cadence leaves its end there. */
    o->ckpt_last = (o->ckpt_dir != NULL) && !given->every;
    return 0;
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
        {"params", required_argument, NULL, 'P'},
        {"offload-optimizer", required_argument, NULL, 'O'},
        {"offload-params", required_argument, NULL, 'A'},
        {"nvme-dir", required_argument, NULL, 'N'},
        {"host-mem-limit", required_argument, NULL, 'M'},
        {"matmul", required_argument, NULL, 'x'},
        {"hpz", required_argument, NULL, 'Z'},
        {"deterministic", no_argument, NULL, 'D'},
        {"loss-bits", no_argument, NULL, 'y'},
        {"ckpt-dir", required_argument, NULL, 'C'},
        {"ckpt-every", required_argument, NULL, 'E'},
        {"resume", no_argument, NULL, 'R'},
        {"snapshot-every", required_argument, NULL, 'K'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    zsh_train_given_t given = {0};
    int opt;

    *o = (zsh_train_opts_t){.stage = 3, .steps = 30, .precision = ZSH_FLOAT32,
                            .kind = ZSH_OPTIM_ADAMW, .seed = 1, .hidden = 128, .layers = 2,
                            .embed = 16, .context = 8, .batch = 64, .tiles = 1, .clip = 1.0f,
                            .bucket_size = 32768, .max_live = 163840,
                            .data = "/usr/share/common-licenses/GPL-3",
                            .offload_optimizer = ZSH_OFFLOAD_DEFAULT,
                            .offload_params = ZSH_OFFLOAD_DEFAULT};
    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (opt == 'h') {
            zsh_train_usage(stdout);
            return 1;
        }
        if (zsh_train_set(opt, optarg, o) != 0) {
            zsh_train_usage(stderr);
            return 2;
        }
        given.hidden |= (opt == 'H');
        given.layers |= (opt == 'L');
        given.live   |= (opt == 'm');
        given.tiles  |= (opt == 't');
        given.every  |= (opt == 'E');
    }
    if (optind < argc) {
        fprintf(stderr, "zsh_train: unexpected argument '%s'\n", argv[optind]);
        zsh_train_usage(stderr);
        return 2;
    }
    return (zsh_train_combine(o, &given) == 0) ? 0 : 2;
}
