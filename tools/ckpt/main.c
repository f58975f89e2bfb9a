/*
 * zsh_ckpt: a checkpoint of zsh_optim_save() read, checked and converted
 * offline, by one process with no communicator: its manifest printed
 * (info), every checksum checked (verify), its fp32 weights written as one
 * safetensors file (consolidate), or its state split again over another
 * number of shards (reshard). Everything goes through zero/ckpt's manifest,
 * reader and writer, so the tool reads and writes exactly what the
 * optimizer's save and load do.
 */
#include "ckpt_tool.h"

#include "ckpt/dir.h"
#include "core/config.h"
#include "core/escape.h"

#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void zsh_ckpt_tool_usage(FILE *out)
{
    fprintf(out,
            "Usage: zsh_ckpt info DIR [--json]\n"
            "       zsh_ckpt verify DIR\n"
            "       zsh_ckpt consolidate DIR OUT [--max-memory BYTES]\n"
            "       zsh_ckpt reshard DIR OUT --ranks M [--force]\n"
            "Read, check and convert a checkpoint of zsh_optim_save(). DIR is a checkpoint\n"
            "directory (the checkpoint its 'latest' names is used) or one checkpoint\n"
            "(DIR/step-N).\n"
            "  info         the manifest: format, world size, stage, precision, optimizer,\n"
            "               counters, loss scaler, hyperparameters, files and a table of the\n"
            "               parameters; --json prints manifest.json as it is\n"
            "  verify       every file's size and checksum, every chunk's and every\n"
            "               piece's; each failure names the file, the parameter and the\n"
            "               offset; exit 1 if any failed\n"
            "  consolidate  the fp32 weights of every parameter, in the manifest's order,\n"
            "               into one safetensors file OUT (written to a temporary beside it,\n"
            "               created exclusively, fsynced and renamed), through a bounded\n"
            "               buffer so that resident memory stays under --max-memory\n"
            "               (default 256M; suffixes k, M, G)\n"
            "  reshard      a new checkpoint directory OUT holding the same state split over\n"
            "               M shards (near-equal contiguous ranges of all parameters), every\n"
            "               value checked on the way; zsh_optim_load reads it at any world\n"
            "               size; it refuses to move OUT/latest back to an older step\n"
            "               unless --force\n"
            "OUT is never inside the checkpoint read, nor the same file as one it reads.\n"
            "Exit status: 0 done, 1 failed (a bad checkpoint, an I/O error), 2 bad usage.\n");
}

int zsh_ckpt_tool_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "zsh_ckpt%s%s: ", (cmd != NULL) ? " " : "", (cmd != NULL) ? cmd : "");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\nTry 'zsh_ckpt --help'.\n");
    return ZSH_CKPT_TOOL_USAGE;
}

/* The option of @opts that @arg ("--name" or "--name=value") names, with
 * its inline value in *@inline_p (NULL without one), or NULL. */
static const zsh_ckpt_tool_opt_t *zsh_ckpt_tool_find(const zsh_ckpt_tool_opt_t *opts,
                                                     size_t nopts, const char *arg,
                                                     const char **inline_p)
{
    const char *eq = strchr(arg, '=');
    size_t len = (eq != NULL) ? (size_t)(eq - arg) : strlen(arg), i;

    for (i = 0; i < nopts; i++) {
        if ((strlen(opts[i].name) == len) && (strncmp(opts[i].name, arg, len) == 0)) {
            *inline_p = (eq != NULL) ? eq + 1 : NULL;
            return &opts[i];
        }
    }
    return NULL;
}

int zsh_ckpt_tool_args(const char *cmd, int argc, char **argv, const zsh_ckpt_tool_opt_t *opts,
                       size_t nopts, const char **pos, int npos, const char *names)
{
    const zsh_ckpt_tool_opt_t *o;
    const char *arg, *value;
    bool options = true;
    int i, n = 0;

    for (i = 1; i < argc; i++) {
        arg = argv[i];
        if (options && (strcmp(arg, "--") == 0)) {
            options = false;
            continue;
        }
        if (options && ((strcmp(arg, "--help") == 0) || (strcmp(arg, "-h") == 0))) {
            zsh_ckpt_tool_usage(stdout);
            return ZSH_CKPT_TOOL_OK;
        }
        if (!options || (arg[0] != '-') || (arg[1] == '\0')) {
            if (n == npos) {
                return zsh_ckpt_tool_usage_error(cmd, "unexpected argument '%s' (it takes %s)",
                                                 arg, names);
            }
            pos[n++] = arg;
            continue;
        }
        o = zsh_ckpt_tool_find(opts, nopts, arg, &value);
        if (o == NULL) {
            return zsh_ckpt_tool_usage_error(cmd, "unrecognized option '%s'", arg);
        }
        if (o->value == NULL) {
            if (value != NULL) {
                return zsh_ckpt_tool_usage_error(cmd, "%s takes no value", o->name);
            }
            *o->flag = 1;
            continue;
        }
        if ((value == NULL) && (i + 1 == argc)) {
            return zsh_ckpt_tool_usage_error(cmd, "%s needs a value", o->name);
        }
        *o->value = (value != NULL) ? value : argv[++i];
    }
    if (n < npos) {
        return zsh_ckpt_tool_usage_error(cmd, "missing arguments: it takes %s", names);
    }
    return ZSH_CKPT_TOOL_GO_ON;
}

int zsh_ckpt_tool_fail(const char *cmd, const char *what)
{
    char esc[ZSH_ESCAPED_MAX];

    fprintf(stderr, "zsh_ckpt %s: %s: %s\n", cmd, zsh_escape_str(what, esc, sizeof(esc)),
            zsh_last_error());
    return ZSH_CKPT_TOOL_FAIL;
}

/* @out as it will be reached: its directory's real path and its own name
 * (the name itself is not followed: a rename replaces a link, it never
 * writes through one). Empty when the directory does not exist. */
static void zsh_ckpt_tool_where(const char *out, char *buf, size_t len)
{
    char copy[ZSH_CKPT_PATH_MAX], *slash, *real;
    const char *base = out;

    buf[0] = '\0';
    snprintf(copy, sizeof(copy), "%s", out);
    slash = strrchr(copy, '/');
    if (slash != NULL) {
        base   = out + (slash - copy) + 1;
        *slash = '\0';
    }
    real = realpath((slash == NULL) ? "." : (copy[0] == '\0') ? "/" : copy, NULL);
    if (real != NULL) {
        snprintf(buf, len, "%s/%s", real, base);
        free(real);
    }
}

/* @out is the file @in, or inside the directory @in (both resolved). */
static bool zsh_ckpt_tool_inside(const char *where, const char *in)
{
    char *real = realpath(in, NULL);
    size_t n;
    bool inside;

    if ((real == NULL) || (where[0] == '\0')) {
        free(real);
        return false;
    }
    n      = strlen(real);
    inside = (strncmp(where, real, n) == 0) && ((where[n] == '\0') || (where[n] == '/'));
    free(real);
    return inside;
}

/* The same file (device and inode) as @a, the output, resolved or not. */
static bool zsh_ckpt_tool_same(const char *out, const char *in)
{
    struct stat o, l, i;

    if (stat(in, &i) != 0) {
        return false;
    }
    return ((stat(out, &o) == 0) && (o.st_dev == i.st_dev) && (o.st_ino == i.st_ino)) ||
           ((lstat(out, &l) == 0) && (l.st_dev == i.st_dev) && (l.st_ino == i.st_ino));
}

int zsh_ckpt_tool_out_check(const char *cmd, const char *dir, const char *path,
                            const zsh_ckpt_t *ck, const char *out)
{
    char where[2 * ZSH_CKPT_PATH_MAX], in[ZSH_CKPT_PATH_MAX + 64], name[64];
    char a[ZSH_ESCAPED_MAX], b[ZSH_ESCAPED_MAX];
    size_t f, nfiles = (size_t)ck->nshards * (size_t)ck->nkinds;

    zsh_ckpt_tool_where(out, where, sizeof(where));
    zsh_escape_str(out, a, sizeof(a));
    zsh_escape_str(path, b, sizeof(b));
    if (zsh_ckpt_tool_inside(where, path)) {
        fprintf(stderr, "zsh_ckpt %s: the output %s is inside the checkpoint %s it reads; "
                "write it elsewhere\n", cmd, a, b);
        return ZSH_CKPT_TOOL_FAIL;
    }
    snprintf(in, sizeof(in), "%s/%s", dir, ZSH_CKPT_LATEST);
    if (zsh_ckpt_tool_same(out, in)) {
        fprintf(stderr, "zsh_ckpt %s: the output %s is %s, which names the checkpoint it "
                "reads; write it elsewhere\n", cmd, a, zsh_escape_str(in, b, sizeof(b)));
        return ZSH_CKPT_TOOL_FAIL;
    }
    for (f = 0; f <= nfiles; f++) {
        if (f < nfiles) {
            zsh_ckpt_file_name(name, sizeof(name), (int)(f % (size_t)ck->nkinds),
                               (uint32_t)(f / (size_t)ck->nkinds));
        }
        snprintf(in, sizeof(in), "%s/%s", path, (f < nfiles) ? name : ZSH_CKPT_MANIFEST);
        if (zsh_ckpt_tool_same(out, in)) {
            fprintf(stderr, "zsh_ckpt %s: the output %s is the same file as %s, which it "
                    "reads; write it elsewhere\n", cmd, a, zsh_escape_str(in, b, sizeof(b)));
            return ZSH_CKPT_TOOL_FAIL;
        }
    }
    return ZSH_CKPT_TOOL_GO_ON;
}

zsh_status_t zsh_ckpt_tool_open(const char *dir, char *path, size_t len, zsh_ckpt_t *ck)
{
    char mpath[ZSH_CKPT_PATH_MAX + 32];
    zsh_status_t status;

    memset(ck, 0, sizeof(*ck));
    status = zsh_ckpt_resolve(dir, path, len);
    if (status != ZSH_OK) {
        return status;
    }
    snprintf(mpath, sizeof(mpath), "%s/%s", path, ZSH_CKPT_MANIFEST);
    return zsh_ckpt_manifest_read(mpath, ck);
}

const char *zsh_ckpt_tool_size(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double v = (double)bytes;
    int u = 0;

    while ((v >= 1024.0) && (u < 6)) {
        v /= 1024.0;
        u++;
    }
    if (u == 0) {
        snprintf(buf, len, "%llu B", (unsigned long long)bytes);
    } else {
        snprintf(buf, len, "%.2f %s", v, units[u]);
    }
    return buf;
}

int zsh_ckpt_tool_parse_size(const char *text, uint64_t *bytes_p)
{
    size_t v;

    if ((zsh_config_parse_size(text, &v) != 0) || (v == 0)) {
        return -1;
    }
    *bytes_p = v;
    return 0;
}

uint64_t zsh_ckpt_tool_total(const zsh_ckpt_t *ck)
{
    uint64_t total = 0;
    size_t i;

    for (i = 0; i < ck->nparams; i++) {
        total += ck->params[i].numel;
    }
    return total;
}

typedef struct zsh_ckpt_tool_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
} zsh_ckpt_tool_cmd_t;

static const zsh_ckpt_tool_cmd_t zsh_ckpt_tool_cmds[] = {
    {"info", zsh_ckpt_tool_info},
    {"verify", zsh_ckpt_tool_verify},
    {"consolidate", zsh_ckpt_tool_consolidate},
    {"reshard", zsh_ckpt_tool_reshard},
};

int main(int argc, char **argv)
{
    size_t i;

    if ((argc < 2) || (strcmp(argv[1], "--help") == 0) || (strcmp(argv[1], "-h") == 0)) {
        zsh_ckpt_tool_usage((argc < 2) ? stderr : stdout);
        return (argc < 2) ? ZSH_CKPT_TOOL_USAGE : ZSH_CKPT_TOOL_OK;
    }
    for (i = 0; i < sizeof(zsh_ckpt_tool_cmds) / sizeof(zsh_ckpt_tool_cmds[0]); i++) {
        if (strcmp(argv[1], zsh_ckpt_tool_cmds[i].name) == 0) {
            return zsh_ckpt_tool_cmds[i].run(argc - 1, argv + 1);
        }
    }
    return zsh_ckpt_tool_usage_error(NULL, "unknown subcommand '%s': one of info, verify, "
                                     "consolidate, reshard", argv[1]);
}
