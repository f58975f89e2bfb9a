/*
 * zsh_ckpt reshard: the same state written again as a checkpoint of M
 * shards, as if M ranks had saved it from one bucket holding every
 * parameter: the flat space (the parameters back to back in the manifest's
 * order) is partitioned as the optimizer partitions a bucket
 * (zsh_shard_part_range), shard r holds range r of every kind, and a
 * parameter crossing a boundary is one piece on each side.
 *
 * Every value is read through the reader, so it is checked against its
 * chunk's checksum before it is written; the writer takes the new files',
 * chunks' and pieces' checksums on the way. The checkpoint is built in
 * OUT/.tmp-step-N, its manifest written last, and published as a save
 * publishes one: renamed into place, then OUT/latest rewritten, so a crash
 * leaves nothing a reader follows half-written. OUT may not be inside the
 * checkpoint it reads, and OUT/latest never moves back to an older step
 * (a job resuming from OUT would silently restart there) unless --force.
 */
#include "ckpt_tool.h"

#include "aio/aio.h"
#include "ckpt/dir.h"
#include "ckpt/reader.h"
#include "ckpt/writer.h"
#include "core/clock.h"
#include "core/escape.h"
#include "core/status.h"
#include "shard/shard_impl.h"

#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The manifest allows up to 2^24 shards. */
#define ZSH_CKPT_RESHARD_MAX ZSH_CKPT_SHARDS_MAX

typedef struct zsh_ckpt_reshard {
    const zsh_ckpt_t *src;
    zsh_ckpt_t        dst;
    uint64_t         *first;  /* per parameter: its first element in the flat space */
    uint64_t          total;
    zsh_ckpt_reader_t rd;
    zsh_aio_t        *aio;
} zsh_ckpt_reshard_t;

/* Shard @r's range of the flat space. */
static void zsh_ckpt_reshard_range(const zsh_ckpt_reshard_t *rs, uint32_t r, uint64_t *lo,
                                   uint64_t *hi)
{
    size_t a, z;

    zsh_shard_part_range((size_t)rs->total, (int)rs->dst.nshards, (int)r, &a, &z);
    *lo = a;
    *hi = z;
}

/* The shard holding element @x of the flat space (x < total). */
static uint32_t zsh_ckpt_reshard_owner(const zsh_ckpt_reshard_t *rs, uint64_t x)
{
    return (uint32_t)(x / zsh_shard_part_count((size_t)rs->total, (int)rs->dst.nshards));
}

/* The new manifest without checksums: the source's header, M shards, and
 * each parameter's pieces, one per shard its elements fall in. */
static zsh_status_t zsh_ckpt_reshard_plan(zsh_ckpt_reshard_t *rs, uint32_t m)
{
    const zsh_ckpt_t *src = rs->src;
    zsh_ckpt_t *dst = &rs->dst;
    uint64_t lo, hi, a, z;
    uint32_t r, r0, r1;
    size_t i;

    *dst            = *src;
    dst->world_size = (int)m;
    dst->nshards    = m;
    dst->params     = calloc(src->nparams + 1, sizeof(*dst->params));
    dst->files      = calloc((size_t)m * (size_t)src->nkinds, sizeof(*dst->files));
    rs->first       = calloc(src->nparams + 1, sizeof(*rs->first));
    if ((dst->params == NULL) || (dst->files == NULL) || (rs->first == NULL)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the layout of %u shards", m);
    }
    for (i = 0; i < src->nparams; i++) {
        rs->first[i] = rs->total;
        rs->total   += src->params[i].numel;
    }
    for (i = 0; i < src->nparams; i++) {
        zsh_ckpt_param_t *p = &dst->params[i];

        p->name    = strdup(src->params[i].name);
        p->numel   = src->params[i].numel;
        p->updates = src->params[i].updates;
        if (p->name == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the layout of %u shards", m);
        }
        if (p->numel == 0) {
            continue;
        }
        r0        = zsh_ckpt_reshard_owner(rs, rs->first[i]);
        r1        = zsh_ckpt_reshard_owner(rs, rs->first[i] + p->numel - 1);
        p->pieces = calloc((size_t)(r1 - r0) + 1, sizeof(*p->pieces));
        if (p->pieces == NULL) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the layout of %u shards", m);
        }
        for (r = r0; r <= r1; r++) {
            zsh_ckpt_piece_t *pc = &p->pieces[p->npieces++];

            zsh_ckpt_reshard_range(rs, r, &lo, &hi);
            a = (rs->first[i] > lo) ? rs->first[i] : lo;
            z = (rs->first[i] + p->numel < hi) ? rs->first[i] + p->numel : hi;
            pc->shard  = r;
            pc->offset = a - lo;
            pc->start  = a - rs->first[i];
            pc->count  = z - a;
        }
    }
    return ZSH_OK;
}

/* Kind @k of shard @r into @path: the pieces of parameters [@i0, @i1)
 * that lie in it, in order, each piece's checksum recorded. */
static zsh_status_t zsh_ckpt_reshard_file(zsh_ckpt_reshard_t *rs, uint32_t r, int k, size_t i0,
                                          size_t i1, const char *path)
{
    zsh_status_t status;
    zsh_ckpt_writer_t w;
    uint64_t s, n;
    size_t i, j, room;
    float *dst;

    status = zsh_ckpt_writer_open(&w, rs->aio, path);
    for (i = i0; (status == ZSH_OK) && (i < i1); i++) {
        zsh_ckpt_param_t *p = &rs->dst.params[i];

        if (p->numel == 0) {
            continue;
        }
        /* Its pieces are one per shard from the one holding its first element. */
        j = r - zsh_ckpt_reshard_owner(rs, rs->first[i]);
        for (s = p->pieces[j].start; (status == ZSH_OK) &&
                                     (s < p->pieces[j].start + p->pieces[j].count); s += n) {
            dst = zsh_ckpt_writer_room(&w, &room);
            if (dst == NULL) {
                status = w.status;
                break;
            }
            n = p->pieces[j].start + p->pieces[j].count - s;
            n = (n < room / sizeof(float)) ? n : room / sizeof(float);
            status = zsh_ckpt_reader_read(&rs->rd, k, i, s, n, dst);
            if (status == ZSH_OK) {
                status = zsh_ckpt_writer_commit(&w, (size_t)n * sizeof(float));
            }
        }
        p->pieces[j].hash[k] = zsh_ckpt_writer_piece(&w);
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_writer_close(&w);
        rs->dst.files[(size_t)r * rs->dst.nkinds + k] = w.meta;
    } else if (w.buf[0] != NULL) {
        zsh_ckpt_writer_abort(&w);
    }
    return status;
}

/* Every file of every shard into @tmp. */
static zsh_status_t zsh_ckpt_reshard_files(zsh_ckpt_reshard_t *rs, const char *tmp)
{
    char path[ZSH_CKPT_PATH_MAX + 64], name[64];
    zsh_status_t status = ZSH_OK;
    size_t i0 = 0, i1;
    uint64_t lo, hi;
    uint32_t r;
    int k;

    for (r = 0; (status == ZSH_OK) && (r < rs->dst.nshards); r++) {
        zsh_ckpt_reshard_range(rs, r, &lo, &hi);
        /* Parameters [i0, i1) overlap [lo, hi): i0 is the one holding lo
         * (left by the shard before), i1 the first starting at hi or later. */
        while ((i0 < rs->dst.nparams) && (rs->first[i0] + rs->dst.params[i0].numel <= lo)) {
            i0++;
        }
        for (i1 = i0; (i1 < rs->dst.nparams) && (rs->first[i1] < hi); i1++) {
        }
        for (k = 0; (status == ZSH_OK) && (k < rs->dst.nkinds); k++) {
            zsh_ckpt_file_name(name, sizeof(name), k, r);
            snprintf(path, sizeof(path), "%s/%s", tmp, name);
            status = zsh_ckpt_reshard_file(rs, r, k, i0, i1, path);
        }
    }
    return status;
}

/* Parse --ranks: a whole number of shards the manifest allows. */
static int zsh_ckpt_reshard_ranks(const char *text, uint32_t *m_p)
{
    unsigned long long v;
    char *end;

    if ((text == NULL) || (text[0] < '0') || (text[0] > '9')) {
        return -1;
    }
    errno = 0;
    v     = strtoull(text, &end, 10);
    if ((errno != 0) || (*end != '\0') || (v < 1) || (v > ZSH_CKPT_RESHARD_MAX)) {
        return -1;
    }
    *m_p = (uint32_t)v;
    return 0;
}

/* OUT as reshard may write it: not empty, a directory if it exists, not
 * inside the checkpoint read, and its latest no newer than what it gets
 * unless @force. ZSH_CKPT_TOOL_GO_ON, or the exit status after a message. */
static int zsh_ckpt_reshard_out(const char *dir, const char *path, const zsh_ckpt_t *src,
                                const char *out, int force)
{
    char esc[ZSH_ESCAPED_MAX];
    unsigned long newest;
    struct stat st;
    bool has;
    int rc;

    zsh_escape_str(out, esc, sizeof(esc));
    if ((stat(out, &st) == 0) && !S_ISDIR(st.st_mode)) {
        fprintf(stderr, "zsh_ckpt reshard: OUT %s exists and is not a directory; name a "
                "checkpoint directory, new or existing\n", esc);
        return ZSH_CKPT_TOOL_FAIL;
    }
    rc = zsh_ckpt_tool_out_check("reshard", dir, path, src, out);
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        return rc;
    }
    if (zsh_ckpt_latest_steps(out, &has, &newest) != ZSH_OK) {
        return zsh_ckpt_tool_fail("reshard", out);
    }
    if (has && (newest > src->steps) && !force) {
        fprintf(stderr, "zsh_ckpt reshard: %s/latest names step %lu, newer than the step %lu "
                "this would publish: latest would move back, and a job resuming from %s would "
                "restart there; --force moves it anyway\n", esc, newest, src->steps, esc);
        return ZSH_CKPT_TOOL_FAIL;
    }
    return ZSH_CKPT_TOOL_GO_ON;
}

/* Build the checkpoint in @tmp and publish it as @out/@name. */
static zsh_status_t zsh_ckpt_reshard_run(zsh_ckpt_reshard_t *rs, const char *path,
                                         const char *out, const char *tmp, const char *name,
                                         uint32_t m)
{
    zsh_aio_params_t params = {0};
    zsh_status_t status;

    status = zsh_ckpt_reshard_plan(rs, m);
    if (status == ZSH_OK) {
        status = zsh_ckpt_dir_prepare(out, 1);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (mkdir(tmp, 0755) != 0) {
        return zsh_error(ZSH_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_reader_open(&rs->rd, rs->src, path);
    }
    if (status == ZSH_OK) {
        params.dir = NULL; /* files by path only: the checkpoint's, kept at destroy */
        status     = zsh_aio_create(&params, &rs->aio);
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_reshard_files(rs, tmp);
    }
    if (rs->rd.fds != NULL) {
        zsh_ckpt_reader_close(&rs->rd); /* before the publish, which may replace @path */
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_commit(&rs->dst, out, tmp, name);
    }
    if (status != ZSH_OK) {
        /* Nothing points at it; the cause, not a failure to clean up, is
         * what the caller reports. */
        char cause[ZSH_ERROR_MSG_MAX];

        snprintf(cause, sizeof(cause), "%s", zsh_last_error());
        (void)zsh_ckpt_rmtree(tmp);
        zsh_error_set_quiet(cause);
    }
    return status;
}

int zsh_ckpt_tool_reshard(int argc, char **argv)
{
    const char *pos[2], *ranks = NULL;
    int force = 0;
    const zsh_ckpt_tool_opt_t opts[] = {{"--ranks", &ranks, NULL}, {"--force", NULL, &force}};
    char path[ZSH_CKPT_PATH_MAX], tmp[ZSH_CKPT_PATH_MAX], name[64], size[32];
    zsh_ckpt_reshard_t rs;
    zsh_status_t status;
    uint64_t bytes = 0;
    zsh_ckpt_t src;
    double t0, dt;
    uint32_t m;
    size_t f;
    int rc;

    rc = zsh_ckpt_tool_args("reshard", argc, argv, opts, 2, pos, 2, "DIR OUT");
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        return rc;
    }
    if (ranks == NULL) {
        return zsh_ckpt_tool_usage_error("reshard", "--ranks is required");
    }
    if (zsh_ckpt_reshard_ranks(ranks, &m) != 0) {
        return zsh_ckpt_tool_usage_error("reshard", "--ranks '%s' is not a whole number in "
                                         "[1, %u]", ranks, ZSH_CKPT_RESHARD_MAX);
    }
    if (pos[1][0] == '\0') {
        return zsh_ckpt_tool_usage_error("reshard", "OUT is empty: name the directory to write");
    }
    if (strlen(pos[1]) > ZSH_CKPT_PATH_MAX - 128) {
        return zsh_ckpt_tool_usage_error("reshard", "OUT is longer than %d bytes",
                                         ZSH_CKPT_PATH_MAX - 128);
    }
    t0 = zsh_clock_now();
    if (zsh_ckpt_tool_open(pos[0], path, sizeof(path), &src) != ZSH_OK) {
        return zsh_ckpt_tool_fail("reshard", pos[0]);
    }
    rc = zsh_ckpt_reshard_out(pos[0], path, &src, pos[1], force);
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        zsh_ckpt_free(&src);
        return rc;
    }
    memset(&rs, 0, sizeof(rs));
    rs.src = &src;
    snprintf(name, sizeof(name), "step-%08lu", src.steps);
    snprintf(tmp, sizeof(tmp), "%s/.tmp-%s", pos[1], name);
    status = zsh_ckpt_reshard_run(&rs, path, pos[1], tmp, name, m);
    if (rs.aio != NULL) {
        zsh_aio_destroy(rs.aio);
    }
    for (f = 0; (status == ZSH_OK) && (f < (size_t)m * (size_t)src.nkinds); f++) {
        bytes += rs.dst.files[f].bytes;
    }
    if (status != ZSH_OK) {
        snprintf(tmp, sizeof(tmp), "nothing was published in %s", pos[1]);
    }
    rc = (status == ZSH_OK) ? ZSH_CKPT_TOOL_OK : zsh_ckpt_tool_fail("reshard", tmp);
    if (rc == ZSH_CKPT_TOOL_OK) {
        dt = zsh_clock_now() - t0;
        printf("%s/%s: %u shards from %u, %zu files, %s in %.2f s (%.1f MB/s)\n", pos[1], name,
               m, src.nshards, (size_t)m * (size_t)src.nkinds,
               zsh_ckpt_tool_size(bytes, size, sizeof(size)), dt,
               (dt > 0) ? (double)bytes / dt / 1e6 : 0.0);
    }
    zsh_ckpt_free(&rs.dst);
    free(rs.first);
    zsh_ckpt_free(&src);
    return rc;
}
