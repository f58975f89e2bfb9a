/*
 * The engine's files: created 0600 in its directory, with O_DIRECT where
 * the filesystem takes it, and their blocks reserved up front.
 */
#define _GNU_SOURCE
#include "aio/aio_impl.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZSH_AIO_ZEROS (1u << 20)

zsh_status_t zsh_aio_open(zsh_aio_t *aio, const char *name, zsh_aio_file_t **file_p)
{
    const int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
    zsh_aio_file_t *file;
    size_t len;
    int fd;

    if ((aio == NULL) || (name == NULL) || (file_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_open: NULL engine, name or file");
    }
    if ((name[0] == '\0') || (strchr(name, '/') != NULL) || (strcmp(name, ".") == 0) ||
        (strcmp(name, "..") == 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_aio_open: \"%s\" is not a file name (no '/', not empty)", name);
    }
    len  = strlen(aio->dir) + 1 + strlen(name) + 1;
    file = calloc(1, sizeof(*file) + len);
    if (file == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_aio_open: no memory for %s", name);
    }
    snprintf(file->path, len, "%s/%s", aio->dir, name);
    fd           = open(file->path, flags | O_DIRECT, 0600);
    file->direct = (fd >= 0);
    if ((fd < 0) && (errno == EINVAL)) {
        fd = open(file->path, flags, 0600);
        if ((fd >= 0) && !aio->said_buffered) {
            aio->said_buffered = true;
            zsh_log(ZSH_LOG_INFO, "%s: the filesystem refuses O_DIRECT: buffered I/O",
                    aio->dir);
        }
    }
    if (fd < 0) {
        zsh_status_t status = zsh_error(ZSH_ERR_IO, "cannot create %s: %s", file->path,
                                        strerror(errno));
        free(file);
        return status;
    }
    (void)fchmod(fd, 0600); /* whatever the umask */
    file->fd   = fd;
    file->aio  = aio;
    file->next = aio->files;
    aio->files = file;
    *file_p    = file;
    return ZSH_OK;
}

const char *zsh_aio_file_path(const zsh_aio_file_t *file)
{
    return file->path;
}

/* Where fallocate() is not supported: write zeros, aligned for O_DIRECT. */
static int zsh_aio_reserve_zeros(zsh_aio_file_t *file, uint64_t bytes)
{
    uint64_t end = (bytes + ZSH_AIO_ALIGN - 1) / ZSH_AIO_ALIGN * ZSH_AIO_ALIGN, off;
    struct stat st;
    ssize_t ret;
    void *zeros;
    size_t n;

    if ((fstat(file->fd, &st) == 0) && ((uint64_t)st.st_size >= bytes)) {
        return 0;
    }
    zeros = zsh_aio_buf_alloc(ZSH_AIO_ZEROS);
    if (zeros == NULL) {
        return ENOMEM;
    }
    memset(zeros, 0, ZSH_AIO_ZEROS);
    for (off = 0; off < end; off += (uint64_t)ret) {
        n   = (end - off < ZSH_AIO_ZEROS) ? (size_t)(end - off) : ZSH_AIO_ZEROS;
        ret = pwrite(file->fd, zeros, n, (off_t)off);
        if (ret <= 0) {
            int err = (ret == 0) ? ENOSPC : errno;

            if (err == EINTR) {
                ret = 0;
                continue;
            }
            free(zeros);
            return err;
        }
    }
    free(zeros);
    return 0;
}

zsh_status_t zsh_aio_reserve(zsh_aio_file_t *file, uint64_t bytes)
{
    int err = 0;

    if (file == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_reserve: NULL file");
    }
    if (bytes == 0) {
        return ZSH_OK;
    }
    if (fallocate(file->fd, 0, 0, (off_t)bytes) != 0) {
        err = errno;
        if ((err == EOPNOTSUPP) || (err == ENOSYS)) {
            err = zsh_aio_reserve_zeros(file, bytes);
        }
    }
    if (err != 0) {
        return zsh_error(ZSH_ERR_IO, "cannot reserve %llu bytes of %s: %s",
                         (unsigned long long)bytes, file->path, strerror(err));
    }
    return ZSH_OK;
}

void *zsh_aio_buf_alloc(size_t bytes)
{
    void *buf;

    return (posix_memalign(&buf, ZSH_AIO_ALIGN, (bytes > 0) ? bytes : 1) == 0) ? buf : NULL;
}
