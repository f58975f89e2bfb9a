#include "select/select.h"

#include "algo/algs.h"

#include "core/status.h"

#include <stdio.h>

#include <stdbool.h>

typedef struct zsh_select_rule {
    zsh_coll_type_t type;
    const char     *variable;
    size_t          offset;          /* of the override in zsh_config_t */
    zsh_algo_t      small, large;    /* the automatic choice */
    zsh_algo_t      allowed[6];      /* AUTO-terminated */
} zsh_select_rule_t;

static const zsh_select_rule_t zsh_select_rules[] = {
    {ZSH_COLL_ALLGATHER, "ZSH_ALLGATHER_ALGO", offsetof(zsh_config_t, allgather_algo),
     ZSH_ALGO_BRUCK, ZSH_ALGO_RING,
     {ZSH_ALGO_RING, ZSH_ALGO_BRUCK, ZSH_ALGO_RMA, ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER,
      ZSH_ALGO_AUTO}},
    {ZSH_COLL_REDUCE_SCATTER, "ZSH_REDUCE_SCATTER_ALGO",
     offsetof(zsh_config_t, reduce_scatter_algo), ZSH_ALGO_RD, ZSH_ALGO_RING,
     {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER, ZSH_ALGO_AUTO}},
    {ZSH_COLL_ALLREDUCE, "ZSH_ALLREDUCE_ALGO", offsetof(zsh_config_t, allreduce_algo),
     ZSH_ALGO_RD, ZSH_ALGO_RING,
     {ZSH_ALGO_RING, ZSH_ALGO_RD, ZSH_ALGO_DIRECT, ZSH_ALGO_EAGER, ZSH_ALGO_AUTO}},
    {ZSH_COLL_BROADCAST, "ZSH_BROADCAST_ALGO", offsetof(zsh_config_t, broadcast_algo),
     ZSH_ALGO_BINOMIAL, ZSH_ALGO_BINOMIAL, {ZSH_ALGO_BINOMIAL, ZSH_ALGO_AUTO}},
};

#define ZSH_SELECT_NRULES (sizeof(zsh_select_rules) / sizeof(zsh_select_rules[0]))

static int zsh_select_override(const zsh_config_t *cfg, const zsh_select_rule_t *rule)
{
    return *(const int *)((const char *)cfg + rule->offset);
}

static bool zsh_select_allowed(const zsh_select_rule_t *rule, zsh_algo_t algo)
{
    int i;

    for (i = 0; rule->allowed[i] != ZSH_ALGO_AUTO; i++) {
        if (rule->allowed[i] == algo) {
            return true;
        }
    }
    return false;
}

/* "auto, ring or rd" */
static void zsh_select_choices(const zsh_select_rule_t *rule, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "auto");
    int i;

    for (i = 0; (rule->allowed[i] != ZSH_ALGO_AUTO) && (used < len); i++) {
        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                 (rule->allowed[i + 1] == ZSH_ALGO_AUTO) ? " or " : ", ",
                                 zsh_algo_name(rule->allowed[i]));
    }
}

zsh_status_t zsh_select_check_config(const zsh_config_t *cfg)
{
    const zsh_select_rule_t *rule;
    char choices[96];
    zsh_algo_t algo;
    size_t i;

    for (i = 0; i < ZSH_SELECT_NRULES; i++) {
        rule = &zsh_select_rules[i];
        algo = (zsh_algo_t)zsh_select_override(cfg, rule);
        if ((algo != ZSH_ALGO_AUTO) && !zsh_select_allowed(rule, algo)) {
            zsh_select_choices(rule, choices, sizeof(choices));
            return zsh_error(ZSH_ERR_INVALID_ARG, "%s=%s is not an algorithm of this collective: "
                             "use %s", rule->variable, zsh_algo_name(algo), choices);
        }
    }
    return ZSH_OK;
}

/*
 * Total bytes above which the direct algorithms run: ZSH_DIRECT_MIN_SIZE
 * once per round the log-latency algorithms take (ceil(log2(size))). A
 * direct call costs a message to and from every peer and a copy call per
 * peer, so the size from which it pays grows with the rank count: at 3 to
 * 8 ranks on 2 cores, 8 KiB calls took 1.3-2x longer direct than by Bruck
 * or recursive doubling, while at 16 KiB direct reduce-scatter and
 * all-reduce were faster.
 */
static size_t zsh_select_direct_min(const zsh_comm_t *comm, const zsh_config_t *cfg)
{
    return cfg->direct_min_size * (size_t)zsh_ceil_log2(comm->size);
}

zsh_status_t zsh_select(const zsh_comm_t *comm, zsh_coll_type_t type, size_t total_bytes,
                        zsh_algo_t *algo_p)
{
    const zsh_config_t *cfg = &comm->ctx->cfg;
    const zsh_select_rule_t *rule;
    zsh_algo_t algo;
    size_t i;

    for (i = 0; i < ZSH_SELECT_NRULES; i++) {
        rule = &zsh_select_rules[i];
        if (rule->type != type) {
            continue;
        }
        algo = (zsh_algo_t)zsh_select_override(cfg, rule);
        if ((algo == ZSH_ALGO_DIRECT) && !comm->direct) {
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
        if (algo == ZSH_ALGO_AUTO) {
            /* On one node, up to 8 ranks with boards put calls of up to
             * 16 KiB on them; otherwise ranks copy straight between each
             * other's buffers, each byte once, where the rings copy it
             * twice through UCX's shared memory; a few ranks send small
             * messages with their descriptors, one message to each peer,
             * as long as that stays a few KiB per rank.
             * Otherwise log-latency algorithms win while latency
             * dominates, and the rings, which move the fewest bytes and
             * pipeline, once bandwidth does. The one-sided all-gather is
             * never chosen automatically: with UCX 1.13 on one node, gets
             * on user memory are emulated over active messages (sysv/posix
             * lanes) and ran at 0.7x the ring's speed. */
            if (comm->size == 1) {
                algo = rule->small;
            } else if (comm->board && zsh_select_allowed(rule, ZSH_ALGO_EAGER) &&
                       zsh_eager_chosen(comm, type, total_bytes)) {
                algo = ZSH_ALGO_EAGER; /* written once, read where it lies: below direct's
                                          two messages and a copy call per peer */
            } else if (comm->direct && (total_bytes > zsh_select_direct_min(comm, cfg)) &&
                       zsh_select_allowed(rule, ZSH_ALGO_DIRECT)) {
                algo = ZSH_ALGO_DIRECT;
            } else if (zsh_select_allowed(rule, ZSH_ALGO_EAGER) &&
                       zsh_eager_chosen(comm, type, total_bytes)) {
                algo = ZSH_ALGO_EAGER;
            } else {
                algo = (total_bytes <= cfg->small_msg_size) ? rule->small : rule->large;
            }
        }
        *algo_p = algo;
        return ZSH_OK;
    }
    return zsh_error(ZSH_ERR_INTERNAL, "no algorithm rule for collective type %d", (int)type);
}
