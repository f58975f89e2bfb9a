/*
 * zsh_ckpt consolidate: every parameter's fp32 weights (kind 0) gathered
 * from the shards into one safetensors file, the format inference and
 * conversion tools read:
 *
 *   8 bytes   N, the header's length, little-endian
 *   N bytes   JSON: {"<name>": {"dtype": "F32", "shape": [numel],
 *             "data_offsets": [begin, end]}, ..., "__metadata__": {...}},
 *             padded with spaces to a multiple of 8 so the tensors that
 *             follow are aligned
 *   the tensors, in the manifest's order, back to back (offsets count
 *   from the end of the header)
 *
 * The model may be larger than the memory of the machine that converts it,
 * so the weights are streamed a bounded buffer at a time. Resident memory
 * is this process as it stands once the manifest is read, plus the
 * reader's fixed cache of chunks, plus the buffer: the buffer takes what
 * --max-memory leaves of it (up to a size past which larger writes bring
 * nothing), and a limit that leaves no room for a useful buffer is refused
 * before anything is written.
 *
 * The file is written as a temporary beside OUT (.OUT.tmp-XXXXXX, created
 * exclusively, so never through a link or into a file already there),
 * fsynced and renamed, so OUT is either the previous file or the whole new
 * one. OUT may not be inside the checkpoint it reads, nor the same file as
 * any of its inputs.
 */
#define _GNU_SOURCE
#include "ckpt_tool.h"

#include "ckpt/dir.h"
#include "ckpt/reader.h"
#include "core/clock.h"
#include "core/dtype.h"
#include "core/escape.h"
#include "core/file.h"

#include <json-c/json.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#define ZSH_CKPT_CONS_DEFAULT ((uint64_t)256 << 20)
/* Room for what the process allocates besides the buffer and the cache:
 * stdio, the reader's descriptors, the allocator's own pages. */
#define ZSH_CKPT_CONS_SLACK   ((uint64_t)1 << 20)
/* Smaller buffers make the copy a stream of small writes. */
#define ZSH_CKPT_CONS_MIN_BUF ((uint64_t)1 << 20)
/* Larger buffers make no write faster. */
#define ZSH_CKPT_CONS_MAX_BUF ((uint64_t)64 << 20)

/* The most this process held at once so far: VmHWM, which exec resets
 * (ru_maxrss keeps the peak of the process it replaced, so a tool started
 * by a large parent would count the parent's memory as its own). */
static uint64_t zsh_ckpt_cons_peak(void)
{
    unsigned long long kb = 0;
    char line[128];
    FILE *f = fopen("/proc/self/status", "r");
    struct rusage ru;

    while ((f != NULL) && (fgets(line, sizeof(line), f) != NULL)) {
        if (sscanf(line, "VmHWM: %llu kB", &kb) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    if (kb == 0) {
        getrusage(RUSAGE_SELF, &ru);
        kb = (unsigned long long)ru.ru_maxrss;
    }
    return (uint64_t)kb * 1024;
}

/* Bytes of the copy buffer under @limit, or 0 after saying why none fits. */
static uint64_t zsh_ckpt_cons_budget(const zsh_ckpt_t *ck, uint64_t limit, const char *text)
{
    uint64_t cache = (uint64_t)ZSH_CKPT_CACHE * ZSH_CKPT_CHUNK, held = zsh_ckpt_cons_peak();
    uint64_t fixed = held + cache + ZSH_CKPT_CONS_SLACK, largest = 0, buf;
    char a[32], b[32], c[32], d[32], e[32];
    size_t i;

    for (i = 0; i < ck->nparams; i++) {
        largest = (ck->params[i].numel > largest) ? ck->params[i].numel : largest;
    }
    if ((limit < fixed) || (limit - fixed < ZSH_CKPT_CONS_MIN_BUF)) {
        fprintf(stderr,
                "zsh_ckpt consolidate: --max-memory %s is too small: this process holds %s "
                "already (the manifest of %zu parameters read), the reader keeps %d chunks "
                "of %s (%s), and the copy needs %s of buffer and %s of room: give at least "
                "%" PRIu64 "M\n", text, zsh_ckpt_tool_size(held, a, sizeof(a)), ck->nparams,
                ZSH_CKPT_CACHE, zsh_ckpt_tool_size(ZSH_CKPT_CHUNK, b, sizeof(b)),
                zsh_ckpt_tool_size(cache, c, sizeof(c)),
                zsh_ckpt_tool_size(ZSH_CKPT_CONS_MIN_BUF, d, sizeof(d)),
                zsh_ckpt_tool_size(ZSH_CKPT_CONS_SLACK, e, sizeof(e)),
                (fixed + ZSH_CKPT_CONS_MIN_BUF + (1u << 20) - 1) >> 20);
        return 0;
    }
    buf = limit - fixed;
    buf = (buf < ZSH_CKPT_CONS_MAX_BUF) ? buf : ZSH_CKPT_CONS_MAX_BUF;
    buf = (buf < largest * sizeof(float)) ? buf : largest * sizeof(float);
    buf = buf / sizeof(float) * sizeof(float);
    return (buf > 0) ? buf : sizeof(float); /* no parameters: nothing to copy */
}

static bool zsh_ckpt_cons_write(int fd, const void *data, size_t len)
{
    const char *p = data;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p   += n;
        len -= (size_t)n;
    }
    return true;
}

typedef struct zsh_ckpt_cons {
    zsh_ckpt_reader_t rd;
    char              tmp[ZSH_CKPT_PATH_MAX + 32];
    float            *buf;
    uint64_t          bytes;  /* of buf */
    size_t            elems;
    uint64_t          written;
} zsh_ckpt_cons_t;

/* The header, then every parameter's weights through the buffer. */
static int zsh_ckpt_cons_copy(zsh_ckpt_cons_t *c, int fd, const zsh_ckpt_header_t *header)
{
    const zsh_ckpt_t *ck = c->rd.ck;
    uint64_t s, n, hlen = header->len + header->pad;
    unsigned char len8[8];
    size_t i;
    int b;

    for (b = 0; b < 8; b++) {
        len8[b] = (unsigned char)(hlen >> (8 * b));
    }
    if (!zsh_ckpt_cons_write(fd, len8, 8) ||
        !zsh_ckpt_cons_write(fd, header->text, header->len) ||
        !zsh_ckpt_cons_write(fd, "       ", header->pad)) {
        fprintf(stderr, "zsh_ckpt consolidate: cannot write %s: %s\n", c->tmp, strerror(errno));
        return ZSH_CKPT_TOOL_FAIL;
    }
    c->written = 8 + hlen;
    for (i = 0; i < ck->nparams; i++) {
        for (s = 0; s < ck->params[i].numel; s += n) {
            n = ck->params[i].numel - s;
            n = (n < c->elems) ? n : c->elems;
            if (zsh_ckpt_reader_read(&c->rd, 0, i, s, n, c->buf) != ZSH_OK) {
                return zsh_ckpt_tool_fail("consolidate", "reading the weights");
            }
            if (!zsh_ckpt_cons_write(fd, c->buf, (size_t)n * sizeof(float))) {
                fprintf(stderr, "zsh_ckpt consolidate: cannot write %s at offset %" PRIu64
                        ": %s\n", c->tmp, c->written, strerror(errno));
                return ZSH_CKPT_TOOL_FAIL;
            }
            c->written += n * sizeof(float);
        }
    }
    return ZSH_CKPT_TOOL_OK;
}

/* Write the temporary beside @out, fsync it, rename it to @out and fsync
 * the directory. */
static int zsh_ckpt_cons_file(zsh_ckpt_cons_t *c, const char *out,
                              const zsh_ckpt_header_t *header)
{
    char dir[ZSH_CKPT_PATH_MAX];
    int fd, rc;

    if (zsh_file_tmp_create(out, c->tmp, sizeof(c->tmp), &fd) != ZSH_OK) {
        return zsh_ckpt_tool_fail("consolidate", out);
    }
    rc = zsh_ckpt_cons_copy(c, fd, header);
    if ((rc == ZSH_CKPT_TOOL_OK) && (fsync(fd) != 0)) {
        fprintf(stderr, "zsh_ckpt consolidate: cannot fsync %s: %s\n", c->tmp, strerror(errno));
        rc = ZSH_CKPT_TOOL_FAIL;
    }
    if ((close(fd) != 0) && (rc == ZSH_CKPT_TOOL_OK)) {
        fprintf(stderr, "zsh_ckpt consolidate: cannot close %s: %s\n", c->tmp, strerror(errno));
        rc = ZSH_CKPT_TOOL_FAIL;
    }
    if ((rc == ZSH_CKPT_TOOL_OK) && (rename(c->tmp, out) != 0)) {
        fprintf(stderr, "zsh_ckpt consolidate: cannot rename %s to %s: %s\n", c->tmp, out,
                strerror(errno));
        rc = ZSH_CKPT_TOOL_FAIL;
    }
    if (rc != ZSH_CKPT_TOOL_OK) {
        unlink(c->tmp);
        return rc;
    }
    snprintf(dir, sizeof(dir), "%s", out);
    if (zsh_ckpt_fsync_dir(dirname(dir)) != ZSH_OK) {
        return zsh_ckpt_tool_fail("consolidate", out);
    }
    return ZSH_CKPT_TOOL_OK;
}

/* Everything the copy needs, before anything is written: the header, a
 * buffer within @limit (@text as given, for messages) and the reader. */
static int zsh_ckpt_cons_prepare(zsh_ckpt_cons_t *c, const zsh_ckpt_t *ck, const char *path,
                                 uint64_t limit, const char *text, zsh_ckpt_header_t *header)
{
    char size[32];
    int rc;

    rc = zsh_ckpt_cons_header(ck, header);
    if (rc != ZSH_CKPT_TOOL_OK) {
        return rc;
    }
    /* Measured now, once the manifest and the header are in memory. */
    c->bytes = zsh_ckpt_cons_budget(ck, limit, text);
    if (c->bytes == 0) {
        return ZSH_CKPT_TOOL_USAGE; /* the limit given cannot be honoured */
    }
    c->elems = (size_t)c->bytes / sizeof(float);
    c->buf   = malloc((size_t)c->bytes);
    if (c->buf == NULL) {
        fprintf(stderr, "zsh_ckpt consolidate: no memory for a buffer of %s\n",
                zsh_ckpt_tool_size(c->bytes, size, sizeof(size)));
        return ZSH_CKPT_TOOL_FAIL;
    }
    if (zsh_ckpt_reader_open(&c->rd, ck, path) != ZSH_OK) {
        return zsh_ckpt_tool_fail("consolidate", path);
    }
    return ZSH_CKPT_TOOL_OK;
}

static void zsh_ckpt_cons_report(const zsh_ckpt_cons_t *c, const char *out, size_t ntensors,
                                 uint64_t limit, double seconds)
{
    char peak[32], lim[32], buf[32];

    printf("%s: %zu tensors, %" PRIu64 " bytes in %.2f s (%.1f MB/s); peak resident memory "
           "%s of --max-memory %s (buffer %s)\n", out, ntensors, c->written, seconds,
           (seconds > 0) ? (double)c->written / seconds / 1e6 : 0.0,
           zsh_ckpt_tool_size(zsh_ckpt_cons_peak(), peak, sizeof(peak)),
           zsh_ckpt_tool_size(limit, lim, sizeof(lim)),
           zsh_ckpt_tool_size(c->bytes, buf, sizeof(buf)));
}

int zsh_ckpt_tool_consolidate(int argc, char **argv)
{
    const char *pos[2], *maxmem = NULL;
    const zsh_ckpt_tool_opt_t opts[] = {{"--max-memory", &maxmem, NULL}};
    char path[ZSH_CKPT_PATH_MAX];
    uint64_t limit = ZSH_CKPT_CONS_DEFAULT;
    zsh_ckpt_header_t header = {0};
    zsh_ckpt_cons_t c = {0};
    double t0;
    zsh_ckpt_t ck;
    int rc;

    rc = zsh_ckpt_tool_args("consolidate", argc, argv, opts, 1, pos, 2, "DIR OUT");
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        return rc;
    }
    if ((maxmem != NULL) && (zsh_ckpt_tool_parse_size(maxmem, &limit) != 0)) {
        return zsh_ckpt_tool_usage_error("consolidate", "--max-memory '%s' is not a byte count "
                                         "above 0 (a suffix k, M or G is allowed: 512M, 2G)",
                                         maxmem);
    }
    if (pos[1][0] == '\0') {
        return zsh_ckpt_tool_usage_error("consolidate", "OUT is empty: name the file to write");
    }
    if (strlen(pos[1]) + 20 > ZSH_CKPT_PATH_MAX) {
        return zsh_ckpt_tool_usage_error("consolidate", "OUT is longer than %d bytes",
                                         ZSH_CKPT_PATH_MAX - 20);
    }
    t0 = zsh_clock_now();
    if (zsh_ckpt_tool_open(pos[0], path, sizeof(path), &ck) != ZSH_OK) {
        return zsh_ckpt_tool_fail("consolidate", pos[0]);
    }
    rc = zsh_ckpt_tool_out_check("consolidate", pos[0], path, &ck, pos[1]);
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        zsh_ckpt_free(&ck);
        return rc;
    }
    rc = zsh_ckpt_cons_prepare(&c, &ck, path, limit, (maxmem != NULL) ? maxmem : "256M",
                               &header);
    if (rc == ZSH_CKPT_TOOL_OK) {
        rc = zsh_ckpt_cons_file(&c, pos[1], &header);
    }
    if (c.rd.fds != NULL) {
        zsh_ckpt_reader_close(&c.rd);
    }
    if (rc == ZSH_CKPT_TOOL_OK) {
        zsh_ckpt_cons_report(&c, pos[1], ck.nparams, limit, zsh_clock_now() - t0);
    }
    free(c.buf);
    json_object_put(header.root);
    zsh_ckpt_free(&ck);
    return rc;
}
