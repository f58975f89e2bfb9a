/*
 * zshrun --slurm: the nodes of the job come from Slurm instead of the command
 * line. Inside a job step (srun, one zshrun per node) the step's node count,
 * this node's index and its first node, rank 0's host, fill in --nnodes,
 * --node-rank and --master-addr; the port is derived from the job and step
 * ids, the same on every node. Inside an allocation but outside a step (an
 * sbatch script, a command under salloc), zshrun starts itself on every node
 * of the allocation through srun, with a fresh job key that srun carries to
 * each, and the step then does the rest.
 */
#include "run/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The store's port is taken from [base, base + span): below the kernel's
 * usual ephemeral range (32768 and up), as zsh_run_port_pick() does. */
#define ZSH_RUN_SLURM_PORT_BASE 20000
#define ZSH_RUN_SLURM_PORT_SPAN 12768

/* A Slurm variable that must hold a whole number in [@min, @max]: 0 and the
 * number, else a message naming it and 2. */
static int zsh_run_slurm_int(const char *name, long min, long max, long *out)
{
    const char *text = getenv(name);
    char *end;
    long v;

    if ((text == NULL) || (text[0] == '\0')) {
        fprintf(stderr, "zshrun: --slurm: %s is not set, though SLURM_JOB_ID is: not a "
                "Slurm job environment zshrun knows\n", name);
        return 2;
    }
    errno = 0;
    v     = strtol(text, &end, 10);
    if ((*end != '\0') || (errno != 0) || (v < min) || (v > max)) {
        fprintf(stderr, "zshrun: --slurm: %s '%s' is not a whole number from %ld to %ld\n",
                name, text, min, max);
        return 2;
    }
    *out = v;
    return 0;
}

/* The first host of Slurm host list @list ("node[01-04],login"). A list
 * without brackets is split here; any other is expanded by Slurm's own
 * "scontrol show hostnames", which knows every form a list takes. */
static int zsh_run_slurm_first_host(const char *list, char *host, size_t size)
{
    int fds[2], status, n;
    size_t len = 0;
    ssize_t got;
    pid_t pid;

    if (strchr(list, '[') == NULL) {
        n = (int)strcspn(list, ",");
        if ((n == 0) || ((size_t)n >= size)) {
            fprintf(stderr, "zshrun: --slurm: the node list '%s' has no first host of 1 to "
                    "%zu characters\n", list, size - 1);
            return 1;
        }
        snprintf(host, size, "%.*s", n, list);
        return 0;
    }
    if (pipe(fds) != 0) {
        fprintf(stderr, "zshrun: pipe: %s\n", strerror(errno));
        return 1;
    }
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "zshrun: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return 1;
    }
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execlp("scontrol", "scontrol", "show", "hostnames", list, (char *)NULL);
        fprintf(stderr, "zshrun: --slurm: cannot run scontrol to expand the node list '%s': "
                "%s\n", list, strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    /* Only the first line matters; the rest is read to let scontrol finish. */
    for (;;) {
        char rest[256];
        got = (len < size - 1) ? read(fds[0], host + len, size - 1 - len)
                               : read(fds[0], rest, sizeof(rest));
        if ((got < 0) && (errno == EINTR)) {
            continue;
        }
        if (got <= 0) {
            break;
        }
        if (len < size - 1) {
            len += (size_t)got;
        }
    }
    close(fds[0]);
    host[len] = '\0';
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            status = -1;
            break;
        }
    }
    host[strcspn(host, "\n")] = '\0';
    if ((status != 0) || (host[0] == '\0')) {
        fprintf(stderr, "zshrun: --slurm: scontrol show hostnames '%s' gave no host (%s %d)\n",
                list, WIFEXITED(status) ? "exit status" : "wait status",
                WIFEXITED(status) ? WEXITSTATUS(status) : status);
        return 1;
    }
    return 0;
}

/* Inside a step: one zshrun per node, and the step's nodes are the job's. */
static int zsh_run_slurm_step(zsh_run_opts_t *o)
{
    const char *list = getenv("SLURM_STEP_NODELIST");
    long nodes, tasks, node, job, step;
    int rc;

    if ((rc = zsh_run_slurm_int("SLURM_STEP_NUM_NODES", 1, ZSH_RUN_NNODES_MAX, &nodes)) ||
        (rc = zsh_run_slurm_int("SLURM_STEP_NUM_TASKS", 1, 1L << 30, &tasks)) ||
        (rc = zsh_run_slurm_int("SLURM_NODEID", 0, nodes - 1, &node)) ||
        (rc = zsh_run_slurm_int("SLURM_JOB_ID", 0, 1L << 40, &job)) ||
        (rc = zsh_run_slurm_int("SLURM_STEP_ID", 0, 1L << 40, &step))) {
        return rc;
    }
    if (tasks != nodes) {
        fprintf(stderr, "zshrun: --slurm starts the ranks of its node itself, so it runs once per "
                "node, but this step has %ld tasks on %ld nodes: start it with srun "
                "--ntasks-per-node=1, or outside srun (zshrun --slurm then starts itself on "
                "every node of the allocation)\n", tasks, nodes);
        return 2;
    }
    if ((list == NULL) || (list[0] == '\0')) {
        fprintf(stderr, "zshrun: --slurm: SLURM_STEP_NODELIST is not set or empty inside "
                "step %ld.%ld\n", job, step);
        return 2;
    }
    o->nnodes    = (int)nodes;
    o->node_rank = (int)node;
    if (o->master_addr == NULL) {
        if ((rc = zsh_run_slurm_first_host(list, o->slurm_host, sizeof(o->slurm_host))) != 0) {
            return rc;
        }
        o->master_addr = o->slurm_host;
    }
    if (o->master_port == 0) {
        o->master_port = ZSH_RUN_SLURM_PORT_BASE +
                         (int)((job * 64 + step) % ZSH_RUN_SLURM_PORT_SPAN);
    }
    return 0;
}

/* Inside an allocation, outside a step: become srun, which starts this
 * zshrun once on each node. Returns only on failure. */
static int zsh_run_slurm_launch(const zsh_run_opts_t *o, int argc, char **argv)
{
    char self[4096], nodes[32], key[2 * ZSH_RUN_KEY_BYTES + 1];
    const char *fixed[] = {"srun", NULL, NULL, "--ntasks-per-node=1", "--kill-on-bad-exit=1",
                           "--mpi=none"};
    size_t nfixed = sizeof(fixed) / sizeof(fixed[0]), i;
    char ntasks[40], **args;
    long n;
    ssize_t len;
    int rc;

    if ((rc = zsh_run_slurm_int("SLURM_JOB_NUM_NODES", 1, ZSH_RUN_NNODES_MAX, &n)) != 0) {
        return rc;
    }
    len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        fprintf(stderr, "zshrun: --slurm: cannot find zshrun's own path (/proc/self/exe): %s\n",
                strerror(errno));
        return 1;
    }
    self[len] = '\0';
    /* Every node's zshrun must hold the same key; srun carries the
     * environment to them, and only to them. */
    if ((getenv("ZSH_JOB_KEY") == NULL) && (o->key_file == NULL)) {
        if (zsh_run_key_fresh(key) != 0) {
            return 1;
        }
        setenv("ZSH_JOB_KEY", key, 1);
    }
    snprintf(nodes, sizeof(nodes), "--nodes=%ld", n);
    snprintf(ntasks, sizeof(ntasks), "--ntasks=%ld", n);
    fixed[1] = nodes;
    fixed[2] = ntasks;
    /* With restarts a node's zshrun that ends (none of its ranks left) must
     * not end the others: they go on without it. */
    if (o->max_restarts > 0) {
        fixed[4] = "--kill-on-bad-exit=0";
    }
    args     = calloc(nfixed + (size_t)argc + 1, sizeof(*args));
    if (args == NULL) {
        fprintf(stderr, "zshrun: out of memory\n");
        return 1;
    }
    for (i = 0; i < nfixed; i++) {
        args[i] = (char *)fixed[i];
    }
    args[nfixed] = self;
    for (i = 1; i < (size_t)argc; i++) {
        args[nfixed + i] = argv[i];
    }
    fflush(NULL);
    execvp("srun", args);
    fprintf(stderr, "zshrun: --slurm: cannot run srun to start zshrun on the %ld node(s) of job "
            "%s: %s\n", n, getenv("SLURM_JOB_ID"), strerror(errno));
    free(args);
    return (errno == ENOENT) ? 127 : 126;
}

int zsh_run_slurm(zsh_run_opts_t *o, int argc, char **argv)
{
    const char *job = getenv("SLURM_JOB_ID");

    if ((job == NULL) || (job[0] == '\0')) {
        fprintf(stderr, "zshrun: --slurm: not inside a Slurm job (SLURM_JOB_ID is not set): run "
                "it in an sbatch script, under salloc, or under srun --ntasks-per-node=1\n");
        return 2;
    }
    if (getenv("SLURM_STEP_ID") != NULL) {
        return zsh_run_slurm_step(o);
    }
    return zsh_run_slurm_launch(o, argc, argv);
}
