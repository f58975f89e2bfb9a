#include "ckpt/reader.h"
#include "ckpt/hash.h"

#include "core/escape.h"
#include "core/file.h"
#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t zsh_ckpt_nfiles(const zsh_ckpt_t *ck)
{
    return (size_t)ck->nshards * (size_t)ck->nkinds;
}

zsh_status_t zsh_ckpt_reader_open(zsh_ckpt_reader_t *r, const zsh_ckpt_t *ck, const char *dir)
{
    size_t i;

    memset(r, 0, sizeof(*r));
    r->ck  = ck;
    r->dir = dir;
    r->fds = malloc(zsh_ckpt_nfiles(ck) * sizeof(*r->fds));
    if (r->fds == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory to read %s", dir);
    }
    r->chunk_max = 1;
    for (i = 0; i < zsh_ckpt_nfiles(ck); i++) {
        r->fds[i] = -1;
        if (ck->files[i].bytes > r->chunk_max) {
            r->chunk_max = (ck->files[i].bytes < ZSH_CKPT_CHUNK) ? (size_t)ck->files[i].bytes
                                                                 : ZSH_CKPT_CHUNK;
        }
    }
    return ZSH_OK;
}

void zsh_ckpt_reader_close(zsh_ckpt_reader_t *r)
{
    size_t i;

    for (i = 0; (r->fds != NULL) && (i < zsh_ckpt_nfiles(r->ck)); i++) {
        if (r->fds[i] >= 0) {
            close(r->fds[i]);
        }
    }
    for (i = 0; i < ZSH_CKPT_CACHE; i++) {
        free(r->cache[i].data);
    }
    free(r->fds);
    memset(r, 0, sizeof(*r));
}

static void zsh_ckpt_path(const zsh_ckpt_reader_t *r, size_t file, char *buf, size_t len)
{
    char name[64];

    zsh_ckpt_file_name(name, sizeof(name), (int)(file % (size_t)r->ck->nkinds),
                       (uint32_t)(file / (size_t)r->ck->nkinds));
    snprintf(buf, len, "%s/%s", r->dir, name);
}

static zsh_status_t zsh_ckpt_fd(zsh_ckpt_reader_t *r, size_t file, int *fd_p)
{
    char path[ZSH_CKPT_PATH_MAX], name[ZSH_ESCAPED_MAX];
    zsh_status_t status;
    uint64_t size;
    int fd;

    if (r->fds[file] >= 0) {
        *fd_p = r->fds[file];
        return ZSH_OK;
    }
    if (r->nopen >= ZSH_CKPT_FDS) { /* the ones before are opened again if needed */
        for (size_t i = 0; i < zsh_ckpt_nfiles(r->ck); i++) {
            if (r->fds[i] >= 0) {
                close(r->fds[i]);
                r->fds[i] = -1;
            }
        }
        r->nopen = 0;
    }
    zsh_ckpt_path(r, file, path, sizeof(path));
    /* A shard file is never a link, and is read only up to the size the
     * manifest gives it. */
    status = zsh_file_open_regular(path, false, "the shard file", &fd, &size);
    if (status != ZSH_OK) {
        return status;
    }
    if (size != r->ck->files[file].bytes) {
        close(fd);
        return zsh_error(ZSH_ERR_IO, "%s is %" PRIu64 " bytes; the manifest says %" PRIu64 "%s",
                         zsh_escape_str(path, name, sizeof(name)), size,
                         r->ck->files[file].bytes,
                         (size < r->ck->files[file].bytes) ? " (truncated)" : "");
    }
    r->fds[file] = fd;
    r->nopen++;
    *fd_p        = fd;
    return ZSH_OK;
}

/* Read @len bytes at @off of @file into @buf: ZSH_ERR_IO on a short read. */
static zsh_status_t zsh_ckpt_pread(zsh_ckpt_reader_t *r, size_t file, uint64_t off, char *buf,
                                   size_t len)
{
    char path[ZSH_CKPT_PATH_MAX];
    size_t got = 0;
    zsh_status_t status;
    ssize_t n;
    int fd;

    status = zsh_ckpt_fd(r, file, &fd);
    while ((status == ZSH_OK) && (got < len)) {
        n = pread(fd, buf + got, len - got, (off_t)(off + got));
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            zsh_ckpt_path(r, file, path, sizeof(path));
            return zsh_error(ZSH_ERR_IO, "cannot read %zu bytes of %s at offset %" PRIu64 ": %s",
                             len, path, off + got, (n < 0) ? strerror(errno) : "end of file");
        }
        got += (size_t)n;
    }
    r->read_bytes += got;
    return status;
}

static size_t zsh_ckpt_chunk_len(const zsh_ckpt_file_t *f, size_t c)
{
    uint64_t off = (uint64_t)c * ZSH_CKPT_CHUNK;

    return (f->bytes - off < ZSH_CKPT_CHUNK) ? (size_t)(f->bytes - off) : ZSH_CKPT_CHUNK;
}

/* Chunk @c of @file, read and checked (or cached); @what names what it
 * was read for. */
static zsh_status_t zsh_ckpt_chunk(zsh_ckpt_reader_t *r, size_t file, size_t c, const char *what,
                                   const char **data_p)
{
    const zsh_ckpt_file_t *f = &r->ck->files[file];
    zsh_ckpt_chunk_t *slot = &r->cache[0];
    char path[ZSH_CKPT_PATH_MAX];
    zsh_status_t status;
    size_t i, len;

    for (i = 0; i < ZSH_CKPT_CACHE; i++) {
        if ((r->cache[i].used != 0) && (r->cache[i].file == file) && (r->cache[i].index == c)) {
            r->cache[i].used = ++r->tick;
            *data_p          = r->cache[i].data;
            return ZSH_OK;
        }
        if (r->cache[i].used < slot->used) {
            slot = &r->cache[i];
        }
    }
    if ((slot->data == NULL) && ((slot->data = malloc(r->chunk_max)) == NULL)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "%s: no memory to read %s", what, r->dir);
    }
    len        = zsh_ckpt_chunk_len(f, c);
    slot->used = 0;
    status     = zsh_ckpt_pread(r, file, (uint64_t)c * ZSH_CKPT_CHUNK, slot->data, len);
    if (status != ZSH_OK) {
        zsh_error_prefix("%s: ", what);
        return status;
    }
    if (XXH3_64bits(slot->data, len) != f->chunks[c]) {
        zsh_ckpt_path(r, file, path, sizeof(path));
        return zsh_error(ZSH_ERR_IO,
                         "%s: %s is corrupt: bytes %" PRIu64 "-%" PRIu64 " (chunk %zu) do not "
                         "match their checksum", what, path, (uint64_t)c * ZSH_CKPT_CHUNK,
                         (uint64_t)c * ZSH_CKPT_CHUNK + len - 1, c);
    }
    slot->file  = file;
    slot->index = c;
    slot->used  = ++r->tick;
    *data_p     = slot->data;
    return ZSH_OK;
}

/* Bytes [off, off + len) of @file into @dst through checked chunks. */
static zsh_status_t zsh_ckpt_copy(zsh_ckpt_reader_t *r, size_t file, uint64_t off, size_t len,
                                  char *dst, const char *what)
{
    zsh_status_t status = ZSH_OK;
    const char *data;
    size_t c, in, n;

    while ((status == ZSH_OK) && (len > 0)) {
        c      = (size_t)(off / ZSH_CKPT_CHUNK);
        in     = (size_t)(off % ZSH_CKPT_CHUNK);
        n      = (ZSH_CKPT_CHUNK - in < len) ? ZSH_CKPT_CHUNK - in : len;
        status = zsh_ckpt_chunk(r, file, c, what, &data);
        if ((status == ZSH_OK) && (in + n > zsh_ckpt_chunk_len(&r->ck->files[file], c))) {
            status = zsh_error(ZSH_ERR_IO, "%s: reads past the end of its file", what);
        }
        if (status == ZSH_OK) {
            memcpy(dst, data + in, n);
            dst += n;
            off += n;
            len -= n;
        }
    }
    return status;
}

zsh_status_t zsh_ckpt_reader_read(zsh_ckpt_reader_t *r, int k, size_t param, uint64_t start,
                                  uint64_t count, float *dst)
{
    const zsh_ckpt_param_t *p = &r->ck->params[param];
    zsh_status_t status = ZSH_OK;
    uint64_t end = start + count, a, z;
    char what[192];
    size_t j;

    for (j = 0; (status == ZSH_OK) && (j < p->npieces); j++) {
        const zsh_ckpt_piece_t *pc = &p->pieces[j];

        a = (pc->start > start) ? pc->start : start;
        z = (pc->start + pc->count < end) ? pc->start + pc->count : end;
        if (a >= z) {
            continue;
        }
        snprintf(what, sizeof(what), "parameter '%.100s' (%s, elements %" PRIu64 "-%" PRIu64 ")",
                 p->name, zsh_ckpt_kind_names[k], a, z - 1);
        status = zsh_ckpt_copy(r, (size_t)pc->shard * r->ck->nkinds + (size_t)k,
                               (pc->offset + (a - pc->start)) * sizeof(float),
                               (size_t)(z - a) * sizeof(float), (char *)(dst + (a - start)), what);
    }
    return status;
}

zsh_status_t zsh_ckpt_reader_check_file(zsh_ckpt_reader_t *r, size_t file)
{
    const zsh_ckpt_file_t *f = &r->ck->files[file];
    char path[ZSH_CKPT_PATH_MAX];
    zsh_status_t status = ZSH_OK;
    XXH3_state_t *st = XXH3_createState();
    const char *data;
    size_t c;

    if (st == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory");
    }
    XXH3_64bits_reset(st);
    zsh_ckpt_path(r, file, path, sizeof(path));
    for (c = 0; (status == ZSH_OK) && (c < f->nchunks); c++) {
        status = zsh_ckpt_chunk(r, file, c, "file", &data);
        if (status == ZSH_OK) {
            XXH3_64bits_update(st, data, zsh_ckpt_chunk_len(f, c));
        }
    }
    if ((status == ZSH_OK) && (f->nchunks == 0)) {
        int fd;

        status = zsh_ckpt_fd(r, file, &fd); /* an empty file: it must exist */
    }
    if ((status == ZSH_OK) && (XXH3_64bits_digest(st) != f->hash)) {
        status = zsh_error(ZSH_ERR_IO, "%s does not match its checksum", path);
    }
    XXH3_freeState(st);
    return status;
}

zsh_status_t zsh_ckpt_reader_check_piece(zsh_ckpt_reader_t *r, int k, size_t param, size_t j)
{
    const zsh_ckpt_piece_t *pc = &r->ck->params[param].pieces[j];
    size_t file = (size_t)pc->shard * r->ck->nkinds + (size_t)k;
    XXH3_state_t *st = XXH3_createState();
    uint64_t off = pc->offset * sizeof(float), left = pc->count * sizeof(float);
    zsh_status_t status = ZSH_OK;
    char what[192], path[ZSH_CKPT_PATH_MAX], esc[104];
    const char *data;
    size_t in, n;

    if (st == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory");
    }
    XXH3_64bits_reset(st);
    snprintf(what, sizeof(what), "parameter '%s' (%s, piece %zu)",
             zsh_escape_str(r->ck->params[param].name, esc, sizeof(esc)), zsh_ckpt_kind_names[k],
             j);
    while ((status == ZSH_OK) && (left > 0)) {
        in     = (size_t)(off % ZSH_CKPT_CHUNK);
        n      = (ZSH_CKPT_CHUNK - in < left) ? ZSH_CKPT_CHUNK - in : (size_t)left;
        status = zsh_ckpt_chunk(r, file, (size_t)(off / ZSH_CKPT_CHUNK), what, &data);
        if (status == ZSH_OK) {
            XXH3_64bits_update(st, data + in, n);
            off  += n;
            left -= n;
        }
    }
    if ((status == ZSH_OK) && (XXH3_64bits_digest(st) != pc->hash[k])) {
        zsh_ckpt_path(r, file, path, sizeof(path));
        status = zsh_error(ZSH_ERR_IO, "%s: %s at offset %" PRIu64 " does not match its checksum",
                           what, path, pc->offset * sizeof(float));
    }
    XXH3_freeState(st);
    return status;
}
