/*
 * zshrun's command line: torchrun's option names (with its underscore
 * spellings), checked in full, and the program looked up on PATH, all before
 * any rank starts, so that a mistake starts nothing.
 */
#include "run/run.h"

#include <zeroshard/version.h>

#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void zsh_run_usage(FILE *out)
{
    fprintf(out,
            "Usage: zshrun [options] PROGRAM [ARGS...]\n"
            "Start local ranks of PROGRAM with the torchrun environment (RANK, LOCAL_RANK,\n"
            "WORLD_SIZE, LOCAL_WORLD_SIZE, GROUP_RANK, MASTER_ADDR, MASTER_PORT) and a job key\n"
            "(ZSH_JOB_KEY); stop them all when one fails.\n\n"
            "  -n, --nproc-per-node N   ranks on this node, 1 to %d (default 1)\n"
            "      --nnodes K           nodes in the job, 1 to %d (default 1)\n"
            "      --node-rank I        this node's index, 0 to K-1 (default 0)\n"
            "      --master-addr A      host of rank 0 (default 127.0.0.1; required if K > 1)\n"
            "      --master-port P      port of rank 0's store (default: a free port; required\n"
            "                           if K > 1)\n"
            "      --slurm              take --nnodes, --node-rank and --master-addr from the\n"
            "                           Slurm job; outside srun, start zshrun on every node\n"
            "                           of the allocation through srun\n"
            "      --max-restarts K     when a rank fails, start the job again up to K times,\n"
            "                           one rank fewer: without the one that failed\n"
            "                           (default 0)\n"
            "      --min-ranks M        the fewest ranks a restart runs, across all nodes,\n"
            "                           1 to N*K (default 1)\n"
            "      --join-timeout SEC   with K > 1 and restarts: a node silent this long after\n"
            "                           a failure is lost whole (default 30)\n"
            "      --job-key-file FILE  read the job key from FILE (default: ZSH_JOB_KEY, or a\n"
            "                           fresh key on a single node)\n"
            "      --grace SECONDS      after a failure, time between SIGTERM and SIGKILL\n"
            "                           (default 5)\n"
            "      --no-prefix          do not put \"[RANK] \" before each output line\n"
            "      --no-thp             leave GLIBC_TUNABLES alone (by default, with N above\n"
            "                           1, glibc.malloc.hugetlb=1 is added: transparent huge\n"
            "                           pages for large blocks, faster copies between ranks)\n"
            "      --bind none|core|numa  bind each rank to a core, or to the cores of a NUMA\n"
            "                           node, spread over the NUMA nodes (default: core where\n"
            "                           every rank has a core of its own, else none)\n"
            "      --report-bindings    say where each rank is bound, on stderr\n"
            "  -h, --help               this text\n"
            "  -V, --version            the ZeroShard version\n"
            "Options with a dash also take torchrun's underscore (--node_rank).\n",
            ZSH_RUN_NPROC_MAX, ZSH_RUN_NNODES_MAX);
}

/* A whole number in [@min, @max] for option --@name; else a message and -1. */
static int zsh_run_int(const char *name, const char *text, long min, long max, int *out)
{
    char *end;
    long v;

    errno = 0;
    v     = strtol(text, &end, 10);
    /* strtol would skip leading blanks and take "" as 0. */
    if (!isdigit((unsigned char)text[0]) && (text[0] != '-')) {
        end = (char *)text;
    }
    if ((end == text) || (*end != '\0') || (errno != 0) || (v < min) || (v > max)) {
        fprintf(stderr, "zshrun: --%s '%s' is not a whole number from %ld to %ld\n", name, text,
                min, max);
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int zsh_run_seconds(const char *name, const char *text, double *out)
{
    char *end;
    double v = strtod(text, &end);

    if ((end == text) || (*end != '\0') || !isfinite(v) || (v < 0) || (v > ZSH_RUN_GRACE_MAX)) {
        fprintf(stderr, "zshrun: --%s '%s' is not a number of seconds from 0 to %.0f\n", name,
                text, ZSH_RUN_GRACE_MAX);
        return -1;
    }
    *out = v;
    return 0;
}

/* @dir/@prog if it is an executable file: 0 and the malloc'd path, else an errno. */
static int zsh_run_candidate(const char *dir, size_t dlen, const char *prog, char **path_p)
{
    struct stat st;
    char *path = malloc(dlen + strlen(prog) + 2);

    if (path == NULL) {
        return ENOMEM;
    }
    /* An empty entry of PATH is the current directory, as for the shell. */
    sprintf(path, "%.*s%s%s", (int)dlen, dir, (dlen > 0) ? "/" : "", prog);
    if ((stat(path, &st) == 0) && S_ISREG(st.st_mode)) {
        if (access(path, X_OK) == 0) {
            *path_p = path;
            return 0;
        }
        free(path);
        return EACCES;
    }
    free(path);
    return ENOENT;
}

/* Where execvp would find @prog, decided here so that a program that cannot
 * run stops zshrun before any rank starts. 0 or an exit status as a shell
 * gives it: 127 for not found, 126 for not executable. */
static int zsh_run_find(const char *prog, char **path_p)
{
    const char *dirs = getenv("PATH"), *end;
    int err = ENOENT, e;

    if (strchr(prog, '/') != NULL) {
        err = zsh_run_candidate("", 0, prog, path_p);
    } else if (prog[0] != '\0') {
        if (dirs == NULL) {
            dirs = "/bin:/usr/bin";
        }
        for (;; dirs = end + 1) {
            end = strchr(dirs, ':');
            if (end == NULL) {
                end = dirs + strlen(dirs);
            }
            e = zsh_run_candidate(dirs, (size_t)(end - dirs), prog, path_p);
            if ((e == 0) || (e == ENOMEM)) {
                err = e;
                break;
            }
            if (e == EACCES) {
                err = e; /* as execvp: reported unless found further on */
            }
            if (*end == '\0') {
                break;
            }
        }
    }
    if (err != 0) {
        fprintf(stderr, "zshrun: cannot run '%s': %s\n", prog, strerror(err));
        return (err == EACCES) ? 126 : 127;
    }
    return 0;
}

static int zsh_run_check(zsh_run_opts_t *o)
{
    if (o->node_rank >= o->nnodes) {
        fprintf(stderr, "zshrun: --node-rank %d is not below --nnodes %d\n", o->node_rank,
                o->nnodes);
        return -1;
    }
    /* Every node must meet at one store: none can pick it on its own. */
    if ((o->nnodes > 1) && ((o->master_addr == NULL) || (o->master_port == 0))) {
        fprintf(stderr, "zshrun: --nnodes %d needs --%s (the host and port of rank 0's store, "
                "the same on every node)\n", o->nnodes,
                (o->master_addr == NULL) ? "master-addr" : "master-port");
        return -1;
    }
    /* Across nodes the job's ranks count (agree.c), known only once
     * --slurm has found the nodes. */
    if (o->min_ranks > o->nnodes * o->nproc) {
        fprintf(stderr, "zshrun: --min-ranks %d is above the job's %d rank%s\n", o->min_ranks,
                o->nnodes * o->nproc, (o->nnodes * o->nproc == 1) ? "" : "s");
        return -1;
    }
    if ((o->master_addr != NULL) && (o->master_addr[0] == '\0')) {
        fprintf(stderr, "zshrun: --master-addr is empty\n");
        return -1;
    }
    if ((o->master_addr != NULL) && (strlen(o->master_addr) >= 256)) {
        fprintf(stderr, "zshrun: --master-addr is longer than 255 characters\n");
        return -1;
    }
    return 0;
}

int zsh_run_parse(int argc, char **argv, zsh_run_opts_t *o)
{
    /* The underscore spellings are torchrun's own; both map to one option. */
    static const struct option longopts[] = {
        {"nproc-per-node", required_argument, NULL, 'n'},
        {"nproc_per_node", required_argument, NULL, 'n'},
        {"nnodes", required_argument, NULL, 'N'},
        {"node-rank", required_argument, NULL, 'r'},
        {"node_rank", required_argument, NULL, 'r'},
        {"master-addr", required_argument, NULL, 'a'},
        {"master_addr", required_argument, NULL, 'a'},
        {"master-port", required_argument, NULL, 'p'},
        {"master_port", required_argument, NULL, 'p'},
        {"max-restarts", required_argument, NULL, 'm'},
        {"max_restarts", required_argument, NULL, 'm'},
        {"min-ranks", required_argument, NULL, 'M'},
        {"job-key-file", required_argument, NULL, 'k'},
        {"grace", required_argument, NULL, 'g'},
        {"join-timeout", required_argument, NULL, 'J'},
        {"no-prefix", no_argument, NULL, 'P'},
        {"no-thp", no_argument, NULL, 'T'},
        {"bind", required_argument, NULL, 'b'},
        {"report-bindings", no_argument, NULL, 'R'},
        {"slurm", no_argument, NULL, 'S'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    const char *placed = NULL; /* --nnodes or --node-rank, which --slurm sets */
    int opt, rc;

    *o = (zsh_run_opts_t){.nproc = 1, .nnodes = 1, .min_ranks = 1, .grace = 5.0,
                          .join_timeout = 30.0, .prefix = true, .thp = true,
                          .bind = ZSH_RUN_BIND_AUTO};
    /* "+": options end at the program, so its own options are left to it. */
    while ((opt = getopt_long(argc, argv, "+n:hV", longopts, NULL)) != -1) {
        switch (opt) {
        case 'n': rc = zsh_run_int("nproc-per-node", optarg, 1, ZSH_RUN_NPROC_MAX, &o->nproc); break;
        case 'N':
            placed = "--nnodes";
            rc     = zsh_run_int("nnodes", optarg, 1, ZSH_RUN_NNODES_MAX, &o->nnodes);
            break;
        case 'r':
            placed = "--node-rank";
            rc     = zsh_run_int("node-rank", optarg, 0, ZSH_RUN_NNODES_MAX - 1, &o->node_rank);
            break;
        case 'a': o->master_addr = optarg; rc = 0; break;
        case 'p': rc = zsh_run_int("master-port", optarg, 1, 65535, &o->master_port); break;
        case 'm':
            rc = zsh_run_int("max-restarts", optarg, 0, ZSH_RUN_RESTARTS_MAX, &o->max_restarts);
            break;
        case 'M': rc = zsh_run_int("min-ranks", optarg, 1, ZSH_RUN_NPROC_MAX, &o->min_ranks); break;
        case 'k': o->key_file = optarg; rc = 0; break;
        case 'g': rc = zsh_run_seconds("grace", optarg, &o->grace); break;
        case 'J': rc = zsh_run_seconds("join-timeout", optarg, &o->join_timeout); break;
        case 'P': o->prefix = false; rc = 0; break;
        case 'T': o->thp = false; rc = 0; break;
        case 'b': rc = zsh_run_bind_parse(optarg, &o->bind); break;
        case 'R': o->report = true; rc = 0; break;
        case 'S': o->slurm = true; rc = 0; break;
        case 'h': zsh_run_usage(stdout); return 1;
        case 'V': printf("zshrun (ZeroShard) %s\n", ZSH_VERSION_STRING); return 1;
        default: rc = -1; break; /* getopt named the option */
        }
        if (rc != 0) {
            goto usage;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "zshrun: no program to run\n");
        goto usage;
    }
    if (o->slurm && (placed != NULL)) {
        fprintf(stderr, "zshrun: --slurm takes the nodes from the Slurm job: %s is not given "
                "with it\n", placed);
        goto usage;
    }
    o->argv = argv + optind;
    /* Before --slurm, which may start zshrun on every node: a program that
     * cannot run starts nothing. */
    rc = zsh_run_find(argv[optind], &o->path);
    if ((rc == 0) && o->slurm) {
        rc = zsh_run_slurm(o, argc, argv);
    }
    if ((rc == 0) && (zsh_run_check(o) != 0)) {
        rc = 2;
        fprintf(stderr, "Try 'zshrun --help'.\n");
    }
    if (rc != 0) {
        free(o->path);
        o->path = NULL;
    }
    return rc;

usage:
    fprintf(stderr, "Try 'zshrun --help'.\n");
    return 2;
}
