/*
 * The collective layer's ZSH_* variables (base/config.h holds the struct).
 * The *_ALGO rows name their collective's algorithms from the selection
 * rule (select/select.c), so the list is written once.
 */
#include "api/config.h"

#include "select/select.h"

#include <stddef.h>
#include <stdio.h>

/* Switches: index 0 is off. */
static const char *const zsh_coll_switch_names[] = {"0", "1", NULL};

/* The *_ALGO rows' help, filled from the rule before the table registers. */
static char zsh_coll_algo_help[4][256];

#define ZSH_COLL_OFF(_field) offsetof(zsh_coll_config_t, _field)

static const zsh_config_field_t zsh_coll_config_fields[] = {
    {"TIMEOUT", NULL, "300",
     "Seconds a collective may wait for its peers before it fails with ZSH_ERR_TIMEOUT",
     ZSH_COLL_OFF(timeout), ZSH_CONFIG_TIME, NULL},
    {"CHUNK_SIZE", NULL, "256k",
     "Bytes per message of the pipelined ring and broadcast algorithms, and per copy of the "
     "direct ones",
     ZSH_COLL_OFF(chunk_size), ZSH_CONFIG_SIZE, NULL},
    {"PIPELINE_DEPTH", NULL, "4", "Chunks in flight in each direction of a pipelined algorithm",
     ZSH_COLL_OFF(pipeline_depth), ZSH_CONFIG_UINT, NULL},
    {"SMALL_MSG_SIZE", NULL, "16k",
     "Total bytes up to which the log-latency algorithms (Bruck, recursive doubling) are "
     "chosen, where no earlier step of the selection rule applies (zsh_info -s)",
     ZSH_COLL_OFF(small_msg_size), ZSH_CONFIG_SIZE, NULL},
    {"ALLGATHER_ALGO", NULL, "auto", zsh_coll_algo_help[0], ZSH_COLL_OFF(allgather_algo),
     ZSH_CONFIG_ENUM, zsh_algo_names},
    {"REDUCE_SCATTER_ALGO", NULL, "auto", zsh_coll_algo_help[1],
     ZSH_COLL_OFF(reduce_scatter_algo), ZSH_CONFIG_ENUM,
     zsh_algo_names},
    {"ALLREDUCE_ALGO", NULL, "auto", zsh_coll_algo_help[2], ZSH_COLL_OFF(allreduce_algo),
     ZSH_CONFIG_ENUM, zsh_algo_names},
    {"BROADCAST_ALGO", NULL, "auto", zsh_coll_algo_help[3], ZSH_COLL_OFF(broadcast_algo),
     ZSH_CONFIG_ENUM, zsh_algo_names},
    {"DIRECT_MIN_SIZE", NULL, "4k",
     "Total bytes above which all-gather, reduce-scatter and all-reduce run the direct "
     "algorithms on one node, counted once per round of recursive doubling (zsh_info -s)",
     ZSH_COLL_OFF(direct_min_size), ZSH_CONFIG_SIZE, NULL},
    {"STREAM_MIN_SIZE", NULL, "auto",
     "Bytes of an all-gather's send and receive buffers together above which the direct "
     "all-gather copies this rank's block into recvbuf with non-temporal stores, which bypass "
     "the cache: faster once the buffers outgrow it, and the block is then read back from "
     "memory. auto: the largest cache this rank's core has to itself, from hwloc (never where "
     "it knows none)",
     ZSH_COLL_OFF(stream_min_size), ZSH_CONFIG_SIZE_AUTO, NULL},
    {"SPIN_COUNT", NULL, "200",
     "Progress polls a waiter makes before it starts yielding its core (none when more ranks "
     "than processors share the node)",
     ZSH_COLL_OFF(spin_count), ZSH_CONFIG_UINT, NULL},
    {"YIELD_TIME", NULL, "0.01",
     "Seconds a waiter then polls between sched_yield() calls, so that ranks sharing its core run "
     "at once, before it sleeps on the transport's event descriptor",
     ZSH_COLL_OFF(yield_time), ZSH_CONFIG_TIME, NULL},
    {"TRACE", NULL, "0",
     "Flight recorder: 1 keeps the last ZSH_TRACE_DEPTH collectives of each communicator "
     "(op, sequence number, sizes, state, timestamps) and dumps them on a timeout, an abort, "
     "a mismatch or a peer failure",
     ZSH_COLL_OFF(trace), ZSH_CONFIG_ENUM, zsh_coll_switch_names},
    {"TRACE_DEPTH", NULL, "64", "Collectives the flight recorder keeps per communicator",
     ZSH_COLL_OFF(trace_depth), ZSH_CONFIG_UINT, NULL},
    {"TRACE_FILE", NULL, "",
     "Where the flight recorder dumps: empty for stderr, else a file appended to; %r in the "
     "name becomes the rank and %p the process id",
     ZSH_COLL_OFF(trace_file), ZSH_CONFIG_STRING, NULL},
};

/* The *_ALGO rows take every algorithm's name; which belong to which
 * collective is checked at zsh_comm_init() (zsh_select_check_config()),
 * naming the valid ones. */
static zsh_config_table_t zsh_coll_config_table = {
    "collectives", ZSH_CONFIG_ORDER_COLL, zsh_coll_config_fields,
    sizeof(zsh_coll_config_fields) / sizeof(zsh_coll_config_fields[0]),
    sizeof(zsh_coll_config_t), NULL};

__attribute__((constructor)) static void zsh_coll_config_register(void)
{
    static const struct {
        zsh_coll_type_t type;
        const char     *what;
    } algos[4] = {{ZSH_COLL_ALLGATHER, "All-gather"}, {ZSH_COLL_REDUCE_SCATTER, "Reduce-scatter"},
                  {ZSH_COLL_ALLREDUCE, "All-reduce"}, {ZSH_COLL_BROADCAST, "Broadcast"}};
    char choices[96];
    size_t i;

    for (i = 0; i < 4; i++) {
        zsh_select_choices(algos[i].type, choices, sizeof(choices));
        snprintf(zsh_coll_algo_help[i], sizeof(zsh_coll_algo_help[i]), "%s algorithm: %s; "
                 "zsh_info -s says what each does and the rule auto follows", algos[i].what,
                 choices);
    }
    zsh_config_register(&zsh_coll_config_table);
}

zsh_status_t zsh_coll_config_read(zsh_coll_config_t *cfg)
{
    return zsh_config_read(&zsh_coll_config_table, cfg);
}
