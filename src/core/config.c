#include "core/config.h"
#include "core/status.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const zsh_log_level_names[] = {"error", "warn", "info", "debug", "trace", NULL};

/* Indexes match zsh_bootstrap_t. */
/* Switches: index 0 is off. */
static const char *const zsh_switch_names[] = {"0", "1", NULL};

static const char *const zsh_bootstrap_names[] = {"auto", "env", "pmix", NULL};

/* Indexes match zsh_algo_t. */
static const char *const zsh_algo_names[] = {"auto", "ring", "bruck", "rd", "binomial", "rma",
                                             "direct", "eager", NULL};

#define ZSH_CFG_OFF(_field) offsetof(zsh_config_t, _field)

static const zsh_config_field_t zsh_config_table[] = {
    {"TIMEOUT", NULL, "300",
     "Seconds a collective may wait for its peers before it fails with ZSH_ERR_TIMEOUT",
     ZSH_CFG_OFF(timeout), ZSH_CONFIG_TIME, NULL},
    {"LOG_LEVEL", NULL, "warn", "Messages printed to stderr: error, warn, info, debug or trace",
     ZSH_CFG_OFF(log_level), ZSH_CONFIG_ENUM, zsh_log_level_names},
    {"CHUNK_SIZE", NULL, "256k",
     "Bytes per message of the pipelined ring and broadcast algorithms, and per copy of the "
     "direct ones",
     ZSH_CFG_OFF(chunk_size), ZSH_CONFIG_SIZE, NULL},
    {"PIPELINE_DEPTH", NULL, "4", "Chunks in flight in each direction of a pipelined algorithm",
     ZSH_CFG_OFF(pipeline_depth), ZSH_CONFIG_UINT, NULL},
    {"SMALL_MSG_SIZE", NULL, "16k",
     "Total bytes up to which log-latency algorithms (Bruck, recursive doubling) are chosen",
     ZSH_CFG_OFF(small_msg_size), ZSH_CONFIG_SIZE, NULL},
    {"ALLGATHER_ALGO", NULL, "auto", "All-gather algorithm: auto, ring, bruck, rma (one-sided reads), direct (one "
     "node: each rank copies its input into every peer's receive buffer, see ZSH_CMA) or eager "
     "(2 to 8 ranks, up to 4 KiB in all, 16 KiB on boards: one message to each peer, or one on "
     "the rank's board, see ZSH_SHM)",
     ZSH_CFG_OFF(allgather_algo), ZSH_CONFIG_ENUM, zsh_algo_names},
    {"REDUCE_SCATTER_ALGO", NULL, "auto", "Reduce-scatter algorithm: auto, ring, rd, direct (one node: each rank reads "
     "and reduces its block straight from its peers' send buffers, see ZSH_CMA) or eager (2 to 8 "
     "ranks, up to 4 KiB in all, 16 KiB on boards: one message to each peer, or one on the "
     "rank's board, see ZSH_SHM)",
     ZSH_CFG_OFF(reduce_scatter_algo), ZSH_CONFIG_ENUM, zsh_algo_names},
    {"ALLREDUCE_ALGO", NULL, "auto",
     "All-reduce algorithm: auto, ring (reduce-scatter then all-gather), rd, direct "
     "(one node: each rank reduces its block from its peers' send buffers and writes the "
     "result into their receive buffers) or eager (2 to 8 ranks, up to 4 KiB, 16 KiB on boards: "
     "one message to each peer, or one on the rank's board, see ZSH_SHM)",
     ZSH_CFG_OFF(allreduce_algo), ZSH_CONFIG_ENUM, zsh_algo_names},
    {"BROADCAST_ALGO", NULL, "auto", "Broadcast algorithm: auto or binomial (pipelined)",
     ZSH_CFG_OFF(broadcast_algo), ZSH_CONFIG_ENUM, zsh_algo_names},
    {"CMA", NULL, "1",
     "Cross-memory attach: 1 lets the direct algorithms, chosen above ZSH_DIRECT_MIN_SIZE when "
     "every rank of a communicator is on one node, copy straight between ranks' buffers with "
     "process_vm_readv and process_vm_writev (one copy instead of two). Where Yama's "
     "ptrace_scope is 1 this lets processes of the same user access ours, as Open MPI and UCX "
     "do; 0 keeps the rings",
     ZSH_CFG_OFF(cma), ZSH_CONFIG_ENUM, zsh_switch_names},
    {"SHM", NULL, "1",
     "Shared-memory mailboxes and boards: on ranks of one node, 1 sends the descriptor message "
     "of an eager call (with its data) or a direct one (with its addresses, then its \"done\" "
     "message) through shared slots instead of UCX, for lower latency: on two ranks into the "
     "peer's mailbox (up to 4 KiB of data), on more onto the rank's own board (up to 16 KiB), "
     "where every peer reads it in place. "
     "Needs what ZSH_CMA needs, and must be set alike on every rank; 0 sends through UCX",
     ZSH_CFG_OFF(shm), ZSH_CONFIG_ENUM, zsh_switch_names},
    {"DIRECT_MIN_SIZE", NULL, "4k",
     "Total bytes above which all-gather, reduce-scatter and all-reduce run the direct "
     "algorithms when every rank of the communicator is on one node (see ZSH_CMA), counted "
     "once per round of recursive doubling: twice from 3 ranks, three times from 5, ...; "
     "on 3 to 8 ranks with boards (see ZSH_SHM), calls of up to 16 KiB go eager first",
     ZSH_CFG_OFF(direct_min_size), ZSH_CONFIG_SIZE, NULL},
    {"STREAM_MIN_SIZE", NULL, "auto",
     "Bytes of an all-gather's send and receive buffers together above which the direct "
     "all-gather copies this rank's block into recvbuf with non-temporal stores, which bypass "
     "the cache: faster once the buffers outgrow it, and the block is then read back from "
     "memory. auto: the largest cache this rank's core has to itself, from hwloc (never where "
     "it knows none)",
     ZSH_CFG_OFF(stream_min_size), ZSH_CONFIG_SIZE_AUTO, NULL},
    {"SPIN_COUNT", NULL, "200",
     "Progress polls a waiter makes before it starts yielding its core (none when more ranks "
     "than processors share the node)",
     ZSH_CFG_OFF(spin_count), ZSH_CONFIG_UINT, NULL},
    {"YIELD_TIME", NULL, "0.01",
     "Seconds a waiter then polls between sched_yield() calls, so that ranks sharing its core run "
     "at once, before it sleeps on the transport's event descriptor",
     ZSH_CFG_OFF(yield_time), ZSH_CONFIG_TIME, NULL},
    {"RANK", "RANK", "", "Rank of this process for zsh_comm_init() (torchrun: RANK)",
     ZSH_CFG_OFF(rank), ZSH_CONFIG_INT_OPT, NULL},
    {"WORLD_SIZE", "WORLD_SIZE", "", "Number of processes for zsh_comm_init() (torchrun: WORLD_SIZE)",
     ZSH_CFG_OFF(world_size), ZSH_CONFIG_INT_OPT, NULL},
    {"MASTER_ADDR", "MASTER_ADDR", "",
     "Host of the TCP store that rank 0 runs for zsh_comm_init() (torchrun: MASTER_ADDR)",
     ZSH_CFG_OFF(master_addr), ZSH_CONFIG_STRING, NULL},
    {"MASTER_PORT", "MASTER_PORT", "",
     "Port of the TCP store that rank 0 runs for zsh_comm_init() (torchrun: MASTER_PORT)",
     ZSH_CFG_OFF(master_port), ZSH_CONFIG_INT_OPT, NULL},
    {"STORE_TIMEOUT", NULL, "60",
     "Seconds to connect to, accept from or wait for a reply of the TCP store (or a PMIx fence)",
     ZSH_CFG_OFF(store_timeout), ZSH_CONFIG_TIME, NULL},
    {"BOOTSTRAP", NULL, "auto",
     "How zsh_comm_init() finds its peers: env (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), "
     "pmix (mpirun, srun), or auto: env if RANK is set, else pmix if a PMIx launcher started us",
     ZSH_CFG_OFF(bootstrap), ZSH_CONFIG_ENUM, zsh_bootstrap_names},
    {"KEEPALIVE", NULL, "1",
     "Seconds between the transport's liveness checks of peers: a rank that dies is reported "
     "as ZSH_ERR_PEER_FAILED on every communicator it belongs to within about twice this",
     ZSH_CFG_OFF(keepalive), ZSH_CONFIG_TIME, NULL},
    {"TRACE", NULL, "0",
     "Flight recorder: 1 keeps the last ZSH_TRACE_DEPTH collectives of each communicator "
     "(op, sequence number, sizes, state, timestamps) and dumps them on a timeout, an abort, "
     "a mismatch or a peer failure",
     ZSH_CFG_OFF(trace), ZSH_CONFIG_ENUM, zsh_switch_names},
    {"TRACE_DEPTH", NULL, "64", "Collectives the flight recorder keeps per communicator",
     ZSH_CFG_OFF(trace_depth), ZSH_CONFIG_UINT, NULL},
    {"TRACE_FILE", NULL, "",
     "Where the flight recorder dumps: empty for stderr, else a file appended to; %r in the "
     "name becomes the rank and %p the process id",
     ZSH_CFG_OFF(trace_file), ZSH_CONFIG_STRING, NULL},
    /* the optimizer layer */
    {"BUCKET_SIZE", NULL, "16m",
     "Bytes per flat bucket: parameters coalesced so one collective moves them all",
     ZSH_CFG_OFF(bucket_size), ZSH_CONFIG_SIZE, NULL},
    {"MAX_LIVE_BYTES", NULL, "256m",
     "Bytes of gathered parameter buckets kept live at stage 3 (fetched, cached, prefetched), "
     "and separately of gradient staging buffers at stages 2-3",
     ZSH_CFG_OFF(max_live_bytes), ZSH_CONFIG_SIZE, NULL},
    {"PREFETCH", NULL, "2",
     "ZeRO stage 3: buckets gathered ahead of use in the recorded fetch order "
     "(0: none, at most 16)",
     ZSH_CFG_OFF(prefetch), ZSH_CONFIG_UINT, NULL},
};

const zsh_config_field_t *zsh_config_fields(size_t *count_p)
{
    *count_p = sizeof(zsh_config_table) / sizeof(zsh_config_table[0]);
    return zsh_config_table;
}

const zsh_config_field_t *zsh_config_field_find(const char *name)
{
    size_t i, n;

    zsh_config_fields(&n);
    for (i = 0; i < n; i++) {
        if (strcmp(zsh_config_table[i].name, name) == 0) {
            return &zsh_config_table[i];
        }
    }
    return NULL;
}

const char *zsh_algo_name(zsh_algo_t algo)
{
    return ((unsigned)algo < ZSH_ALGO_LAST) ? zsh_algo_names[algo] : "unknown";
}

static int zsh_config_parse_time(const char *value, double *out)
{
    char *end;
    double v;

    errno = 0;
    v     = strtod(value, &end);
    if ((end == value) || (*end != '\0') || (errno != 0) || !isfinite(v) || (v < 0)) {
        return -1;
    }
    *out = v;
    return 0;
}

static int zsh_config_parse_size(const char *value, size_t *out)
{
    unsigned long long v, mult = 1;
    char *end;

    if (!isdigit((unsigned char)value[0])) {
        return -1;
    }
    errno = 0;
    v     = strtoull(value, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (tolower((unsigned char)*end)) {
    case '\0': break;
    case 'k':  mult = 1ull << 10; end++; break;
    case 'm':  mult = 1ull << 20; end++; break;
    case 'g':  mult = 1ull << 30; end++; break;
    default:   return -1;
    }
    if ((tolower((unsigned char)*end) == 'b') || (tolower((unsigned char)*end) == 'i')) {
        end += (tolower((unsigned char)*end) == 'i') ? 1 : 0;
        end += (tolower((unsigned char)*end) == 'b') ? 1 : 0;
    }
    if ((*end != '\0') || (v > SIZE_MAX / mult)) {
        return -1;
    }
    *out = (size_t)(v * mult);
    return 0;
}

static int zsh_config_parse_uint(const char *value, unsigned *out)
{
    unsigned long v;
    char *end;

    if (!isdigit((unsigned char)value[0])) {
        return -1;
    }
    errno = 0;
    v     = strtoul(value, &end, 10);
    if ((*end != '\0') || (errno != 0) || (v > UINT_MAX)) {
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int zsh_config_parse_int_opt(const char *value, int *out)
{
    unsigned v;

    if (value[0] == '\0') {
        *out = -1;
        return 0;
    }
    if ((zsh_config_parse_uint(value, &v) != 0) || (v > INT_MAX)) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int zsh_config_parse_enum(const char *value, const char *const *choices, int *out)
{
    int i;

    for (i = 0; choices[i] != NULL; i++) {
        if (strcasecmp(value, choices[i]) == 0) {
            *out = i;
            return 0;
        }
    }
    return -1;
}

static void zsh_config_expected(const zsh_config_field_t *field, char *buf, size_t len)
{
    size_t used;
    int i;

    switch (field->type) {
    case ZSH_CONFIG_TIME:    snprintf(buf, len, "a number of seconds >= 0"); return;
    case ZSH_CONFIG_SIZE:    snprintf(buf, len, "a byte count such as 4096, 64k or 1m"); return;
    case ZSH_CONFIG_SIZE_AUTO:
        snprintf(buf, len, "auto or a byte count such as 4096, 64k or 1m");
        return;
    case ZSH_CONFIG_UINT:    snprintf(buf, len, "an unsigned integer"); return;
    case ZSH_CONFIG_INT_OPT: snprintf(buf, len, "an integer >= 0"); return;
    case ZSH_CONFIG_STRING:  snprintf(buf, len, "at most %d characters", ZSH_CONFIG_STR_MAX - 1); return;
    case ZSH_CONFIG_ENUM:
        used = (size_t)snprintf(buf, len, "one of");
        for (i = 0; (field->choices[i] != NULL) && (used < len); i++) {
            used += (size_t)snprintf(buf + used, len - used, "%s %s", (i == 0) ? "" : ",",
                                     field->choices[i]);
        }
        return;
    }
}

/* @varname is the variable the value came from, for the message. */
static zsh_status_t zsh_config_parse_var(const zsh_config_field_t *field, const char *varname,
                                         const char *value, zsh_config_t *cfg, char *err,
                                         size_t err_len)
{
    void *slot = (char *)cfg + field->offset;
    char expected[160];
    int rc = -1;

    switch (field->type) {
    case ZSH_CONFIG_TIME:    rc = zsh_config_parse_time(value, (double *)slot); break;
    case ZSH_CONFIG_SIZE:    rc = zsh_config_parse_size(value, (size_t *)slot); break;
    case ZSH_CONFIG_SIZE_AUTO:
        if (strcasecmp(value, "auto") == 0) {
            *(size_t *)slot = ZSH_CONFIG_AUTO_SIZE;
            rc = 0;
        } else {
            rc = zsh_config_parse_size(value, (size_t *)slot);
        }
        break;
    case ZSH_CONFIG_UINT:    rc = zsh_config_parse_uint(value, (unsigned *)slot); break;
    case ZSH_CONFIG_INT_OPT: rc = zsh_config_parse_int_opt(value, (int *)slot); break;
    case ZSH_CONFIG_ENUM:    rc = zsh_config_parse_enum(value, field->choices, (int *)slot); break;
    case ZSH_CONFIG_STRING:
        if (strlen(value) < ZSH_CONFIG_STR_MAX) {
            strcpy((char *)slot, value);
            rc = 0;
        }
        break;
    }
    if (rc == 0) {
        return ZSH_OK;
    }
    zsh_config_expected(field, expected, sizeof(expected));
    snprintf(err, err_len, "%s='%s' is invalid: expected %s", varname, value, expected);
    return ZSH_ERR_INVALID_ARG;
}

zsh_status_t zsh_config_parse(const zsh_config_field_t *field, const char *value,
                              zsh_config_t *cfg, char *err, size_t err_len)
{
    char varname[128];

    snprintf(varname, sizeof(varname), "%s%s", ZSH_CONFIG_PREFIX, field->name);
    return zsh_config_parse_var(field, varname, value, cfg, err, err_len);
}

void zsh_config_format(const zsh_config_field_t *field, const zsh_config_t *cfg, char *buf,
                       size_t len)
{
    const void *slot = (const char *)cfg + field->offset;
    int v;

    switch (field->type) {
    case ZSH_CONFIG_TIME:   snprintf(buf, len, "%g", *(const double *)slot); return;
    case ZSH_CONFIG_SIZE:   snprintf(buf, len, "%zu", *(const size_t *)slot); return;
    case ZSH_CONFIG_SIZE_AUTO:
        if (*(const size_t *)slot == ZSH_CONFIG_AUTO_SIZE) {
            snprintf(buf, len, "auto");
        } else {
            snprintf(buf, len, "%zu", *(const size_t *)slot);
        }
        return;
    case ZSH_CONFIG_UINT:   snprintf(buf, len, "%u", *(const unsigned *)slot); return;
    case ZSH_CONFIG_STRING: snprintf(buf, len, "%s", (const char *)slot); return;
    case ZSH_CONFIG_INT_OPT:
        v = *(const int *)slot;
        if (v < 0) {
            snprintf(buf, len, "%s", "");
        } else {
            snprintf(buf, len, "%d", v);
        }
        return;
    case ZSH_CONFIG_ENUM:
        snprintf(buf, len, "%s", field->choices[*(const int *)slot]);
        return;
    }
}

/* The variable that sets @field here ("ZSH_RANK", else "RANK"), or NULL.
 * Writes the name into @name. */
static const char *zsh_config_env_var(const zsh_config_field_t *field, char *name, size_t len)
{
    snprintf(name, len, "%s%s", ZSH_CONFIG_PREFIX, field->name);
    if (getenv(name) != NULL) {
        return name;
    }
    if ((field->fallback != NULL) && (getenv(field->fallback) != NULL)) {
        snprintf(name, len, "%s", field->fallback);
        return name;
    }
    return NULL;
}

const char *zsh_config_source(const zsh_config_field_t *field)
{
    static _Thread_local char name[128];

    return zsh_config_env_var(field, name, sizeof(name));
}

zsh_status_t zsh_config_read_quiet(zsh_config_t *cfg, char *err, size_t err_len)
{
    const zsh_config_field_t *field;
    zsh_status_t status;
    char varname[128];
    size_t i, n;

    zsh_config_fields(&n);
    for (i = 0; i < n; i++) {
        field  = &zsh_config_table[i];
        status = zsh_config_parse(field, field->dflt, cfg, err, err_len);
        if (status != ZSH_OK) {
            return ZSH_ERR_INTERNAL; /* a default that does not parse is a bug */
        }
        if (zsh_config_env_var(field, varname, sizeof(varname)) == NULL) {
            continue;
        }
        status = zsh_config_parse_var(field, varname, getenv(varname), cfg, err, err_len);
        if (status != ZSH_OK) {
            return status;
        }
    }
    /* PMIx launchers (mpirun, srun) name the job's namespace for every process. */
    cfg->pmix_launched = getenv("PMIX_NAMESPACE") != NULL;
    return ZSH_OK;
}

zsh_status_t zsh_config_read(zsh_config_t *cfg)
{
    char err[ZSH_ERROR_MSG_MAX];
    zsh_status_t status;

    status = zsh_config_read_quiet(cfg, err, sizeof(err));
    if (status != ZSH_OK) {
        return zsh_error(status, "%s", err);
    }
    return ZSH_OK;
}
