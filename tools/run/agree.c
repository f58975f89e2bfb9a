/*
 * The nodes' agreement on a restarted job's world (--max-restarts with
 * --nnodes above 1). After a failed round, every node's zshrun tells the
 * first node's (the coordinator: it runs rank 0 and its store, at
 * --master-addr) what it saw: the ranks it ran and how many of them were
 * killed by a signal (the lost ones; a rank that exited with a status
 * learned of a peer's death and ended, as zshrun itself would have stopped
 * it). A node that says nothing within --join-timeout of the coordinator's
 * own round ending is lost whole. The coordinator then sends each node it
 * keeps its new place: node index, node count, first rank, ranks, world size;
 * or a stop. One connection per node and round, one line each way, on the
 * port above --master-port.
 *
 * The coordinator is not replaceable: a job that loses the first node ends
 * (the store's address is on it), as a torchrun job does that loses its
 * rendezvous host.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* accept4 */
#endif
#include "run/run.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* The longest line either way. */
#define ZSH_RUN_AGREE_LINE 128

static double zsh_run_agree_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int zsh_run_agree_port(const zsh_run_opts_t *o, const zsh_run_job_t *job)
{
    (void)o;
    return atoi(job->master_port) + 1;
}

int zsh_run_agree_listen(const zsh_run_opts_t *o, zsh_run_job_t *job)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_ANY)};
    int one = 1, fd, port = zsh_run_agree_port(o, job);

    job->agree_fd = -1;
    if ((o->nnodes == 1) || (o->max_restarts == 0) || (o->node_rank != 0)) {
        return 0;
    }
    if (port > 65535) {
        fprintf(stderr, "zshrun: --max-restarts across nodes needs the port above --master-port "
                "%s for the nodes' restarts: give one below 65535\n", job->master_port);
        return 2;
    }
    job->node_ran = malloc((size_t)o->nnodes * sizeof(*job->node_ran));
    if (job->node_ran == NULL) {
        fprintf(stderr, "zshrun: out of memory\n");
        return 1;
    }
    for (fd = 0; fd < o->nnodes; fd++) {
        job->node_ran[fd] = o->nproc;
    }
    sa.sin_port = htons((uint16_t)port);
    fd          = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        fprintf(stderr, "zshrun: socket: %s\n", strerror(errno));
        return 1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if ((bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) || (listen(fd, 1024) != 0)) {
        fprintf(stderr, "zshrun: cannot listen on port %d for the nodes' restarts (--master-port "
                "%s + 1): %s\n", port, job->master_port, strerror(errno));
        close(fd);
        return 1;
    }
    job->agree_fd = fd;
    return 0;
}

/* Read one line from @fd into @buf by @deadline: its length, or -1. */
static int zsh_run_agree_read(int fd, char *buf, double deadline)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int len = 0, ms;
    ssize_t n;

    while (len < ZSH_RUN_AGREE_LINE - 1) {
        ms = (int)((deadline - zsh_run_agree_now()) * 1e3);
        if ((ms <= 0) || (poll(&p, 1, ms) <= 0)) {
            if ((ms > 0) && (errno == EINTR)) {
                continue;
            }
            return -1;
        }
        n = read(fd, buf + len, 1);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return -1;
        }
        if (buf[len] == '\n') {
            buf[len] = '\0';
            return len;
        }
        len++;
    }
    return -1;
}

static void zsh_run_agree_write(int fd, const char *line)
{
    size_t off = 0, len = strlen(line);
    ssize_t n;

    while (off < len) {
        n = write(fd, line + off, len - off);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return; /* the node is gone: it restarts nothing */
        }
        off += (size_t)n;
    }
}

/* One node's report in the coordinator's round. */
typedef struct {
    int fd;   /* its connection, -1 before it reported */
    int ran;  /* ranks it ran */
    int lost; /* of those, killed by a signal */
    int failed;
} zsh_run_node_t;

/* The coordinator: gather the reports, decide, answer. 0 to restart with
 * @o and @job set for it, else 1 (the reason printed). */
static int zsh_run_agree_lead(zsh_run_opts_t *o, zsh_run_job_t *job, int ran, int lost,
                              int failed)
{
    zsh_run_node_t *nodes = calloc((size_t)o->nnodes, sizeof(*nodes));
    double deadline = zsh_run_agree_now() + o->join_timeout;
    int have = 1, i, n, fd, id, round, a, b, c, left = 0, kept = 0, base = 0, idx = 1, rc = 1;
    char line[ZSH_RUN_AGREE_LINE];
    struct pollfd p = {.fd = job->agree_fd, .events = POLLIN};

    if (nodes == NULL) {
        fprintf(stderr, "zshrun: out of memory\n");
        return 1;
    }
    for (i = 0; i < o->nnodes; i++) {
        nodes[i] = (zsh_run_node_t){.fd = -1, .ran = job->node_ran[i]};
    }
    nodes[0] = (zsh_run_node_t){.fd = -1, .ran = ran, .lost = lost, .failed = failed};
    while (have < o->nnodes) {
        n = (int)((deadline - zsh_run_agree_now()) * 1e3);
        if ((n <= 0) || (poll(&p, 1, n) <= 0)) {
            if ((n > 0) && (errno == EINTR)) {
                continue;
            }
            break;
        }
        fd = accept4(job->agree_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) {
            continue;
        }
        /* A node of an earlier round, or one that says nothing useful, is
         * told to stop: the job has gone on without it. */
        if ((zsh_run_agree_read(fd, line, deadline) < 0) ||
            (sscanf(line, "R %d %d %d %d %d", &round, &id, &a, &b, &c) != 5) ||
            (round != job->restart) || (id <= 0) || (id >= o->nnodes) ||
            (nodes[id].ran != a) || (b < 0) || (b > a) || (nodes[id].fd >= 0)) {
            zsh_run_agree_write(fd, "S\n");
            close(fd);
            continue;
        }
        nodes[id].fd     = fd;
        nodes[id].lost   = b;
        nodes[id].failed = c;
        have++;
    }
    for (i = 0; i < o->nnodes; i++) {
        if ((i > 0) && (nodes[i].ran > 0) && (nodes[i].fd < 0)) {
            fprintf(stderr, "zshrun: node %d said nothing within --join-timeout %g s: its %d "
                    "rank%s lost\n", i, o->join_timeout, nodes[i].ran,
                    (nodes[i].ran == 1) ? "" : "s");
            nodes[i].lost = nodes[i].ran;
        }
    }
    /* No rank killed anywhere and no node missing: the failure was a rank's
     * exit, and the first node that saw one loses that rank. */
    for (i = 0, n = 0; i < o->nnodes; i++) {
        n += nodes[i].lost;
    }
    for (i = 0; (n == 0) && (i < o->nnodes); i++) {
        if (nodes[i].failed) {
            nodes[i].lost = 1;
            n             = 1;
        }
    }
    for (i = 0; i < o->nnodes; i++) {
        left += nodes[i].ran - nodes[i].lost;
    }
    if (job->restart >= o->max_restarts) {
        fprintf(stderr, "zshrun: no restart left (--max-restarts %d)\n", o->max_restarts);
    } else if (left < o->min_ranks) {
        fprintf(stderr, "zshrun: not restarting: %d rank%s left, fewer than --min-ranks %d\n",
                left, (left == 1) ? "" : "s", o->min_ranks);
    } else if (nodes[0].ran - nodes[0].lost == 0) {
        fprintf(stderr, "zshrun: not restarting: the first node, which runs rank 0's store, has "
                "no rank left\n");
    } else {
        rc = 0;
    }
    for (i = 0; i < o->nnodes; i++) {
        if ((nodes[i].ran - nodes[i].lost > 0) && (rc == 0)) {
            kept++;
        }
    }
    for (i = 0; i < o->nnodes; i++) {
        a = nodes[i].ran - nodes[i].lost;
        if ((rc != 0) || (a <= 0)) {
            if (nodes[i].fd >= 0) {
                zsh_run_agree_write(nodes[i].fd, "S\n");
            }
        } else if (i == 0) {
            o->nproc         = a;
            o->node_rank     = 0;
            job->rank_base   = 0;
            job->node_ran[0] = a;
            base             = a;
        } else {
            job->node_ran[idx] = a;
            snprintf(line, sizeof(line), "G %d %d %d %d %d\n", idx++, kept, base, a, left);
            zsh_run_agree_write(nodes[i].fd, line);
            base += a;
        }
        if (nodes[i].fd >= 0) {
            close(nodes[i].fd);
        }
    }
    /* The renumbered node indices: the kept nodes in order. */
    if (rc == 0) {
        o->nnodes  = kept;
        job->world = left;
        fprintf(stderr, "zshrun: the nodes agreed: %d node%s, %d rank%s\n", kept,
                (kept == 1) ? "" : "s", left, (left == 1) ? "" : "s");
    }
    free(nodes);
    return rc;
}

/* Another node: report to the coordinator and take its answer. */
static int zsh_run_agree_follow(zsh_run_opts_t *o, zsh_run_job_t *job, int ran, int lost,
                                int failed)
{
    /* The coordinator answers once its own ranks ended (its peers learn of
     * a death within seconds, then --grace) and the join timeout passed. */
    double deadline = zsh_run_agree_now() + 2 * o->join_timeout + o->grace + 30;
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char line[ZSH_RUN_AGREE_LINE], port[16];
    int fd = -1, rank, nodes, base, nproc, world, rc;

    snprintf(port, sizeof(port), "%d", zsh_run_agree_port(o, job));
    rc = getaddrinfo(job->master_addr, port, &hints, &ai);
    if (rc != 0) {
        fprintf(stderr, "zshrun: cannot resolve --master-addr %s: %s\n", job->master_addr,
                gai_strerror(rc));
        return 1;
    }
    fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if ((fd < 0) || (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0)) {
        fprintf(stderr, "zshrun: not restarting: the first node (%s port %s) cannot be reached: "
                "%s\n", job->master_addr, port, strerror(errno));
        freeaddrinfo(ai);
        if (fd >= 0) {
            close(fd);
        }
        return 1;
    }
    freeaddrinfo(ai);
    snprintf(line, sizeof(line), "R %d %d %d %d %d\n", job->restart, o->node_rank, ran, lost,
             failed);
    zsh_run_agree_write(fd, line);
    rc = zsh_run_agree_read(fd, line, deadline);
    close(fd);
    if (rc < 0) {
        fprintf(stderr, "zshrun: not restarting: no answer from the first node\n");
        return 1;
    }
    if ((sscanf(line, "G %d %d %d %d %d", &rank, &nodes, &base, &nproc, &world) != 5) ||
        (nodes < 2) || (rank <= 0) || (rank >= nodes) || (nproc <= 0) || (nproc > ran) ||
        (base < 0) || (base + nproc > world)) {
        fprintf(stderr, "zshrun: not restarting: the job goes on without this node\n");
        return 1;
    }
    o->node_rank   = rank;
    o->nnodes      = nodes;
    o->nproc       = nproc;
    job->rank_base = base;
    job->world     = world;
    return 0;
}

int zsh_run_agree(zsh_run_opts_t *o, zsh_run_job_t *job, int ran, int lost, int failed)
{
    return (o->node_rank == 0) ? zsh_run_agree_lead(o, job, ran, lost, failed)
                               : zsh_run_agree_follow(o, job, ran, lost, failed);
}

void zsh_run_agree_close(zsh_run_job_t *job)
{
    free(job->node_ran);
    job->node_ran = NULL;
    if (job->agree_fd >= 0) {
        close(job->agree_fd);
        job->agree_fd = -1;
    }
}
