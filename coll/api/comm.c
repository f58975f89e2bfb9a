/*
 * The public communicator API: creating a job's first communicator from the
 * environment, a caller's out-of-band allgather or a PMIx launcher;
 * destroying one (the last fences with every rank before the job context
 * goes); aborting; timeouts; rank and size.
 */
#include "api/comm.h"

#include "api/config.h"
#include "barrier/barrier.h"
#include "boot/env.h"
#include "boot/launcher.h"
#include "boot/oob.h"
#include "boot/pmix.h"
#include "comm/health.h"
#include "comm/hier.h"
#include "core/log.h"
#include "core/status.h"
#include "device/device.h"
#include "select/select.h"
#include "task/task.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Drop a reference to @ctx; the last one fences with every rank and tears
 * down. */
static void zsh_ctx_release(zsh_ctx_t *ctx)
{
    zsh_status_t status;

    if (--ctx->refs > 0) {
        return;
    }
    /* No rank may tear down its endpoints while another still talks to it. */
    status = zsh_barrier_run(ctx->job, ZSH_COLL_FENCE, NULL);
    if (status != ZSH_OK) {
        zsh_log(ZSH_LOG_WARN, "teardown fence failed (%s); tearing down anyway",
                zsh_last_error());
    }
    zsh_comm_free(ctx->job);
    zsh_task_pool_free(ctx);
    zsh_ctx_teardown(ctx);
}

/* The world's children: a fresh context uses the same ids on every rank,
 * so the first two free ones are free on all. */
static zsh_status_t zsh_comm_world_hier(zsh_comm_t *comm)
{
    uint8_t used[ZSH_MAX_COMMS / 8];
    int node_id, rail_id;

    memcpy(used, comm->ctx->ids_used, sizeof(used));
    node_id = zsh_comm_hier_pick(used, ZSH_COMM_ID_WORLD + 1);
    rail_id = zsh_comm_hier_pick(used, ZSH_COMM_ID_WORLD + 1);
    if ((node_id < 0) || (rail_id < 0)) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no communicator ids left for the world's node "
                         "and rail");
    }
    return zsh_comm_hier_create(comm, (uint32_t)node_id, (uint32_t)rail_id);
}

/* Destroy the world communicator that creation failed after, returning
 * @status with the failure's message: the destroy's teardown fence fails
 * too where the other ranks went on, and the reason to report is the
 * first. */
static zsh_status_t zsh_comm_init_undo(zsh_comm_t *comm, zsh_status_t status)
{
    char *why = strdup(zsh_last_error());

    zsh_comm_destroy(comm);
    if (why != NULL) {
        zsh_error_set_quiet(why);
        free(why);
    }
    return status;
}

zsh_status_t zsh_comm_init_with(const zsh_oob_t *oob, const zsh_coll_config_t *cfg,
                                const zsh_tl_ops_t *tl, const void *tl_options,
                                zsh_comm_t **comm_p)
{
    zsh_status_t status;
    zsh_comm_t *comm;
    zsh_ctx_t *ctx;
    bool created;

    if (comm_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init: comm_p is NULL");
    }
    status = zsh_oob_check(oob, ZSH_MAX_RANKS);
    if (status == ZSH_OK) {
        status = zsh_select_check_config(cfg);
    }
    if (status == ZSH_OK) {
        status = zsh_ctx_create(oob, cfg, tl, tl_options, &ctx);
    }
    if (status != ZSH_OK) {
        return status;
    }
    status  = zsh_comm_create(ctx, ZSH_COMM_ID_WORLD, ZSH_COMM_ID_WORLD, ctx->rank, ctx->size,
                              ctx->job->ctx_ranks, &comm);
    created = (status == ZSH_OK);
    /* A rank that failed keeps its transport until every rank knows. */
    status  = zsh_oob_agree(oob, cfg->timeout, status);
    if ((status != ZSH_OK) && created) {
        return zsh_comm_init_undo(comm, status);
    }
    if (status != ZSH_OK) {
        ctx->refs++;
        zsh_ctx_release(ctx);
        return status;
    }
    status = zsh_comm_world_hier(comm);
    if (status != ZSH_OK) {
        return zsh_comm_init_undo(comm, status);
    }
    *comm_p = comm;
    return ZSH_OK;
}

/* The layers' settings as the environment has them; a malformed variable
 * of any layer the communicator uses fails its creation, naming it. */
static zsh_status_t zsh_comm_read_config(zsh_coll_config_t *cfg)
{
    zsh_status_t status;

    status = zsh_log_check_config();
    return (status == ZSH_OK) ? zsh_coll_config_read(cfg) : status;
}

zsh_status_t zsh_comm_init_oob(const zsh_oob_t *oob, zsh_comm_t **comm_p)
{
    zsh_coll_config_t cfg;
    zsh_status_t status;

    status = zsh_comm_read_config(&cfg);
    if (status != ZSH_OK) {
        return status;
    }
    return zsh_comm_init_with(oob, &cfg, zsh_tl_host(), NULL, comm_p);
}

/* Through a PMIx launcher: the PMIx client stays open only during creation. */
static zsh_status_t zsh_comm_init_pmix(const zsh_boot_config_t *boot,
                                       const zsh_coll_config_t *cfg, zsh_comm_t **comm_p)
{
    zsh_boot_pmix_t *pmix;
    zsh_status_t status;
    zsh_oob_t oob;

    status = zsh_boot_pmix_create(boot, &oob, &pmix);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_comm_init_with(&oob, cfg, zsh_tl_host(), NULL, comm_p);
    zsh_boot_pmix_destroy(pmix);
    return status;
}

static bool zsh_comm_use_pmix(const zsh_boot_config_t *boot)
{
    switch (boot->bootstrap) {
    case ZSH_BOOTSTRAP_PMIX: return true;
    case ZSH_BOOTSTRAP_ENV:  return false;
    default:
        return (boot->rank < 0) && boot->pmix_launched && zsh_boot_pmix_built();
    }
}

zsh_status_t zsh_comm_init(zsh_comm_t **comm_p)
{
    char first_error[ZSH_ERROR_MSG_MAX];
    zsh_status_t status, env_status;
    zsh_boot_config_t boot;
    zsh_coll_config_t cfg;
    zsh_boot_env_t *env;
    zsh_oob_t oob;

    if (comm_p == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init: comm_p is NULL");
    }
    status = zsh_boot_config_read(&boot);
    if (status == ZSH_OK) {
        status = zsh_comm_read_config(&cfg);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (zsh_comm_use_pmix(&boot)) {
        return zsh_comm_init_pmix(&boot, &cfg, comm_p);
    }
    status = zsh_boot_launcher_check_env(&boot);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_boot_env_create(&boot, &oob, &env);
    if (status != ZSH_OK) {
        return status;
    }
    status = zsh_comm_init_with(&oob, &cfg, zsh_tl_host(), NULL, comm_p);
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

zsh_status_t zsh_comm_check_mpi_world(int mpi_world_size)
{
    zsh_boot_config_t boot;
    zsh_status_t status = zsh_boot_config_read(&boot);

    return (status == ZSH_OK) ? zsh_boot_launcher_check_mpi(&boot, mpi_world_size) : status;
}

zsh_status_t zsh_comm_destroy(zsh_comm_t *comm)
{
    zsh_status_t status = zsh_comm_check_live("zsh_comm_destroy", comm);

    if (status != ZSH_OK) {
        return status;
    }
    if (comm->requests > 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_comm_destroy: comm %u still has %u request(s) not freed with "
                         "zsh_request_free()", comm->id, comm->requests);
    }
    if (atomic_load(&comm->ctx->abort_pending)) {
        zsh_ctx_health_progress(comm->ctx); /* tell the other members before it goes */
    }
    zsh_dev_comm_release(comm);
    zsh_comm_hier_free(comm);
    zsh_ctx_id_set(comm->ctx, comm->id, 0);
    zsh_comm_lines_close(comm);
    /* Off the context's list first: releasing it may free the context. */
    zsh_list_del(&comm->link);
    zsh_ctx_release(comm->ctx);
    zsh_comm_free(comm);
    return ZSH_OK;
}

zsh_status_t zsh_comm_abort(zsh_comm_t *comm)
{
    zsh_status_t status = zsh_comm_check_live("zsh_comm_abort", comm);

    if (status != ZSH_OK) {
        return status;
    }
    /* Only atomics here: any thread may call this while another progresses.
     * The next progress pass tells the other members. */
    atomic_store(&comm->aborted, 1);
    atomic_store(&comm->ctx->abort_pending, 1);
    zsh_dev_comm_abort(comm); /* NCCL's own abort is safe from any thread too */
    return ZSH_OK;
}

zsh_status_t zsh_comm_set_timeout(zsh_comm_t *comm, double seconds)
{
    zsh_status_t status = zsh_comm_check_live("zsh_comm_set_timeout", comm);

    if (status != ZSH_OK) {
        return status;
    }
    /* The range ZSH_TIMEOUT takes (api/config.c), so the two agree. */
    if (!(seconds >= ZSH_TIMEOUT_MIN) || (seconds > ZSH_TIMEOUT_MAX)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_comm_set_timeout: %g s is out of range: expected %g to %.0f seconds",
                         seconds, ZSH_TIMEOUT_MIN, ZSH_TIMEOUT_MAX);
    }
    comm->timeout = seconds;
    if (comm->hier.node != NULL) {
        comm->hier.node->timeout = seconds; /* the steps of its calls run there */
        comm->hier.rail->timeout = seconds;
    }
    return ZSH_OK;
}

zsh_status_t zsh_comm_set_deterministic(zsh_comm_t *comm, int on)
{
    zsh_status_t status = zsh_comm_check_live("zsh_comm_set_deterministic", comm);

    if (status != ZSH_OK) {
        return status;
    }
    if ((on != 0) && (on != 1)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_comm_set_deterministic: on is %d: expected 0 or 1", on);
    }
    comm->deterministic = (on == 1);
    return ZSH_OK;
}

int zsh_comm_get_deterministic(const zsh_comm_t *comm)
{
    if (!zsh_comm_live(comm)) {
        zsh_comm_refuse("zsh_comm_get_deterministic", comm);
        return -1;
    }
    return comm->deterministic ? 1 : 0;
}

/* The getters answer -1 for a handle that is not a live communicator, with
 * the reason in zsh_last_error(). */
double zsh_comm_get_timeout(const zsh_comm_t *comm)
{
    if (!zsh_comm_live(comm)) {
        zsh_comm_refuse("zsh_comm_get_timeout", comm);
        return -1;
    }
    return comm->timeout;
}

int zsh_comm_rank(const zsh_comm_t *comm)
{
    if (!zsh_comm_live(comm)) {
        zsh_comm_refuse("zsh_comm_rank", comm);
        return -1;
    }
    return comm->rank;
}

int zsh_comm_size(const zsh_comm_t *comm)
{
    if (!zsh_comm_live(comm)) {
        zsh_comm_refuse("zsh_comm_size", comm);
        return -1;
    }
    return comm->size;
}

zsh_status_t zsh_comm_free_buffer(zsh_comm_t *comm, void *ptr, void (*release)(void *ptr))
{
    if (!zsh_comm_live(comm)) {
        zsh_comm_refuse("zsh_comm_free_buffer", comm);
        return ZSH_ERR_INVALID_ARG;
    }
    if (release == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_free_buffer: release is NULL");
    }
    if (ptr == NULL) {
        return ZSH_OK;
    }
    if (comm->ctx->transfers_left) {
        zsh_ctx_orphan(comm->ctx, ptr, release);
    } else {
        release(ptr);
    }
    return ZSH_OK;
}

zsh_status_t zsh_comm_node(const zsh_comm_t *comm, int *node_p, int *nnodes_p, int *local_rank_p,
                           int *local_size_p)
{
    const zsh_topo_t *t;

    if (!zsh_comm_live(comm)) {
        zsh_comm_refuse("zsh_comm_node", comm);
        return ZSH_ERR_INVALID_ARG;
    }
    t = comm->topo;
    if (node_p != NULL) {
        *node_p = t->node;
    }
    if (nnodes_p != NULL) {
        *nnodes_p = t->nnodes;
    }
    if (local_rank_p != NULL) {
        *local_rank_p = t->local_rank;
    }
    if (local_size_p != NULL) {
        *local_size_p = t->local_size;
    }
    return ZSH_OK;
}
