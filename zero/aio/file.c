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

/* Open @path with @flags, O_DIRECT where the filesystem takes it, and add
 * it to the engine's files. */
static zsh_status_t zsh_aio_file_add(zsh_aio_t *aio, const char *path, int flags, mode_t mode,
                                     bool keep, zsh_aio_file_t **file_p)
{
    size_t len = strlen(path) + 1;
    zsh_aio_file_t *file;
    int fd;

    file = calloc(1, sizeof(*file) + len);
    if (file == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_aio_open: no memory for %s", path);
    }
    memcpy(file->path, path, len);
    if (flags & O_EXCL) {
        /* An O_DIRECT open the filesystem refuses has made the file already,
         * so an exclusive create asks for O_DIRECT once the file is open. */
        fd           = open(file->path, flags, mode);
        file->direct = (fd >= 0) && (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_DIRECT) == 0);
        if ((fd >= 0) && !file->direct && !aio->said_buffered) {
            aio->said_buffered = true;
            zsh_log(ZSH_LOG_INFO, "%s: the filesystem refuses O_DIRECT: buffered I/O",
                    file->path);
        }
    } else {
        fd           = open(file->path, flags | O_DIRECT, mode);
        file->direct = (fd >= 0);
    }
    if ((fd < 0) && (errno == EINVAL) && !(flags & O_EXCL)) {
        fd = open(file->path, flags, mode);
        if ((fd >= 0) && !aio->said_buffered) {
            aio->said_buffered = true;
            zsh_log(ZSH_LOG_INFO, "%s: the filesystem refuses O_DIRECT: buffered I/O",
                    file->path);
        }
    }
    if (fd < 0) {
        zsh_status_t status = zsh_error(ZSH_ERR_IO, "cannot %s %s: %s",
                                        (flags & O_CREAT) ? "create" : "open", file->path,
                                        strerror(errno));
        free(file);
        return status;
    }
    file->fd   = fd;
    file->aio  = aio;
    file->keep = keep;
    file->next = aio->files;
    aio->files = file;
    *file_p    = file;
    return ZSH_OK;
}

zsh_status_t zsh_aio_open(zsh_aio_t *aio, const char *name, zsh_aio_file_t **file_p)
{
    const int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
    zsh_status_t status;
    char *path;
    size_t len;

    if ((aio == NULL) || (name == NULL) || (file_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_open: NULL engine, name or file");
    }
    if (aio->dir == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_open: the engine has no directory");
    }
    if ((name[0] == '\0') || (strchr(name, '/') != NULL) || (strcmp(name, ".") == 0) ||
        (strcmp(name, "..") == 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_aio_open: \"%s\" is not a file name (no '/', not empty)", name);
    }
    len  = strlen(aio->dir) + 1 + strlen(name) + 1;
    path = malloc(len);
    if (path == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "zsh_aio_open: no memory for %s", name);
    }
    snprintf(path, len, "%s/%s", aio->dir, name);
    status = zsh_aio_file_add(aio, path, flags, 0600, false, file_p);
    free(path);
    if (status == ZSH_OK) {
        (void)fchmod((*file_p)->fd, 0600); /* whatever the umask */
    }
    return status;
}

zsh_status_t zsh_aio_open_path(zsh_aio_t *aio, const char *path, int create,
                               zsh_aio_file_t **file_p)
{
    const int flags = create ? (O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW)
                             : (O_RDONLY | O_CLOEXEC);

    if ((aio == NULL) || (path == NULL) || (file_p == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_aio_open_path: NULL engine, path or file");
    }
    return zsh_aio_file_add(aio, path, flags, 0644, true, file_p);
}

zsh_status_t zsh_aio_sync(zsh_aio_file_t *file)
{
    if (fsync(file->fd) != 0) {
        return zsh_error(ZSH_ERR_IO, "cannot fsync %s: %s", file->path, strerror(errno));
    }
    return ZSH_OK;
}

void zsh_aio_close(zsh_aio_file_t *file)
{
    zsh_aio_file_t **pp;

    if (file == NULL) {
        return;
    }
    for (pp = &file->aio->files; *pp != NULL; pp = &(*pp)->next) {
        if (*pp == file) {
            *pp = file->next;
            break;
        }
    }
    close(file->fd);
    free(file);
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
