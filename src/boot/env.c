#include "boot/env.h"
#include "boot/store.h"
#include "boot/store_auth.h"
#include "boot/store_frame.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_BOOT_KEY_MAX 64
/* Ranks a missing-rank message lists before it says how many more. */
#define ZSH_BOOT_LIST_MAX 16
/* How long rank 0 keeps the store up for the ranks that joined a bootstrap
 * that failed, so they can still learn which ranks are missing. */
#define ZSH_BOOT_FAIL_GRACE 2.0
/* How long a second rank 0 spends asking the store on its port who it is. */
#define ZSH_BOOT_PROBE_TIMEOUT 5.0

struct zsh_boot_env {
    zsh_store_server_t *server;  /* rank 0 only; none at WORLD_SIZE=1 */
    zsh_store_client_t *client;  /* none at WORLD_SIZE=1 */
    int                 rank, size;
    double              timeout;
    double              start;    /* when zsh_boot_env_create() began */
    double              deadline; /* for joining: connecting and the first allgather */
    bool                failed;   /* an allgather failed: rank 0 waits for no goodbyes */
    char                addr[ZSH_CONFIG_STR_MAX + 8]; /* "MASTER_ADDR:MASTER_PORT" */
    unsigned            round;    /* allgathers so far: each one uses fresh keys */
};

/* ---- validation ---------------------------------------------------------------- */

const char *zsh_boot_env_var(const char *name, char *buf, size_t len)
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
    const char *key;

    if (cfg->rank < 0) {
        return zsh_boot_env_unset("RANK");
    }
    if (cfg->world_size < 0) {
        return zsh_boot_env_unset("WORLD_SIZE");
    }
    /* Set but empty is a key that failed to arrive (a failed $(cat keyfile)),
     * not a request to run without one: only an unset key means that. */
    key = zsh_config_env("ZSH_JOB_KEY");
    if ((key != NULL) && (key[0] == '\0')) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "ZSH_JOB_KEY is set but empty: give the job a key "
                         "of at least %u characters (e.g. export ZSH_JOB_KEY=$(openssl rand "
                         "-hex 32)), or unset it to run without authentication",
                         ZSH_STORE_JOB_KEY_MIN);
    }
    if (zsh_store_auth_keyed(cfg->job_key) && (strlen(cfg->job_key) < ZSH_STORE_JOB_KEY_MIN)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "ZSH_JOB_KEY has %zu characters, fewer than the "
                         "%u a job key needs (e.g. export ZSH_JOB_KEY=$(openssl rand -hex 32))",
                         strlen(cfg->job_key), ZSH_STORE_JOB_KEY_MIN);
    }
    /* One rank needs no store, so neither its address nor its port. */
    if ((cfg->world_size == 1) && (cfg->rank == 0)) {
        return ZSH_OK;
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

/* Whether @key is in the store by @deadline: 1 or 0, or -1 if the store cannot say. */
static int zsh_boot_env_has(zsh_boot_env_t *env, const char *key, double deadline)
{
    bool has = false;

    if (zsh_store_client_has(env->client, key, deadline, &has) != ZSH_OK) {
        return -1;
    }
    return has;
}

/* List in @list the ranks whose key is missing, up to ZSH_BOOT_LIST_MAX of
 * them, and return how many are: their claim ("rank/R", which the store sets
 * when rank R connects) when @round is 0, else their block of that round.
 * -1 when the store cannot say. */
static int zsh_boot_env_list_missing(zsh_boot_env_t *env, unsigned round, char *list,
                                     size_t list_len)
{
    char key[ZSH_BOOT_KEY_MAX];
    size_t used = strlen(list);
    int peer, missing = 0;

    for (peer = 0; peer < env->size; peer++) {
        if (round == 0) {
            snprintf(key, sizeof(key), ZSH_STORE_RANK_PREFIX "%d", peer);
        } else {
            snprintf(key, sizeof(key), "ag/%u/%d", round, peer);
        }
        switch (zsh_boot_env_has(env, key, zsh_clock_now())) {
        case 1: continue;
        case 0: break;
        default: return -1;
        }
        if ((++missing <= ZSH_BOOT_LIST_MAX) && (used < list_len)) {
            used += (size_t)snprintf(list + used, list_len - used, "%s%d",
                                     (missing == 1) ? "" : ", ", peer);
        }
    }
    if ((missing > ZSH_BOOT_LIST_MAX) && (used < list_len)) {
        snprintf(list + used, list_len - used, " and %d more", missing - ZSH_BOOT_LIST_MAX);
    }
    return missing;
}

/* Round @round's wait for rank @peer ran out at @started + the wait: name
 * every rank that never joined (claimed its rank on the store), else every
 * rank that joined but did not contribute. */
static zsh_status_t zsh_boot_env_missing(zsh_boot_env_t *env, unsigned round, int peer,
                                         double started)
{
    char never[256] = "", silent[256] = "";
    double waited   = zsh_clock_now() - started;
    int n;

    n = zsh_boot_env_list_missing(env, 0, never, sizeof(never));
    if (n > 0) {
        return zsh_error(ZSH_ERR_TIMEOUT, "rank%s %s of %d never joined the bootstrap within "
                         "%.3g s (ZSH_STORE_TIMEOUT=%g, store at %s); %s running, with the same "
                         "WORLD_SIZE, MASTER_ADDR and MASTER_PORT?", (n > 1) ? "s" : "", never,
                         env->size, waited, env->timeout, env->addr,
                         (n > 1) ? "are they" : "is it");
    }
    if (n == 0) {
        n = zsh_boot_env_list_missing(env, round, silent, sizeof(silent));
    }
    if (n > 0) {
        return zsh_error(ZSH_ERR_TIMEOUT, "rank%s %s of %d joined the bootstrap but did not "
                         "take part in out-of-band allgather %u within %.3g s "
                         "(ZSH_STORE_TIMEOUT=%g, store at %s)", (n > 1) ? "s" : "", silent,
                         env->size, round, waited, env->timeout, env->addr);
    }
    /* The store could not say who is missing: name the rank waited for. */
    return zsh_error(ZSH_ERR_TIMEOUT, "rank %d of %d did not take part in out-of-band allgather "
                     "%u within %.3g s (ZSH_STORE_TIMEOUT=%g, store at %s)", peer, env->size,
                     round, waited, env->timeout, env->addr);
}

/* Fetch rank @peer's contribution to round @round into its block of @recv. */
static zsh_status_t zsh_boot_env_fetch(zsh_boot_env_t *env, unsigned round, int peer, void *recv,
                                       size_t len, double started, double deadline)
{
    char key[ZSH_BOOT_KEY_MAX];
    zsh_status_t status;
    size_t got;
    void *value;

    snprintf(key, sizeof(key), "ag/%u/%d", round, peer);
    status = zsh_store_client_get(env->client, key, deadline, &value, &got);
    if (status == ZSH_ERR_TIMEOUT) {
        return zsh_boot_env_missing(env, round, peer, started);
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
    unsigned round      = ++env->round;
    /* The first round is part of joining: it shares the deadline of the
     * connect, so a missing rank costs ZSH_STORE_TIMEOUT in all. */
    double started  = (round == 1) ? env->start : zsh_clock_now();
    double deadline = (round == 1) ? env->deadline : started + env->timeout;
    char key[ZSH_BOOT_KEY_MAX];
    zsh_status_t status;
    int peer;

    if (env->size == 1) {
        if (len != 0) {
            memmove(recv, send, len);
        }
        *req_p = env;
        return ZSH_OK;
    }
    if (len > ZSH_STORE_VALUE_MAX) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "out-of-band allgather of %zu bytes per rank exceeds "
                         "the store's limit of %u", len, ZSH_STORE_VALUE_MAX);
    }
    snprintf(key, sizeof(key), "ag/%u/%d", round, env->rank);
    status = zsh_store_client_set(env->client, key, send, len);
    for (peer = 0; (peer < env->size) && (status == ZSH_OK); peer++) {
        if (peer != env->rank) {
            status = zsh_boot_env_fetch(env, round, peer, recv, len, started, deadline);
        }
    }
    if (status != ZSH_OK) {
        /* A rank that never came: nobody will say goodbye either. Other
         * failures (a mismatch) leave the store and its ranks in step. */
        env->failed = (status == ZSH_ERR_TIMEOUT);
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

/* Rank 0's store could not listen because its port is taken. If the taker is
 * a store of this job that already has rank 0, say that rank 0 is taken, and
 * by whom: ask it as a client, which the store answers without harm (it
 * claimed rank 0 for its own process before it took any client). */
static zsh_status_t zsh_boot_env_port_taken(zsh_boot_env_t *env, const zsh_boot_config_t *cfg,
                                            const char *listen_error)
{
    zsh_store_client_opts_t opts = {.host = cfg->master_addr, .port = cfg->master_port,
                                    .key = cfg->job_key, .rank = 0};
    char first[ZSH_ERROR_MSG_MAX];
    zsh_store_client_t *probe;
    const char *taken;
    zsh_status_t status;

    snprintf(first, sizeof(first), "%s", listen_error);
    opts.timeout = (env->timeout < ZSH_BOOT_PROBE_TIMEOUT) ? env->timeout : ZSH_BOOT_PROBE_TIMEOUT;
    status       = zsh_store_client_connect_opts(&opts, &probe);
    if (status == ZSH_OK) {
        zsh_store_client_close(probe);
    } else if ((taken = strstr(zsh_last_error(), "rank 0 is already taken")) != NULL) {
        snprintf(first, sizeof(first), "%s", taken);
        return zsh_error(ZSH_ERR_INVALID_ARG, "RANK=0: %s (a second process started as rank 0?)",
                         first);
    }
    return zsh_error(ZSH_ERR_IO, "%s (MASTER_PORT=%d is in use by another program, or by a "
                     "store of another job)", first, cfg->master_port);
}

/* Rank 0: start the store on the address it serves (ZSH_STORE_BIND, else
 * the address MASTER_ADDR names), with this rank already claimed. */
static zsh_status_t zsh_boot_env_serve(zsh_boot_env_t *env, const zsh_boot_config_t *cfg)
{
    zsh_store_server_opts_t opts = {.port = cfg->master_port, .timeout = cfg->store_timeout,
                                    .key = cfg->job_key, .world_size = (uint32_t)cfg->world_size,
                                    .owner_rank = 0, .max_keys = cfg->store_max_keys,
                                    .max_bytes = cfg->store_max_bytes,
                                    .max_conns = cfg->store_max_conns};
    char first[ZSH_ERROR_MSG_MAX];
    zsh_status_t status;

    if (strcmp(cfg->store_bind, "*") == 0) {
        opts.host = NULL;
    } else {
        opts.host = (cfg->store_bind[0] != '\0') ? cfg->store_bind : cfg->master_addr;
    }
    errno  = 0;
    status = zsh_store_server_start_opts(&opts, &env->server);
    if ((status == ZSH_ERR_IO) && (errno == EADDRINUSE)) {
        return zsh_boot_env_port_taken(env, cfg, zsh_last_error());
    }
    if ((status == ZSH_ERR_IO) && (errno == EADDRNOTAVAIL)) {
        snprintf(first, sizeof(first), "%s", zsh_last_error());
        return zsh_error(status, "%s (%s=%s is no address of this host; ZSH_STORE_BIND=* listens "
                         "on every interface)", first,
                         (cfg->store_bind[0] != '\0') ? "ZSH_STORE_BIND" : "MASTER_ADDR",
                         opts.host);
    }
    return status;
}

zsh_status_t zsh_boot_env_create(const zsh_boot_config_t *cfg, zsh_oob_t *oob,
                                 zsh_boot_env_t **env_p)
{
    zsh_store_client_opts_t opts = {.host = cfg->master_addr, .port = cfg->master_port,
                                    .key = cfg->job_key, .rank = cfg->rank};
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
    env->rank     = cfg->rank;
    env->size     = cfg->world_size;
    env->timeout  = cfg->store_timeout;
    env->start    = zsh_clock_now();
    env->deadline = env->start + env->timeout;
    snprintf(env->addr, sizeof(env->addr), (strchr(cfg->master_addr, ':') != NULL) ? "[%s]:%d"
             : "%s:%d", cfg->master_addr, cfg->master_port);
    /* One rank exchanges with itself: no store, no name to resolve, no port. */
    if (env->size > 1) {
        if (env->rank == 0) {
            status = zsh_boot_env_serve(env, cfg);
            if (status != ZSH_OK) {
                goto err_free_env;
            }
        }
        opts.timeout = env->timeout;
        status       = zsh_store_client_connect_opts(&opts, &env->client);
        if (status != ZSH_OK) {
            goto err_stop_server;
        }
    }
    zsh_log(ZSH_LOG_DEBUG, "bootstrap: rank %d of %d through the store at %s", env->rank,
            env->size, env->addr);
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

/*
 * Rank 0 after a rank never came: the ranks that did join are timing out too,
 * and then ask the store which ranks are missing. Keep it up until they have
 * said goodbye, for at most ZSH_BOOT_FAIL_GRACE (they started at about the
 * same time), not another store timeout: the failure is already known.
 */
static zsh_status_t zsh_boot_env_wait_joined(zsh_boot_env_t *env)
{
    double grace    = (env->timeout < ZSH_BOOT_FAIL_GRACE) ? env->timeout : ZSH_BOOT_FAIL_GRACE;
    double deadline = zsh_clock_now() + grace;
    char key[ZSH_BOOT_KEY_MAX];
    int peer;

    for (peer = 1; peer < env->size; peer++) {
        snprintf(key, sizeof(key), ZSH_STORE_RANK_PREFIX "%d", peer);
        if (zsh_boot_env_has(env, key, zsh_clock_now()) == 1) {
            snprintf(key, sizeof(key), "done/%d", peer);
            zsh_boot_env_has(env, key, deadline);
        }
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
    if (env->size == 1) {
        status = ZSH_OK; /* nothing to say goodbye over */
    } else if ((env->rank == 0) && env->failed) {
        status = zsh_boot_env_wait_joined(env);
    } else if (env->rank == 0) {
        status = zsh_boot_env_wait_done(env);
    } else {
        /* Acknowledged only once the store holds it, so rank 0 will see it. */
        snprintf(key, sizeof(key), "done/%d", env->rank);
        status = zsh_store_client_set(env->client, key, "", 0);
        /* After a failed bootstrap the failure is what this rank reports. */
        status = env->failed ? ZSH_OK : status;
    }
    zsh_store_client_close(env->client);
    zsh_store_server_stop(env->server);
    free(env);
    return status;
}
