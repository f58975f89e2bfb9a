/*
 * Files whose paths a user or a checkpoint names are untrusted: the path may
 * name a FIFO (an open() that never returns), a device (a read that never
 * ends), a socket, a directory, or a link to any of them. Every such file is
 * opened here, as what it must be, and read within a bound; a file written
 * in their place goes through a temporary created exclusively beside it.
 */
#ifndef ZSH_CORE_FILE_H_
#define ZSH_CORE_FILE_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Open @path read-only as a regular file, @what naming it in messages ("the
 * manifest"). O_NONBLOCK keeps the open of a FIFO from waiting for a writer,
 * O_NOFOLLOW (unless @follow) refuses a link where none is expected, and
 * fstat refuses anything but a regular file by name ("a FIFO"). ZSH_ERR_IO
 * naming the path (escaped) on failure; else *@fd_p, blocking again and
 * close-on-exec, and its size in *@size_p (may be NULL). */
zsh_status_t zsh_file_open_regular(const char *path, bool follow, const char *what, int *fd_p,
                                   uint64_t *size_p);

/* The whole of @path, opened as zsh_file_open_regular() does, and
 * NUL-terminated into *@text_p (the caller frees it), its length in
 * *@len_p. A file of more than @max bytes is refused, naming the bound,
 * before more than @max + 1 bytes are read. */
zsh_status_t zsh_file_read_all(const char *path, bool follow, size_t max, const char *what,
                               char **text_p, size_t *len_p);

/* A temporary file for @target, created exclusively (O_EXCL: never through
 * a link, never an existing file) under a random name in @target's own
 * directory, ".<name>.tmp-XXXXXX", so a rename puts it in place. Its path
 * into @tmp (@len bytes), its descriptor (write-only, close-on-exec, mode
 * 0644 less the umask) into *@fd_p. ZSH_ERR_INVALID_ARG for an empty
 * @target or one ending in '/', ZSH_ERR_IO naming it otherwise. */
zsh_status_t zsh_file_tmp_create(const char *target, char *tmp, size_t len, int *fd_p);

#endif
