/*
 * A checkpoint as it is on disk (docs/CHECKPOINT.md is the reference):
 *
 *   <dir>/latest                 the name of the newest complete checkpoint
 *   <dir>/step-00000010/
 *       manifest.json            written last: the model, the optimizer, every file and range
 *       weights-00000.bin        shard 0's fp32 weights
 *       exp_avg-00000.bin        shard 0's first optimizer state (Adam's m, SGD's momentum)
 *       exp_avg_sq-00000.bin     shard 0's second state (Adam's v)
 *       ...                      one file per kind per shard (the saving ranks)
 *   <dir>/.tmp-step-...          a save under way, or one a crash cut short
 *
 * A shard's files hold the same pieces at the same element offsets: a piece
 * is a range [start, start + count) of one parameter's elements, fp32,
 * little-endian. Files are padded with zeros to a multiple of 4096 bytes.
 * Every file has an XXH3-64 of all its bytes and of each ZSH_CKPT_CHUNK of
 * them; every piece has an XXH3-64 per kind.
 *
 * This header is the in-memory form of the manifest, which the optimizer's
 * save and load and the zsh_ckpt tool share.
 */
#ifndef ZSH_CKPT_FORMAT_H_
#define ZSH_CKPT_FORMAT_H_

#include <zeroshard.h>
#include <zeroshard/optim.h>

#include <stddef.h>
#include <stdint.h>

#define ZSH_CKPT_FORMAT   "zeroshard-checkpoint"
#define ZSH_CKPT_VERSION  1
#define ZSH_CKPT_CHUNK    (1u << 20) /* bytes per chunk checksum, a multiple of 4096 */
#define ZSH_CKPT_ALIGN    4096       /* files are padded to it (O_DIRECT) */
#define ZSH_CKPT_MANIFEST "manifest.json"
#define ZSH_CKPT_LATEST   "latest"
#define ZSH_CKPT_KINDS    3          /* weights, exp_avg, exp_avg_sq */
#define ZSH_CKPT_PATH_MAX 4096
#define ZSH_CKPT_FILE_MAX ((uint64_t)1 << 56) /* bytes a manifest may give one file */
/* The most a manifest may be, read whole before it is parsed: its chunk
 * checksums take 19 bytes per MiB of state, so this holds some 10 TiB of
 * files and a million parameters' pieces, and a link to /dev/zero or a
 * runaway file costs at most this much memory. */
#define ZSH_CKPT_MANIFEST_MAX ((size_t)256 << 20)
#define ZSH_CKPT_LATEST_MAX   255                /* bytes of `latest`: a name and a newline */
#define ZSH_CKPT_SHARDS_MAX   (1u << 24)          /* shards, and ranks that saved */
/* Step counters: the largest integer a double holds exactly, so any JSON
 * reader reads them exactly, and so far from 2^64 that a run adding to them
 * never wraps. */
#define ZSH_CKPT_COUNTER_MAX  (((uint64_t)1 << 53) - 1)

/* The kinds' names, as in the files' names and the manifest. */
extern const char *const zsh_ckpt_kind_names[ZSH_CKPT_KINDS];

typedef struct zsh_ckpt_piece {
    uint32_t shard;                  /* whose files hold it */
    uint64_t offset;                 /* its first element in each of the shard's files */
    uint64_t start, count;           /* elements of the parameter */
    uint64_t hash[ZSH_CKPT_KINDS];   /* XXH3-64 of its bytes in each kind's file */
} zsh_ckpt_piece_t;

typedef struct zsh_ckpt_param {
    char             *name;
    uint64_t          numel;
    zsh_ckpt_piece_t *pieces;        /* in order of start, covering [0, numel) exactly */
    size_t            npieces;
    uint64_t          updates;       /* updates applied to it (its Adam's t), at most step:
                                        fewer where steps left it out (zsh_optim_grad_none) */
} zsh_ckpt_param_t;

typedef struct zsh_ckpt_file {
    uint64_t  bytes;                 /* padded to ZSH_CKPT_ALIGN */
    uint64_t  hash;                  /* XXH3-64 of all its bytes */
    uint64_t *chunks;                /* XXH3-64 of each ZSH_CKPT_CHUNK bytes (the last: the rest) */
    size_t    nchunks;
} zsh_ckpt_file_t;

typedef struct zsh_ckpt {
    int               version;
    int               world_size;    /* ranks that saved it */
    int               stage;
    zsh_dtype_t       precision;     /* the parameters' dtype; the files are fp32 */
    zsh_optim_kind_t  kind;
    int               nkinds;        /* 1 + optimizer states per element */
    uint32_t          nshards;
    unsigned long     step;          /* updates applied (Adam's t) */
    unsigned long     steps, skipped_steps;
    struct {
        float    scale, min_scale;
        unsigned window, clean;
        int      dynamic;
    } scaler;
    struct {
        double lr, beta1, beta2, eps, weight_decay, momentum; /* doubles, as the config's */
        float  max_grad_norm;
        int    nesterov;
    } hyper;
    zsh_ckpt_param_t *params;
    size_t            nparams;
    zsh_ckpt_file_t  *files;         /* nshards * nkinds: shard s, kind k at s * nkinds + k */
} zsh_ckpt_t;

/* Bytes of a shard file holding @elems elements (padded), and its chunks. */
static inline uint64_t zsh_ckpt_file_bytes(uint64_t elems)
{
    return (elems * sizeof(float) + ZSH_CKPT_ALIGN - 1) / ZSH_CKPT_ALIGN * ZSH_CKPT_ALIGN;
}

static inline uint64_t zsh_ckpt_nchunks(uint64_t bytes)
{
    return (bytes + ZSH_CKPT_CHUNK - 1) / ZSH_CKPT_CHUNK;
}

/* "sgd", "adam" or "adamw", as the manifest names the rule. */
const char *zsh_ckpt_optim_name(zsh_optim_kind_t kind);

/* The file name of kind @k of shard @s, into @buf. */
void zsh_ckpt_file_name(char *buf, size_t len, int k, uint32_t s);

/* Elements each shard's files hold (the sum of its pieces' counts), into
 * @elems (nshards entries). */
void zsh_ckpt_shard_elems(const zsh_ckpt_t *ck, uint64_t *elems);

/* The manifest's own checksum: its last key, the XXH3-64 of the whole text
 * with this value's 16 digits written as zeros. Where those digits are in
 * @text (NULL if they are not). */
#define ZSH_CKPT_SELF_KEY "manifest_xxh3"
char *zsh_ckpt_self_digits(const char *text, size_t len);

/* Write @ck as JSON to @path (created, fsynced; the caller renames it into
 * place). ZSH_ERR_IO naming the path. */
zsh_status_t zsh_ckpt_manifest_write(const zsh_ckpt_t *ck, const char *path);

/* Read and check the manifest @path: ZSH_ERR_IO for a missing or
 * unreadable file, ZSH_ERR_INVALID_ARG naming the field for one that is
 * malformed or inconsistent (pieces that do not tile a parameter, a piece
 * past its shard's file, pieces that overlap), or holding a value the
 * optimizer would refuse (a setting zsh_optim_create refuses, counters out
 * of order or past ZSH_CKPT_COUNTER_MAX, kinds unlike those the rule and
 * its momentum keep). The file is opened as a regular file, never through
 * a link, and read up to ZSH_CKPT_MANIFEST_MAX bytes. */
zsh_status_t zsh_ckpt_manifest_read(const char *path, zsh_ckpt_t *ck);

/* The checks of zsh_ckpt_manifest_read() on the manifest's @len bytes of
 * @text (NUL-terminated; its checksum's digits are zeroed and restored
 * while it is hashed), @name naming it in messages. */
zsh_status_t zsh_ckpt_manifest_parse(const char *name, char *text, size_t len, zsh_ckpt_t *ck);

/* @ck's rule settings as the zsh_optim_config_t zsh_optim_check_hyper()
 * holds to zsh_optim_create's ranges (the rest zero). */
void zsh_ckpt_hyper_config(const zsh_ckpt_t *ck, zsh_optim_config_t *cfg);

void zsh_ckpt_free(zsh_ckpt_t *ck);

#endif
