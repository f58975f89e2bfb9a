#define _GNU_SOURCE
#include "ckpt/dir.h"
#include "ckpt/format.h"

#include "core/escape.h"
#include "core/file.h"
#include "core/log.h"
#include "core/status.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int zsh_ckpt_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return (remove(path) != 0) && (errno != ENOENT) ? -1 : 0;
}

zsh_status_t zsh_ckpt_rmtree(const char *path)
{
    if ((nftw(path, zsh_ckpt_rm_one, 16, FTW_DEPTH | FTW_PHYS) != 0) && (errno != ENOENT)) {
        return zsh_error(ZSH_ERR_IO, "cannot remove %s: %s", path, strerror(errno));
    }
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_fsync_dir(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC), rc;

    if (fd < 0) {
        return zsh_error(ZSH_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    }
    rc = fsync(fd);
    close(fd);
    if (rc != 0) {
        return zsh_error(ZSH_ERR_IO, "cannot fsync %s: %s", path, strerror(errno));
    }
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_dir_prepare(const char *root, int create)
{
    char path[ZSH_CKPT_PATH_MAX], back[ZSH_CKPT_PATH_MAX];
    struct dirent *e;
    DIR *d;

    if (create && (mkdir(root, 0755) != 0) && (errno != EEXIST)) {
        return zsh_error(ZSH_ERR_IO, "cannot create the checkpoint directory %s: %s", root,
                         strerror(errno));
    }
    d = opendir(root);
    if ((d == NULL) && !create && (errno == ENOENT)) {
        return ZSH_OK; /* nothing to sweep; the caller says there is no checkpoint */
    }
    if (d == NULL) {
        return zsh_error(ZSH_ERR_IO, "cannot open the checkpoint directory %s: %s", root,
                         strerror(errno));
    }
    while ((e = readdir(d)) != NULL) {
        if ((strncmp(e->d_name, ".tmp-", 5) != 0) && (strncmp(e->d_name, ".old-", 5) != 0) &&
            (strcmp(e->d_name, ZSH_CKPT_LATEST ".tmp") != 0)) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", root, e->d_name);
        snprintf(back, sizeof(back), "%s/%s", root, e->d_name + 5);
        if ((strncmp(e->d_name, ".old-", 5) == 0) && (access(back, F_OK) != 0)) {
            /* A checkpoint moved aside to be replaced, whose replacement never
             * took its place: it is the one `latest` names, so it goes back,
             * and is never removed. */
            if (rename(path, back) == 0) {
                zsh_log(ZSH_LOG_WARN, "%s: a checkpoint an interrupted save was replacing; "
                        "put back as %s", path, back);
            } else {
                zsh_log(ZSH_LOG_WARN, "%s: a checkpoint an interrupted save was replacing "
                        "cannot be put back as %s: %s", path, back, strerror(errno));
            }
            continue;
        }
        if (!create) {
            /* A load leaves what a save under way may be writing. */
            if (strncmp(e->d_name, ".tmp-", 5) == 0) {
                zsh_log(ZSH_LOG_WARN, "%s: an incomplete checkpoint (a save cut short, or one "
                        "under way); ignored, and removed by the next save", path);
            }
            continue;
        }
        zsh_log(ZSH_LOG_WARN, "%s: an incomplete checkpoint left by an interrupted save; "
                "ignored and removed", path);
        (void)zsh_ckpt_rmtree(path);
    }
    closedir(d);
    return ZSH_OK;
}

static zsh_status_t zsh_ckpt_latest_write(const char *root, const char *name)
{
    char tmp[ZSH_CKPT_PATH_MAX], path[ZSH_CKPT_PATH_MAX];
    size_t len = strlen(name);
    int fd, ok;

    snprintf(tmp, sizeof(tmp), "%s/%s.tmp", root, ZSH_CKPT_LATEST);
    snprintf(path, sizeof(path), "%s/%s", root, ZSH_CKPT_LATEST);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        return zsh_error(ZSH_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
    }
    ok = (write(fd, name, len) == (ssize_t)len) && (write(fd, "\n", 1) == 1) && (fsync(fd) == 0);
    ok = (close(fd) == 0) && ok;
    if (!ok || (rename(tmp, path) != 0)) {
        zsh_status_t status = zsh_error(ZSH_ERR_IO, "cannot write %s: %s", path, strerror(errno));

        unlink(tmp);
        return status;
    }
    return zsh_ckpt_fsync_dir(root);
}

zsh_status_t zsh_ckpt_publish(const char *root, const char *tmp, const char *name)
{
    char path[ZSH_CKPT_PATH_MAX], old[ZSH_CKPT_PATH_MAX];
    zsh_status_t status;
    bool had = false;

    snprintf(path, sizeof(path), "%s/%s", root, name);
    snprintf(old, sizeof(old), "%s/.old-%s", root, name);
    /* A checkpoint of the same name is moved aside first: until `latest`
     * is rewritten below, a crash leaves it as .old-*, swept next time. */
    if (rename(path, old) == 0) {
        had = true;
    } else if (errno != ENOENT) {
        return zsh_error(ZSH_ERR_IO, "cannot move %s aside: %s", path, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        status = zsh_error(ZSH_ERR_IO, "cannot rename %s to %s: %s", tmp, path, strerror(errno));
        if (had) {
            (void)rename(old, path);
        }
        return status;
    }
    status = zsh_ckpt_fsync_dir(root);
    if (status == ZSH_OK) {
        status = zsh_ckpt_latest_write(root, name);
    }
    if ((status == ZSH_OK) && had) {
        status = zsh_ckpt_rmtree(old);
    }
    return status;
}

zsh_status_t zsh_ckpt_resolve(const char *path, char *out, size_t len)
{
    char buf[ZSH_CKPT_PATH_MAX], esc[ZSH_ESCAPED_MAX], *name = NULL;
    zsh_status_t status;
    size_t n = 0;

    snprintf(buf, sizeof(buf), "%s/%s", path, ZSH_CKPT_MANIFEST);
    if (access(buf, F_OK) == 0) {
        snprintf(out, len, "%s", path);
        return ZSH_OK;
    }
    snprintf(buf, sizeof(buf), "%s/%s", path, ZSH_CKPT_LATEST);
    if ((access(buf, F_OK) != 0) && (errno == ENOENT)) {
        return zsh_error(ZSH_ERR_IO, "no checkpoint in %s: neither %s nor %s (%s)",
                         zsh_escape_str(path, esc, sizeof(esc)), ZSH_CKPT_MANIFEST,
                         ZSH_CKPT_LATEST, strerror(ENOENT));
    }
    status = zsh_file_read_all(buf, false, ZSH_CKPT_LATEST_MAX, "the checkpoint's latest", &name,
                               &n);
    if (status != ZSH_OK) {
        return status;
    }
    while ((n > 0) && ((name[n - 1] == '\n') || (name[n - 1] == ' '))) {
        n--;
    }
    name[n] = '\0';
    if ((n == 0) || (strlen(name) != n) || (strchr(name, '/') != NULL) || (name[0] == '.')) {
        char content[64];

        status = zsh_error(ZSH_ERR_IO, "%s does not name a checkpoint (\"%s\")",
                           zsh_escape_str(buf, esc, sizeof(esc)),
                           zsh_escape(name, n, content, sizeof(content)));
        free(name);
        return status;
    }
    snprintf(out, len, "%s/%s", path, name);
    free(name);
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_latest_steps(const char *root, bool *has_p, unsigned long *steps_p)
{
    char path[ZSH_CKPT_PATH_MAX], name[ZSH_CKPT_PATH_MAX], *end;
    unsigned long long v;
    zsh_status_t status;

    *has_p = false;
    snprintf(path, sizeof(path), "%s/%s", root, ZSH_CKPT_LATEST);
    if ((access(path, F_OK) != 0) && (errno == ENOENT)) {
        return ZSH_OK;
    }
    status = zsh_ckpt_resolve(root, name, sizeof(name));
    if (status != ZSH_OK) {
        return status;
    }
    /* The names a save gives: step-<steps>, at least 8 digits. */
    end = strrchr(name, '/');
    end = (end != NULL) ? end + 1 : name;
    if (strncmp(end, "step-", 5) == 0) {
        errno = 0;
        v     = strtoull(end + 5, &end, 10);
        if ((errno == 0) && (*end == '\0')) {
            *has_p   = true;
            *steps_p = (unsigned long)v;
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_commit(const zsh_ckpt_t *ck, const char *root, const char *tmp,
                             const char *name)
{
    char path[ZSH_CKPT_PATH_MAX + 64], final[ZSH_CKPT_PATH_MAX + 64];
    zsh_status_t status;

    snprintf(path, sizeof(path), "%s/%s.tmp", tmp, ZSH_CKPT_MANIFEST);
    snprintf(final, sizeof(final), "%s/%s", tmp, ZSH_CKPT_MANIFEST);
    status = zsh_ckpt_manifest_write(ck, path);
    if ((status == ZSH_OK) && (rename(path, final) != 0)) {
        status = zsh_error(ZSH_ERR_IO, "cannot rename %s: %s", path, strerror(errno));
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_fsync_dir(tmp);
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_publish(root, tmp, name);
    }
    return status;
}
