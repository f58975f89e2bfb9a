/*
 * The manifest written as JSON: what the checkpoint holds (the optimizer's
 * settings and counters) and where (every file, every parameter's pieces),
 * with their checksums as 16 hex digits.
 */
#define _GNU_SOURCE
#include "ckpt/format.h"
#include "ckpt/hash.h"

#include "core/dtype.h"
#include "core/status.h"

#include <json-c/json.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const zsh_ckpt_kind_names[ZSH_CKPT_KINDS] = {"weights", "exp_avg", "exp_avg_sq"};

void zsh_ckpt_file_name(char *buf, size_t len, int k, uint32_t s)
{
    snprintf(buf, len, "%s-%05u.bin", zsh_ckpt_kind_names[k], s);
}

void zsh_ckpt_shard_elems(const zsh_ckpt_t *ck, uint64_t *elems)
{
    size_t i, j;

    memset(elems, 0, ck->nshards * sizeof(*elems));
    for (i = 0; i < ck->nparams; i++) {
        for (j = 0; j < ck->params[i].npieces; j++) {
            elems[ck->params[i].pieces[j].shard] += ck->params[i].pieces[j].count;
        }
    }
}

void zsh_ckpt_free(zsh_ckpt_t *ck)
{
    size_t i;

    if (ck->params != NULL) {
        for (i = 0; i < ck->nparams; i++) {
            free(ck->params[i].name);
            free(ck->params[i].pieces);
        }
    }
    if (ck->files != NULL) {
        for (i = 0; i < (size_t)ck->nshards * (size_t)ck->nkinds; i++) {
            free(ck->files[i].chunks);
        }
    }
    free(ck->params);
    free(ck->files);
    memset(ck, 0, sizeof(*ck));
}

char *zsh_ckpt_self_digits(const char *text, size_t len)
{
    const char *key = "\"" ZSH_CKPT_SELF_KEY "\"", *at = NULL, *p = text;
    size_t klen = strlen(key);

    while ((p = memmem(p, len - (size_t)(p - text), key, klen)) != NULL) {
        at = p;
        p += klen;
    }
    if (at == NULL) {
        return NULL;
    }
    at = memchr(at + klen, '"', len - (size_t)(at + klen - text));
    if ((at == NULL) || ((size_t)(at - text) + 17 >= len) || (at[17] != '"')) {
        return NULL;
    }
    return (char *)at + 1;
}

static json_object *zsh_ckpt_hex(uint64_t h)
{
    char buf[17];

    snprintf(buf, sizeof(buf), "%016" PRIx64, h);
    return json_object_new_string(buf);
}

/* @x as the shortest decimal of at most @maxprec digits that reads back as
 * @x narrowed by @narrow (float, or double itself). */
static json_object *zsh_ckpt_number(double x, int maxprec, double (*narrow)(double))
{
    char buf[40];
    int prec;

    for (prec = 6; prec < maxprec; prec++) {
        snprintf(buf, sizeof(buf), "%.*g", prec, x);
        if (narrow(strtod(buf, NULL)) == x) { /* as the reader takes it: a double, narrowed */
            break;
        }
    }
    snprintf(buf, sizeof(buf), "%.*g", prec, x);
    if (strpbrk(buf, ".eEn") == NULL) { /* a whole number stays a JSON number with a point */
        strncat(buf, ".0", sizeof(buf) - strlen(buf) - 1);
    }
    return json_object_new_double_s(x, buf);
}

static double zsh_ckpt_to_float(double x) { return (float)x; }
static double zsh_ckpt_to_double(double x) { return x; }

/* A float as the shortest decimal that reads back as the same float. */
static json_object *zsh_ckpt_float(float f)
{
    return zsh_ckpt_number((double)f, 9, zsh_ckpt_to_float);
}

/* A double as the shortest decimal that reads back as the same double. */
static json_object *zsh_ckpt_double(double d)
{
    return zsh_ckpt_number(d, 17, zsh_ckpt_to_double);
}

static void zsh_ckpt_put(json_object *o, const char *key, json_object *v)
{
    json_object_object_add(o, key, v);
}

const char *zsh_ckpt_optim_name(zsh_optim_kind_t kind)
{
    return (kind == ZSH_OPTIM_SGD) ? "sgd" : (kind == ZSH_OPTIM_ADAM) ? "adam" : "adamw";
}

static json_object *zsh_ckpt_json_header(const zsh_ckpt_t *ck)
{
    json_object *o = json_object_new_object(), *sc, *hy, *kinds;
    int k;

    zsh_ckpt_put(o, "format", json_object_new_string(ZSH_CKPT_FORMAT));
    zsh_ckpt_put(o, "version", json_object_new_int(ck->version));
    zsh_ckpt_put(o, "world_size", json_object_new_int(ck->world_size));
    zsh_ckpt_put(o, "stage", json_object_new_int(ck->stage));
    zsh_ckpt_put(o, "precision", json_object_new_string(zsh_dtype_name(ck->precision)));
    zsh_ckpt_put(o, "optimizer", json_object_new_string(zsh_ckpt_optim_name(ck->kind)));
    zsh_ckpt_put(o, "step", json_object_new_uint64(ck->step));
    zsh_ckpt_put(o, "steps", json_object_new_uint64(ck->steps));
    zsh_ckpt_put(o, "skipped_steps", json_object_new_uint64(ck->skipped_steps));
    sc = json_object_new_object();
    zsh_ckpt_put(sc, "scale", zsh_ckpt_float(ck->scaler.scale));
    zsh_ckpt_put(sc, "min_scale", zsh_ckpt_float(ck->scaler.min_scale));
    zsh_ckpt_put(sc, "window", json_object_new_uint64(ck->scaler.window));
    zsh_ckpt_put(sc, "clean", json_object_new_uint64(ck->scaler.clean));
    zsh_ckpt_put(sc, "dynamic", json_object_new_boolean(ck->scaler.dynamic));
    zsh_ckpt_put(o, "loss_scaler", sc);
    hy = json_object_new_object();
    zsh_ckpt_put(hy, "lr", zsh_ckpt_double(ck->hyper.lr));
    zsh_ckpt_put(hy, "beta1", zsh_ckpt_double(ck->hyper.beta1));
    zsh_ckpt_put(hy, "beta2", zsh_ckpt_double(ck->hyper.beta2));
    zsh_ckpt_put(hy, "eps", zsh_ckpt_double(ck->hyper.eps));
    zsh_ckpt_put(hy, "weight_decay", zsh_ckpt_double(ck->hyper.weight_decay));
    zsh_ckpt_put(hy, "momentum", zsh_ckpt_double(ck->hyper.momentum));
    zsh_ckpt_put(hy, "nesterov", json_object_new_boolean(ck->hyper.nesterov));
    zsh_ckpt_put(hy, "max_grad_norm", zsh_ckpt_float(ck->hyper.max_grad_norm));
    zsh_ckpt_put(o, "hyperparameters", hy);
    kinds = json_object_new_array();
    for (k = 0; k < ck->nkinds; k++) {
        json_object_array_add(kinds, json_object_new_string(zsh_ckpt_kind_names[k]));
    }
    zsh_ckpt_put(o, "kinds", kinds);
    zsh_ckpt_put(o, "hash", json_object_new_string("xxh3-64"));
    zsh_ckpt_put(o, "chunk_bytes", json_object_new_uint64(ZSH_CKPT_CHUNK));
    zsh_ckpt_put(o, "shards", json_object_new_uint64(ck->nshards));
    return o;
}

static json_object *zsh_ckpt_json_files(const zsh_ckpt_t *ck)
{
    json_object *files = json_object_new_array(), *f, *chunks;
    char name[64];
    uint32_t s;
    size_t c;
    int k;

    for (s = 0; s < ck->nshards; s++) {
        for (k = 0; k < ck->nkinds; k++) {
            const zsh_ckpt_file_t *file = &ck->files[(size_t)s * ck->nkinds + k];

            f = json_object_new_object();
            zsh_ckpt_file_name(name, sizeof(name), k, s);
            zsh_ckpt_put(f, "name", json_object_new_string(name));
            zsh_ckpt_put(f, "shard", json_object_new_uint64(s));
            zsh_ckpt_put(f, "kind", json_object_new_string(zsh_ckpt_kind_names[k]));
            zsh_ckpt_put(f, "bytes", json_object_new_uint64(file->bytes));
            zsh_ckpt_put(f, "xxh3", zsh_ckpt_hex(file->hash));
            chunks = json_object_new_array_ext((int)file->nchunks);
            for (c = 0; c < file->nchunks; c++) {
                json_object_array_add(chunks, zsh_ckpt_hex(file->chunks[c]));
            }
            zsh_ckpt_put(f, "chunks", chunks);
            json_object_array_add(files, f);
        }
    }
    return files;
}

static json_object *zsh_ckpt_json_params(const zsh_ckpt_t *ck)
{
    json_object *params = json_object_new_array_ext((int)ck->nparams), *p, *pieces, *pc, *h, *sh;
    size_t i, j;
    int k;

    for (i = 0; i < ck->nparams; i++) {
        const zsh_ckpt_param_t *cp = &ck->params[i];

        p = json_object_new_object();
        zsh_ckpt_put(p, "name", json_object_new_string(cp->name));
        zsh_ckpt_put(p, "dtype", json_object_new_string(zsh_dtype_name(ck->precision)));
        sh = json_object_new_array();
        json_object_array_add(sh, json_object_new_uint64(cp->numel));
        zsh_ckpt_put(p, "shape", sh);
        zsh_ckpt_put(p, "numel", json_object_new_uint64(cp->numel));
        zsh_ckpt_put(p, "updates", json_object_new_uint64(cp->updates));
        pieces = json_object_new_array_ext((int)cp->npieces);
        for (j = 0; j < cp->npieces; j++) {
            const zsh_ckpt_piece_t *piece = &cp->pieces[j];

            pc = json_object_new_object();
            zsh_ckpt_put(pc, "shard", json_object_new_uint64(piece->shard));
            zsh_ckpt_put(pc, "offset", json_object_new_uint64(piece->offset));
            zsh_ckpt_put(pc, "start", json_object_new_uint64(piece->start));
            zsh_ckpt_put(pc, "count", json_object_new_uint64(piece->count));
            h = json_object_new_array();
            for (k = 0; k < ck->nkinds; k++) {
                json_object_array_add(h, zsh_ckpt_hex(piece->hash[k]));
            }
            zsh_ckpt_put(pc, "xxh3", h);
            json_object_array_add(pieces, pc);
        }
        zsh_ckpt_put(p, "pieces", pieces);
        json_object_array_add(params, p);
    }
    return params;
}

zsh_status_t zsh_ckpt_manifest_write(const zsh_ckpt_t *ck, const char *path)
{
    json_object *root = zsh_ckpt_json_header(ck);
    zsh_status_t status = ZSH_OK;
    const char *text;
    char *digits, hex[17];
    XXH3_state_t *st;
    size_t len, off;
    ssize_t n;
    int fd;

    zsh_ckpt_put(root, "files", zsh_ckpt_json_files(ck));
    zsh_ckpt_put(root, "params", zsh_ckpt_json_params(ck));
    /* Last, the checksum of the text itself, taken with its 16 digits zero. */
    zsh_ckpt_put(root, ZSH_CKPT_SELF_KEY, zsh_ckpt_hex(0));
    text = json_object_to_json_string_length(root, JSON_C_TO_STRING_PRETTY |
                                                       JSON_C_TO_STRING_NOSLASHESCAPE, &len);
    digits = zsh_ckpt_self_digits(text, len);
    if (digits == NULL) {
        json_object_put(root);
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: no room for the manifest's checksum", path);
    }
    /* The file is the text and a newline. */
    st = XXH3_createState();
    if (st == NULL) {
        json_object_put(root);
        return zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", path);
    }
    XXH3_64bits_reset(st);
    XXH3_64bits_update(st, text, len);
    XXH3_64bits_update(st, "\n", 1);
    snprintf(hex, sizeof(hex), "%016" PRIx64, XXH3_64bits_digest(st));
    XXH3_freeState(st);
    memcpy(digits, hex, 16);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        status = zsh_error(ZSH_ERR_IO, "cannot create %s: %s", path, strerror(errno));
        goto out;
    }
    for (off = 0; off < len; off += (size_t)n) {
        n = write(fd, text + off, len - off);
        if (n < 0 && errno == EINTR) {
            n = 0;
        } else if (n <= 0) {
            status = zsh_error(ZSH_ERR_IO, "cannot write %s: %s", path,
                               (n < 0) ? strerror(errno) : "no progress");
            break;
        }
    }
    if ((status == ZSH_OK) && ((write(fd, "\n", 1) != 1) || (fsync(fd) != 0))) {
        status = zsh_error(ZSH_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    }
    if ((close(fd) != 0) && (status == ZSH_OK)) {
        status = zsh_error(ZSH_ERR_IO, "cannot close %s: %s", path, strerror(errno));
    }
out:
    json_object_put(root);
    return status;
}
