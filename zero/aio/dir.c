/*
 * The engine's directory: <dir>/zeroshard-<job id>/r<rank>-<k>, made 0700
 * and held with flock() for the engine's life. A directory of the same job
 * and rank that nobody holds was left by a killed process: it is swept at
 * create. The lock is what tells a live engine's directory from a stale
 * one, so a directory is locked before anything of it is removed, and an
 * engine checks after locking that the path is still the directory it
 * locked (another engine's sweep may have removed it in between).
 */
#define _GNU_SOURCE
#include "aio/aio_impl.h"
#include "core/log.h"
#include "core/status.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZSH_AIO_DIR_TRIES 4096

/* Remove the files in the directory @fd; count them and their bytes. */
static void zsh_aio_dir_clear(int fd, unsigned *files, unsigned long long *bytes)
{
    struct dirent *e;
    struct stat st;
    DIR *d;
    int dup_fd;

    dup_fd = dup(fd);
    if ((dup_fd < 0) || ((d = fdopendir(dup_fd)) == NULL)) {
        if (dup_fd >= 0) {
            close(dup_fd);
        }
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if ((strcmp(e->d_name, ".") == 0) || (strcmp(e->d_name, "..") == 0)) {
            continue;
        }
        if ((fstatat(fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0) && !S_ISDIR(st.st_mode) &&
            (unlinkat(fd, e->d_name, 0) == 0)) {
            (*files)++;
            *bytes += (unsigned long long)st.st_size;
        }
    }
    closedir(d);
}

/* Whether @name is r<rank>-<digits>. */
static bool zsh_aio_dir_is_rank(const char *name, const char *prefix)
{
    size_t n = strlen(prefix);
    const char *p;

    if (strncmp(name, prefix, n) != 0 || (name[n] == '\0')) {
        return false;
    }
    for (p = name + n; *p != '\0'; p++) {
        if (!isdigit((unsigned char)*p)) {
            return false;
        }
    }
    return true;
}

/* Remove every directory of @rank in @job_dir that no live engine holds. */
static void zsh_aio_dir_sweep(const char *job_dir, int rank)
{
    unsigned dirs = 0, files = 0;
    unsigned long long bytes = 0;
    char prefix[32];
    struct dirent *e;
    DIR *d;
    int fd;

    snprintf(prefix, sizeof(prefix), "r%d-", rank);
    d = opendir(job_dir);
    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (!zsh_aio_dir_is_rank(e->d_name, prefix)) {
            continue;
        }
        fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        if (flock(fd, LOCK_EX | LOCK_NB) == 0) { /* nobody holds it: a killed job's */
            zsh_aio_dir_clear(fd, &files, &bytes);
            if (unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR) == 0) {
                dirs++;
            }
        }
        close(fd);
    }
    closedir(d);
    if ((dirs > 0) || (files > 0)) {
        zsh_log(ZSH_LOG_WARN,
                "%s: swept %u directories of rank %d left by a killed job: removed %u files, "
                "%llu bytes",
                job_dir, dirs, rank, files, bytes);
    }
}

/* The job id names a directory: letters, digits, '.', '_' and '-', not
 * starting with '.'. */
static bool zsh_aio_job_id_ok(const char *id)
{
    const char *p;

    if ((id[0] == '\0') || (id[0] == '.') || (strlen(id) > 128)) {
        return false;
    }
    for (p = id; *p != '\0'; p++) {
        if (!isalnum((unsigned char)*p) && (strchr("._-", *p) == NULL)) {
            return false;
        }
    }
    return true;
}

/* Claim r<rank>-<k> for the first k free: absent (made now) or not locked. */
static zsh_status_t zsh_aio_dir_claim(zsh_aio_t *aio, int rank)
{
    struct stat held, named;
    unsigned k, tries = 0;
    char *path = NULL;
    bool made;
    int fd;

    for (k = 0; tries < ZSH_AIO_DIR_TRIES; tries++) {
        free(path);
        if (asprintf(&path, "%s/r%d-%u", aio->job_dir, rank, k) < 0) {
            return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the I/O engine's directory");
        }
        made = (mkdir(path, 0700) == 0);
        if (!made && (errno == ENOENT) && (mkdir(aio->job_dir, 0700) == 0)) {
            continue; /* another job's engine removed the job directory as it ended */
        }
        if (!made && (errno != EEXIST)) {
            zsh_status_t status = zsh_error(ZSH_ERR_IO, "cannot create the directory %s: %s",
                                            path, strerror(errno));
            free(path);
            return status;
        }
        fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
            if (errno != ENOENT) {
                k++; /* not a directory of ours */
            }
            continue; /* else swept between mkdir and open: the same k again */
        }
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            close(fd); /* a live engine's */
            k++;
            continue;
        }
        if ((fstat(fd, &held) != 0) || (lstat(path, &named) != 0) ||
            (held.st_ino != named.st_ino) || (held.st_dev != named.st_dev)) {
            close(fd); /* swept before we locked it: the same k again */
            continue;
        }
        if (made) {
            (void)fchmod(fd, 0700); /* whatever the umask */
        } else {
            unsigned files = 0;
            unsigned long long bytes = 0;

            zsh_aio_dir_clear(fd, &files, &bytes);
        }
        aio->lock_fd = fd;
        aio->dir     = path;
        return ZSH_OK;
    }
    free(path);
    return zsh_error(ZSH_ERR_IO, "%s: no free directory for rank %d after %u tries",
                     aio->job_dir, rank, tries);
}

zsh_status_t zsh_aio_dir_create(zsh_aio_t *aio, const char *dir, const char *job_id, int rank)
{
    zsh_status_t status;
    struct stat st;

    if ((job_id == NULL) || (job_id[0] == '\0')) {
        job_id = "default";
    }
    if (!zsh_aio_job_id_ok(job_id)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "job id \"%s\" cannot name a directory: letters, digits, '.', '_' "
                         "and '-' only, not starting with '.', at most 128",
                         job_id);
    }
    if (rank < 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "the I/O engine's rank %d is negative", rank);
    }
    if (stat(dir, &st) != 0) {
        return zsh_error(ZSH_ERR_IO, "NVMe directory %s: %s", dir, strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        return zsh_error(ZSH_ERR_IO, "NVMe directory %s: %s", dir, strerror(ENOTDIR));
    }
    if (access(dir, W_OK | X_OK) != 0) {
        return zsh_error(ZSH_ERR_IO, "NVMe directory %s is not writable: %s", dir,
                         strerror(errno));
    }
    if (asprintf(&aio->job_dir, "%s/zeroshard-%s", dir, job_id) < 0) {
        aio->job_dir = NULL;
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the I/O engine's directory");
    }
    if (mkdir(aio->job_dir, 0700) == 0) {
        (void)chmod(aio->job_dir, 0700);
    } else if (errno != EEXIST) {
        status = zsh_error(ZSH_ERR_IO, "cannot create the directory %s: %s", aio->job_dir,
                           strerror(errno));
        goto err_free;
    }
    if ((lstat(aio->job_dir, &st) != 0) || !S_ISDIR(st.st_mode)) {
        status = zsh_error(ZSH_ERR_IO, "%s: %s", aio->job_dir, strerror(ENOTDIR));
        goto err_free;
    }
    zsh_aio_dir_sweep(aio->job_dir, rank);
    status = zsh_aio_dir_claim(aio, rank);
    if (status != ZSH_OK) {
        goto err_free;
    }
    return ZSH_OK;

err_free:
    free(aio->job_dir);
    aio->job_dir = NULL;
    return status;
}

void zsh_aio_dir_remove(zsh_aio_t *aio)
{
    if (aio->dir == NULL) {
        return;
    }
    if (rmdir(aio->dir) != 0) {
        zsh_log(ZSH_LOG_WARN, "cannot remove %s: %s", aio->dir, strerror(errno));
    }
    close(aio->lock_fd); /* after the rmdir: nobody may sweep it while files remain */
    if ((rmdir(aio->job_dir) != 0) && (errno != ENOTEMPTY) && (errno != EEXIST) &&
        (errno != ENOENT)) {
        zsh_log(ZSH_LOG_WARN, "cannot remove %s: %s", aio->job_dir, strerror(errno));
    }
    free(aio->dir);
    free(aio->job_dir);
    aio->dir     = NULL;
    aio->job_dir = NULL;
}
