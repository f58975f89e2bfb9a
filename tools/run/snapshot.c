/*
 * The directory in node memory where a job's ranks keep their snapshots
 * (zsh_optim_snapshot(), ZSH_SNAPSHOT_DIR): zshrun makes it before the first
 * rank starts and removes it when the job ends, so it outlives every rank
 * across restarts and a later job never restores an earlier one's state. A
 * zshrun killed with SIGKILL leaves it behind in /dev/shm. On several nodes
 * each node's zshrun makes its own: the ranks copy their parts into a next
 * node's (zero/ckpt/buddy.c), so the node's memory is all they need.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* nftw */
#endif
#include "run/run.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int zsh_run_snapshot_dir(const zsh_run_opts_t *o, zsh_run_job_t *job)
{
    struct stat st;

    job->snap_dir[0] = '\0';
    (void)o;
    /* The user's choice stays. */
    if ((getenv("ZSH_SNAPSHOT_DIR") != NULL) ||
        (stat("/dev/shm", &st) != 0) || !S_ISDIR(st.st_mode)) {
        return 0;
    }
    snprintf(job->snap_dir, sizeof(job->snap_dir), "/dev/shm/zshrun-%ld-XXXXXX", (long)getpid());
    if (mkdtemp(job->snap_dir) == NULL) {
        fprintf(stderr, "zshrun: cannot create a snapshot directory %s: %s\n", job->snap_dir,
                strerror(errno));
        job->snap_dir[0] = '\0';
        return 1;
    }
    return 0;
}

static int zsh_run_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    if ((remove(path) != 0) && (errno != ENOENT)) {
        fprintf(stderr, "zshrun: cannot remove %s: %s\n", path, strerror(errno));
    }
    return 0;
}

void zsh_run_snapshot_remove(zsh_run_job_t *job)
{
    if (job->snap_dir[0] != '\0') {
        (void)nftw(job->snap_dir, zsh_run_rm_one, 16, FTW_DEPTH | FTW_PHYS);
        job->snap_dir[0] = '\0';
    }
}
