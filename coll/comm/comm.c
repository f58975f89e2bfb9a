/*
 * Creating and destroying communicators and the job context behind them.
 */
#include "comm/comm.h"

#include "boot/env.h"
#include "boot/oob.h"
#include "boot/pmix.h"
#include "algo/algs.h"
#include "select/select.h"
#include "task/task.h"
#include "base/trace.h"
#include "fault/fault.h"
#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What each rank publishes in the first bootstrap exchange. */
typedef struct zsh_boot_hdr {
    uint64_t      addr_len;
    zsh_topo_id_t id;
} zsh_boot_hdr_t;

/* Whether every member shares one node and can read every other's memory.
 * Reachability is the same from both sides of a pair and holds within
 * groups (one kernel, one PID namespace), so "this rank reaches every other
 * member" is the same answer on every member. */
static bool zsh_comm_direct(const zsh_ctx_t *ctx, int size, const int *ctx_ranks)
{
    int i;

    for (i = 0; i < size; i++) {
        if ((ctx->topo->node_of[ctx_ranks[i]] != ctx->topo->node_of[ctx_ranks[0]]) ||
            ((ctx_ranks[i] != ctx->rank) &&
             !ctx->tl->peer_copy_reachable(ctx->tl_ctx, ctx_ranks[i]))) {
            return false;
        }
    }
    return true;
}

/* Whether this rank shares mailboxes with every other member. */
static bool zsh_comm_all_reachable(const zsh_ctx_t *ctx, int rank, int size,
                                   const int *ctx_ranks)
{
    int i;

    for (i = 0; i < size; i++) {
        if ((i != rank) && !ctx->tl->box_reachable(ctx->tl_ctx, ctx_ranks[i])) {
            return false;
        }
    }
    return true;
}

zsh_status_t zsh_comm_create(zsh_ctx_t *ctx, uint32_t id, uint64_t uid, int rank, int size,
                             const int *ctx_ranks, zsh_comm_t **comm_p)
{
    zsh_status_t status;
    zsh_comm_t *comm;

    comm = calloc(1, sizeof(*comm));
    if (comm == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a communicator");
    }
    comm->ctx_ranks = malloc((size_t)size * sizeof(int));
    if (comm->ctx_ranks == NULL) {
        free(comm);
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks", size);
    }
    if (ctx->cfg.trace) {
        status = zsh_trace_create(ctx->cfg.trace_depth, &comm->trace);
        if (status != ZSH_OK) {
            free(comm->ctx_ranks);
            free(comm);
            return status;
        }
    }
    memcpy(comm->ctx_ranks, ctx_ranks, (size_t)size * sizeof(int));
    comm->ctx     = ctx;
    comm->id      = id;
    comm->uid     = uid;
    comm->rank    = rank;
    comm->size    = size;
    comm->timeout = ctx->cfg.timeout;
    comm->direct  = zsh_comm_direct(ctx, size, ctx_ranks);
    /* Box i is the two-rank communicator with id i: ids of live communicators
     * never collide on a rank, so each box has one writer. */
    comm->box   = comm->direct && (size == 2) && (id < ZSH_TL_BOXES) &&
                  ctx->tl->box_reachable(ctx->tl_ctx, ctx_ranks[1 - rank]);
    /* Board i is the communicator with id i of the process that writes it. */
    comm->board = comm->direct && (size > 2) && (id < ZSH_TL_BOXES) &&
                  zsh_comm_all_reachable(ctx, rank, size, ctx_ranks);
    comm->revoked = ZSH_OK;
    comm->failed_seen = 0;
    comm->failed_rank = -1;
    atomic_init(&comm->aborted, 0);
    zsh_list_push_tail(&ctx->comms, &comm->link);
    zsh_ctx_id_set(ctx, id, 1);
    zsh_fault_comm_created(comm);
    ctx->refs++;
    *comm_p = comm;
    return ZSH_OK;
}

static void zsh_comm_free(zsh_comm_t *comm)
{
    zsh_list_del(&comm->link);
    zsh_trace_destroy(comm->trace);
    free(comm->revoke_why);
    free(comm->ctx_ranks);
    free(comm);
}

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
        ids[i].host[ZSH_TOPO_HOST_MAX - 1] = '\0';
    }
    status = zsh_topo_create(ctx->rank, ctx->size, ids, &ctx->topo);
    free(ids);
out:
    free(addrs);
    free(my_addr);
    free(hdrs);
    return status;
}

/* Resolve ZSH_STREAM_MIN_SIZE=auto: this core's private cache, where hwloc
 * knows it; where it does not, copies never stream, as they did before. */
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

zsh_status_t zsh_ctx_create(const zsh_oob_t *oob, const zsh_config_t *cfg, zsh_ctx_t **ctx_p)
{
    zsh_status_t status;
    zsh_ctx_t *ctx;
    int *ranks;
    int i;

    ctx = calloc(1, sizeof(*ctx));
    ranks = malloc((size_t)oob->size * sizeof(int));
    if ((ctx == NULL) || (ranks == NULL)) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a job context of %d ranks",
                           oob->size);
        goto err_free;
    }
    ctx->cfg  = *cfg;
    ctx->rank = oob->rank;
    ctx->size = oob->size;
    ctx->tl   = &zsh_tl_ucx_ops;
    zsh_list_init(&ctx->in_flight);
    zsh_list_init(&ctx->free_tasks);
    zsh_list_init(&ctx->comms);

    status = ctx->tl->create(cfg, &ctx->tl_ctx);
    if (status != ZSH_OK) {
        goto err_free;
    }
    status = zsh_fault_init(ctx);
    if (status != ZSH_OK) {
        goto err_destroy_tl;
    }
    status = zsh_ctx_connect(ctx, oob);
    if (status != ZSH_OK) {
        goto err_cleanup_fault;
    }
    status = zsh_fault_start(ctx);
    if (status != ZSH_OK) {
        goto err_destroy_topo;
    }
    ctx->spin_count = zsh_topo_oversubscribed(ctx->topo) ? 0 : cfg->spin_count;
    zsh_log(ZSH_LOG_DEBUG, "%d rank(s) on a node of %d processor(s): waiters poll %u time(s) "
            "before yielding", ctx->topo->local_size, ctx->topo->node_cpus, ctx->spin_count);
    zsh_ctx_stream_min(ctx);
    for (i = 0; i < ctx->size; i++) {
        ranks[i] = i;
    }
    status = zsh_comm_create(ctx, ZSH_COMM_ID_JOB, ZSH_COMM_ID_JOB, ctx->rank, ctx->size, ranks,
                             &ctx->job);
    if (status != ZSH_OK) {
        goto err_stop_fault;
    }
    ctx->refs--; /* the job communicator lives as long as the context, not the reverse */
    free(ranks);
    *ctx_p = ctx;
    return ZSH_OK;

err_stop_fault:
    zsh_fault_stop(ctx);
err_destroy_topo:
    zsh_topo_destroy(ctx->topo);
err_cleanup_fault:
    ctx->tl->destroy(ctx->tl_ctx);
    zsh_fault_cleanup(ctx);
    goto err_free;
err_destroy_tl:
    ctx->tl->destroy(ctx->tl_ctx);
err_free:
    free(ranks);
    free(ctx);
    return status;
}

static void zsh_ctx_free_tasks(zsh_ctx_t *ctx)
{
    zsh_task_t *task;

    if (ctx->tasks_out > 0) {
        zsh_log(ZSH_LOG_WARN, "pool zsh_task: %u task(s) still out at teardown", ctx->tasks_out);
    }
    while (!zsh_list_empty(&ctx->free_tasks)) {
        task = zsh_container_of(ctx->free_tasks.next, zsh_task_t, link);
        zsh_list_del(&task->link);
        free(task->ops);
        free(task->scratch);
        free(task->box_probe);
        free(task->board_in);
        free(task);
    }
}

void zsh_ctx_release(zsh_ctx_t *ctx)
{
    zsh_status_t status;

    if (--ctx->refs > 0) {
        return;
    }
    /* No rank may tear down its endpoints while another still talks to it. */
    status = zsh_barrier_run(ctx->job, ZSH_COLL_FENCE);
    if (status != ZSH_OK) {
        zsh_log(ZSH_LOG_WARN, "teardown fence failed (%s); tearing down anyway",
                zsh_last_error());
    }
    zsh_comm_free(ctx->job);
    zsh_fault_stop(ctx);
    ctx->tl->destroy(ctx->tl_ctx);
    zsh_fault_cleanup(ctx);
    zsh_ctx_free_tasks(ctx);
    zsh_topo_destroy(ctx->topo);
    free(ctx);
}

zsh_status_t zsh_comm_init_oob_cfg(const zsh_oob_t *oob, const zsh_config_t *cfg,
                                   zsh_comm_t **comm_p)
{
    zsh_status_t status;
    zsh_comm_t *comm;
    zsh_ctx_t *ctx;

    if (comm_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init: comm_p is NULL");
    }
    status = zsh_oob_check(oob, ZSH_MAX_RANKS);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_select_check_config(cfg);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_ctx_create(oob, cfg, &ctx);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_comm_create(ctx, ZSH_COMM_ID_WORLD, ZSH_COMM_ID_WORLD, ctx->rank, ctx->size,
                             ctx->job->ctx_ranks, &comm);
    if (status != ZSH_OK) {
        ctx->refs++;
        zsh_ctx_release(ctx);
        return status;
    }
    *comm_p = comm;
    return ZSH_OK;
}

zsh_status_t zsh_comm_init_oob(const zsh_oob_t *oob, zsh_comm_t **comm_p)
{
    zsh_config_t cfg;
    zsh_status_t status;

    status = zsh_config_read(&cfg);
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_comm_init_oob_cfg(oob, &cfg, comm_p);
}

/* Through a PMIx launcher: the PMIx client stays open only during creation. */
static zsh_status_t zsh_comm_init_pmix(const zsh_config_t *cfg, zsh_comm_t **comm_p)
{
    zsh_boot_pmix_t *pmix;
    zsh_status_t status;
    zsh_oob_t oob;

    status = zsh_boot_pmix_create(cfg, &oob, &pmix);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_comm_init_oob_cfg(&oob, cfg, comm_p);
    zsh_boot_pmix_destroy(pmix);
    return status;
}

static bool zsh_comm_use_pmix(const zsh_config_t *cfg)
{
    switch (cfg->bootstrap) {
    case ZSH_BOOTSTRAP_PMIX: return true;
    case ZSH_BOOTSTRAP_ENV:  return false;
    default:
        return (cfg->rank < 0) && cfg->pmix_launched && zsh_boot_pmix_built();
    }
}

zsh_status_t zsh_comm_init(zsh_comm_t **comm_p)
{
    char first_error[ZSH_ERROR_MSG_MAX];
    zsh_boot_env_t *env;
    zsh_status_t status, env_status;
    zsh_config_t cfg;
    zsh_oob_t oob;

    if (comm_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init: comm_p is NULL");
    }
    status = zsh_config_read(&cfg);
    if (status != ZSH_OK) {
        return status;
    }
    if (zsh_comm_use_pmix(&cfg)) {
        return zsh_comm_init_pmix(&cfg, comm_p);
    }
    status = zsh_boot_env_create(&cfg, &oob, &env);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_comm_init_oob_cfg(&oob, &cfg, comm_p);
    if (status != ZSH_OK) {
        /* Report the first failure, not the teardown's echo of it. */
        snprintf(first_error, sizeof(first_error), "%s", zsh_last_error());
        zsh_boot_env_destroy(env);
        return zsh_error(status, "%s", first_error);
    }
    env_status = zsh_boot_env_destroy(env);
    if (env_status != ZSH_OK) {
        zsh_comm_destroy(*comm_p);
        *comm_p = NULL;
        return env_status;
    }
    return ZSH_OK;
}

zsh_status_t zsh_comm_destroy(zsh_comm_t *comm)
{
    if (comm == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_destroy: comm is NULL");
    }
    if (comm->requests > 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_comm_destroy: comm %u still has %u request(s) not freed with "
                         "zsh_request_free()", comm->id, comm->requests);
    }
    if (atomic_load(&comm->ctx->abort_pending)) {
        zsh_fault_progress(comm->ctx); /* tell the other members before it goes */
    }
    zsh_ctx_id_set(comm->ctx, comm->id, 0);
    /* Off the context's list first: releasing it may free the context. */
    zsh_list_del(&comm->link);
    zsh_ctx_release(comm->ctx);
    zsh_comm_free(comm);
    return ZSH_OK;
}

zsh_status_t zsh_comm_abort(zsh_comm_t *comm)
{
    if (comm == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_abort: comm is NULL");
    }
    /* Only atomics here: any thread may call this while another progresses.
     * The next progress pass tells the other members. */
    atomic_store(&comm->aborted, 1);
    atomic_store(&comm->ctx->abort_pending, 1);
    return ZSH_OK;
}

zsh_status_t zsh_comm_set_timeout(zsh_comm_t *comm, double seconds)
{
    if (comm == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_set_timeout: comm is NULL");
    }
    if (!(seconds > 0) || (seconds > ZSH_TIMEOUT_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_comm_set_timeout: %g s is not a timeout (0 < seconds <= %g)",
                         seconds, ZSH_TIMEOUT_MAX);
    }
    comm->timeout = seconds;
    return ZSH_OK;
}

double zsh_comm_get_timeout(const zsh_comm_t *comm)
{
    return (comm == NULL) ? -1 : comm->timeout;
}

int zsh_comm_rank(const zsh_comm_t *comm)
{
    return (comm == NULL) ? -1 : comm->rank;
}

int zsh_comm_size(const zsh_comm_t *comm)
{
    return (comm == NULL) ? -1 : comm->size;
}
