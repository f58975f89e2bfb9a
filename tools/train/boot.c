/*
 * How zsh_train finds its peers: through zsh_comm_init() when a launcher
 * started it (mpirun or srun through PMIx, or torchrun-style variables),
 * and as a job of one otherwise, through a trivial out-of-band exchange.
 */
#include "train/boot.h"

#include <stdlib.h>
#include <string.h>

static zsh_status_t zsh_train_lone_allgather(const void *send, void *recv, size_t len, void *ctx,
                                             void **req_p)
{
    (void)ctx;
    memcpy(recv, send, len);
    *req_p = recv;
    return ZSH_OK;
}

static zsh_status_t zsh_train_lone_test(void *req)
{
    (void)req;
    return ZSH_OK;
}

static void zsh_train_lone_free(void *req)
{
    (void)req;
}

zsh_status_t zsh_train_comm_init(zsh_comm_t **comm_p)
{
    static const char *const launched[] = {"RANK", "ZSH_RANK", "PMIX_NAMESPACE"};
    zsh_oob_t lone = {0, 1, NULL, zsh_train_lone_allgather, zsh_train_lone_test,
                      zsh_train_lone_free};
    size_t i;

    for (i = 0; i < sizeof(launched) / sizeof(launched[0]); i++) {
        if (getenv(launched[i]) != NULL) {
            return zsh_comm_init(comm_p);
        }
    }
    return zsh_comm_init_oob(&lone, comm_p);
}
