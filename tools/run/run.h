/*
 * zshrun: a torchrun-style launcher for ZeroShard jobs (and any other
 * program). It starts N local ranks with the torchrun environment, relays
 * their output line by line with a rank prefix, and stops the job when one
 * rank fails. The pieces: options.c (the command line and the program to
 * run), setup.c (job key, master port, descriptor limit), bind.c (the cores
 * each rank runs on), slurm.c (the nodes of a Slurm job), agree.c (the
 * nodes' agreement on a restart's world; agree_io.c its sockets),
 * snapshot.c (the directory in node memory for the ranks' snapshots),
 * spawn.c (one rank's process), relay.c (output lines) and main.c (the
 * supervision loop and the restarts of --max-restarts).
 */
#ifndef ZSH_RUN_RUN_H_
#define ZSH_RUN_RUN_H_

#include <hwloc.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

/* The most local ranks: beyond it the job is a mistake (a typo, a rank count
 * meant for a whole cluster) rather than something one node runs. */
#define ZSH_RUN_NPROC_MAX 1024
/* The most nodes: with ZSH_RUN_NPROC_MAX ranks each, the world stays within
 * the library's rank limit (2^20). */
#define ZSH_RUN_NNODES_MAX 1024
/* Bytes of a fresh job key, written as twice as many hex digits. */
#define ZSH_RUN_KEY_BYTES 32
/* The longest --grace, in seconds. */
#define ZSH_RUN_GRACE_MAX 86400.0
/* The most --max-restarts: more is a loop that never gives up. */
#define ZSH_RUN_RESTARTS_MAX 1000
/* Bytes of a node's address in the nodes' agreement, as --master-addr. */
#define ZSH_RUN_ADDR_LEN 256

/* --bind: auto (the default) is core where every rank has a core, else none. */
typedef enum {
    ZSH_RUN_BIND_AUTO,
    ZSH_RUN_BIND_NONE,
    ZSH_RUN_BIND_CORE,
    ZSH_RUN_BIND_NUMA
} zsh_run_bind_t;

typedef struct zsh_run_opts {
    int          nproc;       /* local ranks, -n; a restart runs fewer */
    int          max_restarts; /* --max-restarts: restarts after a failure, 0: none */
    int          min_ranks;   /* --min-ranks: the fewest ranks a restart runs */
    int          nnodes;      /* --nnodes */
    int          node_rank;   /* --node-rank */
    const char  *master_addr; /* NULL: 127.0.0.1 (one node only) */
    int          master_port; /* 0: a free port is chosen (one node only) */
    const char  *key_file;    /* --job-key-file, NULL for none */
    double       grace;       /* seconds between SIGTERM and SIGKILL */
    double       join_timeout; /* --join-timeout: a node silent this long after a
                                * failed round is lost (several nodes) */
    bool         prefix;      /* "[rank] " before each output line */
    bool         thp;         /* huge pages for the ranks' malloc (--no-thp: false) */
    int          bind;        /* zsh_run_bind_t */
    bool         report;      /* --report-bindings */
    bool         slurm;       /* --slurm: nodes, node rank and master from Slurm */
    char         slurm_host[256]; /* the master address --slurm found */
    char *const *argv;        /* the program and its arguments */
    char        *path;        /* the program as found on PATH (malloc'd) */
} zsh_run_opts_t;

/* Parse argv and find the program; 0 to run, 1 to exit successfully
 * (--help, --version), otherwise the exit status of the error (2 for usage,
 * 126 or 127 for a program that cannot run), the message printed. */
int zsh_run_parse(int argc, char **argv, zsh_run_opts_t *o);

/* Where one local rank is bound. */
typedef struct zsh_run_place {
    hwloc_bitmap_t cpus;
    int            core; /* its core's logical index; -1 when bound to a NUMA node */
    int            numa; /* its NUMA node's logical index */
} zsh_run_place_t;

/* What every rank of the job shares, fixed before the first one starts. */
typedef struct zsh_run_job {
    char             master_addr[256];
    char             master_port[8];
    const char      *job_key;   /* NULL: none, the store is unauthenticated */
    char             key_buf[256];
    struct rlimit    nofile;    /* the limit the ranks get back */
    hwloc_topology_t topo;      /* NULL where no rank is bound */
    zsh_run_place_t *places;    /* one per local rank; NULL: the ranks run unbound */
    int              cores;     /* cores zshrun may run on; 0 when not counted */
    bool             apply;     /* the topology is this machine's: bind, not only report */
    int              restart;   /* restarts so far: ZSH_RESTART_COUNT of the ranks */
    char             snap_dir[64]; /* ZSH_SNAPSHOT_DIR zshrun made; "" for none */
    int              rank_base; /* RANK of this node's first rank */
    int              world;     /* WORLD_SIZE: a restart's nodes may run unequal counts */
    int              agree_fd;  /* the coordinator's socket for the nodes' restarts; -1 */
    int             *node_ran;  /* each node's ranks this round */
    char           (*addrs)[ZSH_RUN_ADDR_LEN]; /* each node's address, "" where unknown;
                                 * the first is the ranks' MASTER_ADDR */
} zsh_run_job_t;

/* --slurm: inside a job step, fill in @o's nodes, node rank, master address
 * and port from Slurm's variables; inside an allocation outside a step,
 * start zshrun with @argv on every node through srun (does not return on
 * success). 0 to go on, else the exit status, the message printed. */
int zsh_run_slurm(zsh_run_opts_t *o, int argc, char **argv);

/* A fresh job key in hex into @key (2 * ZSH_RUN_KEY_BYTES + 1 bytes): 0, or
 * 1 with the message printed. */
int zsh_run_key_fresh(char *key);

/* Everything that can fail before a rank starts: the descriptors the relay
 * needs, the key and the port. 0 or an exit status, the message printed. */
int zsh_run_setup(zsh_run_opts_t *o, zsh_run_job_t *job);

/* Where rank 0's store listens and where each of @o->nproc ranks is bound:
 * part of zsh_run_setup(), and again before each restart, with a fresh port
 * where zshrun chose the last one (the failed job's store may still hold it)
 * and places for the ranks the restart runs. 0 or an exit status, the
 * message printed. */
int zsh_run_setup_place(const zsh_run_opts_t *o, zsh_run_job_t *job);

/* On each node, where the user set no ZSH_SNAPSHOT_DIR: a fresh directory in
 * node memory (/dev/shm) for the ranks' snapshots, which outlives them across
 * restarts; none where /dev/shm is missing. 0, or 1 with the message printed. */
int zsh_run_snapshot_dir(const zsh_run_opts_t *o, zsh_run_job_t *job);
/* Remove the snapshot directory zshrun made, at the end of the job. */
void zsh_run_snapshot_remove(zsh_run_job_t *job);

/* With several nodes and --max-restarts, before the first rank starts: the
 * first node listens on the port above --master-port for the other nodes'
 * reports, and every node learns every other's address there, for the case
 * that the first is lost (agree.c). 0, or an exit status with the message
 * printed. */
int zsh_run_agree_listen(zsh_run_opts_t *o, zsh_run_job_t *job);
/* After a failed round of several nodes, in which this node ran @ran ranks,
 * @lost of them killed by a signal, @failed whether any failed: agree with
 * the other nodes on the next round's world and set @o and @job for it
 * (nodes, node index, ranks here, first rank, world size). 0 to restart,
 * else 1 with the reason printed. */
int zsh_run_agree(zsh_run_opts_t *o, zsh_run_job_t *job, int ran, int lost, int failed);
void zsh_run_agree_close(zsh_run_job_t *job);

/* --bind's value: 0, or -1 with the message printed. */
int zsh_run_bind_parse(const char *text, int *bind);
/* Each local rank's place, from this machine's topology and zshrun's own CPU
 * set: 0, or an exit status with the message printed (2 for --bind core with
 * more ranks than cores). */
int zsh_run_bind_plan(const zsh_run_opts_t *o, zsh_run_job_t *job);
/* --report-bindings: each rank's place, or why they run unbound, on stderr. */
void zsh_run_bind_report(const zsh_run_opts_t *o, const zsh_run_job_t *job);
/* In local rank @local's process, before exec: bind it to its place. */
void zsh_run_bind_apply(const zsh_run_job_t *job, int local);
void zsh_run_bind_free(const zsh_run_opts_t *o, zsh_run_job_t *job);

/* One stream of one rank (its stdout or its stderr), cut into lines. */
typedef struct zsh_run_stream {
    int         fd;     /* read end of the rank's pipe; -1 once at EOF */
    int         out;    /* where its lines go: 1 or 2 */
    const char *prefix; /* before each line: "[rank] " or "" */
    char       *buf;    /* the unfinished line */
    size_t      len, cap;
} zsh_run_stream_t;

/* Read what @s has and write every whole line to @s->out behind its
 * prefix; at EOF write the unfinished rest and close. */
void zsh_run_stream_read(zsh_run_stream_t *s);
/* Write @s's unfinished line and close it, as at EOF. */
void zsh_run_stream_close(zsh_run_stream_t *s);

typedef enum {
    ZSH_RUN_RANK_RUNNING, /* the rank's process has not exited */
    ZSH_RUN_RANK_EXITED,  /* it exited but stays a zombie: its pid, and with
                           * it its process group id, cannot be reused */
} zsh_run_rank_state_t;

typedef struct zsh_run_rank {
    int                  rank; /* global: node_rank * nproc + local rank */
    pid_t                pid;  /* also its process group */
    zsh_run_rank_state_t state;
    int                  status; /* wait status once exited */
    char                 prefix[16];
    zsh_run_stream_t     streams[2]; /* stdout, stderr */
} zsh_run_rank_t;

/* Start local rank @local as a process group of its own, its output on
 * pipes; 0, or -1 with the message printed and nothing left running. */
int zsh_run_spawn(const zsh_run_opts_t *o, const zsh_run_job_t *job, int local,
                  zsh_run_rank_t *r);

#endif
