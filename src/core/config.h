/*
 * The one table of ZSH_* configuration variables.
 *
 * Each row names a variable (without the ZSH_ prefix), its default, its help
 * text, where it lands in zsh_config_t and how it is parsed. The environment
 * is read here and nowhere else; zsh_info prints the table. A row may carry a
 * fallback name without the prefix (RANK for ZSH_RANK), which is read when the
 * prefixed variable is unset, so torchrun-style launchers work unchanged.
 */
#ifndef ZSH_CORE_CONFIG_H_
#define ZSH_CORE_CONFIG_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSH_CONFIG_PREFIX  "ZSH_"
#define ZSH_CONFIG_STR_MAX 256

/* A ZSH_CONFIG_SIZE_AUTO variable set to "auto": whoever reads it decides. */
#define ZSH_CONFIG_AUTO_SIZE SIZE_MAX

/* Values of ZSH_BOOTSTRAP: how zsh_comm_init() finds its peers. */
typedef enum {
    ZSH_BOOTSTRAP_AUTO,  /* torchrun variables if RANK is set, else PMIx if launched by it */
    ZSH_BOOTSTRAP_ENV,   /* torchrun variables and the TCP store */
    ZSH_BOOTSTRAP_PMIX   /* a PMIx launcher: mpirun, srun */
} zsh_bootstrap_t;

/* Values of the *_ALGO variables. AUTO selects by message size and rank count. */
typedef enum {
    ZSH_ALGO_AUTO,
    ZSH_ALGO_RING,       /* allgather, reduce_scatter, allreduce (as RS + AG) */
    ZSH_ALGO_BRUCK,      /* allgather */
    ZSH_ALGO_RD,         /* recursive doubling: allreduce, reduce_scatter */
    ZSH_ALGO_BINOMIAL,   /* broadcast */
    ZSH_ALGO_RMA,        /* allgather: one-sided reads from registered buffers */
    ZSH_ALGO_DIRECT,     /* allgather, reduce_scatter, allreduce: reads of peers' buffers on
                            one node (cross-memory attach) */
    ZSH_ALGO_EAGER,      /* allgather, reduce_scatter, allreduce: 2 to 8 ranks, small
                            messages, the data in the descriptor messages */
    ZSH_ALGO_LAST
} zsh_algo_t;

typedef struct zsh_config {
    double   timeout;           /* seconds before a collective fails */
    int      log_level;         /* zsh_log_level_t */
    size_t   chunk_size;        /* bytes per pipelined message */
    unsigned pipeline_depth;    /* chunks in flight per direction */
    size_t   small_msg_size;    /* bytes up to which log-latency algorithms run */
    int      allgather_algo;    /* zsh_algo_t */
    int      reduce_scatter_algo;
    int      allreduce_algo;
    int      broadcast_algo;
    int      cma;               /* node-local algorithms may read peers' memory (1) or not (0) */
    int      shm;               /* two ranks on one node: eager and direct calls' descriptors
                                   go through mailboxes (1) or UCX (0) */
    size_t   direct_min_size;   /* bytes above which the direct algorithms run on one node */
    size_t   stream_min_size;   /* bytes of buffers above which own blocks are stored
                                   non-temporally; ZSH_CONFIG_AUTO_SIZE: this core's
                                   private cache */
    unsigned spin_count;        /* progress polls before a waiter yields */
    double   yield_time;        /* seconds a waiter yields its core before it sleeps */
    int      rank;              /* bootstrap: -1 when unset */
    int      world_size;        /* bootstrap: -1 when unset */
    char     master_addr[ZSH_CONFIG_STR_MAX]; /* bootstrap: "" when unset */
    int      master_port;       /* bootstrap: -1 when unset */
    double   store_timeout;     /* seconds for store connect, accept and replies */
    int      bootstrap;         /* zsh_bootstrap_t */
    double   keepalive;         /* seconds between liveness checks of peers */
    int      trace;             /* flight recorder on (1) or off (0) */
    unsigned trace_depth;       /* collectives the flight recorder keeps per communicator */
    char     trace_file[ZSH_CONFIG_STR_MAX]; /* where it dumps: "" for stderr; %r rank, %p pid */
    bool     pmix_launched;     /* derived: a PMIx launcher started this process */
    /* the optimizer layer (zsh_optim_config_t may override each) */
    size_t   bucket_size;       /* bytes per flat bucket */
    size_t   max_live_bytes;    /* stage 3: gathered bucket bytes kept live */
    unsigned prefetch;          /* stage 3: buckets gathered ahead of use */
} zsh_config_t;

typedef enum {
    ZSH_CONFIG_TIME,   /* seconds, fractional allowed: "300", "0.5" */
    ZSH_CONFIG_SIZE,   /* bytes with an optional k/m/g suffix (powers of 1024) */
    ZSH_CONFIG_SIZE_AUTO, /* "auto" (stored as ZSH_CONFIG_AUTO_SIZE) or as ZSH_CONFIG_SIZE */
    ZSH_CONFIG_UINT,   /* unsigned int */
    ZSH_CONFIG_INT_OPT,/* int >= 0, or empty for unset (-1) */
    ZSH_CONFIG_STRING, /* up to ZSH_CONFIG_STR_MAX - 1 bytes */
    ZSH_CONFIG_ENUM    /* one of the row's choices, case-insensitive; stored as index */
} zsh_config_type_t;

typedef struct zsh_config_field {
    const char        *name;      /* without the ZSH_ prefix */
    const char        *fallback;  /* unprefixed variable read when ZSH_<name> is unset, or NULL */
    const char        *dflt;      /* default, in the same syntax as the variable */
    const char        *help;
    size_t             offset;    /* into zsh_config_t */
    zsh_config_type_t  type;
    const char *const *choices;   /* ZSH_CONFIG_ENUM only, NULL-terminated */
} zsh_config_field_t;

/* All rows, and how many there are. */
const zsh_config_field_t *zsh_config_fields(size_t *count_p);

/* The row of ZSH_<@name>, or NULL. */
const zsh_config_field_t *zsh_config_field_find(const char *name);

/* Fill @cfg with defaults, then the environment. On a malformed value, fails
 * with ZSH_ERR_INVALID_ARG naming the variable and its value (via zsh_error). */
zsh_status_t zsh_config_read(zsh_config_t *cfg);

/* The same without touching the last error or the log: the logger uses it
 * to learn its own level. @err gets the message on failure. */
zsh_status_t zsh_config_read_quiet(zsh_config_t *cfg, char *err, size_t err_len);

/* Parse @value into the field's slot of @cfg; on failure @err says why. */
zsh_status_t zsh_config_parse(const zsh_config_field_t *field, const char *value,
                              zsh_config_t *cfg, char *err, size_t err_len);

/* Write the field's current value in @cfg as text (the syntax it is read in). */
void zsh_config_format(const zsh_config_field_t *field, const zsh_config_t *cfg,
                       char *buf, size_t len);

/* The variable that set @field in this environment ("ZSH_RANK", "RANK") or NULL. */
const char *zsh_config_source(const zsh_config_field_t *field);

/* The name of an algorithm value, e.g. "ring". */
const char *zsh_algo_name(zsh_algo_t algo);

#endif
