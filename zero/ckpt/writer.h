/*
 * One file of a checkpoint written as a stream: the caller fills the
 * writer's aligned buffer in place, each full buffer goes to disk through
 * the I/O engine (O_DIRECT where the filesystem allows it) while the next
 * fills, and the checksums of the file, of each chunk and of the current
 * piece are taken on the way. Closing pads the file to ZSH_CKPT_ALIGN with
 * zeros, waits, fsyncs and closes it.
 */
#ifndef ZSH_CKPT_WRITER_H_
#define ZSH_CKPT_WRITER_H_

#include "aio/aio.h"
#include "ckpt/format.h"
#include "ckpt/hash.h"

#include <stddef.h>
#include <stdint.h>

/* Bytes per buffer, two of them. The first starts at one chunk and doubles
 * up to this while the file fits in it; the second is made at the first
 * write. A file of a few kilobytes then costs one chunk, not 8 MiB
 * (AddressSanitizer poisons and faults in the shadow of every byte
 * allocated, on each open and close). */
#define ZSH_CKPT_WBUF (4u * ZSH_CKPT_CHUNK)

typedef struct zsh_ckpt_writer {
    zsh_aio_t       *aio;
    zsh_aio_file_t  *file;
    char            *buf[2];
    zsh_aio_req_t   *req[2];
    int              cur;
    size_t           cap;       /* bytes of each buffer made */
    size_t           fill;      /* bytes in buf[cur] */
    uint64_t         written;   /* bytes handed to the engine */
    XXH3_state_t    *whole, *piece;
    zsh_ckpt_file_t  meta;      /* bytes, hash and chunks, set at close */
    size_t           maxchunks;
    zsh_status_t     status;    /* the first failure, sticky */
} zsh_ckpt_writer_t;

/* Create @path (it must not exist). */
zsh_status_t zsh_ckpt_writer_open(zsh_ckpt_writer_t *w, zsh_aio_t *aio, const char *path);

/* Room to fill at the end of the stream: *@bytes_p > 0 bytes at the return
 * value; NULL on a failure (w->status). */
void *zsh_ckpt_writer_room(zsh_ckpt_writer_t *w, size_t *bytes_p);

/* @bytes of the room were filled. */
zsh_status_t zsh_ckpt_writer_commit(zsh_ckpt_writer_t *w, size_t bytes);

/* The checksum of what was committed since the last call (or the open). */
uint64_t zsh_ckpt_writer_piece(zsh_ckpt_writer_t *w);

/* Pad, flush, wait, fsync and close; w->meta then describes the file (its
 * chunks are the caller's to free). Failure leaves the file to the caller
 * to remove. */
zsh_status_t zsh_ckpt_writer_close(zsh_ckpt_writer_t *w);

/* Free what a failed writer holds (the file stays). */
void zsh_ckpt_writer_abort(zsh_ckpt_writer_t *w);

#endif
