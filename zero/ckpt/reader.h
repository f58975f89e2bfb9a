/*
 * Reading a checkpoint's values back, every byte checked: a parameter's
 * elements of one kind are gathered from the pieces that hold them, read a
 * whole chunk at a time (a few chunks cached) and compared with the
 * chunk's checksum before any is used. Files are opened on first use and
 * their size checked against the manifest's.
 */
#ifndef ZSH_CKPT_READER_H_
#define ZSH_CKPT_READER_H_

#include "ckpt/format.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Chunks kept: a span of each kind may straddle two chunks. A slot is made
 * at its first use, as long as the longest chunk of the files (a chunk, or
 * less in a small checkpoint). */
#define ZSH_CKPT_CACHE (2 * ZSH_CKPT_KINDS)
/* Files held open at once: a checkpoint of many shards is read a few
 * files at a time, far below the descriptor limit. */
#define ZSH_CKPT_FDS 64

typedef struct zsh_ckpt_chunk {
    char    *data;
    size_t   file, index;
    uint64_t used;       /* tick of the last use; 0: empty */
} zsh_ckpt_chunk_t;

typedef struct zsh_ckpt_reader {
    const zsh_ckpt_t *ck;
    const char       *dir;
    int              *fds;        /* per file; -1 until opened */
    unsigned          nopen;      /* of them open */
    zsh_ckpt_chunk_t  cache[ZSH_CKPT_CACHE];
    size_t            chunk_max;  /* bytes of each slot */
    uint64_t          tick;
    uint64_t          read_bytes; /* bytes read from the files */
} zsh_ckpt_reader_t;

zsh_status_t zsh_ckpt_reader_open(zsh_ckpt_reader_t *r, const zsh_ckpt_t *ck, const char *dir);
void         zsh_ckpt_reader_close(zsh_ckpt_reader_t *r);

/* Elements [start, start + count) of parameter @param's kind @k into @dst.
 * ZSH_ERR_IO naming the file, the parameter and the offset for a missing
 * or truncated file or a checksum that does not match. */
zsh_status_t zsh_ckpt_reader_read(zsh_ckpt_reader_t *r, int k, size_t param, uint64_t start,
                                  uint64_t count, float *dst);

/* Check a whole file: its size, every chunk and the file's checksum.
 * Reports through zsh_error() like a read. */
zsh_status_t zsh_ckpt_reader_check_file(zsh_ckpt_reader_t *r, size_t file);

/* Check one piece's bytes of kind @k against its own checksum. */
zsh_status_t zsh_ckpt_reader_check_piece(zsh_ckpt_reader_t *r, int k, size_t param, size_t j);

#endif
