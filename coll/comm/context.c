#include "comm/context.h"

#include "boot/oob.h"
#include "comm/comm.h"
#include "comm/health.h"
#include "core/log.h"
#include "core/status.h"

#include <stdlib.h>
#include <string.h>

/* What each rank publishes in the first bootstrap exchange. */
typedef struct zsh_boot_hdr {
    uint64_t      addr_len;
    zsh_topo_id_t id;
} zsh_boot_hdr_t;

/* Exchange transport addresses and host identities, then connect. */
static zsh_status_t zsh_ctx_connect(zsh_ctx_t *ctx, const zsh_oob_t *oob)
{
    zsh_boot_hdr_t mine = {0}, *hdrs;
    zsh_topo_id_t *ids;
    char *my_addr = NULL, *addrs = NULL;
    const void *addr;
    size_t len, max_len = 0;
    zsh_status_t status;
    int i;

    hdrs = calloc((size_t)ctx->size, sizeof(*hdrs));
    if (hdrs == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the bootstrap exchange");
    }
    ctx->tl->address(ctx->tl_ctx, &addr, &len);
    mine.addr_len = len;
    status = zsh_topo_local_id(&mine.id);
    if (status != ZSH_OK) {
        goto out;
    }
    status = zsh_oob_allgather(oob, &mine, hdrs, sizeof(mine), ctx->cfg.timeout);
    if (status != ZSH_OK) {
        goto out;
    }
    for (i = 0; i < ctx->size; i++) {
        max_len = (hdrs[i].addr_len > max_len) ? hdrs[i].addr_len : max_len;
    }
    my_addr = calloc(1, max_len);
    addrs   = malloc(max_len * (size_t)ctx->size);
    if ((my_addr == NULL) || (addrs == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate %d transport addresses", ctx->size);
        goto out;
    }
    memcpy(my_addr, addr, len);
    status = zsh_oob_allgather(oob, my_addr, addrs, max_len, ctx->cfg.timeout);
    if (status != ZSH_OK) {
        goto out;
    }
    status = ctx->tl->connect(ctx->tl_ctx, ctx->rank, ctx->size, addrs, max_len);
    /* A rank that failed keeps its transport until every rank knows. */
    status = zsh_oob_agree(oob, ctx->cfg.timeout, status);
    if (status != ZSH_OK) {
        goto out;
    }
    /* The identities sit inside the headers: gather them into an array of their own. */
    ids = malloc((size_t)ctx->size * sizeof(*ids));
    if (ids == NULL) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate %d host identities", ctx->size);
        goto out;
    }
    for (i = 0; i < ctx->size; i++) {
        ids[i] = hdrs[i].id;
        ids[i].host[ZSH_TOPO_HOST_MAX - 1]       = '\0';
        ids[i].machine[ZSH_TOPO_MACHINE_MAX - 1] = '\0';
    }
    status = zsh_topo_create(ctx->rank, ctx->size, ids, &ctx->topo);
    free(ids);
out:
    free(addrs);
    free(my_addr);
    free(hdrs);
    return status;
}

/* The job's rank map on one line, from rank 0 alone: every rank holds the
 * same map. */
static void zsh_ctx_log_map(const zsh_ctx_t *ctx)
{
    char line[1200];

    if ((ctx->rank != 0) || (zsh_log_level() < ZSH_LOG_INFO)) {
        return;
    }
    zsh_topo_format(ctx->topo, line, sizeof(line));
    zsh_log(ZSH_LOG_INFO, "rank map: %s", line);
}

/* Resolve ZSH_STREAM_MIN_SIZE=auto: this core's private cache, where hwloc
 * knows it; where it does not, copies never stream. */
static void zsh_ctx_stream_min(zsh_ctx_t *ctx)
{
    size_t bytes = 0;

    ctx->stream_min = ctx->cfg.stream_min_size;
    if (ctx->stream_min != ZSH_CONFIG_AUTO_SIZE) {
        return;
    }
    if (zsh_topo_private_cache(NULL, &bytes) != ZSH_OK) {
        zsh_log(ZSH_LOG_DEBUG, "no private cache size (%s)", zsh_last_error());
    }
    ctx->topo->private_cache = bytes;
    ctx->stream_min = (bytes > 0) ? bytes : SIZE_MAX;
    zsh_log(ZSH_LOG_DEBUG, "private cache %zu bytes: own blocks stream above %zu bytes", bytes,
            ctx->stream_min);
}

/* The transport's report of a dead peer, from inside its progress:
 * recorded after the control messages of the same pass (failure.h). */
static void zsh_ctx_on_transport_failure(void *arg, int peer, const char *reason)
{
    zsh_ctx_t *ctx = arg;

    zsh_failures_defer(ctx->failures, peer, reason);
}

/* A failure recorded however it was learnt: the transport stops using the peer. */
static void zsh_ctx_on_failed(void *arg, int rank)
{
    zsh_ctx_t *ctx = arg;

    ctx->tl->mark_failed(ctx->tl_ctx, rank);
}

/* The job communicator, every rank in job order. */
static zsh_status_t zsh_ctx_job_comm(zsh_ctx_t *ctx)
{
    zsh_status_t status;
    int *ranks;
    int i;

    ranks = malloc((size_t)ctx->size * sizeof(int));
    if (ranks == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks",
                         ctx->size);
    }
    for (i = 0; i < ctx->size; i++) {
        ranks[i] = i;
    }
    status = zsh_comm_create(ctx, ZSH_COMM_ID_JOB, ZSH_COMM_ID_JOB, ctx->rank, ctx->size, ranks,
                             &ctx->job);
    free(ranks);
    if (status == ZSH_OK) {
        ctx->refs--; /* the job communicator lives as long as the context, not the reverse */
    }
    return status;
}

zsh_status_t zsh_ctx_create(const zsh_oob_t *oob, const zsh_coll_config_t *cfg,
                            const zsh_tl_ops_t *tl, const void *tl_options, zsh_ctx_t **ctx_p)
{
    zsh_status_t status;
    zsh_ctx_t *ctx;

    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a job context of %d ranks",
                         oob->size);
    }
    ctx->cfg  = *cfg;
    ctx->rank = oob->rank;
    ctx->size = oob->size;
    ctx->tl   = tl;
    atomic_init(&ctx->abort_pending, 0);
    zsh_list_init(&ctx->in_flight);
    zsh_list_init(&ctx->free_tasks);
    zsh_list_init(&ctx->comms);
    zsh_ctx_id_set(ctx, ZSH_COMM_ID_CTRL, 1); /* never handed to a communicator */

    status = tl->create(tl_options, &ctx->tl_ctx);
    if (status != ZSH_OK) {
        goto err_free;
    }
    status = zsh_failures_create(ctx->rank, ctx->size, zsh_ctx_on_failed, ctx, &ctx->failures);
    if (status != ZSH_OK) {
        goto err_destroy_tl;
    }
    status = zsh_ctrl_create(tl, ctx->tl_ctx, ctx->rank, ctx->size, ctx->failures,
                             zsh_ctx_on_revoke, ctx, &ctx->ctrl);
    if (status != ZSH_OK) {
        goto err_destroy_failures;
    }
    tl->on_failure(ctx->tl_ctx, zsh_ctx_on_transport_failure, ctx);
    status = zsh_ctx_connect(ctx, oob);
    if (status != ZSH_OK) {
        goto err_destroy_ctrl;
    }
    zsh_ctx_log_map(ctx);
    status = zsh_ctrl_start(ctx->ctrl);
    if (status != ZSH_OK) {
        goto err_destroy_topo;
    }
    ctx->spin_count = zsh_topo_oversubscribed(ctx->topo) ? 0 : cfg->spin_count;
    zsh_log(ZSH_LOG_DEBUG, "%d rank(s) on a node of %d processor(s): waiters poll %u time(s) "
            "before yielding", ctx->topo->local_size, ctx->topo->node_cpus, ctx->spin_count);
    zsh_ctx_stream_min(ctx);
    status = zsh_ctx_job_comm(ctx);
    if (status != ZSH_OK) {
        goto err_stop_ctrl;
    }
    *ctx_p = ctx;
    return ZSH_OK;

err_stop_ctrl:
    zsh_ctrl_stop(ctx->ctrl);
err_destroy_topo:
    zsh_topo_destroy(ctx->topo);
err_destroy_ctrl:
    /* The transport goes first: closing its endpoints may still report a
     * failure into the table, and ends the channel's sends. */
    tl->destroy(ctx->tl_ctx);
    ctx->tl_ctx = NULL;
    zsh_ctrl_destroy(ctx->ctrl);
err_destroy_failures:
    zsh_failures_destroy(ctx->failures);
err_destroy_tl:
    if (ctx->tl_ctx != NULL) {
        tl->destroy(ctx->tl_ctx);
    }
err_free:
    free(ctx);
    return status;
}

void zsh_ctx_orphan(zsh_ctx_t *ctx, void *obj, void (*release)(void *obj))
{
    zsh_ctx_orphan_t *grown;
    size_t cap;

    if (ctx->norphans == ctx->orphans_cap) {
        cap   = (ctx->orphans_cap == 0) ? 8 : 2 * ctx->orphans_cap;
        grown = realloc(ctx->orphans, cap * sizeof(*grown));
        if (grown == NULL) {
            return; /* kept by leaking it: freeing it could hand it to a later call */
        }
        ctx->orphans     = grown;
        ctx->orphans_cap = cap;
    }
    ctx->orphans[ctx->norphans++] = (zsh_ctx_orphan_t){obj, release};
}

void zsh_ctx_teardown(zsh_ctx_t *ctx)
{
    size_t i;

    /* As on the error path: the transport before what its callbacks write. */
    zsh_ctrl_stop(ctx->ctrl);
    ctx->tl->destroy(ctx->tl_ctx);
    for (i = 0; i < ctx->norphans; i++) {
        ctx->orphans[i].release(ctx->orphans[i].obj);
    }
    free(ctx->orphans);
    zsh_ctrl_destroy(ctx->ctrl);
    zsh_failures_destroy(ctx->failures);
    zsh_topo_destroy(ctx->topo);
    free(ctx);
}
