#include "boot/env.h"
#include "boot/store.h"
#include "boot/store_frame.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_BOOT_KEY_MAX 64

struct zsh_boot_env {
    zsh_store_server_t *server;  /* rank 0 only */
    zsh_store_client_t *client;
    int                 rank, size;
    double              timeout;
    unsigned            round;   /* allgathers so far: each one uses fresh keys */
};

/* ---- validation ---------------------------------------------------------------- */

/* The variable a message should name for field @name: the one that set it in
 * this environment, else its torchrun name, else its ZSH_ name. */
static const char *zsh_boot_env_var(const char *name, char *buf, size_t len)
{
    const zsh_config_field_t *field = zsh_config_field_find(name, NULL);
    const char *source              = (field != NULL) ? zsh_config_source(field) : NULL;

    if (source != NULL) {
        snprintf(buf, len, "%s", source);
    } else if ((field != NULL) && (field->fallback != NULL)) {
        snprintf(buf, len, "%s", field->fallback);
    } else {
        snprintf(buf, len, "%s%s", ZSH_CONFIG_PREFIX, name);
    }
    return buf;
}

/* Neither ZSH_<name> nor its torchrun name gave a value (an empty one counts). */
static zsh_status_t zsh_boot_env_unset(const char *name)
{
    const zsh_config_field_t *field = zsh_config_field_find(name, NULL);
    const char *source              = (field != NULL) ? zsh_config_source(field) : NULL;

    return zsh_error(ZSH_ERR_INVALID_ARG, "%s is not set (nor %s%s)%s%s%s; zsh_comm_init() "
                     "reads the variables torchrun sets", name, ZSH_CONFIG_PREFIX, name,
                     source ? ": " : "", source ? source : "", source ? " is empty" : "");
}

static zsh_status_t zsh_boot_env_check(const zsh_boot_config_t *cfg)
{
    char var[128], var2[128];

    if (cfg->rank < 0) {
        return zsh_boot_env_unset("RANK");
    }
    if (cfg->world_size < 0) {
        return zsh_boot_env_unset("WORLD_SIZE");
    }
    if (cfg->master_addr[0] == '\0') {
        return zsh_boot_env_unset("MASTER_ADDR");
    }
    if (cfg->master_port < 0) {
        return zsh_boot_env_unset("MASTER_PORT");
    }
    if (cfg->world_size == 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s=0: a job needs at least one rank",
                         zsh_boot_env_var("WORLD_SIZE", var, sizeof(var)));
    }
    if (cfg->rank >= cfg->world_size) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s=%d is out of range: %s=%d",
                         zsh_boot_env_var("RANK", var, sizeof(var)), cfg->rank,
                         zsh_boot_env_var("WORLD_SIZE", var2, sizeof(var2)), cfg->world_size);
    }
    if ((cfg->master_port == 0) || (cfg->master_port > 65535)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s=%d is out of range [1, 65535]",
                         zsh_boot_env_var("MASTER_PORT", var, sizeof(var)), cfg->master_port);
    }
    if (!(cfg->store_timeout > 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s=%g must be > 0",
                         zsh_boot_env_var("STORE_TIMEOUT", var, sizeof(var)), cfg->store_timeout);
    }
    return ZSH_OK;
}

/* ---- the out-of-band allgather ----------------------------------------------------- */

/* Fetch rank @peer's contribution to round @round into its block of @recv. */
static zsh_status_t zsh_boot_env_fetch(zsh_boot_env_t *env, unsigned round, int peer, void *recv,
                                       size_t len, double deadline)
{
    char key[ZSH_BOOT_KEY_MAX];
    zsh_status_t status;
    size_t got;
    void *value;

    snprintf(key, sizeof(key), "ag/%u/%d", round, peer);
    status = zsh_store_client_get(env->client, key, deadline, &value, &got);
    if (status == ZSH_ERR_TIMEOUT) {
        return zsh_error(status, "rank %d of %d did not join the bootstrap within %g s "
                         "(store key %s); is it running, with the same WORLD_SIZE?",
                         peer, env->size, env->timeout, key);
    }
    if (status != ZSH_OK) {
        return status;
    }
    if (got != len) {
        status = zsh_error(ZSH_ERR_MISMATCH, "out-of-band allgather %u: rank %d contributed %zu "
                           "bytes, rank %d expected %zu", round, peer, got, env->rank, len);
    } else if (len != 0) {
        memcpy((char *)recv + (size_t)peer * len, value, len);
    }
    free(value);
    return status;
}

/* Publish this rank's block, then read every other rank's in rank order. It
 * is done when it returns, so the request handle is the env itself. */
static zsh_status_t zsh_boot_env_allgather(const void *send, void *recv, size_t len, void *ctx,
                                           void **req_p)
{
    zsh_boot_env_t *env = ctx;
    double deadline     = zsh_clock_now() + env->timeout;
    unsigned round      = ++env->round;
    char key[ZSH_BOOT_KEY_MAX];
    zsh_status_t status;
    int peer;

    if (len > ZSH_STORE_VALUE_MAX) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "out-of-band allgather of %zu bytes per rank exceeds "
                         "the store's limit of %u", len, ZSH_STORE_VALUE_MAX);
    }
    snprintf(key, sizeof(key), "ag/%u/%d", round, env->rank);
    status = zsh_store_client_set(env->client, key, send, len);
    for (peer = 0; (peer < env->size) && (status == ZSH_OK); peer++) {
        if (peer != env->rank) {
            status = zsh_boot_env_fetch(env, round, peer, recv, len, deadline);
        }
    }
    if (status != ZSH_OK) {
        return status;
    }
    /* memmove: @send may be this rank's block of @recv (in place). */
    if (len != 0) {
        memmove((char *)recv + (size_t)env->rank * len, send, len);
    }
    *req_p = env;
    return ZSH_OK;
}

static zsh_status_t zsh_boot_env_test(void *req)
{
    (void)req; /* the allgather finished before it returned */
    return ZSH_OK;
}

static void zsh_boot_env_req_free(void *req)
{
    (void)req; /* the handle is the env, which zsh_boot_env_destroy() frees */
}

/* ---- create and destroy ---------------------------------------------------------------- */

zsh_status_t zsh_boot_env_create(const zsh_boot_config_t *cfg, zsh_oob_t *oob,
                                 zsh_boot_env_t **env_p)
{
    zsh_boot_env_t *env;
    zsh_status_t status;

    status = zsh_boot_env_check(cfg);
    if (status != ZSH_OK) {
        return status;
    }
    env = calloc(1, sizeof(*env));
    if (env == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the bootstrap environment");
    }
    env->rank    = cfg->rank;
    env->size    = cfg->world_size;
    env->timeout = cfg->store_timeout;
    /* Every interface, as torchrun: MASTER_ADDR may be any name of this host. */
    if (env->rank == 0) {
        status = zsh_store_server_start(NULL, cfg->master_port, cfg->store_timeout, &env->server);
        if (status != ZSH_OK) {
            goto err_free_env;
        }
    }
    status = zsh_store_client_connect(cfg->master_addr, cfg->master_port, cfg->store_timeout,
                                      &env->client);
    if (status != ZSH_OK) {
        goto err_stop_server;
    }
    zsh_log(ZSH_LOG_DEBUG, "bootstrap: rank %d of %d through the store at %s:%d", env->rank,
            env->size, cfg->master_addr, cfg->master_port);
    *oob = (zsh_oob_t){.rank      = env->rank,
                       .size      = env->size,
                       .ctx       = env,
                       .allgather = zsh_boot_env_allgather,
                       .test      = zsh_boot_env_test,
                       .free      = zsh_boot_env_req_free};
    *env_p = env;
    return ZSH_OK;

err_stop_server:
    zsh_store_server_stop(env->server);
err_free_env:
    free(env);
    return status;
}

/* Rank 0: wait until every other rank has said it is done with the store. */
static zsh_status_t zsh_boot_env_wait_done(zsh_boot_env_t *env)
{
    double deadline = zsh_clock_now() + env->timeout;
    char key[ZSH_BOOT_KEY_MAX];
    zsh_status_t status;
    size_t len;
    void *value;
    int peer;

    for (peer = 1; peer < env->size; peer++) {
        snprintf(key, sizeof(key), "done/%d", peer);
        status = zsh_store_client_get(env->client, key, deadline, &value, &len);
        if (status == ZSH_ERR_TIMEOUT) {
            return zsh_error(status, "rank %d did not finish the bootstrap within %g s "
                             "(store key %s)", peer, env->timeout, key);
        }
        if (status != ZSH_OK) {
            return status;
        }
        free(value);
    }
    return ZSH_OK;
}

zsh_status_t zsh_boot_env_destroy(zsh_boot_env_t *env)
{
    char key[ZSH_BOOT_KEY_MAX];
    zsh_status_t status;

    if (env == NULL) {
        return ZSH_OK;
    }
    if (env->rank == 0) {
        status = zsh_boot_env_wait_done(env);
    } else {
        /* Acknowledged only once the store holds it, so rank 0 will see it. */
        snprintf(key, sizeof(key), "done/%d", env->rank);
        status = zsh_store_client_set(env->client, key, "", 0);
    }
    zsh_store_client_close(env->client);
    zsh_store_server_stop(env->server);
    free(env);
    return status;
}
