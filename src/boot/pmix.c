#include "boot/pmix.h"

#include "core/status.h"

#include <config.h>

#ifdef ZSH_HAVE_PMIX

#include <pmix.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct zsh_boot_pmix {
    pmix_proc_t myproc;
    unsigned    round;     /* allgather calls so far; part of each key */
    int         timeout;   /* seconds, for fences */
};

static zsh_status_t zsh_pmix_error(const char *what, pmix_status_t rc)
{
    return zsh_error((rc == PMIX_ERR_TIMEOUT) ? ZSH_ERR_TIMEOUT : ZSH_ERR_TRANSPORT,
                     "PMIx %s failed: %s", what, PMIx_Error_string(rc));
}

bool zsh_boot_pmix_built(void)
{
    return true;
}

/* Publish this rank's block and fence with every rank of the namespace. */
static zsh_status_t zsh_pmix_publish(zsh_boot_pmix_t *pmix, const char *key, const void *send,
                                     size_t len)
{
    pmix_value_t value;
    pmix_proc_t all;
    pmix_info_t info[2];
    bool collect = true;
    pmix_status_t rc;

    value.type          = PMIX_BYTE_OBJECT;
    value.data.bo.bytes = (char *)send;
    value.data.bo.size  = len;
    rc = PMIx_Put(PMIX_GLOBAL, key, &value);
    if (rc == PMIX_SUCCESS) {
        rc = PMIx_Commit();
    }
    if (rc != PMIX_SUCCESS) {
        return zsh_pmix_error("put", rc);
    }
    PMIX_PROC_LOAD(&all, pmix->myproc.nspace, PMIX_RANK_WILDCARD);
    PMIX_INFO_LOAD(&info[0], PMIX_COLLECT_DATA, &collect, PMIX_BOOL);
    PMIX_INFO_LOAD(&info[1], PMIX_TIMEOUT, &pmix->timeout, PMIX_INT);
    rc = PMIx_Fence(&all, 1, info, 2);
    return (rc == PMIX_SUCCESS) ? ZSH_OK : zsh_pmix_error("fence", rc);
}

static zsh_status_t zsh_pmix_allgather(const void *send, void *recv, size_t len, void *ctx,
                                       void **req_p)
{
    zsh_boot_pmix_t *pmix = ctx;
    pmix_value_t *value;
    pmix_proc_t peer;
    pmix_status_t rc;
    char key[64];
    zsh_status_t status;
    uint32_t size, r;

    *req_p = NULL;
    snprintf(key, sizeof(key), "zsh.boot.%u", pmix->round++);
    status = zsh_pmix_publish(pmix, key, send, len);
    if (status != ZSH_OK) {
        return status;
    }
    PMIX_PROC_LOAD(&peer, pmix->myproc.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&peer, PMIX_JOB_SIZE, NULL, 0, &value);
    if (rc != PMIX_SUCCESS) {
        return zsh_pmix_error("get of the job size", rc);
    }
    size = value->data.uint32;
    PMIX_VALUE_RELEASE(value);
    for (r = 0; r < size; r++) {
        PMIX_PROC_LOAD(&peer, pmix->myproc.nspace, r);
        rc = PMIx_Get(&peer, key, NULL, 0, &value);
        if (rc != PMIX_SUCCESS) {
            return zsh_pmix_error("get", rc);
        }
        if ((value->type != PMIX_BYTE_OBJECT) || (value->data.bo.size != len)) {
            PMIX_VALUE_RELEASE(value);
            return zsh_error(ZSH_ERR_MISMATCH, "PMIx rank %u published a block of another size "
                             "than the %zu bytes this rank expects", r, len);
        }
        memcpy((char *)recv + (size_t)r * len, value->data.bo.bytes, len);
        PMIX_VALUE_RELEASE(value);
    }
    return ZSH_OK;
}

static zsh_status_t zsh_pmix_test(void *req)
{
    (void)req; /* the allgather above completes before it returns */
    return ZSH_OK;
}

static void zsh_pmix_free(void *req)
{
    (void)req;
}

zsh_status_t zsh_boot_pmix_create(const zsh_boot_config_t *cfg, zsh_oob_t *oob,
                                  zsh_boot_pmix_t **pmix_p)
{
    zsh_boot_pmix_t *pmix;
    pmix_value_t *value;
    pmix_proc_t job;
    pmix_status_t rc;

    pmix = calloc(1, sizeof(*pmix));
    if (pmix == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the PMIx bootstrap");
    }
    pmix->timeout = (cfg->store_timeout < 1) ? 1 : (int)cfg->store_timeout;
    rc = PMIx_Init(&pmix->myproc, NULL, 0);
    if (rc != PMIX_SUCCESS) {
        free(pmix);
        return zsh_pmix_error("init (is this process started by a PMIx launcher?)", rc);
    }
    PMIX_PROC_LOAD(&job, pmix->myproc.nspace, PMIX_RANK_WILDCARD);
    rc = PMIx_Get(&job, PMIX_JOB_SIZE, NULL, 0, &value);
    if (rc != PMIX_SUCCESS) {
        PMIx_Finalize(NULL, 0);
        free(pmix);
        return zsh_pmix_error("get of the job size", rc);
    }
    oob->size = (int)value->data.uint32;
    PMIX_VALUE_RELEASE(value);
    oob->rank      = (int)pmix->myproc.rank;
    oob->ctx       = pmix;
    oob->allgather = zsh_pmix_allgather;
    oob->test      = zsh_pmix_test;
    oob->free      = zsh_pmix_free;
    *pmix_p        = pmix;
    return ZSH_OK;
}

void zsh_boot_pmix_destroy(zsh_boot_pmix_t *pmix)
{
    PMIx_Finalize(NULL, 0); /* reference-counted: MPI's own PMIx use is unaffected */
    free(pmix);
}

#else /* !ZSH_HAVE_PMIX */

bool zsh_boot_pmix_built(void)
{
    return false;
}

zsh_status_t zsh_boot_pmix_create(const zsh_boot_config_t *cfg, zsh_oob_t *oob,
                                  zsh_boot_pmix_t **pmix_p)
{
    (void)cfg;
    (void)oob;
    (void)pmix_p;
    return zsh_error(ZSH_ERR_UNSUPPORTED, "ZSH_BOOTSTRAP=pmix: this build has no PMIx support "
                     "(configure found no pmix.pc; Debian: apt-get install libpmix-dev)");
}

void zsh_boot_pmix_destroy(zsh_boot_pmix_t *pmix)
{
    (void)pmix;
}

#endif
