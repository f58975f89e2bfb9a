/*
 * One rank's process: a process group of its own (so that stopping the rank
 * reaches whatever it started), stdout and stderr on pipes to the relay,
 * stdin from /dev/null, and the torchrun environment.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include "run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

/* The library reads ZSH_RANK before RANK (and so on), so an inherited ZSH_
 * form would override what zshrun gives each rank: every rank would claim
 * the same number. The launcher owns these, as torchrun owns RANK. */
static const char *const zsh_run_owned[] = {"ZSH_RANK", "ZSH_WORLD_SIZE", "ZSH_MASTER_ADDR",
                                            "ZSH_MASTER_PORT"};

static void zsh_run_setenv_int(const char *name, int value)
{
    char text[16];

    snprintf(text, sizeof(text), "%d", value);
    setenv(name, text, 1);
}

/*
 * glibc's malloc backs its large blocks with transparent huge pages when
 * GLIBC_TUNABLES says glibc.malloc.hugetlb=1 (glibc 2.35 on; older ones
 * ignore it). Ranks on one node copy between each other's buffers by
 * cross-memory attach, whose kernel copy pins every page of both buffers:
 * a 2 MiB page is pinned once where 4 KiB pages are pinned 512 times
 * (measured in docs/DECISIONS.md, "Huge pages"). A tunable the user set
 * stays as it is.
 */
static void zsh_run_thp_env(void)
{
    static const char want[] = "glibc.malloc.hugetlb=1";
    const char *have = getenv("GLIBC_TUNABLES");
    char *both;

    if ((have == NULL) || (have[0] == '\0')) {
        setenv("GLIBC_TUNABLES", want, 1);
        return;
    }
    if (strstr(have, "glibc.malloc.hugetlb=") != NULL) {
        return;
    }
    both = malloc(strlen(have) + sizeof(want) + 1);
    if (both != NULL) {
        sprintf(both, "%s:%s", have, want);
        setenv("GLIBC_TUNABLES", both, 1);
        free(both);
    }
}

/* The environment torchrun gives a worker, with the job's key. */
static void zsh_run_child_env(const zsh_run_opts_t *o, const zsh_run_job_t *job, int local,
                              int rank)
{
    size_t i;

    for (i = 0; i < sizeof(zsh_run_owned) / sizeof(zsh_run_owned[0]); i++) {
        unsetenv(zsh_run_owned[i]);
    }
    zsh_run_setenv_int("RANK", rank);
    zsh_run_setenv_int("LOCAL_RANK", local);
    zsh_run_setenv_int("WORLD_SIZE", job->world);
    zsh_run_setenv_int("LOCAL_WORLD_SIZE", o->nproc);
    zsh_run_setenv_int("GROUP_RANK", o->node_rank);
    zsh_run_setenv_int("GROUP_WORLD_SIZE", o->nnodes);
    zsh_run_setenv_int("ROLE_RANK", rank);
    zsh_run_setenv_int("ROLE_WORLD_SIZE", job->world);
    /* How many times the job was started again, under both names: a program
     * reads it to resume from its checkpoint rather than start afresh. */
    zsh_run_setenv_int("ZSH_RESTART_COUNT", job->restart);
    zsh_run_setenv_int("TORCHELASTIC_RESTART_COUNT", job->restart);
    zsh_run_setenv_int("TORCHELASTIC_MAX_RESTARTS", o->max_restarts);
    if (job->snap_dir[0] != '\0') {
        setenv("ZSH_SNAPSHOT_DIR", job->snap_dir, 1);
    }
    setenv("MASTER_ADDR", job->master_addr, 1);
    setenv("MASTER_PORT", job->master_port, 1);
    if (job->job_key != NULL) {
        setenv("ZSH_JOB_KEY", job->job_key, 1);
    }
    /* As torchrun: N ranks that each start a thread per core oversubscribe
     * the node N times over. */
    if (o->nproc > 1) {
        setenv("OMP_NUM_THREADS", "1", 0);
        if (o->thp) {
            zsh_run_thp_env();
        }
    }
}

/* In the child, between fork and exec; returns only on failure. */
static void zsh_run_child(const zsh_run_opts_t *o, const zsh_run_job_t *job, int local, int rank,
                          const int out[2], const int err[2], pid_t parent)
{
    sigset_t none;
    int devnull;

    setpgid(0, 0);
    /* The rank dies with zshrun, even when zshrun is killed with SIGKILL and
     * cannot pass a signal on. Checked after it is set: zshrun may have died
     * before, and then the rank was reparented and would never get it. */
    if ((prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) || (getppid() != parent)) {
        _exit(127);
    }
    devnull = open("/dev/null", O_RDONLY);
    if ((devnull < 0) || (dup2(devnull, 0) < 0) || (dup2(out[1], 1) < 0) ||
        (dup2(err[1], 2) < 0)) {
        return;
    }
    /* zshrun ignores SIGPIPE and blocks nothing; the rank starts as from a shell. */
    signal(SIGPIPE, SIG_DFL);
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setrlimit(RLIMIT_NOFILE, &job->nofile);
    zsh_run_bind_apply(job, local);
    zsh_run_child_env(o, job, local, rank);
    execvp(o->path, o->argv);
}

int zsh_run_spawn(const zsh_run_opts_t *o, const zsh_run_job_t *job, int local,
                  zsh_run_rank_t *r)
{
    int out[2], err[2], rank = job->rank_base + local, e;
    pid_t pid, parent;

    /* Close-on-exec: a rank holding another's pipe would keep it from EOF. */
    if (pipe2(out, O_CLOEXEC) != 0) {
        e = errno;
        goto err;
    }
    if (pipe2(err, O_CLOEXEC) != 0) {
        e = errno;
        goto err_close_out;
    }
    fflush(NULL);
    parent = getpid();
    pid    = fork();
    if (pid < 0) {
        e = errno;
        goto err_close_err;
    }
    if (pid == 0) {
        zsh_run_child(o, job, local, rank, out, err, parent);
        fprintf(stderr, "zshrun: cannot run '%s': %s\n", o->argv[0], strerror(errno));
        _exit(127);
    }
    /* Also here, so that the group exists before the parent signals it. */
    setpgid(pid, pid);
    close(out[1]);
    close(err[1]);
    *r = (zsh_run_rank_t){.rank = rank, .pid = pid, .state = ZSH_RUN_RANK_RUNNING,
                          .streams = {{.fd = out[0], .out = 1}, {.fd = err[0], .out = 2}}};
    if (o->prefix) {
        snprintf(r->prefix, sizeof(r->prefix), "[%d] ", rank);
    }
    r->streams[0].prefix = r->streams[1].prefix = r->prefix;
    return 0;

err_close_err:
    close(err[0]);
    close(err[1]);
err_close_out:
    close(out[0]);
    close(out[1]);
err:
    fprintf(stderr, "zshrun: cannot start rank %d: %s\n", rank, strerror(e));
    return -1;
}
