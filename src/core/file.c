#define _GNU_SOURCE
#include "core/file.h"

#include "core/escape.h"
#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file that is not a regular one is, for the message that refuses it. */
static const char *zsh_file_type_name(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFIFO:  return "a FIFO";
    case S_IFCHR:  return "a character device";
    case S_IFBLK:  return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFDIR:  return "a directory";
    case S_IFLNK:  return "a symbolic link";
    default:       return "not a regular file";
    }
}

zsh_status_t zsh_file_open_regular(const char *path, bool follow, const char *what, int *fd_p,
                                   uint64_t *size_p)
{
    char name[ZSH_ESCAPED_MAX];
    struct stat st;
    int fd, err;

    zsh_escape_str(path, name, sizeof(name));
    fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));
    if (fd < 0) {
        err = errno;
        if ((err == ELOOP) && !follow) {
            return zsh_error(ZSH_ERR_IO, "cannot open %s %s: it is a symbolic link, and %s "
                             "is read only as a regular file", what, name, what);
        }
        return zsh_error(ZSH_ERR_IO, "cannot open %s %s: %s", what, name, strerror(err));
    }
    if (fstat(fd, &st) != 0) {
        err = errno;
        close(fd);
        return zsh_error(ZSH_ERR_IO, "cannot stat %s %s: %s", what, name, strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return zsh_error(ZSH_ERR_IO, "%s %s is %s, not a regular file", what, name,
                         zsh_file_type_name(st.st_mode));
    }
    /* Reads of a regular file never return EAGAIN, but blocking is the
     * contract callers expect. */
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    *fd_p = fd;
    if (size_p != NULL) {
        *size_p = (uint64_t)st.st_size;
    }
    return ZSH_OK;
}

zsh_status_t zsh_file_read_all(const char *path, bool follow, size_t max, const char *what,
                               char **text_p, size_t *len_p)
{
    char name[ZSH_ESCAPED_MAX], *text, *grown;
    size_t len = 0, cap;
    uint64_t size;
    zsh_status_t status;
    ssize_t n = 0;
    int fd, err;

    status = zsh_file_open_regular(path, follow, what, &fd, &size);
    if (status != ZSH_OK) {
        return status;
    }
    zsh_escape_str(path, name, sizeof(name));
    /* Room for what fstat said and one byte more, which tells a file that
     * grew (or one past the bound); the bound holds the read itself, as the
     * size may change under us. A buffer of the bound's size each time
     * would reserve 256 MiB to read a manifest of a few kilobytes. */
    cap  = ((size < max) ? (size_t)size : max) + 1;
    text = malloc(cap + 1);
    if (text == NULL) {
        close(fd);
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory to read %s %s", what, name);
    }
    while (len <= max) {
        if (len == cap) {
            /* The file grew since fstat: twice the room, up to the bound's. */
            cap   = ((cap <= (max + 1) / 2) ? 2 * cap : max + 1);
            grown = realloc(text, cap + 1);
            if (grown == NULL) {
                free(text);
                close(fd);
                return zsh_error(ZSH_ERR_NO_MEMORY, "no memory to read %s %s", what, name);
            }
            text = grown;
        }
        n = read(fd, text + len, cap - len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            break;
        }
        len += (size_t)n;
    }
    err = errno;
    close(fd);
    if (n < 0) {
        free(text);
        return zsh_error(ZSH_ERR_IO, "cannot read %s %s: %s", what, name, strerror(err));
    }
    if (len > max) {
        free(text);
        return zsh_error(ZSH_ERR_IO, "%s %s is larger than %zu bytes, the most %s may be",
                         what, name, max, what);
    }
    text[len] = '\0';
    *text_p   = text;
    *len_p    = len;
    return ZSH_OK;
}

zsh_status_t zsh_file_tmp_create(const char *target, char *tmp, size_t len, int *fd_p)
{
    static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
    const char *slash = strrchr(target, '/'), *base = (slash != NULL) ? slash + 1 : target;
    char name[ZSH_ESCAPED_MAX], *suffix;
    unsigned char rnd[6];
    int fd = -1, n, tries, i;

    zsh_escape_str(target, name, sizeof(name));
    if (base[0] == '\0') {
        return zsh_error(ZSH_ERR_INVALID_ARG, "the output name \"%s\" is empty or a "
                         "directory's", name);
    }
    n = snprintf(tmp, len, "%.*s.%s.tmp-XXXXXX", (int)(base - target), target, base);
    if ((n < 0) || ((size_t)n >= len)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "the output name %s is too long", name);
    }
    suffix = tmp + n - 6;
    /* O_CREAT | O_EXCL: neither a file nor a link already at the name is
     * ever written through; a name taken is drawn again. */
    for (tries = 0; (fd < 0) && (tries < 100); tries++) {
        if (getentropy(rnd, sizeof(rnd)) != 0) {
            return zsh_error(ZSH_ERR_IO, "no random bytes for a temporary name: %s",
                             strerror(errno));
        }
        for (i = 0; i < 6; i++) {
            suffix[i] = digits[rnd[i] % 36];
        }
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if ((fd < 0) && (errno != EEXIST)) {
            break;
        }
    }
    if (fd < 0) {
        return zsh_error(ZSH_ERR_IO, "cannot create a temporary file beside %s: %s", name,
                         strerror(errno));
    }
    *fd_p = fd;
    return ZSH_OK;
}
