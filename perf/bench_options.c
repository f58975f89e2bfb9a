/*
 * zsh_bench's command line: OSU's short options (-m, -i, -x, -f, -c, -T)
 * plus the long ones of this benchmark.
 */
#include "bench.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const zsh_bench_coll_t zsh_bench_colls[] = {
    {"allgather", "Allgather", ZSH_BUSBW_ALLGATHER, "the gathered buffer, ranks x the per-rank message",
     "(n-1)/n", "MPI_Allgather", "ncclAllGather"},
    {"reduce_scatter", "Reduce_scatter", ZSH_BUSBW_REDUCE_SCATTER, "the input, ranks x the per-rank result",
     "(n-1)/n", "MPI_Reduce_scatter_block", "ncclReduceScatter"},
    {"allreduce", "Allreduce", ZSH_BUSBW_ALLREDUCE, "the buffer", "2(n-1)/n", "MPI_Allreduce", "ncclAllReduce"},
    {"broadcast", "Broadcast", ZSH_BUSBW_BROADCAST, "the buffer", "1", "MPI_Bcast", "ncclBroadcast"},
    {"alltoall", "Alltoall", ZSH_BUSBW_ALLTOALL, "the input, ranks x the block for each rank",
     "(n-1)/n", "MPI_Alltoall", "ncclSend/ncclRecv"},
    {"barrier", "Barrier", ZSH_BUSBW_BARRIER, "nothing (one row: a barrier moves no data)", "0",
     "MPI_Barrier", NULL},
};

void zsh_bench_usage(FILE *out)
{
    fprintf(out,
            "usage: mpirun -np N zsh_bench allgather|reduce_scatter|allreduce|broadcast|alltoall|barrier [options]\n"
            "       zshrun -n N zsh_bench ... (ZeroShard's own bootstrap, no MPI)\n"
            "  -m, --message-size MIN:MAX  sizes in bytes, k/m/g suffixes (default 1:32m; MAX alone\n"
            "                              keeps the default MIN); total bytes as nccl-tests counts them\n"
            "  -i, --iterations N          timed iterations per size (default 100; 1/%d above %u bytes)\n"
            "  -x, --warmup N              untimed iterations first (default 10; 1/%d above %u bytes)\n"
            "  -f, --full                  also Min and Max latency over the ranks, and Iterations\n"
            "  -c, --validation            check every element of the results exactly\n"
            "  -T, --type T[,T...]|all     element types, a table each in turn (default fp32):\n"
            "                              %s\n"
            "      --baseline mpi          also time the MPI collective on the same buffers (mpirun)\n"
            "      --cold                  rotate through buffers larger than the last-level cache\n"
            "      --device host|cuda      where the buffers are (default host); cuda: device memory\n"
            "                              of GPU LOCAL_RANK %% count, timed against bare NCCL calls\n"
            "                              on the same buffers%s\n"
            "      --mem-type auto|cuda    with --device cuda: auto (default) lets ZeroShard ask\n"
            "                              CUDA where each call's buffers are; cuda tells it once\n"
            "                              (zsh_comm_set_mem_type)\n"
            "      --csv FILE              also write the rows to FILE as CSV\n"
            "      --check-determinism     reduce_scatter or allreduce: the same inputs under every\n"
            "                              algorithm, chunk size and depth, bits compared, in the\n"
            "                              deterministic mode (zsh_comm_set_deterministic) and\n"
            "                              without; then that mode's time against the default's\n"
            "  -h, --help                  this text\n",
            ZSH_BENCH_LARGE_DIVISOR, ZSH_BENCH_LARGE_SIZE, ZSH_BENCH_LARGE_DIVISOR,
            ZSH_BENCH_LARGE_SIZE, zsh_bench_dtype_names(),
            zsh_bench_cuda_built() ? "" : " (this build has no CUDA/NCCL)");
}

/* "64k" -> 65536; 0 on anything that is not a positive size. */
static size_t zsh_bench_parse_size(const char *s)
{
    unsigned long long v, mult = 1;
    char *end;

    if (*s < '0' || *s > '9') {
        return 0;
    }
    errno = 0;
    v = strtoull(s, &end, 10);
    if (errno != 0) {
        return 0;
    }
    switch (*end) {
    case 'k': case 'K': mult = 1ull << 10; end++; break;
    case 'm': case 'M': mult = 1ull << 20; end++; break;
    case 'g': case 'G': mult = 1ull << 30; end++; break;
    default: break;
    }
    if ((*end != '\0') || (v > SIZE_MAX / mult)) {
        return 0;
    }
    return (size_t)(v * mult);
}

static int zsh_bench_parse_range(const char *arg, zsh_bench_opts_t *opts)
{
    const char *colon = strchr(arg, ':');
    char        min[64];

    if (colon == NULL) {
        opts->max_size = zsh_bench_parse_size(arg);
        return opts->max_size != 0;
    }
    if ((size_t)(colon - arg) >= sizeof(min)) {
        return 0;
    }
    memcpy(min, arg, (size_t)(colon - arg));
    min[colon - arg] = '\0';
    opts->min_size = zsh_bench_parse_size(min);
    opts->max_size = zsh_bench_parse_size(colon + 1);
    return (opts->min_size != 0) && (opts->max_size >= opts->min_size);
}

static int zsh_bench_parse_count(const char *arg, int min, int *out)
{
    char *end;
    long  v;

    errno = 0;
    v = strtol(arg, &end, 10);
    if ((errno != 0) || (end == arg) || (*end != '\0') || (v < min) || (v > INT_MAX)) {
        return 0;
    }
    *out = (int)v;
    return 1;
}

static const zsh_bench_coll_t *zsh_bench_coll_find(const char *name)
{
    size_t i;

    for (i = 0; i < sizeof(zsh_bench_colls) / sizeof(zsh_bench_colls[0]); i++) {
        if (strcmp(zsh_bench_colls[i].name, name) == 0) {
            return &zsh_bench_colls[i];
        }
    }
    return NULL;
}

/* What --device cuda cannot be combined with, and a build that cannot take it. */
static int zsh_bench_parse_device(const zsh_bench_opts_t *opts, char *err, size_t errlen)
{
    if (opts->device != ZSH_BENCH_CUDA) {
        return 0;
    }
    if (opts->coll->nccl_call == NULL) {
        snprintf(err, errlen, "--device cuda: %s has no buffers and NCCL no such call; run it on the host",
                 opts->coll->name);
        return -1;
    }
    if (!zsh_bench_cuda_built()) {
        snprintf(err, errlen, "--device cuda: this zsh_bench was built without CUDA/NCCL "
                 "(configure --with-cuda --with-nccl)");
        return -1;
    }
    if (opts->baseline_mpi) {
        snprintf(err, errlen, "--device cuda: the baseline is bare NCCL; --baseline mpi is for host buffers");
        return -1;
    }
    if (opts->cold) {
        snprintf(err, errlen, "--device cuda: --cold rotates through the host's last-level cache; "
                 "not for device buffers");
        return -1;
    }
    return 0;
}

int zsh_bench_parse(int argc, char **argv, zsh_bench_opts_t *opts, char *err, size_t errlen)
{
    static const struct option longopts[] = {
        {"message-size", required_argument, NULL, 'm'}, {"iterations", required_argument, NULL, 'i'},
        {"warmup", required_argument, NULL, 'x'},       {"full", no_argument, NULL, 'f'},
        {"validation", no_argument, NULL, 'c'},         {"type", required_argument, NULL, 'T'},
        {"baseline", required_argument, NULL, 'B'},     {"cold", no_argument, NULL, 'C'},
        {"csv", required_argument, NULL, 'V'},          {"help", no_argument, NULL, 'h'},
        {"device", required_argument, NULL, 'D'},       {"mem-type", required_argument, NULL, 'M'},
        {"check-determinism", no_argument, NULL, 'X'},  {NULL, 0, NULL, 0}};
    int c;

    memset(opts, 0, sizeof(*opts));
    opts->dtype    = zsh_bench_dtype_find("fp32");
    opts->dtypes[0] = opts->dtype;
    opts->ndtypes   = 1;
    opts->min_size = 1;
    opts->max_size = 32u << 20;
    opts->iters    = 100;
    opts->warmup   = 10;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":m:i:x:fcT:h", longopts, NULL)) != -1) {
        switch (c) {
        case 'm':
            if (!zsh_bench_parse_range(optarg, opts)) {
                snprintf(err, errlen, "-m '%s': expected MIN:MAX or MAX in bytes (k, m, g suffixes), "
                         "MIN <= MAX", optarg);
                return -1;
            }
            break;
        case 'i':
            if (!zsh_bench_parse_count(optarg, 1, &opts->iters)) {
                snprintf(err, errlen, "-i '%s': expected a positive number of iterations", optarg);
                return -1;
            }
            break;
        case 'x':
            if (!zsh_bench_parse_count(optarg, 0, &opts->warmup)) {
                snprintf(err, errlen, "-x '%s': expected a number of warmup iterations >= 0", optarg);
                return -1;
            }
            break;
        case 'f': opts->full = 1; break;
        case 'c': opts->check = 1; break;
        case 'T':
            opts->ndtypes = zsh_bench_dtype_list(optarg, opts->dtypes, ZSH_BENCH_MAX_DTYPES);
            if (opts->ndtypes == 0) {
                snprintf(err, errlen, "-T '%s': unknown type; one of %s, several separated by commas, "
                         "or all", optarg, zsh_bench_dtype_names());
                return -1;
            }
            opts->dtype = opts->dtypes[0];
            break;
        case 'B':
            if (strcmp(optarg, "mpi") != 0) {
                snprintf(err, errlen, "--baseline '%s': the only baseline is 'mpi'", optarg);
                return -1;
            }
            opts->baseline_mpi = 1;
            break;
        case 'C': opts->cold = 1; break;
        case 'D':
            if (strcmp(optarg, "host") == 0) {
                opts->device = ZSH_BENCH_HOST;
            } else if (strcmp(optarg, "cuda") == 0) {
                opts->device = ZSH_BENCH_CUDA;
            } else {
                snprintf(err, errlen, "--device '%s': expected host or cuda", optarg);
                return -1;
            }
            break;
        case 'M':
            if ((strcmp(optarg, "auto") != 0) && (strcmp(optarg, "cuda") != 0)) {
                snprintf(err, errlen, "--mem-type '%s': expected auto or cuda", optarg);
                return -1;
            }
            opts->mem_told = (strcmp(optarg, "cuda") == 0);
            break;
        case 'V': opts->csv_path = optarg; break;
        case 'X': opts->determinism = 1; break;
        case 'h': return 1;
        case ':':
            snprintf(err, errlen, "%s needs an argument", argv[optind - 1]);
            return -1;
        default:
            snprintf(err, errlen, "unknown option '%s'", argv[optind - 1]);
            return -1;
        }
    }
    if (optind != argc - 1) {
        snprintf(err, errlen, "expected one collective (allgather, reduce_scatter, allreduce, broadcast, alltoall or "
                 "barrier), got %d", argc - optind);
        return -1;
    }
    opts->coll = zsh_bench_coll_find(argv[optind]);
    if (opts->coll == NULL) {
        snprintf(err, errlen, "unknown collective '%s': allgather, reduce_scatter, allreduce, broadcast, alltoall or "
                 "barrier", argv[optind]);
        return -1;
    }
    if (opts->determinism && (opts->coll->coll != ZSH_BUSBW_REDUCE_SCATTER) &&
        (opts->coll->coll != ZSH_BUSBW_ALLREDUCE)) {
        snprintf(err, errlen, "--check-determinism: %s does not reduce; use reduce_scatter or "
                 "allreduce", opts->coll->name);
        return -1;
    }
    if (opts->determinism && (opts->device != ZSH_BENCH_HOST || opts->baseline_mpi ||
                              opts->csv_path != NULL)) {
        snprintf(err, errlen, "--check-determinism runs on host buffers, without --device, "
                 "--baseline or --csv");
        return -1;
    }
    return zsh_bench_parse_device(opts, err, errlen);
}
