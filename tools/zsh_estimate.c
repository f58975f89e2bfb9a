/*
 * zsh_estimate: the memory and traffic per rank that ZeRO's formulas predict
 * for a model of Ψ parameters on N ranks, per stage, with or without
 * mixed precision and offload. zsh_optim_estimate() does the arithmetic; the
 * optimizer layer's accounting follows the same model, up to padding. With
 * the Infinity tiers' options, zsh_optim_estimate_offload() adds a line per
 * stage: model state per tier, the disk bytes a step reads and writes, and
 * the step time the disk alone would allow. With --ranks-per-node,
 * zsh_optim_estimate_nodes() adds the bytes that cross nodes per step, and
 * at stage 3 the same with hpZ and the memory of its secondary partition.
 */
#include <zeroshard/optim.h>

#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zsh_estimate_usage(FILE *out)
{
    fprintf(out,
            "Usage: zsh_estimate --params PSI --ranks N [--stage 0|1|2|3|all]\n"
            "                    [--precision fp32|bf16|fp16] [--offload none|cpu]\n"
            "                    [--offload-optimizer none|cpu|nvme] [--offload-params none|cpu|nvme]\n"
            "                    [--disk-read GB/s] [--disk-write GB/s] [--ranks-per-disk N]\n"
            "                    [--ranks-per-node L [--hpz auto|G]]\n"
            "Print the bytes per rank that ZeRO stage S holds for PSI parameters trained with\n"
            "Adam on N ranks (buffers excluded), and the bytes each rank moves per step.\n"
            "PSI is a whole number of parameters from 0 to 1e18 and takes a suffix: 7.5e9,\n"
            "7.5B, 340M, 125k. N is from 1 to 1e9.\n"
            "Any of the tier options adds a line per stage: model state per tier (compute,\n"
            "host, nvme), the disk bytes a rank reads and writes per step, and the step time\n"
            "the disk alone allows for the ranks sharing it (--ranks-per-disk, default all;\n"
            "bandwidths in GB/s, 1e9 bytes/s). --offload-params needs --stage 3.\n"
            "--ranks-per-node adds a line per stage: the bytes per rank per step in collectives\n"
            "across nodes and the bytes into each node's link (collectives by node, then\n"
            "rail), and at stage 3 the same with hpZ in groups of --hpz ranks (default auto:\n"
            "every rank of a node) and the bytes of its secondary partition per rank; across\n"
            "nodes at stage 3, three more: with hpZ and qwZ (int8 weights in blocks of 2048),\n"
            "and with qgZ too in int8 and in int4, with the last in the ZeRO++ paper's M (the\n"
            "fp16 model: ZeRO-3 moves 3 M, the paper's ZeRO++ 0.75 M).\n");
}

/* The largest --params and --ranks taken: beyond them the model is not a
 * machine anyone runs, and the doubles would no longer be whole numbers. */
#define ZSH_ESTIMATE_PARAMS_MAX 1e18
#define ZSH_ESTIMATE_RANKS_MAX  1e9

/* A whole count in [@min, @max] with an optional k/M/B (thousand, million,
 * billion) suffix, for option --@name; else a message naming the option, the
 * text and the range, and -1. */
static int zsh_estimate_count(const char *name, const char *text, double min, double max,
                              double *out)
{
    char *end;
    double v = strtod(text, &end);

    switch ((end == text) ? '\0' : *end) {
    case 'k': case 'K': v *= 1e3; end++; break;
    case 'm': case 'M': v *= 1e6; end++; break;
    case 'b': case 'B': case 'g': case 'G': v *= 1e9; end++; break;
    default: break;
    }
    if ((end == text) || (*end != '\0') || !isfinite(v) || (v < min) || (v > max) ||
        (v != floor(v))) {
        fprintf(stderr,
                "zsh_estimate: --%s '%s' is not a whole number in [%.0f, %.0e] "
                "(a suffix k, M or B is allowed: 7.5B, 340M, 125k)\n",
                name, text, min, max);
        return -1;
    }
    *out = v;
    return 0;
}

/* Which of @choices (NULL-terminated) @text is; else a message listing them. */
static int zsh_estimate_choice(const char *name, const char *text, const char *const *choices)
{
    int i;

    for (i = 0; choices[i] != NULL; i++) {
        if (strcmp(text, choices[i]) == 0) {
            return i;
        }
    }
    fprintf(stderr, "zsh_estimate: --%s '%s' is not one of:", name, text);
    for (i = 0; choices[i] != NULL; i++) {
        fprintf(stderr, " %s", choices[i]);
    }
    fputc('\n', stderr);
    return -1;
}

/* @bytes in the largest binary unit that keeps it at 1 or more, up to YiB;
 * past that in YiB with an exponent. Below 1 KiB a count of whole bytes:
 * the layer pads a shard up, so a fraction rounds up. */
static const char *zsh_estimate_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB", "ZiB",
                                        "YiB"};
    const int last = (int)(sizeof(units) / sizeof(units[0])) - 1;
    int u = 0;

    while ((bytes >= 1024.0) && (u < last)) {
        bytes /= 1024.0;
        u++;
    }
    if (u == 0) {
        snprintf(buf, len, "%.0f B", ceil(bytes));
    } else if (bytes >= 1e4) {
        snprintf(buf, len, "%.3g %s", bytes, units[u]);
    } else {
        snprintf(buf, len, "%.2f %s", bytes, units[u]);
    }
    return buf;
}

/* A bandwidth in GB/s (>= 0, finite) for option --@name, in bytes/s. */
static int zsh_estimate_bw(const char *name, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);

    if ((end == text) || (*end != '\0') || !isfinite(v) || (v < 0) || (v > 1e6)) {
        fprintf(stderr, "zsh_estimate: --%s '%s' is not a bandwidth in GB/s in [0, 1e6]\n",
                name, text);
        return -1;
    }
    *out = v * 1e9;
    return 0;
}

static void zsh_estimate_print_tiers(const zsh_optim_estimate_in_t *in,
                                     const zsh_offload_estimate_in_t *tiers)
{
    char b[5][32], bound[32];
    zsh_offload_estimate_out_t o;

    if (zsh_optim_estimate_offload(in, tiers, &o) != ZSH_OK) {
        fprintf(stderr, "zsh_estimate: %s\n", zsh_last_error());
        exit(1);
    }
    if ((tiers->read_bw > 0) && (tiers->write_bw > 0)) {
        snprintf(bound, sizeof(bound), "%.4g s", o.disk_bound_s);
    } else {
        snprintf(bound, sizeof(bound), "-");
    }
    printf("  tiers   compute %12s  host %12s  nvme %12s  disk read/step %12s  "
           "write/step %12s  disk-bound step %s\n",
           zsh_estimate_bytes(o.compute_bytes, b[0], 32), zsh_estimate_bytes(o.host_bytes, b[1], 32),
           zsh_estimate_bytes(o.nvme_bytes, b[2], 32), zsh_estimate_bytes(o.read_bytes, b[3], 32),
           zsh_estimate_bytes(o.write_bytes, b[4], 32), bound);
}

static void zsh_estimate_print_nodes(const zsh_optim_estimate_in_t *in, int per_node, int hpz)
{
    char b[5][32];
    zsh_node_estimate_out_t o;

    if (zsh_optim_estimate_nodes(in, per_node, (in->stage == 3) ? hpz : ZSH_HPZ_OFF, &o) !=
        ZSH_OK) {
        fprintf(stderr, "zsh_estimate: %s\n", zsh_last_error());
        exit(1);
    }
    printf("  nodes   %d of %d ranks  cross-node/step %12s  link in/step %12s", o.nodes, per_node,
           zsh_estimate_bytes(o.cross_node_bytes, b[0], 32),
           zsh_estimate_bytes(o.link_bytes, b[1], 32));
    if (o.hpz > 1) {
        printf("  hpz %d: cross-node/step %12s  link in/step %12s  secondary %12s", o.hpz,
               zsh_estimate_bytes(o.cross_node_bytes_hpz, b[2], 32),
               zsh_estimate_bytes(o.link_bytes_hpz, b[3], 32),
               zsh_estimate_bytes(o.hpz_bytes, b[4], 32));
    }
    putchar('\n');
    if ((in->stage == 3) && (o.nodes > 1)) {
        zsh_quant_estimate_out_t q[2];
        if ((zsh_optim_estimate_quant(in, per_node, 2048, 8, &q[0]) != ZSH_OK) ||
            (zsh_optim_estimate_quant(in, per_node, 2048, 4, &q[1]) != ZSH_OK)) {
            fprintf(stderr, "zsh_estimate: %s\n", zsh_last_error());
            exit(1);
        }
        printf("  hpz+qwz: cross-node/step %12s  link in/step %12s\n",
               zsh_estimate_bytes(q[0].cross_node_bytes_qwz, b[0], 32),
               zsh_estimate_bytes(q[0].link_bytes_qwz, b[1], 32));
        printf("  hpz+qwz+qgz int8: cross-node/step %12s  link in/step %12s  (%.3f M)\n",
               zsh_estimate_bytes(q[0].cross_node_bytes_qgz, b[2], 32),
               zsh_estimate_bytes(q[0].link_bytes_qgz, b[3], 32), q[0].paper_m);
        printf("  hpz+qwz+qgz int4: cross-node/step %12s  link in/step %12s  (%.3f M; ZeRO-3 "
               "3 M, the ZeRO++ paper 0.75 M)\n",
               zsh_estimate_bytes(q[1].cross_node_bytes_qgz, b[0], 32),
               zsh_estimate_bytes(q[1].link_bytes_qgz, b[1], 32), q[1].paper_m);
    }
}

static void zsh_estimate_print(const zsh_optim_estimate_in_t *in)
{
    char b[6][32];
    zsh_optim_estimate_out_t o;

    if (zsh_optim_estimate(in, &o) != ZSH_OK) {
        fprintf(stderr, "zsh_estimate: %s\n", zsh_last_error());
        exit(1);
    }
    printf("stage %d  params %12s  grads %12s  states %12s  device %12s  host %12s  "
           "comm/step %12s\n", in->stage, zsh_estimate_bytes(o.param_bytes, b[0], 32),
           zsh_estimate_bytes(o.grad_bytes, b[1], 32), zsh_estimate_bytes(o.state_bytes, b[2], 32),
           zsh_estimate_bytes(o.device_bytes, b[3], 32), zsh_estimate_bytes(o.host_bytes, b[4], 32),
           zsh_estimate_bytes(o.comm_bytes, b[5], 32));
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"params", required_argument, NULL, 'p'}, {"ranks", required_argument, NULL, 'n'},
        {"stage", required_argument, NULL, 's'},  {"precision", required_argument, NULL, 'r'},
        {"offload", required_argument, NULL, 'o'}, {"help", no_argument, NULL, 'h'},
        {"offload-optimizer", required_argument, NULL, 'O'},
        {"offload-params", required_argument, NULL, 'P'},
        {"disk-read", required_argument, NULL, 'R'}, {"disk-write", required_argument, NULL, 'W'},
        {"ranks-per-disk", required_argument, NULL, 'D'},
        {"ranks-per-node", required_argument, NULL, 'L'}, {"hpz", required_argument, NULL, 'Z'},
        {NULL, 0, NULL, 0}};
    static const char *const stages[]     = {"0", "1", "2", "3", "all", NULL};
    static const char *const precisions[] = {"fp32", "bf16", "fp16", NULL};
    static const zsh_dtype_t dtypes[]     = {ZSH_FLOAT32, ZSH_BFLOAT16, ZSH_FLOAT16};
    static const char *const offloads[]   = {"none", "cpu", NULL};
    static const char *const tier_names[] = {"none", "cpu", "nvme", NULL};
    static const zsh_offload_t tier_of[]  = {ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NVME};
    zsh_optim_estimate_in_t in = {-1, 0, 0, ZSH_FLOAT32, 0};
    zsh_offload_estimate_in_t tiers = {ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE, 0, 0, 0};
    double ranks = 0, per_disk = 0, per_node = 0, group = 0;
    int opt, all = 1, s, c, show_tiers = 0, hpz = ZSH_HPZ_AUTO;

    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'p':
            if (zsh_estimate_count("params", optarg, 0, ZSH_ESTIMATE_PARAMS_MAX, &in.params)) {
                goto usage;
            }
            break;
        case 'n':
            if (zsh_estimate_count("ranks", optarg, 1, ZSH_ESTIMATE_RANKS_MAX, &ranks)) {
                goto usage;
            }
            break;
        case 's':
            if ((c = zsh_estimate_choice("stage", optarg, stages)) < 0) {
                goto usage;
            }
            all      = (c == 4);
            in.stage = all ? 0 : c;
            break;
        case 'r':
            if ((c = zsh_estimate_choice("precision", optarg, precisions)) < 0) {
                goto usage;
            }
            in.precision = dtypes[c];
            break;
        case 'o':
            if ((c = zsh_estimate_choice("offload", optarg, offloads)) < 0) {
                goto usage;
            }
            in.offload = c;
            break;
        case 'O':
        case 'P':
            if ((c = zsh_estimate_choice((opt == 'O') ? "offload-optimizer" : "offload-params",
                                         optarg, tier_names)) < 0) {
                goto usage;
            }
            *((opt == 'O') ? &tiers.optimizer : &tiers.params) = tier_of[c];
            show_tiers = 1;
            break;
        case 'R':
        case 'W':
            if (zsh_estimate_bw((opt == 'R') ? "disk-read" : "disk-write", optarg,
                                (opt == 'R') ? &tiers.read_bw : &tiers.write_bw)) {
                goto usage;
            }
            show_tiers = 1;
            break;
        case 'D':
            if (zsh_estimate_count("ranks-per-disk", optarg, 1, ZSH_ESTIMATE_RANKS_MAX,
                                   &per_disk)) {
                goto usage;
            }
            tiers.ranks_per_disk = (int)per_disk;
            show_tiers = 1;
            break;
        case 'L':
            if (zsh_estimate_count("ranks-per-node", optarg, 1, ZSH_ESTIMATE_RANKS_MAX,
                                   &per_node)) {
                goto usage;
            }
            break;
        case 'Z':
            if (strcmp(optarg, "auto") == 0) {
                hpz = ZSH_HPZ_AUTO;
            } else if (zsh_estimate_count("hpz", optarg, 1, ZSH_ESTIMATE_RANKS_MAX, &group)) {
                goto usage;
            } else {
                hpz = (int)group;
            }
            break;
        case 'h': zsh_estimate_usage(stdout); return 0;
        default: goto usage; /* getopt named the option */
        }
    }
    if (optind < argc) {
        fprintf(stderr, "zsh_estimate: unexpected argument '%s'\n", argv[optind]);
        goto usage;
    }
    if ((in.params < 0) || (ranks < 1)) {
        fprintf(stderr, "zsh_estimate: --%s is required\n", (in.params < 0) ? "params" : "ranks");
        goto usage;
    }
    if ((tiers.params != ZSH_OFFLOAD_NONE) && (all || (in.stage != 3))) {
        fprintf(stderr, "zsh_estimate: --offload-params %s needs --stage 3 (parameters are "
                        "offloaded at stage 3 only)\n", tier_names[tiers.params]);
        goto usage;
    }
    in.ranks = (int)ranks;
    printf("# %.4g parameters, %d ranks, %s Adam%s\n", in.params, in.ranks,
           (in.precision == ZSH_FLOAT32) ? "fp32" : "mixed-precision",
           in.offload ? ", gradients and optimizer states offloaded to the CPU" : "");
    for (s = all ? 0 : in.stage; s <= (all ? 3 : in.stage); s++) {
        in.stage = s;
        zsh_estimate_print(&in);
        if (show_tiers) {
            zsh_estimate_print_tiers(&in, &tiers);
        }
        if (per_node > 0) {
            zsh_estimate_print_nodes(&in, (int)per_node, hpz);
        }
    }
    return 0;

usage:
    fprintf(stderr, "Try 'zsh_estimate --help'.\n");
    return 2;
}
