/*
 * zsh_ckpt info: what a checkpoint's manifest says, for a person: the
 * settings and counters it resumes, its files and the parameters with
 * their pieces. Only the manifest is read (and checked against its own
 * checksum); verify reads the files.
 */
#include "ckpt_tool.h"

#include "core/dtype.h"
#include "core/escape.h"
#include "core/file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void zsh_ckpt_info_header(const zsh_ckpt_t *ck, const char *path)
{
    char esc[ZSH_ESCAPED_MAX];
    int k;

    printf("checkpoint      %s\n", zsh_escape_str(path, esc, sizeof(esc)));
    printf("format          %s version %d\n", ZSH_CKPT_FORMAT, ck->version);
    printf("world size      %d (stage %d)\n", ck->world_size, ck->stage);
    printf("precision       %s (the files hold fp32)\n", zsh_dtype_name(ck->precision));
    printf("optimizer       %s, kinds:", zsh_ckpt_optim_name(ck->kind));
    for (k = 0; k < ck->nkinds; k++) {
        printf(" %s", zsh_ckpt_kind_names[k]);
    }
    printf("\n");
    printf("step            %lu updates; %lu steps, %lu skipped\n", ck->step, ck->steps,
           ck->skipped_steps);
    printf("loss scaler     scale %g, min %g, window %u, clean %u, %s\n", ck->scaler.scale,
           ck->scaler.min_scale, ck->scaler.window, ck->scaler.clean,
           ck->scaler.dynamic ? "dynamic" : "static");
    printf("hyperparameters lr %g, beta1 %g, beta2 %g, eps %g, weight_decay %g, momentum %g, "
           "nesterov %s, max_grad_norm %g\n", ck->hyper.lr, ck->hyper.beta1, ck->hyper.beta2,
           ck->hyper.eps, ck->hyper.weight_decay, ck->hyper.momentum,
           ck->hyper.nesterov ? "yes" : "no", ck->hyper.max_grad_norm);
    printf("shards          %u\n", ck->nshards);
}

static void zsh_ckpt_info_files(const zsh_ckpt_t *ck)
{
    size_t nfiles = (size_t)ck->nshards * (size_t)ck->nkinds, i;
    uint64_t total = 0;
    char name[64], size[32];

    for (i = 0; i < nfiles; i++) {
        total += ck->files[i].bytes;
    }
    printf("files           %zu, %s\n", nfiles, zsh_ckpt_tool_size(total, size, sizeof(size)));
    for (i = 0; i < nfiles; i++) {
        zsh_ckpt_file_name(name, sizeof(name), (int)(i % (size_t)ck->nkinds),
                           (uint32_t)(i / (size_t)ck->nkinds));
        printf("  %-24s %14" PRIu64 " B  %12s  xxh3 %016" PRIx64 "\n", name, ck->files[i].bytes,
               zsh_ckpt_tool_size(ck->files[i].bytes, size, sizeof(size)), ck->files[i].hash);
    }
}

static void zsh_ckpt_info_params(const zsh_ckpt_t *ck)
{
    int width = (int)strlen("name");
    char shape[32], esc[ZSH_ESCAPED_MAX];
    size_t i;

    for (i = 0; i < ck->nparams; i++) {
        zsh_escape_str(ck->params[i].name, esc, sizeof(esc));
        width = ((int)strlen(esc) > width) ? (int)strlen(esc) : width;
    }
    printf("params          %zu, %" PRIu64 " elements\n", ck->nparams, zsh_ckpt_tool_total(ck));
    printf("  %-*s  %-5s  %-16s  %14s  %6s\n", width, "name", "dtype", "shape", "numel",
           "pieces");
    for (i = 0; i < ck->nparams; i++) {
        snprintf(shape, sizeof(shape), "[%" PRIu64 "]", ck->params[i].numel);
        printf("  %-*s  %-5s  %-16s  %14" PRIu64 "  %6zu\n", width,
               zsh_escape_str(ck->params[i].name, esc, sizeof(esc)),
               zsh_dtype_name(ck->precision), shape, ck->params[i].numel,
               ck->params[i].npieces);
    }
}

/* The manifest's bytes as they are on disk, read as the check read them,
 * but for control bytes other than newlines: JSON's own escape for them,
 * so a string in it cannot drive the terminal. */
static int zsh_ckpt_info_json(const char *path)
{
    char mpath[ZSH_CKPT_PATH_MAX + 32], *text;
    unsigned char c;
    size_t len, i;

    snprintf(mpath, sizeof(mpath), "%s/%s", path, ZSH_CKPT_MANIFEST);
    if (zsh_file_read_all(mpath, false, ZSH_CKPT_MANIFEST_MAX, "the manifest", &text, &len) !=
        ZSH_OK) {
        return zsh_ckpt_tool_fail("info", "--json");
    }
    for (i = 0; i < len; i++) {
        c = (unsigned char)text[i];
        if (((c < ' ') && (c != '\n')) || (c == 0x7f)) {
            printf("\\u%04x", c);
        } else {
            putchar(c);
        }
    }
    free(text);
    return (fflush(stdout) == 0) ? ZSH_CKPT_TOOL_OK : ZSH_CKPT_TOOL_FAIL;
}

int zsh_ckpt_tool_info(int argc, char **argv)
{
    const char *pos[1];
    int json = 0, rc;
    const zsh_ckpt_tool_opt_t opts[] = {{"--json", NULL, &json}};
    char path[ZSH_CKPT_PATH_MAX];
    zsh_ckpt_t ck;

    rc = zsh_ckpt_tool_args("info", argc, argv, opts, 1, pos, 1, "DIR");
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        return rc;
    }
    /* Read and checked even for --json: what it prints is then a manifest
     * the optimizer would load. */
    if (zsh_ckpt_tool_open(pos[0], path, sizeof(path), &ck) != ZSH_OK) {
        zsh_ckpt_free(&ck);
        return zsh_ckpt_tool_fail("info", pos[0]);
    }
    if (json) {
        rc = zsh_ckpt_info_json(path);
    } else {
        zsh_ckpt_info_header(&ck, path);
        zsh_ckpt_info_files(&ck);
        zsh_ckpt_info_params(&ck);
        rc = (fflush(stdout) == 0) ? ZSH_CKPT_TOOL_OK : ZSH_CKPT_TOOL_FAIL;
    }
    zsh_ckpt_free(&ck);
    return rc;
}
