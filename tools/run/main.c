/*
 * zshrun's supervision loop. One poll() waits on every rank's output pipes
 * and on a pipe that the signal handlers write to (SIGCHLD, and the SIGINT,
 * SIGTERM or SIGHUP to pass on), so output, exits and signals are handled
 * in one thread, in order.
 *
 * Stopping a job: the first rank to fail (a non-zero exit or a signal) is
 * reported, every rank's process group gets SIGTERM (or the signal zshrun
 * got), and whatever is still running after --grace gets SIGKILL. A rank
 * that has exited is left a zombie until the end (waitid's WNOWAIT): its pid
 * is then not free for reuse, so signalling its process group still reaches
 * only what the rank left behind and never a stranger's group.
 *
 * Restarts (--max-restarts): once every rank of a failed job has ended, the
 * job starts again without the rank whose failure stopped it (the lost one),
 * as long as at least --min-ranks remain, renumbered from 0 with a fresh
 * store port, ZSH_RESTART_COUNT one higher. The ranks zshrun stopped
 * are not lost: they end because zshrun (or their peers' failure, which
 * they learn within a few seconds) told them to. A job that zshrun was
 * asked to stop is not restarted.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* pipe2 */
#endif
#include "run/run.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* How long output of a rank's leftovers is still relayed after the last rank
 * exited; a child the rank left running may hold its pipes open forever. */
#define ZSH_RUN_DRAIN_SEC 1.0

typedef enum { ZSH_RUN_GOING, ZSH_RUN_TERMINATING, ZSH_RUN_KILLED } zsh_run_phase_t;

typedef struct {
    zsh_run_opts_t  opts;
    zsh_run_job_t   job;
    zsh_run_rank_t *ranks;
    int             started; /* ranks with a process */
    int             running; /* of those, not yet exited */
    zsh_run_phase_t phase;
    double          deadline; /* TERMINATING: when SIGKILL follows */
    int             exit_code; /* the first failure's; -1 while none */
    int             lost;      /* ranks lost: 1 once a rank failed while the job was going */
    int             killed;    /* ranks of the round killed by a signal */
    int             signal;    /* the signal zshrun got first, 0 for none */
    struct pollfd  *fds;       /* the signal pipe, then two per rank */
} zsh_run_t;

static int zsh_run_sigfd[2] = {-1, -1};

static void zsh_run_on_signal(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;

    /* Non-blocking: a full pipe already holds a wake-up, so a failed write
     * loses nothing (but a repeated SIGINT, which escalates anyway). */
    if (write(zsh_run_sigfd[1], &b, 1) < 0) {
        b = 0;
    }
    errno = saved;
}

static int zsh_run_signals(void)
{
    static const int sigs[] = {SIGCHLD, SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = zsh_run_on_signal, .sa_flags = SA_RESTART | SA_NOCLDSTOP};
    size_t i;

    if (pipe2(zsh_run_sigfd, O_CLOEXEC | O_NONBLOCK) != 0) {
        fprintf(stderr, "zshrun: pipe: %s\n", strerror(errno));
        return -1;
    }
    sigemptyset(&sa.sa_mask);
    for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        sigaction(sigs[i], &sa, NULL);
    }
    /* A reader of zshrun's output that goes away must not kill the launcher
     * and orphan the ranks; the relay drops what it cannot write. */
    signal(SIGPIPE, SIG_IGN);
    return 0;
}

static double zsh_run_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* @sig to the process group of every rank, exited ones included (see above). */
static void zsh_run_kill_all(zsh_run_t *run, int sig)
{
    int i;

    for (i = 0; i < run->started; i++) {
        kill(-run->ranks[i].pid, sig);
    }
}

/* The name a user would pass to kill(1), for the signals zshrun sends on. */
static const char *zsh_run_signame(int sig)
{
    switch (sig) {
    case SIGINT: return "SIGINT";
    case SIGTERM: return "SIGTERM";
    case SIGHUP: return "SIGHUP";
    default: return "a signal";
    }
}

static void zsh_run_stop(zsh_run_t *run, int sig)
{
    if (run->running > 0) {
        fprintf(stderr, "zshrun: sending %s to the %d running rank%s; SIGKILL after %g s\n",
                zsh_run_signame(sig), run->running, (run->running == 1) ? "" : "s",
                run->opts.grace);
    }
    zsh_run_kill_all(run, sig);
    run->phase    = ZSH_RUN_TERMINATING;
    run->deadline = zsh_run_now() + run->opts.grace;
}

/* A rank that exited: whether it failed. */
static bool zsh_run_exited(zsh_run_t *run, zsh_run_rank_t *r, const siginfo_t *info)
{
    r->state = ZSH_RUN_RANK_EXITED;
    run->running--;
    r->status = (info->si_code == CLD_EXITED) ? info->si_status : 128 + info->si_status;
    /* Killed by a signal zshrun did not send: lost. A peer may notice the
     * death and exit first, and stop the job before this one is seen. */
    if ((r->status >= 128) &&
        ((run->phase == ZSH_RUN_GOING) ||
         ((run->phase == ZSH_RUN_TERMINATING) && (r->status - 128 == SIGKILL)))) {
        run->killed++;
    }
    return r->status != 0;
}

/* The failure that stops the job, named. */
static void zsh_run_failed(zsh_run_t *run, const zsh_run_rank_t *r)
{
    if (r->status < 128) {
        fprintf(stderr, "zshrun: rank %d (pid %ld) exited with status %d\n", r->rank,
                (long)r->pid, r->status);
    } else {
        fprintf(stderr, "zshrun: rank %d (pid %ld) was killed by signal %d (%s)\n", r->rank,
                (long)r->pid, r->status - 128, strsignal(r->status - 128));
    }
    run->exit_code = r->status;
    run->lost      = 1;
    zsh_run_stop(run, SIGTERM);
}

/*
 * Notice the ranks that exited, without reaping them. Only the first failure
 * is the job's, and it is the lost rank of a restart; the ranks stopped for
 * it are not. Peers on this node learn of a death at once (their transfers
 * to it fail) and may exit in the same round of exits as the rank that died:
 * of a round's failures, a rank killed by a signal is taken to be the first.
 */
static void zsh_run_reap(zsh_run_t *run)
{
    zsh_run_rank_t *first = NULL, *r;
    siginfo_t info;
    int i;

    for (i = 0; i < run->started; i++) {
        r = &run->ranks[i];
        if (r->state != ZSH_RUN_RANK_RUNNING) {
            continue;
        }
        info.si_pid = 0;
        if ((waitid(P_PID, (id_t)r->pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0) &&
            (info.si_pid == r->pid) && zsh_run_exited(run, r, &info) &&
            ((first == NULL) || ((first->status < 128) && (r->status >= 128)))) {
            first = r;
        }
    }
    if ((first != NULL) && (run->phase == ZSH_RUN_GOING)) {
        zsh_run_failed(run, first);
    }
}

static void zsh_run_on_signals(zsh_run_t *run)
{
    unsigned char sigs[64];
    ssize_t n, i;

    while ((n = read(zsh_run_sigfd[0], sigs, sizeof(sigs))) > 0) {
        for (i = 0; i < n; i++) {
            if (sigs[i] == SIGCHLD) {
                zsh_run_reap(run);
            } else if (run->phase == ZSH_RUN_GOING) {
                fprintf(stderr, "zshrun: got %s; passing it on\n", zsh_run_signame(sigs[i]));
                run->signal = sigs[i];
                zsh_run_stop(run, sigs[i]);
            } else if (run->phase == ZSH_RUN_TERMINATING) {
                /* Asked twice: no more grace. */
                fprintf(stderr, "zshrun: got %s again; sending SIGKILL\n", zsh_run_signame(sigs[i]));
                zsh_run_kill_all(run, SIGKILL);
                run->phase = ZSH_RUN_KILLED;
            }
        }
    }
}

/* The poll set: the signal pipe, then every open stream. Returns its size. */
static nfds_t zsh_run_poll_set(zsh_run_t *run, zsh_run_stream_t **streams)
{
    nfds_t n = 1;
    int i, k;

    run->fds[0] = (struct pollfd){.fd = zsh_run_sigfd[0], .events = POLLIN};
    for (i = 0; i < run->started; i++) {
        for (k = 0; k < 2; k++) {
            if (run->ranks[i].streams[k].fd >= 0) {
                streams[n]  = &run->ranks[i].streams[k];
                run->fds[n] = (struct pollfd){.fd = streams[n]->fd, .events = POLLIN};
                n++;
            }
        }
    }
    return n;
}

/* Milliseconds until @when, for poll(); -1 for never. */
static int zsh_run_wait_ms(double when)
{
    double left = when - zsh_run_now();

    if (when <= 0) {
        return -1;
    }
    return (left <= 0) ? 0 : (int)(left * 1e3) + 1;
}

static void zsh_run_loop(zsh_run_t *run, zsh_run_stream_t **streams)
{
    double drain_end = 0, wake;
    nfds_t n, j;
    int i, k;

    for (;;) {
        if ((run->running == 0) && (drain_end == 0)) {
            drain_end = zsh_run_now() + ZSH_RUN_DRAIN_SEC;
        }
        n = zsh_run_poll_set(run, streams);
        if ((run->running == 0) && ((n == 1) || (zsh_run_now() >= drain_end))) {
            break;
        }
        wake = (run->phase == ZSH_RUN_TERMINATING) ? run->deadline : 0;
        if ((drain_end > 0) && ((wake == 0) || (drain_end < wake))) {
            wake = drain_end;
        }
        if ((poll(run->fds, n, zsh_run_wait_ms(wake)) < 0) && (errno != EINTR)) {
            fprintf(stderr, "zshrun: poll: %s\n", strerror(errno));
            zsh_run_kill_all(run, SIGKILL);
            run->phase = ZSH_RUN_KILLED;
            break;
        }
        for (j = 1; j < n; j++) {
            if (run->fds[j].revents != 0) {
                zsh_run_stream_read(streams[j]);
            }
        }
        if (run->fds[0].revents != 0) {
            zsh_run_on_signals(run);
        }
        if ((run->phase == ZSH_RUN_TERMINATING) && (zsh_run_now() >= run->deadline)) {
            if (run->running > 0) {
                fprintf(stderr, "zshrun: %d rank%s still running after %g s; sending SIGKILL\n",
                        run->running, (run->running == 1) ? "" : "s", run->opts.grace);
            }
            zsh_run_kill_all(run, SIGKILL);
            run->phase = ZSH_RUN_KILLED;
        }
    }
    for (i = 0; i < run->started; i++) {
        for (k = 0; k < 2; k++) {
            zsh_run_stream_close(&run->ranks[i].streams[k]);
        }
    }
}

/* Reap every rank; what a failed or interrupted job's ranks left behind
 * goes with them. */
static void zsh_run_reap_all(zsh_run_t *run)
{
    int i;

    if (run->phase != ZSH_RUN_GOING) {
        zsh_run_kill_all(run, SIGKILL);
    }
    for (i = 0; i < run->started; i++) {
        while ((waitpid(run->ranks[i].pid, NULL, 0) < 0) && (errno == EINTR)) {
        }
    }
}

/* The job's exit status, after every rank is reaped: the first failure's,
 * else the signal zshrun got (raised again, so that a shell running zshrun
 * sees the interrupt as such), else 0. */
static int zsh_run_finish(zsh_run_t *run)
{
    sigset_t set;

    if (run->exit_code >= 0) {
        return run->exit_code;
    }
    if (run->signal != 0) {
        signal(run->signal, SIG_DFL);
        sigemptyset(&set);
        sigaddset(&set, run->signal);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(run->signal);
        return 128 + run->signal;
    }
    return 0;
}

/* Start every rank of this round and supervise them until they all ended. */
static void zsh_run_round(zsh_run_t *run, zsh_run_stream_t **streams)
{
    int i;

    for (i = 0; i < run->opts.nproc; i++) {
        if (zsh_run_spawn(&run->opts, &run->job, i, &run->ranks[i]) != 0) {
            /* A job short of a rank cannot work: stop what started. */
            run->exit_code = 1;
            zsh_run_stop(run, SIGTERM);
            break;
        }
        run->started++;
        run->running++;
    }
    zsh_run_loop(run, streams);
    zsh_run_reap_all(run);
}

/* Several nodes: the next round's world as the nodes agree on it, those
 * with no rank left out. Whether there is one. */
static bool zsh_run_restart_nodes(zsh_run_t *run)
{
    int ran = run->opts.nproc;

    if (zsh_run_agree(&run->opts, &run->job, ran, run->killed, run->exit_code >= 0) != 0) {
        return false;
    }
    zsh_run_bind_free(&run->opts, &run->job);
    run->job.restart++;
    if (zsh_run_setup_place(&run->opts, &run->job) != 0) {
        return false;
    }
    fprintf(stderr, "zshrun: restart %d of %d as node %d of %d with ranks %d to %d of %d (%d "
            "here lost)\n", run->job.restart, run->opts.max_restarts, run->opts.node_rank,
            run->opts.nnodes, run->job.rank_base, run->job.rank_base + run->opts.nproc - 1,
            run->job.world, ran - run->opts.nproc);
    return true;
}

/* Whether the failed round just ended is started again, and if so the next
 * round set up: the lost ranks left out, a fresh port, the ranks placed. */
static bool zsh_run_restart(zsh_run_t *run)
{
    int left = run->opts.nproc - run->lost;

    if ((run->signal != 0) || (run->opts.max_restarts == 0)) {
        return false;
    }
    /* A node whose ranks all ended well still answers the others: a failure
     * elsewhere stops its peers with an error, so this happens only when a
     * node is lost after its ranks finished, and then nothing restarts. */
    if (run->opts.nnodes > 1) {
        if ((run->exit_code < 0) && (run->opts.node_rank == 0)) {
            return false;
        }
        if ((run->exit_code < 0) || !zsh_run_restart_nodes(run)) {
            return false;
        }
        goto again;
    }
    if ((run->exit_code < 0) || (run->lost == 0)) {
        return false;
    }
    if (run->job.restart >= run->opts.max_restarts) {
        fprintf(stderr, "zshrun: no restart left (--max-restarts %d)\n", run->opts.max_restarts);
        return false;
    }
    if (left < run->opts.min_ranks) {
        fprintf(stderr, "zshrun: not restarting: %d rank%s left, fewer than --min-ranks %d\n",
                left, (left == 1) ? "" : "s", run->opts.min_ranks);
        return false;
    }
    zsh_run_bind_free(&run->opts, &run->job);
    run->opts.nproc = left;
    run->job.world  = left;
    run->job.restart++;
    if (zsh_run_setup_place(&run->opts, &run->job) != 0) {
        return false;
    }
    fprintf(stderr, "zshrun: restart %d of %d with %d rank%s (%d lost)\n", run->job.restart,
            run->opts.max_restarts, left, (left == 1) ? "" : "s", run->lost);
again:
    memset(run->ranks, 0, (size_t)run->started * sizeof(*run->ranks));
    run->started   = 0;
    run->running   = 0;
    run->lost      = 0;
    run->killed    = 0;
    run->exit_code = -1;
    run->phase     = ZSH_RUN_GOING;
    return true;
}

int main(int argc, char **argv)
{
    zsh_run_t run = {.phase = ZSH_RUN_GOING, .exit_code = -1};
    zsh_run_stream_t **streams = NULL;
    int rc;

    rc = zsh_run_parse(argc, argv, &run.opts);
    if (rc != 0) {
        return (rc == 1) ? 0 : rc;
    }
    rc = zsh_run_setup(&run.opts, &run.job);
    if (rc != 0) {
        goto out;
    }
    run.ranks = calloc((size_t)run.opts.nproc, sizeof(*run.ranks));
    run.fds   = calloc(2 * (size_t)run.opts.nproc + 1, sizeof(*run.fds));
    streams   = calloc(2 * (size_t)run.opts.nproc + 1, sizeof(*streams));
    if ((run.ranks == NULL) || (run.fds == NULL) || (streams == NULL)) {
        fprintf(stderr, "zshrun: out of memory\n");
        rc = 1;
        goto out;
    }
    if (zsh_run_signals() != 0) {
        rc = 1;
        goto out;
    }
    do {
        zsh_run_round(&run, streams);
    } while (zsh_run_restart(&run));
    /* Before the finish, which may end zshrun by the signal it got. */
    zsh_run_snapshot_remove(&run.job);
    rc = zsh_run_finish(&run);
out:
    zsh_run_agree_close(&run.job);
    zsh_run_snapshot_remove(&run.job);
    zsh_run_bind_free(&run.opts, &run.job);
    free(streams);
    free(run.fds);
    free(run.ranks);
    free(run.opts.path);
    return rc;
}
