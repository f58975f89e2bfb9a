/*
 * The nodes' agreement on a restarted job's world (--max-restarts with
 * --nnodes above 1), through one coordinator: the first node's zshrun, at
 * --master-addr, where rank 0 and its store run.
 *
 * Before the first rank starts, every other node says hello to the
 * coordinator, which answers each with every node's address (its own as
 * --master-addr gives it, the others' as their connections came from).
 * After a failed round, every node's zshrun tells the coordinator what it
 * saw: the ranks it ran and how many of them were killed by a signal (the
 * lost ones; a rank that exited with a status learned of a peer's death and
 * ended, as zshrun itself would have stopped it). A node that says nothing
 * within --join-timeout of the coordinator's own round ending is lost whole.
 * The coordinator then sends each node it keeps its new place (node index,
 * node count, first rank, ranks, world size) and the kept nodes' ranks and
 * addresses in their new order; or a stop. One connection per node and
 * exchange, lines each way, on the port above --master-port.
 *
 * The coordinator is replaceable. A node that cannot reach it (refused, or
 * silent past --join-timeout, or gone before it answered) tries the next
 * node in order, and a node that finds every node before it gone leads the
 * round itself, counting those nodes lost whole. The first node kept is the
 * new first node: it runs rank 0, so the ranks' store moves with it (its
 * address is the restarted ranks' MASTER_ADDR, the port stays
 * --master-port), and it coordinates the next round. Nodes cut off from
 * each other but alive would each go on alone; zshrun cannot tell that from
 * a lost node, as torchrun cannot.
 */
#include "run/agree.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The longest line: a node's ranks and its address. */
#define ZSH_RUN_AGREE_LINE (ZSH_RUN_ADDR_LEN + 32)
/* How long the nodes wait for each other before the first start, in
 * seconds: torchrun's rendezvous default. A node missing by then cannot
 * take over the coordination; its ranks' store fails the job anyway. */
#define ZSH_RUN_AGREE_START 600.0

/* Set a node's address from a line; "-" or one too long is unknown. */
static void zsh_run_agree_set(char *addr, const char *text)
{
    size_t len = strlen(text);

    if ((strcmp(text, "-") == 0) || (len >= ZSH_RUN_ADDR_LEN)) {
        len = 0;
    }
    memcpy(addr, text, len);
    addr[len] = '\0';
}

/* The coordinator's first round: hear every node's hello and answer each
 * with every node's address. */
static void zsh_run_agree_start_lead(zsh_run_opts_t *o, zsh_run_job_t *job)
{
    double deadline = zsh_run_agree_now() + ZSH_RUN_AGREE_START;
    int *fds = malloc((size_t)o->nnodes * sizeof(*fds)), have = 1, fd, id, i;
    char line[ZSH_RUN_AGREE_LINE], addr[ZSH_RUN_ADDR_LEN];

    if (fds == NULL) {
        fprintf(stderr, "zshrun: out of memory\n");
        return;
    }
    for (i = 0; i < o->nnodes; i++) {
        fds[i] = -1;
    }
    while (have < o->nnodes) {
        fd = zsh_run_agree_accept(job->agree_fd, deadline, addr, sizeof(addr));
        if (fd < 0) {
            break;
        }
        if ((zsh_run_agree_read(fd, line, sizeof(line), zsh_run_agree_now() + 10) < 0) ||
            (sscanf(line, "H %d", &id) != 1) || (id <= 0) || (id >= o->nnodes) ||
            (fds[id] >= 0) || (addr[0] == '\0')) {
            close(fd);
            continue;
        }
        fds[id] = fd;
        zsh_run_agree_set(job->addrs[id], addr);
        have++;
    }
    for (i = 1; i < o->nnodes; i++) {
        if (fds[i] < 0) {
            fprintf(stderr, "zshrun: warning: node %d did not say hello within %g s: the job "
                    "cannot move to it if this node is lost\n", i, ZSH_RUN_AGREE_START);
        }
    }
    snprintf(line, sizeof(line), "A %d\n", o->nnodes);
    for (i = 1; i < o->nnodes; i++) {
        if (fds[i] >= 0) {
            zsh_run_agree_write(fds[i], line);
        }
    }
    for (id = 0; id < o->nnodes; id++) {
        snprintf(line, sizeof(line), "%s\n", (job->addrs[id][0] != '\0') ? job->addrs[id] : "-");
        for (i = 1; i < o->nnodes; i++) {
            if (fds[i] >= 0) {
                zsh_run_agree_write(fds[i], line);
            }
        }
    }
    for (i = 1; i < o->nnodes; i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    free(fds);
}

/* Another node's first round: say hello and learn every node's address. */
static void zsh_run_agree_start_follow(zsh_run_opts_t *o, zsh_run_job_t *job)
{
    double deadline = zsh_run_agree_now() + ZSH_RUN_AGREE_START;
    char line[ZSH_RUN_AGREE_LINE], why[ZSH_RUN_AGREE_LINE + 64];
    int fd, n = 0, i = 0;

    fd = zsh_run_agree_connect(job->addrs[0], job, deadline, true, why, sizeof(why));
    if (fd < 0) {
        fprintf(stderr, "zshrun: warning: the first node's %s: this node cannot take over if it "
                "is lost\n", why);
        return;
    }
    snprintf(line, sizeof(line), "H %d\n", o->node_rank);
    zsh_run_agree_write(fd, line);
    if ((zsh_run_agree_read(fd, line, sizeof(line), deadline) >= 0) &&
        (sscanf(line, "A %d", &n) == 1) && (n == o->nnodes)) {
        for (i = 0; i < n; i++) {
            if (zsh_run_agree_read(fd, line, sizeof(line), deadline) < 0) {
                break;
            }
            /* The first node's own address stays as --master-addr gave it. */
            if (i > 0) {
                zsh_run_agree_set(job->addrs[i], line);
            }
        }
    }
    if (i < o->nnodes) {
        fprintf(stderr, "zshrun: warning: the first node sent no address list: this node cannot "
                "take over if it is lost\n");
    }
    close(fd);
}

int zsh_run_agree_listen(zsh_run_opts_t *o, zsh_run_job_t *job)
{
    int i;

    job->agree_fd = -1;
    if ((o->nnodes == 1) || (o->max_restarts == 0)) {
        return 0;
    }
    if (zsh_run_agree_port(job) > 65535) {
        fprintf(stderr, "zshrun: --max-restarts across nodes needs the port above --master-port "
                "%s for the nodes' restarts: give one below 65535\n", job->master_port);
        return 2;
    }
    job->node_ran = malloc((size_t)o->nnodes * sizeof(*job->node_ran));
    job->addrs    = calloc((size_t)o->nnodes, sizeof(*job->addrs));
    if ((job->node_ran == NULL) || (job->addrs == NULL)) {
        fprintf(stderr, "zshrun: out of memory\n");
        return 1;
    }
    for (i = 0; i < o->nnodes; i++) {
        job->node_ran[i] = o->nproc;
    }
    zsh_run_agree_set(job->addrs[0], job->master_addr);
    if (o->node_rank != 0) {
        zsh_run_agree_start_follow(o, job);
        return 0;
    }
    if (zsh_run_agree_bind(job) != 0) {
        return 1;
    }
    zsh_run_agree_start_lead(o, job);
    return 0;
}

/* One node's report in the coordinator's round. */
typedef struct {
    int fd;   /* its connection, -1 before it reported */
    int ran;  /* ranks it ran */
    int lost; /* of those, killed by a signal */
    int failed;
    int next; /* its index in the next round, -1 where not kept */
} zsh_run_node_t;

/* Gather the reports of the nodes after @self; those before it are gone. */
static void zsh_run_agree_gather(const zsh_run_opts_t *o, zsh_run_job_t *job, int self,
                                 zsh_run_node_t *nodes)
{
    double deadline = zsh_run_agree_now() + o->join_timeout;
    int have = self + 1, fd, id, round, a, b, c;
    char line[ZSH_RUN_AGREE_LINE], addr[ZSH_RUN_ADDR_LEN];

    while (have < o->nnodes) {
        fd = zsh_run_agree_accept(job->agree_fd, deadline, addr, sizeof(addr));
        if (fd < 0) {
            break;
        }
        /* A node of an earlier round, or one that says nothing useful, is
         * told to stop: the job has gone on without it. */
        if ((zsh_run_agree_read(fd, line, sizeof(line), deadline) < 0) ||
            (sscanf(line, "R %d %d %d %d %d", &round, &id, &a, &b, &c) != 5) ||
            (round != job->restart) || (id <= self) || (id >= o->nnodes) ||
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
}

/* Keep the nodes with ranks left, in order, in @job's table: how many. */
static int zsh_run_agree_compact(const zsh_run_opts_t *o, zsh_run_job_t *job,
                                 const zsh_run_node_t *nodes)
{
    int i, kept = 0;

    for (i = 0; i < o->nnodes; i++) {
        if (nodes[i].ran - nodes[i].lost > 0) {
            job->node_ran[kept] = nodes[i].ran - nodes[i].lost;
            if (kept != i) {
                memcpy(job->addrs[kept], job->addrs[i], ZSH_RUN_ADDR_LEN);
            }
            kept++;
        }
    }
    return kept;
}

/* The coordinator, node @self, every node before it gone: gather the
 * reports, decide, answer. 0 to restart with @o and @job set for it, else 1
 * (the reason printed). */
static int zsh_run_agree_lead(zsh_run_opts_t *o, zsh_run_job_t *job, int self, int ran,
                              int lost, int failed)
{
    zsh_run_node_t *nodes = calloc((size_t)o->nnodes, sizeof(*nodes));
    int i, n, a, left = 0, kept = 0, base = 0, idx = 0, mine = -1, rc = 1;
    char line[ZSH_RUN_AGREE_LINE];

    if (nodes == NULL) {
        fprintf(stderr, "zshrun: out of memory\n");
        return 1;
    }
    for (i = 0; i < o->nnodes; i++) {
        nodes[i] = (zsh_run_node_t){.fd = -1, .ran = job->node_ran[i]};
    }
    nodes[self] = (zsh_run_node_t){.fd = -1, .ran = ran, .lost = lost, .failed = failed};
    zsh_run_agree_gather(o, job, self, nodes);
    for (i = 0; i < o->nnodes; i++) {
        if ((i < self) && (nodes[i].ran > 0)) {
            fprintf(stderr, "zshrun: node %d (%s) cannot be reached: its %d rank%s lost\n", i,
                    job->addrs[i], nodes[i].ran, (nodes[i].ran == 1) ? "" : "s");
            nodes[i].lost = nodes[i].ran;
        } else if ((i > self) && (nodes[i].ran > 0) && (nodes[i].fd < 0)) {
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
        kept += (nodes[i].ran - nodes[i].lost > 0);
    }
    if (job->restart >= o->max_restarts) {
        fprintf(stderr, "zshrun: no restart left (--max-restarts %d)\n", o->max_restarts);
    } else if (left < o->min_ranks) {
        fprintf(stderr, "zshrun: not restarting: %d rank%s left, fewer than --min-ranks %d\n",
                left, (left == 1) ? "" : "s", o->min_ranks);
    } else {
        rc = 0;
    }
    if (rc == 0) {
        fprintf(stderr, "zshrun: the nodes agreed: %d node%s, %d rank%s\n", kept,
                (kept == 1) ? "" : "s", left, (left == 1) ? "" : "s");
        /* The table first, in the new order, as every kept node gets it. */
        for (i = 0; i < o->nnodes; i++) {
            nodes[i].next = (nodes[i].ran - nodes[i].lost > 0) ? idx++ : -1;
        }
        mine = nodes[self].next;
        kept = zsh_run_agree_compact(o, job, nodes);
        /* The next round's coordinator listens from now on; if that is not
         * this node, its port is free for the one that is, on this host too. */
        if ((mine != 0) && (job->agree_fd >= 0)) {
            close(job->agree_fd);
            job->agree_fd = -1;
        }
    }
    for (i = 0; i < o->nnodes; i++) {
        a = nodes[i].ran - nodes[i].lost;
        if (nodes[i].fd < 0) {
            base += (rc == 0) ? ((a > 0) ? a : 0) : 0;
            continue;
        }
        if ((rc != 0) || (a <= 0)) {
            zsh_run_agree_write(nodes[i].fd, "S\n");
        } else {
            snprintf(line, sizeof(line), "G %d %d %d %d %d\n", nodes[i].next, kept, base, a,
                     left);
            zsh_run_agree_write(nodes[i].fd, line);
            for (n = 0; n < kept; n++) {
                snprintf(line, sizeof(line), "%d %s\n", job->node_ran[n],
                         (job->addrs[n][0] != '\0') ? job->addrs[n] : "-");
                zsh_run_agree_write(nodes[i].fd, line);
            }
            base += a;
        }
        close(nodes[i].fd);
    }
    if ((rc == 0) && (mine < 0)) {
        fprintf(stderr, "zshrun: not restarting here: no rank left on this node; the job goes "
                "on on %d node%s\n", kept, (kept == 1) ? "" : "s");
        rc = 1;
    } else if (rc == 0) {
        for (i = 0, base = 0; i < mine; i++) {
            base += job->node_ran[i];
        }
        o->node_rank   = mine;
        o->nnodes      = kept;
        o->nproc       = job->node_ran[mine];
        job->rank_base = base;
        job->world     = left;
    }
    free(nodes);
    return rc;
}

/* The coordinator's answer on @fd: 0 with @o and @job set for the next
 * round, 1 for a stop, -1 for no answer. */
static int zsh_run_agree_answer(zsh_run_opts_t *o, zsh_run_job_t *job, int fd, int ran,
                                double deadline)
{
    char line[ZSH_RUN_AGREE_LINE];
    int rank, nodes, base, nproc, world, n, i, off = 0;

    if (zsh_run_agree_read(fd, line, sizeof(line), deadline) < 0) {
        return -1;
    }
    if ((sscanf(line, "G %d %d %d %d %d", &rank, &nodes, &base, &nproc, &world) != 5) ||
        (nodes < 1) || (nodes > o->nnodes) || (rank < 0) || (rank >= nodes) || (nproc <= 0) ||
        (nproc > ran) || (base < 0) || (base + nproc > world)) {
        return 1;
    }
    for (i = 0; i < nodes; i++) {
        if ((zsh_run_agree_read(fd, line, sizeof(line), deadline) < 0) ||
            (sscanf(line, "%d %n", &n, &off) != 1) || (n <= 0)) {
            return -1;
        }
        job->node_ran[i] = n;
        zsh_run_agree_set(job->addrs[i], line + off);
    }
    o->node_rank   = rank;
    o->nnodes      = nodes;
    o->nproc       = nproc;
    job->rank_base = base;
    job->world     = world;
    return 0;
}

/* Another node: report to the first node that answers, or lead. */
static int zsh_run_agree_follow(zsh_run_opts_t *o, zsh_run_job_t *job, int ran, int lost,
                                int failed)
{
    char line[ZSH_RUN_AGREE_LINE], why[ZSH_RUN_AGREE_LINE + 64];
    int c, fd, rc;

    snprintf(line, sizeof(line), "R %d %d %d %d %d\n", job->restart, o->node_rank, ran, lost,
             failed);
    for (c = 0; c < o->node_rank; c++) {
        if (job->addrs[c][0] == '\0') {
            fprintf(stderr, "zshrun: node %d's address is unknown; trying the next\n", c);
            continue;
        }
        /* The first node listens since the round began, so a refusal there
         * means it is gone; a later one listens only once it leads. */
        fd = zsh_run_agree_connect(job->addrs[c], job, zsh_run_agree_now() + o->join_timeout,
                                   c > 0, why, sizeof(why));
        if (fd < 0) {
            fprintf(stderr, "zshrun: node %d: %s\n", c, why);
            continue;
        }
        zsh_run_agree_write(fd, line);
        /* The coordinator answers once its own ranks ended (its peers learn
         * of a death within seconds, then --grace) and the join timeout
         * passed. */
        rc = zsh_run_agree_answer(o, job, fd, ran,
                                  zsh_run_agree_now() + 2 * o->join_timeout + o->grace + 30);
        close(fd);
        if (rc == 0) {
            return 0;
        }
        if (rc > 0) {
            fprintf(stderr, "zshrun: not restarting: the job goes on without this node\n");
            return 1;
        }
        fprintf(stderr, "zshrun: node %d (%s) did not answer\n", c, job->addrs[c]);
    }
    fprintf(stderr, "zshrun: no node before this one answers: node %d coordinates\n",
            o->node_rank);
    if (zsh_run_agree_bind(job) != 0) {
        return 1;
    }
    return zsh_run_agree_lead(o, job, o->node_rank, ran, lost, failed);
}

int zsh_run_agree(zsh_run_opts_t *o, zsh_run_job_t *job, int ran, int lost, int failed)
{
    int rc = (o->node_rank == 0) ? zsh_run_agree_lead(o, job, 0, ran, lost, failed)
                                 : zsh_run_agree_follow(o, job, ran, lost, failed);

    if (rc != 0) {
        return rc;
    }
    /* The first node runs rank 0 and its store: the ranks' MASTER_ADDR. */
    o->master_addr = job->addrs[0];
    if ((o->node_rank == 0) && (job->agree_fd < 0)) {
        return zsh_run_agree_bind(job);
    }
    return 0;
}

void zsh_run_agree_close(zsh_run_job_t *job)
{
    free(job->node_ran);
    job->node_ran = NULL;
    free(job->addrs);
    job->addrs = NULL;
    if (job->agree_fd >= 0) {
        close(job->agree_fd);
        job->agree_fd = -1;
    }
}
