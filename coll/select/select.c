#include "select/select.h"

#include "algo/chain.h"
#include "algo/eager.h"
#include "algo/rounds.h"
#include "base/desc.h"
#include "core/status.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A macro's value as a string, for the rule's text. */
#define ZSH_SELECT_STR_(_x) #_x
#define ZSH_SELECT_STR(_x)  ZSH_SELECT_STR_(_x)

/* What each collective has, and what the last two steps of the automatic
 * choice pick for it. */
typedef struct zsh_select_rule {
    zsh_coll_type_t type;
    const char     *variable;
    size_t          offset;          /* of the override in zsh_coll_config_t */
    zsh_algo_t      small, large;
    unsigned        allowed;         /* ZSH_SELECT_BIT of each algorithm it has */
} zsh_select_rule_t;

/* A set of algorithms as bits, so that a choice on every call tests
 * membership in one instruction; it lists in the enum's order. */
#define ZSH_SELECT_BIT(_algo) (1u << (_algo))

/* Indexed by collective type: every type up to the barrier selects an
 * algorithm; the fence (the job's last barrier) does not. */
static const zsh_select_rule_t zsh_select_rules[] = {
    [ZSH_COLL_ALLGATHER] = {ZSH_COLL_ALLGATHER, "ZSH_ALLGATHER_ALGO",
                            offsetof(zsh_coll_config_t, allgather_algo), ZSH_ALGO_BRUCK,
                            ZSH_ALGO_RING,
                            ZSH_SELECT_BIT(ZSH_ALGO_RING) | ZSH_SELECT_BIT(ZSH_ALGO_BRUCK) |
                            ZSH_SELECT_BIT(ZSH_ALGO_RMA) | ZSH_SELECT_BIT(ZSH_ALGO_DIRECT) |
                            ZSH_SELECT_BIT(ZSH_ALGO_EAGER) | ZSH_SELECT_BIT(ZSH_ALGO_HIER)},
    [ZSH_COLL_REDUCE_SCATTER] = {ZSH_COLL_REDUCE_SCATTER, "ZSH_REDUCE_SCATTER_ALGO",
                                 offsetof(zsh_coll_config_t, reduce_scatter_algo), ZSH_ALGO_RD,
                                 ZSH_ALGO_RING,
                                 ZSH_SELECT_BIT(ZSH_ALGO_RING) | ZSH_SELECT_BIT(ZSH_ALGO_RD) |
                                 ZSH_SELECT_BIT(ZSH_ALGO_DIRECT) | ZSH_SELECT_BIT(ZSH_ALGO_EAGER) |
                                 ZSH_SELECT_BIT(ZSH_ALGO_HIER) | ZSH_SELECT_BIT(ZSH_ALGO_ORDERED) |
                                 ZSH_SELECT_BIT(ZSH_ALGO_CHAIN)},
    [ZSH_COLL_ALLREDUCE] = {ZSH_COLL_ALLREDUCE, "ZSH_ALLREDUCE_ALGO",
                            offsetof(zsh_coll_config_t, allreduce_algo), ZSH_ALGO_RD,
                            ZSH_ALGO_RING,
                            ZSH_SELECT_BIT(ZSH_ALGO_RING) | ZSH_SELECT_BIT(ZSH_ALGO_RD) |
                            ZSH_SELECT_BIT(ZSH_ALGO_DIRECT) | ZSH_SELECT_BIT(ZSH_ALGO_EAGER) |
                            ZSH_SELECT_BIT(ZSH_ALGO_HIER) | ZSH_SELECT_BIT(ZSH_ALGO_ORDERED) |
                                 ZSH_SELECT_BIT(ZSH_ALGO_CHAIN)},
    [ZSH_COLL_BROADCAST] = {ZSH_COLL_BROADCAST, "ZSH_BROADCAST_ALGO",
                            offsetof(zsh_coll_config_t, broadcast_algo), ZSH_ALGO_BINOMIAL,
                            ZSH_ALGO_BINOMIAL,
                            ZSH_SELECT_BIT(ZSH_ALGO_BINOMIAL) | ZSH_SELECT_BIT(ZSH_ALGO_DIRECT) |
                            ZSH_SELECT_BIT(ZSH_ALGO_EAGER) | ZSH_SELECT_BIT(ZSH_ALGO_HIER)},
    [ZSH_COLL_ALLTOALL] = {ZSH_COLL_ALLTOALL, "ZSH_ALLTOALL_ALGO",
                           offsetof(zsh_coll_config_t, alltoall_algo), ZSH_ALGO_PAIRWISE,
                           ZSH_ALGO_PAIRWISE,
                           ZSH_SELECT_BIT(ZSH_ALGO_DIRECT) | ZSH_SELECT_BIT(ZSH_ALGO_EAGER) |
                           ZSH_SELECT_BIT(ZSH_ALGO_PAIRWISE)},
    [ZSH_COLL_BARRIER] = {ZSH_COLL_BARRIER, "ZSH_BARRIER_ALGO",
                          offsetof(zsh_coll_config_t, barrier_algo), ZSH_ALGO_DISSEMINATION,
                          ZSH_ALGO_DISSEMINATION,
                          ZSH_SELECT_BIT(ZSH_ALGO_DISSEMINATION) | ZSH_SELECT_BIT(ZSH_ALGO_EAGER) |
                          ZSH_SELECT_BIT(ZSH_ALGO_HIER)},
};

#define ZSH_SELECT_NRULES (sizeof(zsh_select_rules) / sizeof(zsh_select_rules[0]))

_Static_assert(ZSH_SELECT_NRULES == ZSH_COLL_BARRIER + 1,
               "a rule for each collective type up to the barrier, and none after");

/* What each algorithm does; indexes match zsh_algo_t. */
static const char *const zsh_select_algo_what[ZSH_ALGO_LAST] = {
    [ZSH_ALGO_RING]     = "pipelined ring in chunks of ZSH_CHUNK_SIZE, ZSH_PIPELINE_DEPTH in "
                          "flight, around the ranks in node order (each node's ranks in turn), "
                          "so each node's link carries one block per step each way whatever "
                          "the placement; all-reduce as a reduce-scatter then an all-gather",
    [ZSH_ALGO_BRUCK]    = "Bruck's all-gather, ceil(log2 ranks) rounds",
    [ZSH_ALGO_RD]       = "recursive doubling over the whole vector, log2 ranks rounds "
                          "(reduce-scatter keeps its block)",
    [ZSH_ALGO_BINOMIAL] = "binomial tree, pipelined in chunks of ZSH_CHUNK_SIZE",
    [ZSH_ALGO_RMA]      = "one-sided reads of every peer's block from its registered receive "
                          "buffer (a transport with one-sided access); never chosen "
                          "automatically",
    [ZSH_ALGO_DIRECT]   = "every rank on one node: each byte copied once between the ranks' own "
                          "buffers by cross-memory attach (ZSH_CMA), a step of chunks per "
                          "progress call",
    [ZSH_ALGO_EAGER]    = "2 to " ZSH_SELECT_STR(ZSH_EAGER_MAX_RANKS) " ranks: the data rides in "
                          "the descriptor message, one to each peer (a mailbox on two ranks of "
                          "one node), or one on the rank's board read where it lies (more "
                          "ranks of one node, ZSH_SHM); up to " ZSH_SELECT_STR(ZSH_DESC_INLINE_MAX)
                          " bytes in all, " ZSH_SELECT_STR(ZSH_DESC_BOARD_INLINE_MAX)
                          " on boards; a broadcast's root sends its buffer, the others none; a "
                          "barrier is the descriptor exchange alone, all to all",
    [ZSH_ALGO_HIER]     = "a communicator across nodes with more than one rank on some node: "
                          "steps on its node's ranks (which choose their own algorithm: direct, "
                          "eager, ring or binomial) and on its rail, the ranks of its local rank "
                          "on every node. all-gather: rail, then node; reduce-scatter: node, then "
                          "rail; all-reduce: node reduce-scatter, rail all-reduce, node "
                          "all-gather (these three on even nodes only); broadcast: the root's "
                          "rail, then node, or where the root's rail misses a node, the root's "
                          "node, the node leaders' (local rank 0) rail, then the other nodes; "
                          "barrier: node, the node leaders' rail, node. Elsewhere (one node, one "
                          "rank per node, an all-gather, reduce-scatter or all-reduce on uneven "
                          "nodes) the automatic choice runs instead",
    [ZSH_ALGO_DISSEMINATION] = "the dissemination barrier: ceil(log2 ranks) rounds of empty "
                               "messages, in round k to rank + 2^k",
    [ZSH_ALGO_PAIRWISE] = "pairwise exchange: at step k = 1 .. ranks - 1 each rank sends its "
                          "block for rank + k and receives from rank - k, so every step's "
                          "messages form a permutation and no rank receives from two at once; "
                          "ZSH_PIPELINE_DEPTH steps in flight; works across nodes",
    [ZSH_ALGO_ORDERED]  = "each rank sends chunk c of block p of its input to rank p, and "
                          "reduces the chunks of its own block from every rank in rank order "
                          "0 .. N-1 in the accumulation type, rounding once (zeroshard.h's "
                          "deterministic order); chunks of ZSH_CHUNK_SIZE, ZSH_PIPELINE_DEPTH "
                          "in flight; all-reduce as that then the ring all-gather; works "
                          "across nodes",
    [ZSH_ALGO_CHAIN]    = "nodes holding consecutive ranks take turns: node k adds its local "
                          "rank 0's input to the sum of ranks before it, received from node "
                          "k - 1 along the rails in the accumulation type, reduces the node in "
                          "rank order and passes the sum on; the last node's result goes "
                          "along the rails (all-reduce: broadcast, then all-gather in each "
                          "node); zeroshard.h's deterministic order with each node's sum "
                          "crossing each boundary once; where ranks lie in blocks on nodes "
                          "of as many ranks, else it runs ordered",
};

/* The algorithms that reduce every element in zeroshard.h's deterministic
 * order: direct and eager fold ranks 0 .. N-1 into one accumulator in that
 * mode, and ordered always does. Recursive doubling, the ring and the
 * hierarchy add partial sums in an order of their own. */
static const unsigned zsh_select_ordered = ZSH_SELECT_BIT(ZSH_ALGO_DIRECT) |
                                           ZSH_SELECT_BIT(ZSH_ALGO_EAGER) |
                                           ZSH_SELECT_BIT(ZSH_ALGO_ORDERED) |
                                           ZSH_SELECT_BIT(ZSH_ALGO_CHAIN);

/* A step of the automatic choice: the algorithm it picks, or AUTO where it
 * does not apply. */
typedef zsh_algo_t (*zsh_select_pick_t)(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                        size_t total_bytes);

typedef struct zsh_select_step {
    zsh_select_pick_t pick;
    const char       *when;   /* what zsh_info -s prints */
} zsh_select_step_t;

static bool zsh_select_allowed(const zsh_select_rule_t *rule, zsh_algo_t algo)
{
    return (rule->allowed & ZSH_SELECT_BIT(algo)) != 0;
}

static zsh_algo_t zsh_select_one_rank(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                      size_t total_bytes)
{
    (void)total_bytes;
    return (comm->size == 1) ? rule->small : ZSH_ALGO_AUTO;
}

static zsh_algo_t zsh_select_board(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                   size_t total_bytes)
{
    return (comm->local.board && zsh_select_allowed(rule, ZSH_ALGO_EAGER) &&
            zsh_eager_chosen(comm, rule->type, total_bytes))
               ? ZSH_ALGO_EAGER : ZSH_ALGO_AUTO;
}

/* A direct call costs a message to and from every peer and a copy call per
 * peer, so the size from which it pays grows with the rank count: counted
 * once per round the log-latency algorithms take. */
static zsh_algo_t zsh_select_direct(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                    size_t total_bytes)
{
    return (comm->local.direct && zsh_select_allowed(rule, ZSH_ALGO_DIRECT) &&
            (total_bytes > comm->ctx->cfg.direct_min_size * (size_t)zsh_ceil_log2(comm->size)))
               ? ZSH_ALGO_DIRECT : ZSH_ALGO_AUTO;
}

static zsh_algo_t zsh_select_eager(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                   size_t total_bytes)
{
    return (zsh_select_allowed(rule, ZSH_ALGO_EAGER) &&
            zsh_eager_chosen(comm, rule->type, total_bytes))
               ? ZSH_ALGO_EAGER : ZSH_ALGO_AUTO;
}

/* Whether @comm can run @rule's collective hierarchically. On uneven nodes
 * the rails of the larger nodes' extra local ranks miss the smaller nodes,
 * so only the broadcast and the barrier, which cross on the leaders' rail,
 * can; the node-ordered ring already brings the smallest node what it
 * lacks in as few bytes as anything could where it has one rank, and
 * within (n - 1) / (n - fewest) of that otherwise (docs/DECISIONS.md,
 * "Across nodes"). */
static bool zsh_select_hier_runs(const zsh_comm_t *comm, const zsh_select_rule_t *rule)
{
    return (comm->hier.node != NULL) && zsh_select_allowed(rule, ZSH_ALGO_HIER) &&
           (comm->hier.even || (rule->type == ZSH_COLL_BROADCAST) ||
            (rule->type == ZSH_COLL_BARRIER));
}

/* Across nodes the hierarchy's steps cost latency (each a call of its own
 * on a child) and save every byte a node's link would carry twice: they
 * pay once the log-latency algorithms no longer do, past
 * ZSH_SMALL_MSG_SIZE; the barrier, which moves nothing, has its own step
 * above (docs/DECISIONS.md, "Across nodes"). */
static zsh_algo_t zsh_select_hier(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                  size_t total_bytes)
{
    (void)total_bytes;
    return zsh_select_hier_runs(comm, rule) ? ZSH_ALGO_HIER : ZSH_ALGO_AUTO;
}

/* A barrier beyond the eager one's ranks, across nodes: the node leaders'
 * rail is the only step that crosses, once per node, where dissemination
 * sends ceil(log2 ranks) rounds, most across nodes (docs/DECISIONS.md,
 * "Across nodes"). */
static zsh_algo_t zsh_select_barrier_hier(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                          size_t total_bytes)
{
    (void)total_bytes;
    return ((rule->type == ZSH_COLL_BARRIER) && zsh_select_hier_runs(comm, rule))
               ? ZSH_ALGO_HIER : ZSH_ALGO_AUTO;
}

static zsh_algo_t zsh_select_small(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                   size_t total_bytes)
{
    return (total_bytes <= comm->ctx->cfg.small_msg_size) ? rule->small : ZSH_ALGO_AUTO;
}

static zsh_algo_t zsh_select_large(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                   size_t total_bytes)
{
    (void)comm;
    (void)total_bytes;
    return rule->large;
}

/* The automatic choice (ZSH_<COLL>_ALGO=auto): the first step that applies picks. */
static const zsh_select_step_t zsh_select_steps[] = {
    {zsh_select_one_rank, "one rank: nothing moves"},
    {zsh_select_board, "3 to " ZSH_SELECT_STR(ZSH_EAGER_MAX_RANKS) " ranks of one node sharing "
                       "boards (ZSH_SHM), up to " ZSH_SELECT_STR(ZSH_DESC_BOARD_INLINE_MAX)
                       " bytes in all: eager, written once and read where it lies"},
    {zsh_select_direct, "every rank on one node with cross-memory attach (ZSH_CMA), more than "
                        "ZSH_DIRECT_MIN_SIZE bytes in all for each of the ceil(log2 ranks) "
                        "rounds of recursive doubling: direct"},
    {zsh_select_eager, "2 to " ZSH_SELECT_STR(ZSH_EAGER_MAX_RANKS) " ranks, up to "
                       ZSH_SELECT_STR(ZSH_DESC_INLINE_MAX) " bytes in all, each rank sending at "
                       "most " ZSH_SELECT_STR(ZSH_EAGER_AUTO_SEND_MAX) " bytes in all: eager"},
    {zsh_select_barrier_hier, "a barrier across nodes with more than one rank on some node "
                              "(the communicator has node and rail children): hier"},
    {zsh_select_small, "up to ZSH_SMALL_MSG_SIZE bytes in all: bruck (all-gather), rd "
                       "(reduce-scatter, all-reduce), binomial (broadcast), pairwise "
                       "(all-to-all), dissemination (barrier, which moves nothing)"},
    {zsh_select_hier, "across nodes with more than one rank on some node (the communicator "
                      "has node and rail children), the same number on each for all-gather, "
                      "reduce-scatter and all-reduce: hier"},
    {zsh_select_large, "otherwise (one node, one rank per node, uneven nodes): ring in node "
                       "order (all-gather, reduce-scatter, all-reduce), binomial (broadcast), "
                       "pairwise (all-to-all), dissemination (barrier)"},
};

#define ZSH_SELECT_NSTEPS (sizeof(zsh_select_steps) / sizeof(zsh_select_steps[0]))

static const zsh_select_rule_t *zsh_select_rule(zsh_coll_type_t type)
{
    return ((size_t)type < ZSH_SELECT_NRULES) ? &zsh_select_rules[type] : NULL;
}

static int zsh_select_override(const zsh_coll_config_t *cfg, const zsh_select_rule_t *rule)
{
    return *(const int *)((const char *)cfg + rule->offset);
}

void zsh_select_choices(zsh_coll_type_t type, char *buf, size_t len)
{
    const zsh_select_rule_t *rule = zsh_select_rule(type);
    unsigned left                 = (rule != NULL) ? rule->allowed : 0;
    size_t used                   = (size_t)snprintf(buf, len, "auto");
    int a;

    for (a = ZSH_ALGO_AUTO + 1; (a < ZSH_ALGO_LAST) && (used < len); a++) {
        if (left & ZSH_SELECT_BIT(a)) {
            left &= ~ZSH_SELECT_BIT(a);
            used += (size_t)snprintf(buf + used, len - used, "%s%s", (left == 0) ? " or " : ", ",
                                     zsh_algo_name((zsh_algo_t)a));
        }
    }
}

void zsh_select_names(zsh_coll_type_t type, const char *names[ZSH_ALGO_LAST + 1])
{
    const zsh_select_rule_t *rule = zsh_select_rule(type);
    int a;

    for (a = ZSH_ALGO_AUTO; a < ZSH_ALGO_LAST; a++) {
        names[a] = ((a == ZSH_ALGO_AUTO) ||
                    ((rule != NULL) && zsh_select_allowed(rule, (zsh_algo_t)a)))
                       ? zsh_algo_names[a] : "";
    }
    names[ZSH_ALGO_LAST] = NULL;
}

zsh_status_t zsh_select_check_config(const zsh_coll_config_t *cfg)
{
    const zsh_select_rule_t *rule;
    char choices[96];
    zsh_algo_t algo;
    size_t i;

    for (i = 0; i < ZSH_SELECT_NRULES; i++) {
        rule = &zsh_select_rules[i];
        algo = (zsh_algo_t)zsh_select_override(cfg, rule);
        if ((algo != ZSH_ALGO_AUTO) && !zsh_select_allowed(rule, algo)) {
            zsh_select_choices(rule->type, choices, sizeof(choices));
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s=%s is not an algorithm of this collective: "
                             "use %s", rule->variable, zsh_algo_name(algo), choices);
        }
    }
    return ZSH_OK;
}

/* Whether an override can run on @comm for a call of @total_bytes. */
static zsh_status_t zsh_select_runs(const zsh_comm_t *comm, const zsh_select_rule_t *rule,
                                    zsh_algo_t algo, size_t total_bytes)
{
    if ((algo == ZSH_ALGO_DIRECT) && !comm->local.direct) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "%s=direct needs every rank of the "
                         "communicator on one node, able to read each other's memory "
                         "(ZSH_CMA=1, same PID namespace, ptrace_scope 0 or 1); comm %u "
                         "is not", rule->variable, comm->id);
    }
    if ((algo == ZSH_ALGO_EAGER) && !zsh_eager_fits(comm, total_bytes)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "%s=eager needs 2 to %d ranks and at most "
                         "%zu bytes in all on comm %u (%d where its ranks share boards, "
                         "see ZSH_SHM); this call has %d ranks and %zu bytes",
                         rule->variable, ZSH_EAGER_MAX_RANKS, zsh_eager_max(comm), comm->id,
                         ZSH_DESC_BOARD_INLINE_MAX, comm->size, total_bytes);
    }
    if ((algo == ZSH_ALGO_RMA) && (comm->ctx->tl->rma == NULL)) {
        return zsh_error(ZSH_ERR_UNSUPPORTED, "%s=rma needs one-sided access, which the %s "
                         "transport lacks", rule->variable, comm->ctx->tl->name);
    }
    return ZSH_OK;
}

zsh_status_t zsh_select(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes,
                        zsh_algo_t *algo_p)
{
    const zsh_select_rule_t *rule = zsh_select_rule(type);
    zsh_status_t status;
    zsh_algo_t algo;
    size_t i;

    if (rule == NULL) {
        return zsh_error(ZSH_ERR_INTERNAL, "no algorithm rule for collective type %d", (int)type);
    }
    algo   = (zsh_algo_t)zsh_select_override(&comm->ctx->cfg, rule);
    if ((algo == ZSH_ALGO_HIER) && !zsh_select_hier_runs(comm, rule)) {
        algo = ZSH_ALGO_AUTO; /* no hierarchy here (the children of one), or not for this call */
    }
    status = zsh_select_runs(comm, rule, algo, total_bytes);
    if (status != ZSH_OK) {
        return status;
    }
    for (i = 0; (algo == ZSH_ALGO_AUTO) && (i < ZSH_SELECT_NSTEPS); i++) {
        algo = zsh_select_steps[i].pick(comm, rule, total_bytes);
    }
    if (comm->deterministic && zsh_coll_reduces(type) &&
        ((zsh_select_ordered & ZSH_SELECT_BIT(algo)) == 0)) {
        /* Whether chosen or forced: the mode is the caller's promise. */
        algo = zsh_chain_runs(comm) ? ZSH_ALGO_CHAIN : ZSH_ALGO_ORDERED;
    }
    if ((algo == ZSH_ALGO_CHAIN) && !zsh_chain_runs(comm)) {
        algo = ZSH_ALGO_ORDERED; /* the same order, for any placement */
    }
    *algo_p = algo;
    return ZSH_OK;
}

void zsh_select_describe(FILE *out)
{
    char choices[96];
    size_t i;
    int a;

    fprintf(out, "# Algorithms, by collective (ZSH_<COLLECTIVE>_ALGO):\n");
    for (i = 0; i < ZSH_SELECT_NRULES; i++) {
        zsh_select_choices(zsh_select_rules[i].type, choices, sizeof(choices));
        fprintf(out, "#   %-15s %s=%s\n", zsh_desc_type_name(zsh_select_rules[i].type),
                zsh_select_rules[i].variable, choices);
    }
    fprintf(out, "# What each does:\n");
    for (a = ZSH_ALGO_AUTO + 1; a < ZSH_ALGO_LAST; a++) {
        fprintf(out, "#   %-13s %s\n", zsh_algo_name((zsh_algo_t)a), zsh_select_algo_what[a]);
    }
    fprintf(out, "# auto: the first of these that applies picks:\n");
    for (i = 0; i < ZSH_SELECT_NSTEPS; i++) {
        fprintf(out, "#   %zu. %s\n", i + 1, zsh_select_steps[i].when);
    }
    fprintf(out, "# Deterministic mode (ZSH_DETERMINISTIC=1, zsh_comm_set_deterministic()): "
            "reduce-scatter and all-reduce reduce each element over ranks 0 .. N-1 in order "
            "(zeroshard.h):\n");
    for (a = ZSH_ALGO_AUTO + 1; a < ZSH_ALGO_LAST; a++) {
        if ((zsh_select_rules[ZSH_COLL_REDUCE_SCATTER].allowed & ZSH_SELECT_BIT(a)) != 0) {
            fprintf(out, "#   %-13s %s\n", zsh_algo_name((zsh_algo_t)a),
                    (a == ZSH_ALGO_CHAIN)
                        ? "honours it: runs as chosen across nodes in blocks of as many "
                          "ranks, ordered elsewhere"
                    : ((zsh_select_ordered & ZSH_SELECT_BIT(a)) != 0)
                        ? "honours it: runs as chosen"
                        : "does not: never runs in this mode; a choice of it, automatic or "
                          "forced, runs chain instead across nodes in blocks of as many "
                          "ranks, ordered elsewhere (round-robin, uneven nodes, one node)");
        }
    }
}
