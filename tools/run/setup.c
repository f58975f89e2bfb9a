/*
 * What every rank of a zshrun job shares, settled before the first starts:
 * the descriptors the relay needs, the job key that authenticates the
 * bootstrap store, where that store listens, and where each rank is bound.
 */
#include "run/run.h"

#include "boot/store_auth.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

/* Descriptors zshrun holds besides the two pipes per rank: stdio, the signal
 * pipe, and a margin for the C library. */
#define ZSH_RUN_FDS_SPARE 16

/* Raise the soft limit on open files to what the pipes need; the ranks get
 * the old one back (a program that uses select() breaks above 1024). */
static int zsh_run_fd_limit(int nproc, struct rlimit *saved)
{
    rlim_t need = (rlim_t)(2 * nproc + ZSH_RUN_FDS_SPARE);
    struct rlimit lim;

    if (getrlimit(RLIMIT_NOFILE, &lim) != 0) {
        fprintf(stderr, "zshrun: getrlimit(RLIMIT_NOFILE): %s\n", strerror(errno));
        return 1;
    }
    *saved = lim;
    if ((lim.rlim_cur != RLIM_INFINITY) && (lim.rlim_cur < need)) {
        if ((lim.rlim_max != RLIM_INFINITY) && (lim.rlim_max < need)) {
            fprintf(stderr, "zshrun: %d ranks need %lu open files, above the limit of %lu "
                    "(ulimit -Hn)\n", nproc, (unsigned long)need, (unsigned long)lim.rlim_max);
            return 1;
        }
        lim.rlim_cur = need;
        if (setrlimit(RLIMIT_NOFILE, &lim) != 0) {
            fprintf(stderr, "zshrun: setrlimit(RLIMIT_NOFILE, %lu): %s\n", (unsigned long)need,
                    strerror(errno));
            return 1;
        }
    }
    return 0;
}

/* The same bounds the bootstrap puts on ZSH_JOB_KEY, checked here so that a
 * bad key stops the job before it starts instead of in every rank. A bad key
 * is bad input: 2, as for a usage error. */
static int zsh_run_key_check(const char *what, const char *key)
{
    size_t len = strlen(key);

    if (len < ZSH_STORE_JOB_KEY_MIN) {
        fprintf(stderr, "zshrun: %s has %zu characters, fewer than the %u a job key needs "
                "(e.g. openssl rand -hex 32)\n", what, len, ZSH_STORE_JOB_KEY_MIN);
        return 2;
    }
    if (len > 255) {
        fprintf(stderr, "zshrun: %s has %zu characters, more than the 255 a job key may have\n",
                what, len);
        return 2;
    }
    return 0;
}

/* The key in @path: its first line, which must be all there is. */
static int zsh_run_key_read(const char *path, char *key, size_t size)
{
    char what[300];
    ssize_t n;
    size_t len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);

    if (fd < 0) {
        fprintf(stderr, "zshrun: --job-key-file %s: %s\n", path, strerror(errno));
        return 2;
    }
    /* One byte more than a key may have, to tell a long file from a full one. */
    while ((len < size - 1) && ((n = read(fd, key + len, size - 1 - len)) != 0)) {
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "zshrun: --job-key-file %s: %s\n", path, strerror(errno));
            close(fd);
            return 2;
        }
        len += (size_t)n;
    }
    close(fd);
    key[len] = '\0';
    if ((len > 0) && (key[len - 1] == '\n')) {
        key[--len] = '\0';
    }
    if ((len > 0) && (key[len - 1] == '\r')) {
        key[--len] = '\0';
    }
    if ((strlen(key) != len) || (strchr(key, '\n') != NULL)) {
        fprintf(stderr, "zshrun: --job-key-file %s holds more than one line of text\n", path);
        return 2;
    }
    snprintf(what, sizeof(what), "the key in %s", path);
    return zsh_run_key_check(what, key);
}

int zsh_run_key_fresh(char *key)
{
    unsigned char raw[ZSH_RUN_KEY_BYTES];
    size_t got = 0, i;
    ssize_t n;

    while (got < sizeof(raw)) {
        n = getrandom(raw + got, sizeof(raw) - got, 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            fprintf(stderr, "zshrun: getrandom: %s\n", strerror(errno));
            return 1;
        }
        got += (size_t)n;
    }
    for (i = 0; i < sizeof(raw); i++) {
        sprintf(key + 2 * i, "%02x", raw[i]);
    }
    return 0;
}

/* The job's key: --job-key-file, else ZSH_JOB_KEY as the environment has it
 * (the library reads it there; zshrun only decides whether to add one), else
 * a fresh one. A fresh key is only possible on one node: the other nodes'
 * zshrun could not know it. */
static int zsh_run_key(const zsh_run_opts_t *o, zsh_run_job_t *job)
{
    const char *env = getenv("ZSH_JOB_KEY");

    if (o->key_file != NULL) {
        job->job_key = job->key_buf;
        return zsh_run_key_read(o->key_file, job->key_buf, sizeof(job->key_buf));
    }
    if (env != NULL) { /* set but empty is refused: a key that failed to arrive */
        job->job_key = env;
        return zsh_run_key_check("ZSH_JOB_KEY", env);
    }
    if (o->nnodes > 1) {
        fprintf(stderr, "zshrun: warning: neither ZSH_JOB_KEY nor --job-key-file gives this "
                "multi-node job a key, so its bootstrap store at %s:%d is unauthenticated: any "
                "process that reaches it may join\n", o->master_addr, o->master_port);
        job->job_key = NULL;
        return 0;
    }
    job->job_key = job->key_buf;
    return zsh_run_key_fresh(job->key_buf);
}

/* Whether nothing is bound to TCP @port on any address right now. */
static int zsh_run_port_free(int port)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_ANY)};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), ok;

    if (fd < 0) {
        return 0;
    }
    ok = (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    close(fd);
    return ok;
}

/* A free port for rank 0's store on this node. It is taken from below the
 * kernel's ephemeral range (ip_local_port_range), not by binding port 0: a
 * port from that range that is free now may still become the source port of
 * any outgoing connection, the ranks' own to the store included, before rank
 * 0 binds it; a port below the range is only ever taken by an explicit bind.
 * The window between this check and rank 0's bind remains, as in torchrun. */
static int zsh_run_port_pick(void)
{
    int lo = 32768, hi = 60999, base = 20000, tries, port;
    FILE *f = fopen("/proc/sys/net/ipv4/ip_local_port_range", "re");
    unsigned short r;

    if (f != NULL) {
        if (fscanf(f, "%d %d", &lo, &hi) != 2) {
            lo = 32768;
        }
        fclose(f);
    }
    if (lo - base < 1024) {
        base = 1024;
    }
    for (tries = 0; (tries < 100) && (lo > base); tries++) {
        if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
            break;
        }
        port = base + (int)(r % (unsigned)(lo - base));
        if (zsh_run_port_free(port)) {
            return port;
        }
    }
    fprintf(stderr, "zshrun: found no free port from %d to %d for the store; give one with "
            "--master-port\n", base, lo - 1);
    return -1;
}

int zsh_run_setup_place(const zsh_run_opts_t *o, zsh_run_job_t *job)
{
    int port = o->master_port, rc;

    if ((port == 0) && ((port = zsh_run_port_pick()) < 0)) {
        return 1;
    }
    snprintf(job->master_addr, sizeof(job->master_addr), "%s",
             (o->master_addr != NULL) ? o->master_addr : "127.0.0.1");
    snprintf(job->master_port, sizeof(job->master_port), "%d", port);
    rc = zsh_run_bind_plan(o, job);
    if ((rc == 0) && o->report) {
        zsh_run_bind_report(o, job);
    }
    return rc;
}

int zsh_run_setup(zsh_run_opts_t *o, zsh_run_job_t *job)
{
    int rc;

    job->rank_base = o->node_rank * o->nproc;
    job->world     = o->nnodes * o->nproc;
    job->agree_fd  = -1;
    if ((rc = zsh_run_fd_limit(o->nproc, &job->nofile)) || (rc = zsh_run_key(o, job)) ||
        (rc = zsh_run_snapshot_dir(o, job)) || (rc = zsh_run_setup_place(o, job))) {
        return rc;
    }
    return zsh_run_agree_listen(o, job);
}
