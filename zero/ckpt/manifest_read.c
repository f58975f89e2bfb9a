/*
 * The manifest read back and checked before anything trusts it: every field
 * present with its type, the pieces of each parameter tiling it in order,
 * every piece inside its shard's files, every file's chunk count matching
 * its size. A manifest that fails names the field.
 */
#include "ckpt/format.h"
#include "ckpt/hash.h"

#include "optim/rule/hyper.h"

#include "core/dtype.h"
#include "core/escape.h"
#include "core/file.h"
#include "core/status.h"

#include <json-c/json.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct zsh_ckpt_parse {
    const char  *path;
    zsh_status_t status;
} zsh_ckpt_parse_t;

/* A string of the manifest, escaped for a message. */
static const char *zsh_ckpt_text(json_object *v, char *buf, size_t len)
{
    return zsh_escape_str(json_object_get_string(v), buf, len);
}

static json_object *zsh_ckpt_get(zsh_ckpt_parse_t *ps, json_object *o, const char *key,
                                 json_type type, const char *where)
{
    json_object *v = NULL;

    if (ps->status != ZSH_OK) {
        return NULL;
    }
    if ((o == NULL) || !json_object_object_get_ex(o, key, &v) ||
        !json_object_is_type(v, type)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s%s\"%s\" is missing or not a %s",
                               ps->path, where, (where[0] != '\0') ? ": " : "", key,
                               json_type_to_name(type));
        return NULL;
    }
    return v;
}

/* A number field, integer or (for the floats) double. */
static uint64_t zsh_ckpt_u64(zsh_ckpt_parse_t *ps, json_object *o, const char *key,
                             const char *where)
{
    json_object *v = zsh_ckpt_get(ps, o, key, json_type_int, where);

    if (v == NULL) {
        return 0;
    }
    if (json_object_get_int64(v) < 0) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s: \"%s\" is negative", ps->path,
                               where, key);
        return 0;
    }
    return json_object_get_uint64(v);
}

/* A number field of at most @max: what a narrower field would wrap is refused. */
static uint64_t zsh_ckpt_bounded(zsh_ckpt_parse_t *ps, json_object *o, const char *key,
                                 const char *where, uint64_t max)
{
    uint64_t v = zsh_ckpt_u64(ps, o, key, where);

    if ((ps->status == ZSH_OK) && (v > max)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s%s\"%s\" is %" PRIu64 ", more than "
                               "%" PRIu64, ps->path, where, (where[0] != '\0') ? ": " : "", key,
                               v, max);
    }
    return v;
}

static double zsh_ckpt_double(zsh_ckpt_parse_t *ps, json_object *o, const char *key)
{
    json_object *v = NULL;

    if ((ps->status != ZSH_OK) || !json_object_object_get_ex(o, key, &v) ||
        !(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int))) {
        if (ps->status == ZSH_OK) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: \"%s\" is missing or not a number",
                                   ps->path, key);
        }
        return 0.0;
    }
    return json_object_get_double(v);
}

static float zsh_ckpt_float(zsh_ckpt_parse_t *ps, json_object *o, const char *key)
{
    return (float)zsh_ckpt_double(ps, o, key);
}

static int zsh_ckpt_bool(zsh_ckpt_parse_t *ps, json_object *o, const char *key)
{
    json_object *v = zsh_ckpt_get(ps, o, key, json_type_boolean, "");

    return (v != NULL) ? json_object_get_boolean(v) : 0;
}

static uint64_t zsh_ckpt_hash(zsh_ckpt_parse_t *ps, json_object *v, const char *where)
{
    char *end, esc[64];
    const char *s;
    uint64_t h;

    if (ps->status != ZSH_OK) {
        return 0;
    }
    s = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : "";
    errno = 0;
    h     = strtoull(s, &end, 16);
    if ((strlen(s) != 16) || (*end != '\0') || (errno != 0)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s: \"%s\" is not a checksum", ps->path,
                               where, zsh_escape_str(s, esc, sizeof(esc)));
    }
    return h;
}

static void zsh_ckpt_parse_header(zsh_ckpt_parse_t *ps, json_object *root, zsh_ckpt_t *ck)
{
    uint64_t version, world_size, stage, shards;
    json_object *v, *sc, *hy;
    char esc[64];
    const char *s;
    int i;

    v = zsh_ckpt_get(ps, root, "format", json_type_string, "");
    if ((v != NULL) && (strcmp(json_object_get_string(v), ZSH_CKPT_FORMAT) != 0)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: format \"%s\" is not \"%s\"", ps->path,
                               zsh_ckpt_text(v, esc, sizeof(esc)), ZSH_CKPT_FORMAT);
    }
    version = zsh_ckpt_u64(ps, root, "version", "");
    if ((ps->status == ZSH_OK) && (version != ZSH_CKPT_VERSION)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                               "%s: format version %" PRIu64 "; this build reads version %d",
                               ps->path, version, ZSH_CKPT_VERSION);
    }
    ck->version = (int)version;
    world_size  = zsh_ckpt_u64(ps, root, "world_size", "");
    stage       = zsh_ckpt_u64(ps, root, "stage", "");
    if ((ps->status == ZSH_OK) && ((world_size < 1) || (world_size > ZSH_CKPT_SHARDS_MAX) ||
                                   (stage > 3))) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                               "%s: world_size %" PRIu64 " or stage %" PRIu64 " is out of range "
                               "(world_size 1 to %u, stage 0 to 3)", ps->path, world_size, stage,
                               ZSH_CKPT_SHARDS_MAX);
    }
    ck->world_size = (int)world_size;
    ck->stage      = (int)stage;
    v = zsh_ckpt_get(ps, root, "precision", json_type_string, "");
    ck->precision = (zsh_dtype_t)-1;
    for (i = 0; (v != NULL) && (i < ZSH_DTYPE_COUNT); i++) {
        if (strcmp(zsh_dtype_name((zsh_dtype_t)i), json_object_get_string(v)) == 0) {
            ck->precision = (zsh_dtype_t)i;
        }
    }
    if ((v != NULL) && (ck->precision != ZSH_FLOAT32) && (ck->precision != ZSH_BFLOAT16) &&
        (ck->precision != ZSH_FLOAT16)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: precision \"%s\" is not fp32, bf16 or "
                               "fp16", ps->path, zsh_ckpt_text(v, esc, sizeof(esc)));
    }
    v = zsh_ckpt_get(ps, root, "optimizer", json_type_string, "");
    s = (v != NULL) ? json_object_get_string(v) : "";
    ck->kind = (strcmp(s, "sgd") == 0) ? ZSH_OPTIM_SGD
               : (strcmp(s, "adam") == 0) ? ZSH_OPTIM_ADAM
                                          : ZSH_OPTIM_ADAMW;
    if ((v != NULL) && (strcmp(s, "sgd") != 0) && (strcmp(s, "adam") != 0) &&
        (strcmp(s, "adamw") != 0)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: optimizer \"%s\" is not sgd, adam or "
                               "adamw", ps->path, zsh_ckpt_text(v, esc, sizeof(esc)));
    }
    ck->step          = zsh_ckpt_bounded(ps, root, "step", "", ZSH_CKPT_COUNTER_MAX);
    ck->steps         = zsh_ckpt_bounded(ps, root, "steps", "", ZSH_CKPT_COUNTER_MAX);
    ck->skipped_steps = zsh_ckpt_bounded(ps, root, "skipped_steps", "", ZSH_CKPT_COUNTER_MAX);
    sc = zsh_ckpt_get(ps, root, "loss_scaler", json_type_object, "");
    if (sc != NULL) {
        ck->scaler.scale     = zsh_ckpt_float(ps, sc, "scale");
        ck->scaler.min_scale = zsh_ckpt_float(ps, sc, "min_scale");
        ck->scaler.window    = (unsigned)zsh_ckpt_bounded(ps, sc, "window", "loss_scaler",
                                                          UINT_MAX);
        ck->scaler.clean     = (unsigned)zsh_ckpt_bounded(ps, sc, "clean", "loss_scaler",
                                                          UINT_MAX);
        ck->scaler.dynamic   = zsh_ckpt_bool(ps, sc, "dynamic");
    }
    hy = zsh_ckpt_get(ps, root, "hyperparameters", json_type_object, "");
    if (hy != NULL) {
        ck->hyper.lr            = zsh_ckpt_double(ps, hy, "lr");
        ck->hyper.beta1         = zsh_ckpt_double(ps, hy, "beta1");
        ck->hyper.beta2         = zsh_ckpt_double(ps, hy, "beta2");
        ck->hyper.eps           = zsh_ckpt_double(ps, hy, "eps");
        ck->hyper.weight_decay  = zsh_ckpt_double(ps, hy, "weight_decay");
        ck->hyper.momentum      = zsh_ckpt_double(ps, hy, "momentum");
        ck->hyper.max_grad_norm = zsh_ckpt_float(ps, hy, "max_grad_norm");
        ck->hyper.nesterov      = zsh_ckpt_bool(ps, hy, "nesterov");
    }
    v = zsh_ckpt_get(ps, root, "kinds", json_type_array, "");
    ck->nkinds = (v != NULL) ? (int)json_object_array_length(v) : 0;
    for (i = 0; (v != NULL) && (ps->status == ZSH_OK) && (i < ck->nkinds); i++) {
        json_object *kv = json_object_array_get_idx(v, (size_t)i);

        if ((i >= ZSH_CKPT_KINDS) || !json_object_is_type(kv, json_type_string) ||
            (strcmp(json_object_get_string(kv), zsh_ckpt_kind_names[i]) != 0)) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: kinds: entry %d is not \"%s\"",
                                   ps->path, i, (i < ZSH_CKPT_KINDS) ? zsh_ckpt_kind_names[i]
                                                                      : "(none)");
        }
    }
    if ((ps->status == ZSH_OK) && (ck->nkinds < 1)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: kinds is empty", ps->path);
    }
    if ((ps->status == ZSH_OK) && (zsh_ckpt_u64(ps, root, "chunk_bytes", "") != ZSH_CKPT_CHUNK)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: chunk_bytes is not %u", ps->path,
                               ZSH_CKPT_CHUNK);
    }
    shards = zsh_ckpt_u64(ps, root, "shards", "");
    if ((ps->status == ZSH_OK) && ((shards == 0) || (shards > ZSH_CKPT_SHARDS_MAX))) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: shards is %" PRIu64 ", not 1 to %u",
                               ps->path, shards, ZSH_CKPT_SHARDS_MAX);
    }
    ck->nshards = (uint32_t)shards;
}

void zsh_ckpt_hyper_config(const zsh_ckpt_t *ck, zsh_optim_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->kind           = ck->kind;
    cfg->lr             = ck->hyper.lr;
    cfg->beta1          = ck->hyper.beta1;
    cfg->beta2          = ck->hyper.beta2;
    cfg->eps            = ck->hyper.eps;
    cfg->weight_decay   = ck->hyper.weight_decay;
    cfg->momentum       = ck->hyper.momentum;
    cfg->nesterov       = ck->hyper.nesterov;
    cfg->max_grad_norm  = ck->hyper.max_grad_norm;
    cfg->loss_scale     = ck->scaler.scale;
    cfg->min_loss_scale = ck->scaler.min_scale;
}

/* The header's values as data: the counters consistent, the rule's
 * settings in the range zsh_optim_create accepts (with its words), and the
 * kinds saved those the rule and its momentum keep, so a load never adopts
 * a setting the optimizer would refuse or a state it does not hold. */
static void zsh_ckpt_check_values(zsh_ckpt_parse_t *ps, const zsh_ckpt_t *ck)
{
    zsh_optim_config_t cfg;
    int states;

    if (ps->status != ZSH_OK) {
        return;
    }
    if ((ck->step > ck->steps) || (ck->skipped_steps > ck->steps)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: step %lu and skipped_steps %lu cannot "
                               "be more than steps %lu", ps->path, ck->step, ck->skipped_steps,
                               ck->steps);
        return;
    }
    zsh_ckpt_hyper_config(ck, &cfg);
    ps->status = zsh_optim_check_hyper(ps->path, &cfg);
    if (ps->status != ZSH_OK) {
        return;
    }
    if (!(ck->scaler.scale > 0.0f) || (ck->scaler.window == 0)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: loss_scaler: scale %g and window %u "
                               "must be above 0", ps->path, ck->scaler.scale, ck->scaler.window);
        return;
    }
    states = zsh_optim_rule_states(ck->kind, ck->hyper.momentum);
    if (ck->nkinds != 1 + states) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                               "%s: %s with momentum %g keeps %d state(s) per element, but the "
                               "kinds saved hold %d", ps->path, zsh_ckpt_optim_name(ck->kind),
                               ck->hyper.momentum, states, ck->nkinds - 1);
    }
}

static void zsh_ckpt_parse_files(zsh_ckpt_parse_t *ps, json_object *root, zsh_ckpt_t *ck)
{
    size_t nfiles = (size_t)ck->nshards * (size_t)ck->nkinds, i, c;
    json_object *files, *f, *chunks;
    char where[64], name[64], esc[64];

    files = zsh_ckpt_get(ps, root, "files", json_type_array, "");
    if ((files != NULL) && (json_object_array_length(files) != nfiles)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %zu files listed, %u shards x %d kinds "
                               "expected", ps->path, json_object_array_length(files),
                               ck->nshards, ck->nkinds);
    }
    if (ps->status != ZSH_OK) {
        return;
    }
    ck->files = calloc(nfiles, sizeof(*ck->files));
    if (ck->files == NULL) {
        ps->status = zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory for %zu files", ps->path, nfiles);
        return;
    }
    for (i = 0; (ps->status == ZSH_OK) && (i < nfiles); i++) {
        zsh_ckpt_file_t *file = &ck->files[i];
        json_object *nm;

        f = json_object_array_get_idx(files, i);
        snprintf(where, sizeof(where), "files[%zu]", i);
        zsh_ckpt_file_name(name, sizeof(name), (int)(i % (size_t)ck->nkinds),
                           (uint32_t)(i / (size_t)ck->nkinds));
        nm = zsh_ckpt_get(ps, f, "name", json_type_string, where);
        if ((nm != NULL) && (strcmp(json_object_get_string(nm), name) != 0)) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s is \"%s\", \"%s\" expected",
                                   ps->path, where, zsh_ckpt_text(nm, esc, sizeof(esc)), name);
        }
        file->bytes = zsh_ckpt_u64(ps, f, "bytes", where);
        file->hash  = zsh_ckpt_hash(ps, zsh_ckpt_get(ps, f, "xxh3", json_type_string, where),
                                    where);
        chunks = zsh_ckpt_get(ps, f, "chunks", json_type_array, where);
        if ((ps->status == ZSH_OK) &&
            ((file->bytes % ZSH_CKPT_ALIGN != 0) || (file->bytes > ZSH_CKPT_FILE_MAX) ||
             (file->bytes != ck->files[i - i % (size_t)ck->nkinds].bytes) ||
             (json_object_array_length(chunks) !=
              zsh_ckpt_nchunks(file->bytes)))) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                                   "%s: %s (%s): %" PRIu64 " bytes: not a multiple of 4096, "
                                   "more than a file may be, unlike its shard's other files or "
                                   "not %zu chunks",
                                   ps->path, where, name, file->bytes,
                                   json_object_array_length(chunks));
        }
        if (ps->status != ZSH_OK) {
            break;
        }
        file->nchunks = json_object_array_length(chunks);
        file->chunks  = malloc((file->nchunks + 1) * sizeof(*file->chunks));
        if (file->chunks == NULL) {
            ps->status = zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", ps->path);
            break;
        }
        for (c = 0; c < file->nchunks; c++) {
            file->chunks[c] = zsh_ckpt_hash(ps, json_object_array_get_idx(chunks, c), where);
        }
    }
}

static void zsh_ckpt_parse_param(zsh_ckpt_parse_t *ps, json_object *p, size_t i,
                                 zsh_ckpt_param_t *cp, const zsh_ckpt_t *ck)
{
    json_object *v, *pieces, *pc, *h;
    uint64_t next = 0;
    char where[96], esc[64];
    size_t j;
    int k;

    snprintf(where, sizeof(where), "params[%zu]", i);
    v = zsh_ckpt_get(ps, p, "name", json_type_string, where);
    cp->name  = (v != NULL) ? strdup(json_object_get_string(v)) : NULL;
    cp->numel = zsh_ckpt_u64(ps, p, "numel", where);
    /* A checkpoint from before per-parameter counts: every parameter took
     * every update. */
    cp->updates = json_object_object_get_ex(p, "updates", NULL)
                      ? zsh_ckpt_bounded(ps, p, "updates", where, ck->step)
                      : ck->step;
    pieces = zsh_ckpt_get(ps, p, "pieces", json_type_array, where);
    if ((ps->status == ZSH_OK) && (cp->name == NULL)) {
        ps->status = zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", ps->path);
    }
    if (ps->status != ZSH_OK) {
        return;
    }
    snprintf(where, sizeof(where), "parameter '%s'",
             zsh_escape_str(cp->name, esc, sizeof(esc)));
    cp->npieces = json_object_array_length(pieces);
    cp->pieces  = calloc(cp->npieces + 1, sizeof(*cp->pieces));
    if (cp->pieces == NULL) {
        ps->status = zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", ps->path);
        return;
    }
    for (j = 0; (ps->status == ZSH_OK) && (j < cp->npieces); j++) {
        zsh_ckpt_piece_t *piece = &cp->pieces[j];

        pc            = json_object_array_get_idx(pieces, j);
        piece->shard  = (uint32_t)zsh_ckpt_bounded(ps, pc, "shard", where, ck->nshards - 1);
        piece->offset = zsh_ckpt_u64(ps, pc, "offset", where);
        piece->start  = zsh_ckpt_u64(ps, pc, "start", where);
        piece->count  = zsh_ckpt_u64(ps, pc, "count", where);
        h             = zsh_ckpt_get(ps, pc, "xxh3", json_type_array, where);
        if ((ps->status == ZSH_OK) && ((int)json_object_array_length(h) != ck->nkinds)) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG, "%s: %s: piece %zu has %zu checksums",
                                   ps->path, where, j, json_object_array_length(h));
        }
        for (k = 0; (ps->status == ZSH_OK) && (k < ck->nkinds); k++) {
            piece->hash[k] = zsh_ckpt_hash(ps, json_object_array_get_idx(h, (size_t)k), where);
        }
        if ((ps->status == ZSH_OK) &&
            ((piece->start != next) || (piece->count == 0) || (piece->count > cp->numel) ||
             (piece->start > cp->numel - piece->count) || (piece->shard >= ck->nshards) ||
             (piece->count > ck->files[(size_t)piece->shard * ck->nkinds].bytes / 4) ||
             (piece->offset > ck->files[(size_t)piece->shard * ck->nkinds].bytes / 4 -
                                  piece->count))) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                                   "%s: %s: piece %zu (shard %u, elements %" PRIu64 "+%" PRIu64
                                   " at %" PRIu64 ") does not follow the one before it inside "
                                   "the parameter and its shard's files", ps->path, where, j,
                                   piece->shard, piece->start, piece->count, piece->offset);
        }
        next = piece->start + piece->count;
    }
    if ((ps->status == ZSH_OK) && (next != cp->numel)) {
        ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                               "%s: %s: its pieces cover %" PRIu64 " of %" PRIu64 " elements",
                               ps->path, where, next, cp->numel);
    }
}

/* Pieces of one shard must not overlap in its files: sorted by shard and
 * offset, each ends at or before the next begins. */
static int zsh_ckpt_piece_cmp(const void *a, const void *b)
{
    const zsh_ckpt_piece_t *x = *(const zsh_ckpt_piece_t *const *)a;
    const zsh_ckpt_piece_t *y = *(const zsh_ckpt_piece_t *const *)b;

    if (x->shard != y->shard) {
        return (x->shard < y->shard) ? -1 : 1;
    }
    return (x->offset < y->offset) ? -1 : (x->offset > y->offset) ? 1 : 0;
}

static void zsh_ckpt_check_overlap(zsh_ckpt_parse_t *ps, const zsh_ckpt_t *ck)
{
    const zsh_ckpt_piece_t **all, *a, *b;
    size_t n = 0, i, j;

    if (ps->status != ZSH_OK) {
        return;
    }
    for (i = 0; i < ck->nparams; i++) {
        n += ck->params[i].npieces;
    }
    all = malloc((n + 1) * sizeof(*all));
    if (all == NULL) {
        ps->status = zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory for %zu pieces", ps->path, n);
        return;
    }
    for (i = 0, n = 0; i < ck->nparams; i++) {
        for (j = 0; j < ck->params[i].npieces; j++) {
            all[n++] = &ck->params[i].pieces[j];
        }
    }
    qsort(all, n, sizeof(*all), zsh_ckpt_piece_cmp);
    for (i = 1; (ps->status == ZSH_OK) && (i < n); i++) {
        a = all[i - 1];
        b = all[i];
        /* offset + count cannot wrap: each piece lies inside its file. */
        if ((a->shard == b->shard) && (a->offset + a->count > b->offset)) {
            ps->status = zsh_error(ZSH_ERR_INVALID_ARG,
                                   "%s: shard %u: the pieces at elements %" PRIu64 "+%" PRIu64
                                   " and %" PRIu64 "+%" PRIu64 " of its files overlap",
                                   ps->path, a->shard, a->offset, a->count, b->offset, b->count);
        }
    }
    free(all);
}

zsh_status_t zsh_ckpt_manifest_parse(const char *name, char *text, size_t len, zsh_ckpt_t *ck)
{
    char ename[ZSH_ESCAPED_MAX], *digits, saved[17] = "", *end = saved;
    zsh_ckpt_parse_t ps = {zsh_escape_str(name, ename, sizeof(ename)), ZSH_OK};
    json_object *root, *params;
    struct json_tokener *tok;
    uint64_t h = 0;
    size_t i;

    memset(ck, 0, sizeof(*ck));
    digits = zsh_ckpt_self_digits(text, len);
    if (digits != NULL) {
        memcpy(saved, digits, 16);
        saved[16] = '\0';
        memset(digits, '0', 16);
        h = XXH3_64bits(text, len);
        memcpy(digits, saved, 16);
    }
    if ((digits == NULL) || (strtoull(saved, &end, 16) != h) || (*end != '\0')) {
        return zsh_error(ZSH_ERR_IO, "%s is corrupt: it does not match its own checksum (%s)",
                         ps.path, ZSH_CKPT_SELF_KEY);
    }
    tok  = json_tokener_new();
    root = (tok != NULL) ? json_tokener_parse_ex(tok, text, (int)len) : NULL;
    if (tok != NULL) {
        json_tokener_free(tok);
    }
    if (root == NULL) {
        return zsh_error(ZSH_ERR_IO, "%s is not valid JSON", ps.path);
    }
    zsh_ckpt_parse_header(&ps, root, ck);
    zsh_ckpt_check_values(&ps, ck);
    zsh_ckpt_parse_files(&ps, root, ck);
    params = zsh_ckpt_get(&ps, root, "params", json_type_array, "");
    if (ps.status == ZSH_OK) {
        ck->nparams = json_object_array_length(params);
        ck->params  = calloc(ck->nparams + 1, sizeof(*ck->params));
        if (ck->params == NULL) {
            ps.status = zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory", ps.path);
        }
    }
    for (i = 0; (ps.status == ZSH_OK) && (i < ck->nparams); i++) {
        zsh_ckpt_parse_param(&ps, json_object_array_get_idx(params, i), i, &ck->params[i], ck);
    }
    zsh_ckpt_check_overlap(&ps, ck);
    json_object_put(root);
    if (ps.status != ZSH_OK) {
        zsh_ckpt_free(ck);
    }
    return ps.status;
}

zsh_status_t zsh_ckpt_manifest_read(const char *path, zsh_ckpt_t *ck)
{
    zsh_status_t status;
    char *text = NULL;
    size_t len = 0;

    memset(ck, 0, sizeof(*ck));
    status = zsh_file_read_all(path, false, ZSH_CKPT_MANIFEST_MAX, "the manifest", &text, &len);
    if (status == ZSH_OK) {
        status = zsh_ckpt_manifest_parse(path, text, len, ck);
        free(text);
    }
    return status;
}
