/*
 * The collective layer's ZSH_* variables (base/config.h holds the struct).
 * The *_ALGO rows name their collective's algorithms from the selection
 * rule (select/select.c), so the list is written once: their help, and
 * the choices they take, which hold only that collective's names.
 */
#include "api/config.h"

#include "base/tag.h"
#include "comm/comm.h"
#include "select/select.h"

#include <stddef.h>
#include <stdio.h>

/* Switches: index 0 is off. */
static const char *const zsh_coll_switch_names[] = {"0", "1", NULL};

/* The *_ALGO rows' help and choices, filled from the rule before the table
 * registers. */
static char        zsh_coll_algo_help[6][256];
static const char *zsh_coll_algo_choices[6][ZSH_ALGO_LAST + 1];

/* The ring's window is at most a quarter of a collective's tag steps. */
_Static_assert(ZSH_TAG_STEPS / 4 == 1024, "ZSH_PIPELINE_DEPTH's maximum is the ring's window");

/* ZSH_TIMEOUT takes what zsh_comm_set_timeout() takes (ZSH_TIMEOUT_MIN and
 * ZSH_TIMEOUT_MAX in comm/comm.h). C has no constant comparison of floating
 * values that every compiler accepts, so the test
 * coll_config.zsh_timeout_and_zsh_comm_set_timeout_take_the_same_range holds
 * the two to each other at both bounds and just past them. */
#define ZSH_COLL_TIMEOUT_MIN "0.001"
#define ZSH_COLL_TIMEOUT_MAX "31536000"

#define ZSH_COLL_OFF(_field) offsetof(zsh_coll_config_t, _field)

static const zsh_config_field_t zsh_coll_config_fields[] = {
    {"TIMEOUT", NULL, "300",
     "Seconds a collective may wait for its peers before it fails with ZSH_ERR_TIMEOUT, "
     "as zsh_comm_set_timeout() sets per communicator; every wait has a deadline, so 0 is "
     "refused",
     ZSH_COLL_OFF(timeout), ZSH_CONFIG_TIME, NULL, ZSH_COLL_TIMEOUT_MIN, ZSH_COLL_TIMEOUT_MAX},
    {"CHUNK_SIZE", NULL, "256k",
     "Bytes per message of the pipelined ring and broadcast algorithms, and per copy of the "
     "direct ones",
     ZSH_COLL_OFF(chunk_size), ZSH_CONFIG_SIZE, NULL, "4k", "64m"},
    {"PIPELINE_DEPTH", NULL, "4", "Chunks in flight in each direction of a pipelined algorithm",
     ZSH_COLL_OFF(pipeline_depth), ZSH_CONFIG_UINT, NULL, "2", "1024"},
    {"SMALL_MSG_SIZE", NULL, "16k",
     "Total bytes up to which the log-latency algorithms (Bruck, recursive doubling) are "
     "chosen, where no earlier step of the selection rule applies (zsh_info -s); 0: never",
     ZSH_COLL_OFF(small_msg_size), ZSH_CONFIG_SIZE, NULL, "0", "1024g"},
    {"ALLGATHER_ALGO", NULL, "auto", zsh_coll_algo_help[0], ZSH_COLL_OFF(allgather_algo),
     ZSH_CONFIG_ENUM, zsh_coll_algo_choices[0], NULL, NULL},
    {"REDUCE_SCATTER_ALGO", NULL, "auto", zsh_coll_algo_help[1],
     ZSH_COLL_OFF(reduce_scatter_algo), ZSH_CONFIG_ENUM, zsh_coll_algo_choices[1], NULL, NULL},
    {"ALLREDUCE_ALGO", NULL, "auto", zsh_coll_algo_help[2], ZSH_COLL_OFF(allreduce_algo),
     ZSH_CONFIG_ENUM, zsh_coll_algo_choices[2], NULL, NULL},
    {"BROADCAST_ALGO", NULL, "auto", zsh_coll_algo_help[3], ZSH_COLL_OFF(broadcast_algo),
     ZSH_CONFIG_ENUM, zsh_coll_algo_choices[3], NULL, NULL},
    {"BARRIER_ALGO", NULL, "auto", zsh_coll_algo_help[4], ZSH_COLL_OFF(barrier_algo),
     ZSH_CONFIG_ENUM, zsh_coll_algo_choices[4], NULL, NULL},
    {"ALLTOALL_ALGO", NULL, "auto", zsh_coll_algo_help[5], ZSH_COLL_OFF(alltoall_algo),
     ZSH_CONFIG_ENUM, zsh_coll_algo_choices[5], NULL, NULL},
    {"DIRECT_MIN_SIZE", NULL, "4k",
     "Total bytes above which all-gather, reduce-scatter, all-reduce, broadcast and all-to-all "
     "run the direct algorithms on one node, counted once per round of recursive doubling "
     "(zsh_info -s); 0: at any size",
     ZSH_COLL_OFF(direct_min_size), ZSH_CONFIG_SIZE, NULL, "0", "1024g"},
    {"STREAM_MIN_SIZE", NULL, "auto",
     "Bytes of an all-gather's send and receive buffers together above which the direct "
     "all-gather copies this rank's block into recvbuf with non-temporal stores, which bypass "
     "the cache: faster once the buffers outgrow it, and the block is then read back from "
     "memory. auto: the largest cache this rank's core has to itself, from hwloc (never where "
     "it knows none); 0: at any size",
     ZSH_COLL_OFF(stream_min_size), ZSH_CONFIG_SIZE_AUTO, NULL, "0", "1024g"},
    {"SPIN_COUNT", NULL, "200",
     "Progress polls a waiter makes before it starts yielding its core (none when more ranks "
     "than processors share the node); 0: it yields at once",
     ZSH_COLL_OFF(spin_count), ZSH_CONFIG_UINT, NULL, "0", "1000000"},
    {"YIELD_TIME", NULL, "0.001",
     "Seconds a waiter then polls between sched_yield() calls, so that ranks sharing its core run "
     "at once, before it sleeps on the transport's event descriptor; 0: it sleeps at once",
     ZSH_COLL_OFF(yield_time), ZSH_CONFIG_TIME, NULL, "0", "1"},
    {"DETERMINISTIC", NULL, "0",
     "1: every reduce-scatter and all-reduce of a communicator reduces each element over "
     "ranks 0 .. N-1 in that order (zeroshard.h), so its bits do not depend on the algorithm, "
     "chunk size, pipeline depth, offset, node layout or timing; zsh_comm_set_deterministic() "
     "sets it per communicator, and zsh_info -s says which algorithms run in this mode",
     ZSH_COLL_OFF(deterministic), ZSH_CONFIG_ENUM, zsh_coll_switch_names, NULL, NULL},
    {"TRACE", NULL, "0",
     "Flight recorder: 1 keeps the last ZSH_TRACE_DEPTH collectives of each communicator "
     "(op, sequence number, sizes, state, timestamps) and dumps them on a timeout, an abort, "
     "a mismatch or a peer failure",
     ZSH_COLL_OFF(trace), ZSH_CONFIG_ENUM, zsh_coll_switch_names, NULL, NULL},
    {"TRACE_DEPTH", NULL, "64", "Collectives the flight recorder keeps per communicator",
     ZSH_COLL_OFF(trace_depth), ZSH_CONFIG_UINT, NULL, "1", "65536"},
    {"TRACE_FILE", NULL, "",
     "Where the flight recorder dumps: empty for stderr, else a file appended to; %r in the "
     "name becomes the rank and %p the process id; one that cannot be opened is reported "
     "once, and the dump goes to stderr",
     ZSH_COLL_OFF(trace_file), ZSH_CONFIG_STRING, NULL, NULL, NULL},
};

/* The *_ALGO rows take only their collective's names; a configuration set
 * in code rather than read is checked again at zsh_comm_init()
 * (zsh_select_check_config()), naming the same ones. */
static zsh_config_table_t zsh_coll_config_table = {
    "collectives", ZSH_CONFIG_ORDER_COLL, zsh_coll_config_fields,
    sizeof(zsh_coll_config_fields) / sizeof(zsh_coll_config_fields[0]),
    sizeof(zsh_coll_config_t), NULL};

__attribute__((constructor)) static void zsh_coll_config_register(void)
{
    static const struct {
        zsh_coll_type_t type;
        const char     *what;
    } algos[6] = {{ZSH_COLL_ALLGATHER, "All-gather"}, {ZSH_COLL_REDUCE_SCATTER, "Reduce-scatter"},
                  {ZSH_COLL_ALLREDUCE, "All-reduce"}, {ZSH_COLL_BROADCAST, "Broadcast"},
                  {ZSH_COLL_BARRIER, "Barrier"}, {ZSH_COLL_ALLTOALL, "All-to-all"}};
    char choices[96];
    size_t i;

    for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
        zsh_select_names(algos[i].type, zsh_coll_algo_choices[i]);
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
