/*
 * zsh_estimate: the memory and traffic per rank that ZeRO's formulas predict
 * for a model of Ψ parameters on N ranks, per stage, with or without
 * mixed precision and offload. zsh_optim_estimate() does the arithmetic; the
 * optimizer layer's accounting follows the same model, up to padding.
 */
#include <zeroshard/optim.h>

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zsh_estimate_usage(FILE *out)
{
    fprintf(out,
            "Usage: zsh_estimate --params PSI --ranks N [--stage 0|1|2|3|all]\n"
            "                    [--precision fp32|bf16|fp16] [--offload none|cpu]\n"
            "Print the bytes per rank that ZeRO stage S holds for PSI parameters trained with\n"
            "Adam on N ranks (buffers excluded), and the bytes each rank moves per step.\n"
            "PSI takes a suffix: 7.5e9, 7.5B, 340M, 125k.\n");
}

/* A positive count with an optional k/M/B (thousand, million, billion) suffix. */
static int zsh_estimate_count(const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);

    switch (*end) {
    case 'k': case 'K': v *= 1e3; end++; break;
    case 'm': case 'M': v *= 1e6; end++; break;
    case 'b': case 'B': case 'g': case 'G': v *= 1e9; end++; break;
    default: break;
    }
    if ((end == text) || (*end != '\0') || !(v >= 0)) {
        return -1;
    }
    *out = v;
    return 0;
}

/* @bytes in the largest binary unit that keeps it at 1 or more. */
static const char *zsh_estimate_bytes(double bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;

    while ((bytes >= 1024.0) && (u < 4)) {
        bytes /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", bytes, units[u]);
    return buf;
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
        {NULL, 0, NULL, 0}};
    zsh_optim_estimate_in_t in = {-1, 0, 0, ZSH_FLOAT32, 0};
    double ranks = 0;
    int opt, all = 1, s;

    while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'p': if (zsh_estimate_count(optarg, &in.params)) goto usage; break;
        case 'n':
            if (zsh_estimate_count(optarg, &ranks) || (ranks < 1) || (ranks > 1e9)) {
                goto usage;
            }
            break;
        case 's':
            all = strcmp(optarg, "all") == 0;
            in.stage = atoi(optarg);
            if (!all && ((strlen(optarg) != 1) || (optarg[0] < '0') || (optarg[0] > '3'))) {
                goto usage;
            }
            break;
        case 'r':
            if (strcmp(optarg, "fp32") == 0) in.precision = ZSH_FLOAT32;
            else if (strcmp(optarg, "bf16") == 0) in.precision = ZSH_BFLOAT16;
            else if (strcmp(optarg, "fp16") == 0) in.precision = ZSH_FLOAT16;
            else goto usage;
            break;
        case 'o':
            if (strcmp(optarg, "none") == 0) in.offload = 0;
            else if (strcmp(optarg, "cpu") == 0) in.offload = 1;
            else goto usage;
            break;
        case 'h': zsh_estimate_usage(stdout); return 0;
        default: goto usage;
        }
    }
    if ((optind < argc) || (in.params < 0) || (ranks < 1)) {
        goto usage;
    }
    in.ranks = (int)ranks;
    printf("# %.4g parameters, %d ranks, %s Adam%s\n", in.params, in.ranks,
           (in.precision == ZSH_FLOAT32) ? "fp32" : "mixed-precision",
           in.offload ? ", gradients and optimizer states offloaded to the CPU" : "");
    for (s = all ? 0 : in.stage; s <= (all ? 3 : in.stage); s++) {
        in.stage = s;
        zsh_estimate_print(&in);
    }
    return 0;

usage:
    zsh_estimate_usage(stderr);
    return 2;
}
