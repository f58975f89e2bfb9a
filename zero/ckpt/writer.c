#include "ckpt/writer.h"

#include "core/status.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

zsh_status_t zsh_ckpt_writer_open(zsh_ckpt_writer_t *w, zsh_aio_t *aio, const char *path)
{
    zsh_status_t status;

    memset(w, 0, sizeof(*w));
    w->aio    = aio;
    w->cap    = ZSH_CKPT_CHUNK;
    w->buf[0] = zsh_aio_buf_alloc(w->cap);
    w->whole  = XXH3_createState();
    w->piece  = XXH3_createState();
    if ((w->buf[0] == NULL) || (w->whole == NULL) || (w->piece == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the buffers of %s", path);
    } else {
        XXH3_64bits_reset(w->whole);
        XXH3_64bits_reset(w->piece);
        status = zsh_aio_open_path(aio, path, 1, &w->file);
    }
    if (status != ZSH_OK) {
        /* Abort clears the writer, its status too: the failure is returned
         * from here, and kept in the cleared writer for any later call. */
        zsh_ckpt_writer_abort(w);
        w->status = status;
    }
    return status;
}

static zsh_status_t zsh_ckpt_writer_wait(zsh_ckpt_writer_t *w, int i)
{
    zsh_status_t status = ZSH_OK;

    if (w->req[i] != NULL) {
        status = zsh_aio_wait(w->req[i]);
        zsh_aio_req_free(w->req[i]);
        w->req[i] = NULL;
    }
    if ((status != ZSH_OK) && (w->status == ZSH_OK)) {
        w->status = status;
    }
    return w->status;
}

/* Send the current buffer (its fill a multiple of ZSH_CKPT_ALIGN) and
 * switch to the other once its last write is done. */
static zsh_status_t zsh_ckpt_writer_flush(zsh_ckpt_writer_t *w)
{
    size_t n = (w->fill + ZSH_CKPT_CHUNK - 1) / ZSH_CKPT_CHUNK, c, len;
    uint64_t *chunks;

    if (w->meta.nchunks + n > w->maxchunks) {
        w->maxchunks = 2 * (w->meta.nchunks + n);
        chunks       = realloc(w->meta.chunks, w->maxchunks * sizeof(*chunks));
        if (chunks == NULL) {
            return w->status = zsh_error(ZSH_ERR_NO_MEMORY, "no memory for checksums of %s",
                                         zsh_aio_file_path(w->file));
        }
        w->meta.chunks = chunks;
    }
    for (c = 0; c < n; c++) {
        len = (w->fill - c * ZSH_CKPT_CHUNK < ZSH_CKPT_CHUNK) ? w->fill - c * ZSH_CKPT_CHUNK
                                                              : ZSH_CKPT_CHUNK;
        w->meta.chunks[w->meta.nchunks++] = XXH3_64bits(w->buf[w->cur] + c * ZSH_CKPT_CHUNK, len);
    }
    XXH3_64bits_update(w->whole, w->buf[w->cur], w->fill);
    w->status = zsh_aio_write(w->aio, w->file, w->written, w->buf[w->cur], w->fill,
                              &w->req[w->cur]);
    if (w->status != ZSH_OK) {
        return w->status;
    }
    w->written += w->fill;
    w->fill     = 0;
    w->cur     ^= 1;
    return zsh_ckpt_writer_wait(w, w->cur);
}

/* Before the first write, a full buffer doubles (its bytes copied) rather
 * than go out; after it, each buffer has the full size. */
static zsh_status_t zsh_ckpt_writer_grow(zsh_ckpt_writer_t *w)
{
    bool  doubling = (w->written == 0) && (w->cap < ZSH_CKPT_WBUF);
    char *buf      = NULL;

    if ((doubling || (w->buf[1] == NULL)) &&
        ((buf = zsh_aio_buf_alloc(doubling ? 2 * w->cap : w->cap)) == NULL)) {
        return w->status = zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the buffers of %s",
                                     zsh_aio_file_path(w->file));
    }
    if (!doubling) {
        w->buf[1] = (buf != NULL) ? buf : w->buf[1];
        return zsh_ckpt_writer_flush(w);
    }
    memcpy(buf, w->buf[0], w->fill);
    free(w->buf[0]);
    w->buf[0] = buf;
    w->cap   *= 2;
    return ZSH_OK;
}

void *zsh_ckpt_writer_room(zsh_ckpt_writer_t *w, size_t *bytes_p)
{
    if ((w->status == ZSH_OK) && (w->fill == w->cap)) {
        zsh_ckpt_writer_grow(w);
    }
    if (w->status != ZSH_OK) {
        return NULL;
    }
    *bytes_p = w->cap - w->fill;
    return w->buf[w->cur] + w->fill;
}

zsh_status_t zsh_ckpt_writer_commit(zsh_ckpt_writer_t *w, size_t bytes)
{
    XXH3_64bits_update(w->piece, w->buf[w->cur] + w->fill, bytes);
    w->fill += bytes;
    return w->status;
}

uint64_t zsh_ckpt_writer_piece(zsh_ckpt_writer_t *w)
{
    uint64_t h = XXH3_64bits_digest(w->piece);

    XXH3_64bits_reset(w->piece);
    return h;
}

zsh_status_t zsh_ckpt_writer_close(zsh_ckpt_writer_t *w)
{
    size_t pad = (ZSH_CKPT_ALIGN - w->fill % ZSH_CKPT_ALIGN) % ZSH_CKPT_ALIGN;

    if ((w->status == ZSH_OK) && (w->fill > 0)) {
        memset(w->buf[w->cur] + w->fill, 0, pad);
        w->fill += pad;
        zsh_ckpt_writer_flush(w);
    }
    zsh_ckpt_writer_wait(w, 0);
    zsh_ckpt_writer_wait(w, 1);
    if (w->status == ZSH_OK) {
        w->status = zsh_aio_sync(w->file);
    }
    w->meta.bytes = w->written;
    w->meta.hash  = XXH3_64bits_digest(w->whole);
    if (w->status == ZSH_OK) {
        w->meta.chunks = (w->meta.chunks != NULL) ? w->meta.chunks : malloc(sizeof(uint64_t));
        if (w->meta.chunks == NULL) {
            w->status = zsh_error(ZSH_ERR_NO_MEMORY, "no memory");
        }
    }
    if (w->status != ZSH_OK) {
        free(w->meta.chunks);
        w->meta.chunks  = NULL;
        w->meta.nchunks = 0;
    }
    zsh_aio_close(w->file);
    w->file = NULL;
    free(w->buf[0]);
    free(w->buf[1]);
    XXH3_freeState(w->whole);
    XXH3_freeState(w->piece);
    w->buf[0] = w->buf[1] = NULL;
    w->whole = w->piece = NULL;
    return w->status;
}

void zsh_ckpt_writer_abort(zsh_ckpt_writer_t *w)
{
    zsh_ckpt_writer_wait(w, 0);
    zsh_ckpt_writer_wait(w, 1);
    zsh_aio_close(w->file);
    free(w->buf[0]);
    free(w->buf[1]);
    free(w->meta.chunks);
    XXH3_freeState(w->whole);
    XXH3_freeState(w->piece);
    memset(w, 0, sizeof(*w));
}
