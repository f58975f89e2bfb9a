/*
 * UCX context, worker and endpoints: one worker per process-level context,
 * an endpoint to every rank, and an event descriptor so that waiters sleep
 * instead of spinning when ranks outnumber cores.
 */
#include "ucx/ucx.h"

#include "core/clock.h"
#include "core/config.h"
#include "core/log.h"
#include "core/status.h"

#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounded wait for endpoint close at teardown; peers may already be gone. */
#define ZSH_UCX_CLOSE_TIMEOUT 10.0

zsh_status_t zsh_ucx_error(const char *what, ucs_status_t status)
{
    return zsh_error(ZSH_ERR_TRANSPORT, "UCX %s failed: %s", what, ucs_status_string(status));
}

/*
 * Endpoints run in peer error-handling mode so that a peer that dies is
 * reported instead of waited for. UCX's shared-memory transports leave
 * error handling off by default (they would be skipped in this mode and
 * traffic would fall back to TCP loopback); turned on, they detect a dead
 * peer by checking its process at every keepalive round.
 */
static zsh_status_t zsh_ucx_config_failures(ucp_config_t *config, const zsh_ucx_config_t *cfg)
{
    static const char *const mm[] = {"MM_ERROR_HANDLING"};
    char interval[64];
    ucs_status_t status;
    size_t i;

    snprintf(interval, sizeof(interval), "%.6fs", (cfg->keepalive > 0) ? cfg->keepalive : 1e-3);
    status = ucp_config_modify(config, "KEEPALIVE_INTERVAL", interval);
    if (status != UCS_OK) {
        return zsh_ucx_error("ucp_config_modify(KEEPALIVE_INTERVAL)", status);
    }
    for (i = 0; i < sizeof(mm) / sizeof(mm[0]); i++) {
        status = ucp_config_modify(config, mm[i], "y");
        if (status != UCS_OK) {
            zsh_log(ZSH_LOG_INFO, "UCX does not know %s (%s); shared memory may not report "
                    "failed peers", mm[i], ucs_status_string(status));
        }
    }
    return ZSH_OK;
}

/*
 * A shared-memory FIFO element carries a message inline up to about its
 * size; longer ones take a slower copy path. UCX's 128 bytes fit a 2-rank
 * eager collective's descriptor and only 96 bytes of data, so elements grow
 * to 1 KiB (64 KiB per FIFO), unless the user set the size.
 */
static void zsh_ucx_config_fifo(ucp_config_t *config)
{
    if ((zsh_config_env("UCX_MM_FIFO_ELEM_SIZE") != NULL) ||
        (zsh_config_env("UCX_POSIX_FIFO_ELEM_SIZE") != NULL) ||
        (zsh_config_env("UCX_SYSV_FIFO_ELEM_SIZE") != NULL)) {
        return;
    }
    if (ucp_config_modify(config, "MM_FIFO_ELEM_SIZE", "1024") != UCS_OK) {
        zsh_log(ZSH_LOG_INFO, "UCX does not know MM_FIFO_ELEM_SIZE; small messages keep its "
                "default");
    }
}

static zsh_status_t zsh_ucx_create(const void *options, zsh_tl_ctx_t **ctx_p)
{
    ucp_worker_params_t wparams = {0};
    ucp_params_t params         = {0};
    const zsh_ucx_config_t *cfg = options;
    zsh_ucx_config_t env;
    ucp_config_t *config;
    zsh_ucx_addr_hdr_t hdr;
    size_t ucp_address_len;
    ucs_status_t status;
    zsh_status_t ret;
    zsh_tl_ctx_t *ctx;

    if (cfg == NULL) {
        ret = zsh_ucx_config_read(&env);
        if (ret != ZSH_OK) {
            return ret;
        }
        cfg = &env;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the UCX transport context");
    }
    ctx->efd = -1;
    ctx->keepalive = (cfg->keepalive > 0) ? cfg->keepalive : 1e-3;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        ret = zsh_ucx_error("ucp_config_read", status);
        goto err_free_ctx;
    }
    ret = zsh_ucx_config_failures(config, cfg);
    if (ret != ZSH_OK) {
        ucp_config_release(config);
        goto err_free_ctx;
    }
    zsh_ucx_config_fifo(config);
    params.field_mask   = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE |
                          UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    params.features     = UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP;
    params.request_size = sizeof(zsh_tl_req_t);
    params.mt_workers_shared = 0;
    status = ucp_init(&params, config, &ctx->context);
    ucp_config_release(config);
    if (status != UCS_OK) {
        ret = zsh_ucx_error("ucp_init", status);
        goto err_free_ctx;
    }

    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    status = ucp_worker_create(ctx->context, &wparams, &ctx->worker);
    if (status != UCS_OK) {
        ret = zsh_ucx_error("ucp_worker_create", status);
        goto err_cleanup_context;
    }
    status = ucp_worker_get_address(ctx->worker, &ctx->ucp_address, &ucp_address_len);
    if (status != UCS_OK) {
        ret = zsh_ucx_error("ucp_worker_get_address", status);
        goto err_destroy_worker;
    }
    zsh_ucx_local_init(ctx, cfg, &hdr);
    ctx->address_len = sizeof(hdr) + ucp_address_len;
    ctx->address     = malloc(ctx->address_len);
    if (ctx->address == NULL) {
        ret = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the transport address");
        goto err_release_local;
    }
    memcpy(ctx->address, &hdr, sizeof(hdr));
    memcpy((char *)ctx->address + sizeof(hdr), ctx->ucp_address, ucp_address_len);
    status = ucp_worker_get_efd(ctx->worker, &ctx->efd);
    if (status != UCS_OK) {
        /* Waiters then fall back to yielding; correctness does not depend on it. */
        zsh_log(ZSH_LOG_INFO, "UCX worker has no event descriptor (%s); waits will yield",
                ucs_status_string(status));
        ctx->efd = -1;
    }
    *ctx_p = ctx;
    return ZSH_OK;

err_release_local:
    zsh_ucx_local_destroy(ctx);
    ucp_worker_release_address(ctx->worker, ctx->ucp_address);
err_destroy_worker:
    ucp_worker_destroy(ctx->worker);
err_cleanup_context:
    ucp_cleanup(ctx->context);
err_free_ctx:
    free(ctx);
    return ret;
}

static zsh_status_t zsh_ucx_address(zsh_tl_ctx_t *ctx, const void **addr_p, size_t *len_p)
{
    *addr_p = ctx->address;
    *len_p  = ctx->address_len;
    return ZSH_OK;
}

static void zsh_ucx_on_failure(zsh_tl_ctx_t *ctx, zsh_tl_failure_cb_t cb, void *arg)
{
    ctx->on_failure     = cb;
    ctx->on_failure_arg = arg;
}

void zsh_ucx_peer_gone(zsh_tl_ctx_t *ctx, int rank, const char *reason)
{
    zsh_ucx_peer_t *peer = &ctx->peers[rank];

    if (peer->failed) {
        return;
    }
    peer->failed = true;
    if (ctx->on_failure != NULL) {
        ctx->on_failure(ctx->on_failure_arg, rank, reason);
    }
}

void zsh_ucx_peer_failed(zsh_tl_ctx_t *ctx, int rank, ucs_status_t status)
{
    char reason[128];

    snprintf(reason, sizeof(reason), "its UCX endpoint failed: %s", ucs_status_string(status));
    zsh_ucx_peer_gone(ctx, rank, reason);
}

/* UCX calls this from inside ucp_worker_progress() when an endpoint fails. */
static void zsh_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    zsh_ucx_peer_t *peer = arg;

    (void)ep;
    zsh_ucx_peer_failed(peer->ctx, peer->rank, status);
}

static double zsh_ucx_liveness_period(zsh_tl_ctx_t *ctx)
{
    return ctx->keepalive;
}

static void zsh_ucx_mark_failed(zsh_tl_ctx_t *ctx, int peer)
{
    if ((ctx->peers != NULL) && (peer >= 0) && (peer < ctx->nranks)) {
        ctx->peers[peer].failed = true;
    }
}

zsh_status_t zsh_ucx_check_peer(zsh_tl_ctx_t *ctx, int peer)
{
    if (ctx->peers[peer].failed) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "rank %d has failed", peer);
    }
    return ZSH_OK;
}

static zsh_status_t zsh_ucx_connect(zsh_tl_ctx_t *ctx, int self, int nranks, const void *addrs,
                                    size_t stride)
{
    ucp_ep_params_t params = {0};
    zsh_ucx_addr_hdr_t *hdrs;
    zsh_status_t status_zsh;
    zsh_ucx_peer_t *peers;
    ucs_status_t status;
    const char *addr;
    ucp_ep_h *eps;
    int i;

    eps   = calloc((size_t)nranks, sizeof(*eps));
    peers = calloc((size_t)nranks, sizeof(*peers));
    hdrs  = calloc((size_t)nranks, sizeof(*hdrs));
    if ((eps == NULL) || (peers == NULL) || (hdrs == NULL)) {
        free(hdrs);
        free(peers);
        free(eps);
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate %d UCX endpoints", nranks);
    }
    params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                        UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params.err_mode   = UCP_ERR_HANDLING_MODE_PEER;
    params.err_handler.cb = zsh_ucx_ep_error;
    for (i = 0; i < nranks; i++) {
        peers[i].ctx  = ctx;
        peers[i].rank = i;
        params.err_handler.arg = &peers[i];
        addr = (const char *)addrs + (size_t)i * stride;
        memcpy(&hdrs[i], addr, sizeof(hdrs[i]));
        params.address = (const ucp_address_t *)(addr + sizeof(hdrs[i]));
        status         = ucp_ep_create(ctx->worker, &params, &eps[i]);
        if (status != UCS_OK) {
            zsh_error(ZSH_ERR_TRANSPORT, "UCX ucp_ep_create to rank %d failed: %s", i,
                      ucs_status_string(status));
            while (i-- > 0) {
                ucp_ep_destroy(eps[i]);
            }
            free(hdrs);
            free(peers);
            free(eps);
            return ZSH_ERR_TRANSPORT;
        }
    }
    ctx->self   = self;
    ctx->nranks = nranks;
    ctx->eps    = eps;
    ctx->peers  = peers;
    status_zsh  = zsh_ucx_local_connect(ctx, hdrs);
    free(hdrs);
    return status_zsh;
}

/* Close every endpoint, letting each flush within one overall deadline; after
 * it passes, the rest are closed without flushing (their peers are gone). */
static void zsh_ucx_close_eps(zsh_tl_ctx_t *ctx)
{
    ucp_request_param_t param = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS};
    double deadline           = zsh_clock_now() + ZSH_UCX_CLOSE_TIMEOUT;
    ucs_status_ptr_t req;
    int i;

    for (i = 0; i < ctx->nranks; i++) {
        param.flags = (zsh_clock_now() < deadline) ? 0 : UCP_EP_CLOSE_FLAG_FORCE;
        req         = ucp_ep_close_nbx(ctx->eps[i], &param);
        if (!UCS_PTR_IS_PTR(req)) {
            zsh_log(ZSH_LOG_DEBUG, "UCX endpoint to rank %d closed%s: %s", i,
                    param.flags ? " (forced)" : "", ucs_status_string(UCS_PTR_STATUS(req)));
            continue;
        }
        while ((ucp_request_check_status(req) == UCS_INPROGRESS) &&
               (zsh_clock_now() < deadline)) {
            ucp_worker_progress(ctx->worker);
        }
        if (ucp_request_check_status(req) == UCS_INPROGRESS) {
            zsh_log(ZSH_LOG_WARN, "UCX endpoint to rank %d did not close within %.0f s", i,
                    ZSH_UCX_CLOSE_TIMEOUT);
        }
        ucp_request_free(req);
    }
}

/* Whether any peer failed or any operation was left in flight. */
static bool zsh_ucx_troubled(zsh_tl_ctx_t *ctx)
{
    int i;

    if (zsh_ucx_reap_orphans(ctx) > 0) {
        return true;
    }
    for (i = 0; (ctx->peers != NULL) && (i < ctx->nranks); i++) {
        if (ctx->peers[i].failed) {
            return true;
        }
    }
    return false;
}

static void zsh_ucx_destroy(zsh_tl_ctx_t *ctx)
{
    if (zsh_ucx_troubled(ctx)) {
        /* After a peer failure UCX may still hold transfers that were under
         * way: progressing the worker again can let it touch buffers their
         * owners have since freed, and destroying it with a send pending
         * aborts the process (docs/DECISIONS.md, "Teardown after a
         * failure"). Abandoning it is the lesser evil; the process is
         * usually about to exit. */
        zsh_log(ZSH_LOG_INFO, "a peer failed: leaving the UCX worker in place instead of "
                "tearing it down");
    } else {
        if (ctx->eps != NULL) {
            zsh_ucx_close_eps(ctx);
        }
        ucp_worker_release_address(ctx->worker, ctx->ucp_address);
        ucp_worker_destroy(ctx->worker);
        ucp_cleanup(ctx->context);
    }
    free(ctx->eps);
    free(ctx->peers);
    zsh_ucx_local_destroy(ctx);
    free(ctx->address);
    free(ctx->orphans);
    free(ctx);
}

static unsigned zsh_ucx_progress(zsh_tl_ctx_t *ctx)
{
    if (ctx->norphans > 0) {
        zsh_ucx_reap_orphans(ctx);
    }
    return ucp_worker_progress(ctx->worker);
}

static zsh_status_t zsh_ucx_wait(zsh_tl_ctx_t *ctx, int timeout_ms)
{
    struct pollfd pfd;
    ucs_status_t status;

    if (ctx->efd < 0) {
        sched_yield();
        return ZSH_OK;
    }
    status = ucp_worker_arm(ctx->worker);
    if (status == UCS_ERR_BUSY) {
        return ZSH_OK; /* events arrived meanwhile: go and progress them */
    }
    if (status != UCS_OK) {
        return zsh_ucx_error("ucp_worker_arm", status);
    }
    pfd.fd     = ctx->efd;
    pfd.events = POLLIN;
    (void)poll(&pfd, 1, timeout_ms); /* EINTR and timeouts just mean "progress again" */
    return ZSH_OK;
}

const zsh_tl_ops_t zsh_tl_ucx_ops = {
    .name          = "ucx",
    .create        = zsh_ucx_create,
    .destroy       = zsh_ucx_destroy,
    .address       = zsh_ucx_address,
    .on_failure    = zsh_ucx_on_failure,
    .mark_failed   = zsh_ucx_mark_failed,
    .liveness_period = zsh_ucx_liveness_period,
    .connect       = zsh_ucx_connect,
    .isend         = zsh_ucx_isend,
    .irecv         = zsh_ucx_irecv,
    .irecv_upto    = zsh_ucx_irecv_upto,
    .irecv_any     = zsh_ucx_irecv_any,
    .test          = zsh_ucx_test,
    .recv_tag      = zsh_ucx_recv_tag,
    .cancel        = zsh_ucx_cancel,
    .release       = zsh_ucx_release,
    .progress      = zsh_ucx_progress,
    .wait          = zsh_ucx_wait,
    .rma           = &zsh_ucx_rma_ops,
    .local         = &zsh_ucx_local_ops,
};
